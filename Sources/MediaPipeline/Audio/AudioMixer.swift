/// Identifies a remote audio stream: a user in a channel. The same uid in two channels is two streams.
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    /// The channel.
    public var channelId: String
    /// The user.
    public var uid: UInt32

    /// The stream of `uid` in `channelId`.
    public init(channelId: String, uid: UInt32) {
        self.channelId = channelId
        self.uid = uid
    }

    public var description: String { "\(channelId)/\(uid)" }
}

/// One source's contribution to a mix: a 10 ms frame and the gain it should reach.
public struct MixerInput {
    /// Which stream this is; the mixer remembers its gain between frames to ramp changes.
    public var key: StreamKey
    /// Interleaved samples, the mixer's frame length and channel count.
    public var samples: UnsafeBufferPointer<Int16>
    /// Linear gain to reach by the end of this frame, 0...4 (0–400 %).
    public var gain: Float

    /// An input.
    public init(key: StreamKey, samples: UnsafeBufferPointer<Int16>, gain: Float) {
        self.key = key
        self.samples = samples
        self.gain = gain
    }
}

/// Mixes 10 ms frames of many sources: sums in float, ramps each source's gain across the
/// frame (a source that was not in the previous mix fades in from silence; a gain change glides),
/// and limits the sum so that it never clips. A single source at unity gain passes through
/// unchanged, bit for bit.
///
/// To fade a source out, give it one more frame with gain 0, then leave it out.
///
/// Not thread-safe: one mixer per mixing thread.
public final class AudioMixer {
    /// Output sample rate in Hz.
    public let sampleRate: Int
    /// Output channels.
    public let channelCount: Int
    /// Samples per channel per frame (10 ms).
    public let samplesPerChannel: Int
    private var sum: [Float]
    /// The last mix's sources in input order, each with the gain it reached: where the next
    /// mix's ramps start. Sources absent from a mix, or that reached gain 0 in it, are
    /// forgotten, so they fade in on return; a key given twice in one mix (a stream fading out
    /// at gain 0 beside its successor) is thus remembered by its audible input, whatever the order.
    private var sources: [(key: StreamKey, gain: Float)] = []
    /// This mix's, built while mixing and then swapped with ``sources`` (both keep their storage).
    private var nextSources: [(key: StreamKey, gain: Float)] = []
    /// Positions in ``sources`` by key, made only when an input is not where the last mix's
    /// order puts it (a source came, went, moved, or sits at gain 0).
    private var positions: [StreamKey: Int] = [:]
    private var positionsValid = false
    private var limiter: PeakLimiter

    /// A mixer of 10 ms frames at `sampleRate` with `channelCount` channels.
    public init(sampleRate: Int = 48000, channelCount: Int = 2) throws {
        guard sampleRate > 0, sampleRate % 100 == 0, (1...2).contains(channelCount) else {
            throw MediaError.invalidArgument(
                "mixer format \(sampleRate) Hz × \(channelCount) channels is not supported")
        }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        samplesPerChannel = sampleRate / 100
        sum = [Float](repeating: 0, count: samplesPerChannel * channelCount)
        limiter = PeakLimiter(sampleRate: sampleRate)
    }

    /// Mixes `inputs` into `output` (one frame: ``samplesPerChannel`` × ``channelCount`` samples).
    /// No input gives silence.
    /// - Precondition: every input and the output hold exactly one frame.
    /// - Complexity: O(total samples); allocates nothing while the set of sources is unchanged.
    public func mix(_ inputs: [MixerInput], into output: UnsafeMutableBufferPointer<Int16>) {
        mix(inputs[...], into: output)
    }

    /// ``mix(_:into:)`` of a run of inputs (a channel's streams within a playout round's list).
    func mix(_ inputs: ArraySlice<MixerInput>, into output: UnsafeMutableBufferPointer<Int16>) {
        let count = samplesPerChannel * channelCount
        precondition(output.count == count, "mixer output must hold one 10 ms frame")
        nextSources.removeAll(keepingCapacity: true)
        positionsValid = false
        var cursor = 0  // where the next input is looked for first in the last mix's sources
        defer { swap(&sources, &nextSources) }
        var probe = 0
        if inputs.count == 1, let only = inputs.first, only.gain == 1, lastGain(of: only.key, &probe) == 1 {
            // One source at unity gain: no ramp, no limiter, exactly the input.
            precondition(only.samples.count == count, "mixer input must hold one 10 ms frame")
            _ = output.initialize(fromContentsOf: only.samples)
            nextSources.append((only.key, 1))
            return
        }
        sum.withUnsafeMutableBufferPointer { sum in
            let channels = channelCount
            let frames = samplesPerChannel
            var first = true  // the first audible input writes the sum instead of adding to it
            for input in inputs {
                precondition(input.samples.count == count, "mixer input must hold one 10 ms frame")
                let end = max(0, min(4, input.gain))
                let start = lastGain(of: input.key, &cursor) ?? 0
                if end != 0 { nextSources.append((input.key, end)) }
                guard start != 0 || end != 0 else { continue }
                let samples = input.samples
                // Int16 to Float through Int: the generic conversion from Int16 is a call per
                // sample, which keeps these loops from being vectorised.
                if start == end {
                    if first {
                        for i in 0..<count { sum[i] = Float(Int(samples[i])) * end }
                    } else {
                        for i in 0..<count { sum[i] += Float(Int(samples[i])) * end }
                    }
                } else {
                    if first { sum.update(repeating: 0) }
                    let step = (end - start) / Float(frames)
                    var g = start
                    var i = 0
                    while i < count {
                        g += step
                        for c in 0..<channels { sum[i + c] += Float(Int(samples[i + c])) * g }
                        i += channels
                    }
                }
                first = false
            }
            if first { sum.update(repeating: 0) }
            limiter.process(sum, channelCount: channels, into: output)
        }
    }

    /// The gain `key` reached in the last mix, nil if it was not in it. Inputs mostly come in the
    /// last mix's order, so `cursor`, just past the last one found, is looked at first: no
    /// hashing while the sources stay the same; a dictionary of positions otherwise.
    private func lastGain(of key: StreamKey, _ cursor: inout Int) -> Float? {
        if cursor < sources.count, sources[cursor].key == key {
            cursor += 1
            return sources[cursor - 1].gain
        }
        if !positionsValid {
            positions.removeAll(keepingCapacity: true)
            for (position, source) in sources.enumerated() { positions[source.key] = position }
            positionsValid = true
        }
        guard let position = positions[key] else { return nil }
        cursor = position + 1
        return sources[position].gain
    }

    /// The limiter's current gain (1 when idle), for tests and meters.
    public var limiterGain: Float { limiter.gain }
}
