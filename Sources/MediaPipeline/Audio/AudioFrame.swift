/// A block of PCM audio: interleaved signed 16-bit samples at one sample rate.
///
/// The engine's unit is 10 ms at 48 kHz stereo (480 samples per channel), but the type holds any
/// length so that codec frames of 2.5–60 ms fit too. Reusing one frame value (and its
/// ``samples`` capacity) across calls keeps the per-frame path free of allocations.
public struct AudioFrame: Sendable, Equatable {
    /// Interleaved samples: `samples[i * channelCount + c]` is channel `c` of sample `i`.
    public var samples: [Int16]
    /// Samples per second per channel.
    public var sampleRate: Int
    /// 1 (mono) or 2 (stereo).
    public var channelCount: Int
    /// Position of the first sample, counted in samples per channel since the stream's start.
    public var timestampSamples: Int64

    /// A frame holding `samples`.
    /// - Precondition: `samples.count` is a multiple of `channelCount`.
    public init(samples: [Int16], sampleRate: Int, channelCount: Int, timestampSamples: Int64 = 0) {
        precondition(channelCount > 0 && samples.count % channelCount == 0, "samples must hold whole sample frames")
        self.samples = samples
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.timestampSamples = timestampSamples
    }

    /// A silent frame of `samplesPerChannel` samples.
    public init(silenceOf samplesPerChannel: Int, sampleRate: Int, channelCount: Int, timestampSamples: Int64 = 0) {
        self.init(
            samples: [Int16](repeating: 0, count: samplesPerChannel * channelCount), sampleRate: sampleRate,
            channelCount: channelCount, timestampSamples: timestampSamples)
    }

    /// Samples per channel in this frame.
    public var samplesPerChannel: Int { samples.count / channelCount }

    /// The frame's length in microseconds.
    public var durationMicroseconds: Int64 { Int64(samplesPerChannel) * 1_000_000 / Int64(sampleRate) }
}
