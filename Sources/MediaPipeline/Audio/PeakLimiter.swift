/// A feed-forward peak limiter for float mixes: the gain falls as soon as a 1 ms block would
/// exceed the threshold and recovers smoothly afterwards, and a per-sample cap guarantees that
/// no output sample ever exceeds the threshold, so the Int16 conversion never clips.
///
/// The shape follows libwebrtc's mixer limiter (gain computed per sub-block, interpolated within
/// it) without its lookahead-free knee curve: below the threshold the gain is exactly 1.
struct PeakLimiter {
    /// The largest output magnitude: -1 dBFS of Int16 full scale.
    static let threshold: Float = 29204
    /// Samples per channel in one gain block (1 ms at 48 kHz).
    let blockFrames: Int
    /// Per-block gain increase while recovering (release time constant about 60 ms).
    let releaseStep: Float
    /// The gain at the end of the last block.
    private(set) var gain: Float = 1

    init(sampleRate: Int) {
        blockFrames = max(1, sampleRate / 1000)
        releaseStep = Float(1.0 / (1.0 - 1.0 / 60.0))  // per 1 ms block
    }

    /// Limits `samples` (interleaved, `channelCount` channels) and writes them as Int16.
    mutating func process(
        _ samples: UnsafeMutableBufferPointer<Float>, channelCount: Int, into output: UnsafeMutableBufferPointer<Int16>
    ) {
        let threshold = PeakLimiter.threshold
        let blockSamples = blockFrames * channelCount
        var start = 0
        while start < samples.count {
            let end = min(samples.count, start + blockSamples)
            let block = UnsafeMutableBufferPointer(rebasing: samples[start..<end])
            let out = UnsafeMutableBufferPointer(rebasing: output[start..<end])
            let peak = Self.peak(block)
            let desired: Float = peak > threshold ? threshold / peak : 1
            let target = desired < gain ? desired : min(desired, gain * releaseStep)
            if gain == 1 && target == 1 {
                // Nothing to limit (the usual case): the block fits below the threshold as it is.
                for i in 0..<block.count { out[i] = Self.int16(block[i]) }
            } else {
                let frames = block.count / channelCount
                let step = (target - gain) / Float(max(frames, 1))
                var g = gain
                var i = 0
                while i < block.count {
                    g += step
                    for c in 0..<channelCount {
                        // The ramp from a higher gain can overshoot inside the block: cap each sample.
                        out[i + c] = Self.int16(min(threshold, max(-threshold, block[i + c] * g)))
                    }
                    i += channelCount
                }
            }
            gain = target
            start = end
        }
    }

    /// The largest magnitude in `block`, in a form the compiler vectorises.
    private static func peak(_ block: UnsafeMutableBufferPointer<Float>) -> Float {
        var high: Float = 0
        var low: Float = 0
        for value in block {
            high = value > high ? value : high
            low = value < low ? value : low
        }
        return max(high, -low)
    }

    /// `value` rounded to the nearest integer (ties to even) as Int16, for |value| below 2^22:
    /// adding 1.5 × 2^23 leaves the integer in the low bits of the float's pattern, with no
    /// branch and no library call, so the loops that use it vectorise.
    @inline(__always)
    private static func int16(_ value: Float) -> Int16 {
        Int16(truncatingIfNeeded: (value + 12_582_912).bitPattern)
    }
}
