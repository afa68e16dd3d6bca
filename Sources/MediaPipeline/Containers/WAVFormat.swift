/// How samples are stored in a WAV file.
public enum WAVSampleEncoding: String, Sendable, Equatable {
    /// Signed 16-bit integers.
    case pcm16
    /// Signed 24-bit integers, packed in 3 bytes.
    case pcm24
    /// Signed 32-bit integers.
    case pcm32
    /// IEEE 754 32-bit floats, nominally in -1...1.
    case float32

    /// Bytes per sample.
    public var bytesPerSample: Int {
        switch self {
        case .pcm16: 2
        case .pcm24: 3
        case .pcm32, .float32: 4
        }
    }
}

/// The format of a WAV file's audio.
public struct WAVFormat: Sendable, Equatable {
    /// Samples per second per channel.
    public var sampleRate: Int
    /// 1 or 2.
    public var channelCount: Int
    /// Sample encoding.
    public var encoding: WAVSampleEncoding
    /// Samples per channel in the file (its duration × ``sampleRate``).
    public var frameCount: Int64

    /// The duration in seconds.
    public var durationSeconds: Double { Double(frameCount) / Double(sampleRate) }
}
