import Foundation
import Testing

@testable import MediaPipeline

// Judging what an engine played against what was sent: each source's reference decode (what a
// fresh Opus encoder with the engine's settings and a decoder make of everything the source
// pushed), placed at its own lag in the playout, summed, and compared sample for sample. A
// peak level says only that something loud played; this says whose signal it was and how
// faithfully.

/// How a stretch of playout matched the summed reference decodes of its sources.
struct PlayoutMatch: CustomStringConvertible {
    /// Each source's lag (frames of the playout after the frame of its reference decode).
    var lagsFrames: [Int]
    /// Signal (the summed references) to the difference, over the stretch, in dB.
    var snrDecibels: Double
    /// Frames of the stretch where the playout equals the summed references exactly (both
    /// channels), and frames compared.
    var exactFrames: Int
    var frames: Int

    var description: String {
        String(
            format: "SNR %.1f dB, %d of %d frames exact, lags %@ frames", snrDecibels, exactFrames, frames,
            "\(lagsFrames)")
    }
}

extension TestUser {
    /// What a fresh Opus encoder with `configuration` (the engine's default settings unless
    /// given) and a decoder make of everything this user pushed (48 kHz stereo, interleaved),
    /// decoded at `sampleRate` with `channelCount` channels (interleaved).
    func referenceDecode(
        _ configuration: OpusEncoderConfiguration = .init(EngineConfiguration().audio), sampleRate: Int = 48000,
        channelCount: Int = 2
    ) throws -> [Int16] {
        let encoder = try OpusEncoder(configuration: configuration)
        let decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: channelCount)
        let frameSamples = encoder.samplesPerFrame * 2
        var decoded: [Int16] = []
        var pcm = [Int16](repeating: 0, count: encoder.samplesPerFrame * channelCount)
        var start = 0
        while start + frameSamples <= sent.count {
            let frame = try sent[start..<start + frameSamples].withUnsafeBufferPointer {
                try encoder.encode($0, timestampMicroseconds: 0)
            }
            let count = try frame.bytes.withUnsafeBytes { packet in
                try pcm.withUnsafeMutableBufferPointer { try decoder.decode(packet, into: $0) }
            }
            decoded += pcm[0..<count * channelCount]
            start += frameSamples
        }
        return decoded
    }

    /// The last `milliseconds` of this user's playout against the reference decodes of
    /// `sources` (each at the lag, up to `maximumLagMilliseconds`, where it correlates best
    /// with the playout), summed. With `wholeFrames`, the lags are whole 10 ms frames, found
    /// together (up to two sources) as those whose sum best matches the playout: a tone
    /// repeats within 10 ms, so correlation alone cannot tell the true lag from one a period
    /// off, and a playout that neither stretched nor concealed lags its sources by whole
    /// frames.
    func hears(
        _ sources: [TestUser], lastMilliseconds: Int, maximumLagMilliseconds: Int = 1000, wholeFrames: Bool = false
    ) throws -> PlayoutMatch {
        let rate = engine.configuration.playoutSampleRate
        let channels = engine.configuration.playoutChannelCount
        let perMs = rate / 1000
        let references = try sources.map {
            try $0.referenceDecode(.init($0.engine.configuration.audio), sampleRate: rate, channelCount: channels)
        }
        let frames = lastMilliseconds * perMs
        let end = heard.count / channels
        let first = end - frames
        precondition(first >= 0, "only \(end) frames heard")
        precondition(!wholeFrames || sources.count <= 2, "whole-frame lags are searched for two sources at most")
        let maximum = min(maximumLagMilliseconds, end / perMs)
        var lags: [Int] = []
        if wholeFrames {
            let candidates = Array(stride(from: 0, through: maximum, by: 10)).map { $0 * perMs }
            var best = (error: Double.infinity, lags: [Int]())
            for a in candidates {
                for b in sources.count == 2 ? candidates : [0] {
                    let tuple = sources.count == 2 ? [a, b] : [a]
                    let error = squaredError(
                        references, tuple, from: first, frames: min(frames, 10 * perMs), channels: channels,
                        above: best.error)
                    if error < best.error { best = (error, tuple) }
                }
            }
            lags = best.lags
        } else {
            for reference in references {
                lags.append(
                    bestLag(
                        of: reference, windowStart: first, frames: frames, maximum: maximum * perMs,
                        channels: channels))
            }
        }
        var signal = 0.0
        var noise = 0.0
        var exact = 0
        for t in first..<end {
            var equal = true
            for channel in 0..<channels {
                var expected = 0
                for (reference, lag) in zip(references, lags) {
                    let index = (t - lag) * channels + channel
                    if index >= 0 && index < reference.count { expected += Int(reference[index]) }
                }
                expected = min(Int(Int16.max), max(Int(Int16.min), expected))
                let actual = Int(heard[t * channels + channel])
                signal += Double(expected * expected)
                noise += Double((actual - expected) * (actual - expected))
                if actual != expected { equal = false }
            }
            if equal { exact += 1 }
        }
        let snr = noise == 0 ? Double.infinity : 10 * log10(max(signal, 1) / noise)
        return PlayoutMatch(lagsFrames: lags, snrDecibels: snr, exactFrames: exact, frames: frames)
    }

    /// The squared difference, left channel, between the playout and `references` summed at
    /// `lags`, over `frames` frames from `first`; stops once above `bound`.
    private func squaredError(
        _ references: [[Int16]], _ lags: [Int], from first: Int, frames: Int, channels: Int, above bound: Double
    ) -> Double {
        var error = 0.0
        for t in first..<first + frames {
            var expected = 0
            for (reference, lag) in zip(references, lags) {
                let index = (t - lag) * channels
                if index >= 0 && index < reference.count { expected += Int(reference[index]) }
            }
            let difference = Double(Int(heard[t * channels]) - min(Int(Int16.max), max(Int(Int16.min), expected)))
            error += difference * difference
            if error > bound { return error }
        }
        return error
    }

    /// The lag (frames, 0...`maximum`) at which `reference` correlates best with the playout's
    /// left channel over `frames` frames from `windowStart`: every fourth frame first, then
    /// every frame within 4 of the best.
    private func bestLag(of reference: [Int16], windowStart: Int, frames: Int, maximum: Int, channels: Int) -> Int {
        heard.withUnsafeBufferPointer { h in
            reference.withUnsafeBufferPointer { r in
                func score(_ lag: Int, stride step: Int) -> Double {
                    var dot = 0.0
                    var energy = 0.0
                    var t = windowStart
                    while t < windowStart + frames {
                        let index = (t - lag) * channels
                        if index >= 0 && index < r.count {
                            let x = Double(r[index])
                            dot += Double(h[t * channels]) * x
                            energy += x * x
                        }
                        t += step
                    }
                    return energy > 0 ? dot / energy.squareRoot() : -.infinity
                }
                let limit = min(maximum, windowStart + frames)
                var best = (lag: 0, score: -Double.infinity)
                for lag in Swift.stride(from: 0, through: limit, by: 4) {
                    let value = score(lag, stride: 4)
                    if value > best.score { best = (lag, value) }
                }
                var fine = (lag: best.lag, score: -Double.infinity)
                for lag in max(0, best.lag - 4)...min(limit, best.lag + 4) {
                    let value = score(lag, stride: 1)
                    if value > fine.score { fine = (lag, value) }
                }
                return fine.lag
            }
        }
    }
}

/// Expects the last `lastMilliseconds` of `listener`'s playout to be `sources`' reference
/// decodes, summed at their lags: sample for sample with `exact` (a lossless path: one
/// stream, or streams mixed without limiting), or at least `minimumSNR` dB. The sources
/// send tones of their own frequencies, so another user's signal, or one missing, fails.
@discardableResult
func expectHears(
    _ listener: TestUser, _ sources: [TestUser], lastMilliseconds: Int = 100, exact: Bool = false,
    minimumSNR: Double = 20, sourceLocation: SourceLocation = #_sourceLocation
) throws -> PlayoutMatch {
    let match = try listener.hears(sources, lastMilliseconds: lastMilliseconds, wholeFrames: exact)
    if exact {
        #expect(
            match.exactFrames == match.frames, "playout against the reference: \(match)", sourceLocation: sourceLocation
        )
    } else {
        #expect(
            match.snrDecibels >= minimumSNR, "playout against the reference: \(match)", sourceLocation: sourceLocation)
    }
    return match
}
