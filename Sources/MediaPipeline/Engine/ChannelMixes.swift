/// The channels' own mixes as the app reads them (``MediaChannel/copyChannelMix(into:)``): the
/// last 10 ms mixed for each channel that keeps a mix, keyed by channel serial. Media state,
/// owned by the engine beside the playout round, which writes it; the control plane decides
/// only whether a channel keeps a mix.
///
/// A leaf lock: nothing is called while it is held, so it may be taken under any engine lock.
final class ChannelMixFrames: Sendable {
    private let frames = LockedValue<[Int: [Int16]]>([:])

    /// Makes `frame` channel `serial`'s last mix. Allocates only for a channel's first frame.
    func publish(_ serial: Int, _ frame: UnsafeBufferPointer<Int16>) {
        frames.withLock { frames in
            if let index = frames.index(forKey: serial), frames.values[index].count == frame.count {
                frames.values[index].withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: frame) }
            } else {
                frames[serial] = Array(frame)
            }
        }
    }

    /// Copies channel `serial`'s last mix into `output`: silence before its first frame.
    func copy(_ serial: Int, into output: UnsafeMutableBufferPointer<Int16>) {
        let copied = frames.withLock { frames in
            guard let frame = frames[serial], frame.count == output.count else { return false }
            _ = output.update(fromContentsOf: frame)
            return true
        }
        if !copied { output.update(repeating: 0) }
    }

    /// Forgets channel `serial`'s mix.
    func remove(_ serial: Int) { frames.withLock { _ = $0.removeValue(forKey: serial) } }

    /// Forgets every mix.
    func removeAll() { frames.withLock { $0.removeAll() } }
}

/// One playout round's channel mixes: the channels that keep a mix (taken under the control
/// lock with their streams' positions in the round's inputs), mixed after it is released, each
/// by its own mixer, with the peaks their volume indications need. Owned by the playout round
/// (``PlayoutRound/channelMixes``), so used by one round at a time.
final class ChannelMixRound: @unchecked Sendable {
    /// One channel to mix this round.
    struct Job {
        let ref: ChannelRef
        /// The channel's position when the round took it.
        let hint: Int
        /// Its streams' positions in the round's inputs.
        let inputs: Range<Int>
        /// Whether the app copies its mix (``MediaChannel/enableChannelMix(_:)``): it is then published.
        let publishes: Bool
        /// Whether its volume indication runs: the peaks are then measured.
        var measuresPeaks: Bool
        /// The mix's largest magnitude (when measured).
        var mixPeak: Int16 = 0
    }

    /// This round's channels, in channel order; reused between rounds.
    private(set) var jobs: [Job] = []
    /// Each input's largest magnitude, for inputs of channels that measure peaks.
    private(set) var inputPeaks: [Int16] = []
    /// Each channel's mixer by serial: a mixer ramps and limits across frames, so it stays with
    /// its channel while the channel keeps a mix.
    private var mixers: [Int: AudioMixer] = [:]
    /// The channels mixed last round and whether their mix was published, to forget the
    /// mixers and the published mixes of those that stopped.
    private var last: [(serial: Int, published: Bool)] = []
    private var frame: [Int16]
    private let sampleRate: Int, channelCount: Int

    init(sampleRate: Int, channelCount: Int, samples: Int) {
        (self.sampleRate, self.channelCount) = (sampleRate, channelCount)
        frame = [Int16](repeating: 0, count: samples)
    }

    /// Forgets the last round's channels.
    func reset() { jobs.removeAll(keepingCapacity: true) }

    /// Adds channel `ref` (at position `hint`), whose streams are `inputs` of the round's inputs.
    func add(_ ref: ChannelRef, hint: Int, inputs: Range<Int>, publishes: Bool, measuresPeaks: Bool) {
        jobs.append(Job(ref: ref, hint: hint, inputs: inputs, publishes: publishes, measuresPeaks: measuresPeaks))
    }

    /// Whether a channel of this round measures peaks (its volume indication must advance).
    var measuresPeaks: Bool { jobs.contains { $0.measuresPeaks } }

    /// Mixes each channel's streams of `inputs` with its own mixer and publishes the mix to
    /// `frames`; hands it to `recorders` of the channel (silence to those of a channel not
    /// mixed); measures the peaks its volume indication needs; forgets the mixers and frames
    /// of channels that no longer keep a mix. Allocates only for a channel's first mix.
    func mix(_ inputs: [MixerInput], publishingTo frames: ChannelMixFrames, recorders: [ChannelRecorder]) {
        if inputPeaks.count < inputs.count {
            inputPeaks.append(contentsOf: repeatElement(0, count: inputs.count - inputPeaks.count))
        }
        for j in jobs.indices {
            let serial = jobs[j].ref.serial
            let mixer: AudioMixer
            if let existing = mixers[serial] {
                mixer = existing
            } else {
                // The playout's own format, which the engine's final mixer was made with: this
                // cannot fail. Were it to, the channel would have no mix and no peaks this round.
                guard let made = try? AudioMixer(sampleRate: sampleRate, channelCount: channelCount) else {
                    jobs[j].measuresPeaks = false
                    continue
                }
                mixers[serial] = made
                mixer = made
            }
            frame.withUnsafeMutableBufferPointer { frame in
                mixer.mix(inputs[jobs[j].inputs], into: frame)
                let mixed = UnsafeBufferPointer(frame)
                if jobs[j].publishes { frames.publish(serial, mixed) }
                for recorder in recorders where recorder.channelId == jobs[j].ref.id {
                    _ = recorder.mixFrame.update(fromContentsOf: mixed)
                }
                if jobs[j].measuresPeaks {
                    jobs[j].mixPeak = mixed.peakMagnitude
                    for i in jobs[j].inputs { inputPeaks[i] = inputs[i].samples.peakMagnitude }
                }
            }
        }
        for recorder in recorders where !jobs.contains(where: { $0.ref.id == recorder.channelId }) {
            recorder.mixFrame.update(repeating: 0)
        }
        for (serial, published) in last {
            let job = jobs.first { $0.ref.serial == serial }
            if published && job?.publishes != true { frames.remove(serial) }
            if job == nil { mixers[serial] = nil }
        }
        last.removeAll(keepingCapacity: true)
        for job in jobs { last.append((job.ref.serial, job.publishes)) }
    }

    /// Forgets every channel's mixer and the mixes published to `frames` (the engine is destroyed).
    func forgetAll(publishedTo frames: ChannelMixFrames) {
        mixers.removeAll()
        last.removeAll()
        jobs.removeAll()
        frames.removeAll()
    }
}

extension UnsafeBufferPointer<Int16> {
    /// The largest magnitude of the samples (`Int16.min` counts as `Int16.max`).
    var peakMagnitude: Int16 {
        var peak: Int16 = 0
        for sample in self { peak = Swift.max(peak, sample == .min ? .max : abs(sample)) }
        return peak
    }
}
