/// The codecs MediaPipeline encodes and decodes.
public enum MediaCodec: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Opus audio (RFC 6716).
    case opus
    /// VP8 video (RFC 6386).
    case vp8
    /// VP9 video.
    case vp9

    /// Audio for Opus, video for VP8 and VP9.
    public var kind: MediaKind { self == .opus ? .audio : .video }

    public var description: String {
        switch self {
        case .opus: "Opus"
        case .vp8: "VP8"
        case .vp9: "VP9"
        }
    }
}

/// One compressed frame: immutable bytes shared by reference, with what a receiver needs to
/// decode and schedule it.
///
/// Copying an `EncodedFrame` never copies its bytes: fan-out to many receivers passes the same
/// storage to each. The encoders recycle that storage once every copy of a frame is gone.
public struct EncodedFrame: Sendable {
    /// The compressed bytes (one Opus packet, or one VP8/VP9 frame).
    public let bytes: [UInt8]
    /// The codec that produced the bytes.
    public let codec: MediaCodec
    /// True for a video frame that decodes without earlier frames. Always true for Opus.
    public let isKeyframe: Bool
    /// Presentation time of the frame's first sample, in microseconds.
    public let timestampMicroseconds: Int64
    /// The frame's duration in microseconds.
    public let durationMicroseconds: Int64
    /// Picture width and height for video (0 for audio).
    public let width: Int, height: Int

    /// Creates a frame around `bytes`.
    public init(
        bytes: [UInt8], codec: MediaCodec, isKeyframe: Bool, timestampMicroseconds: Int64,
        durationMicroseconds: Int64, width: Int = 0, height: Int = 0
    ) {
        self.bytes = bytes
        self.codec = codec
        self.isKeyframe = isKeyframe
        self.timestampMicroseconds = timestampMicroseconds
        self.durationMicroseconds = durationMicroseconds
        self.width = width
        self.height = height
    }

    /// Size of the compressed bytes.
    public var byteCount: Int { bytes.count }

    /// The same frame (sharing its bytes) with another timestamp, for replaying recorded media.
    public func restamped(_ timestampMicroseconds: Int64) -> EncodedFrame {
        EncodedFrame(
            bytes: bytes, codec: codec, isKeyframe: isKeyframe, timestampMicroseconds: timestampMicroseconds,
            durationMicroseconds: durationMicroseconds, width: width, height: height)
    }
}
