/// What a file encode or decode did, for summaries and machine-readable reports.
public struct TranscodeSummary: Sendable, Equatable {
    /// Audio or video.
    public enum Kind: String, Sendable { case audio, video }
    /// Audio or video.
    public var kind: Kind
    /// The codec of the compressed side.
    public var codec: MediaCodec
    /// Input and output paths.
    public var input: String, output: String
    /// Media duration in seconds.
    public var durationSeconds: Double
    /// Audio: samples per channel written or encoded; video: frames.
    public var frames: Int64
    /// Audio sample rate in Hz (0 for video).
    public var sampleRate: Int = 0
    /// Audio channels (0 for video).
    public var channelCount: Int = 0
    /// Video picture size in pixels (0 for audio; the first frame's for decodes).
    public var width: Int = 0, height: Int = 0
    /// Bytes of compressed payload (packets or frames, without container overhead).
    public var compressedBytes: Int64
    /// Per-frame MD5 sums of decoded pictures, when asked for.
    public var frameMD5s: [String] = []

    /// Average compressed bitrate in bits per second.
    public var bitrateBitsPerSecond: Double {
        durationSeconds > 0 ? Double(compressedBytes) * 8 / durationSeconds : 0
    }
}

/// Reports progress of long file work as a fraction 0...1.
public typealias ProgressHandler = (Double) -> Void
