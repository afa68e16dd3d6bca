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
            var peak: Float = 0
            for i in start..<end { peak = max(peak, abs(samples[i])) }
            let desired: Float = peak > threshold ? threshold / peak : 1
            let target = desired < gain ? desired : min(desired, gain * releaseStep)
            let frames = (end - start) / channelCount
            let step = (target - gain) / Float(max(frames, 1))
            var g = gain
            var i = start
            while i < end {
                g += step
                for c in 0..<channelCount {
                    var value = samples[i + c] * g
                    // The ramp from a higher gain can overshoot inside the block: cap each sample.
                    if value > threshold { value = threshold } else if value < -threshold { value = -threshold }
                    output[i + c] = Int16(value.rounded())
                }
                i += channelCount
            }
            gain = target
            start = end
        }
    }
}
