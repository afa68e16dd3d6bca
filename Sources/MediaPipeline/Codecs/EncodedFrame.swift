/// One compressed frame: immutable bytes shared by reference, with what a receiver needs to
/// decode and schedule it.
///
/// Copying an `EncodedFrame` never copies its bytes: fan-out to many receivers passes the same
/// storage to each. The encoders recycle that storage once every copy of a frame is gone. A
/// frame received as the payload of one RTP packet lies inside that packet's bytes.
public struct EncodedFrame: Sendable {
    /// The array the bytes lie in, and where.
    private let storage: [UInt8]
    private let range: Range<Int>

    /// The compressed bytes (one Opus packet, or one VP8/VP9 frame).
    /// - Complexity: O(1) for a frame that owns its whole array (encoded here, read from a
    ///   file); a frame that lies inside a received packet copies its bytes out. Use
    ///   ``withUnsafeBytes(_:)`` to read without copying.
    public var bytes: [UInt8] {
        range.lowerBound == 0 && range.upperBound == storage.count ? storage : Array(storage[range])
    }
    /// The codec that produced the bytes.
    public let codec: MediaCodec
    /// True for a video frame that decodes without earlier frames. Always true for Opus.
    public let isKeyframe: Bool
    /// Presentation time of the frame's first sample, in microseconds.
    public let timestampMicroseconds: Int64
    /// The frame's duration in microseconds (0 when unknown, as for frames received over RTP).
    public let durationMicroseconds: Int64
    /// Picture width and height for video (0 for audio).
    public let width: Int, height: Int

    /// Creates a frame around `bytes`.
    public init(
        bytes: [UInt8], codec: MediaCodec, isKeyframe: Bool, timestampMicroseconds: Int64,
        durationMicroseconds: Int64, width: Int = 0, height: Int = 0
    ) {
        self.init(
            storage: bytes, range: 0..<bytes.count, codec: codec, isKeyframe: isKeyframe,
            timestampMicroseconds: timestampMicroseconds, durationMicroseconds: durationMicroseconds, width: width,
            height: height)
    }

    /// A frame made of `range` of `storage` (a received packet's payload), sharing it.
    init(
        storage: [UInt8], range: Range<Int>, codec: MediaCodec, isKeyframe: Bool, timestampMicroseconds: Int64,
        durationMicroseconds: Int64, width: Int = 0, height: Int = 0
    ) {
        self.storage = storage
        self.range = range
        self.codec = codec
        self.isKeyframe = isKeyframe
        self.timestampMicroseconds = timestampMicroseconds
        self.durationMicroseconds = durationMicroseconds
        self.width = width
        self.height = height
    }

    /// Size of the compressed bytes.
    public var byteCount: Int { range.count }

    /// Calls `body` with the compressed bytes, without copying them.
    /// - Warning: the pointer must not escape `body`.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The same frame (sharing its bytes) with another timestamp, for replaying recorded media.
    public func restamped(_ timestampMicroseconds: Int64) -> EncodedFrame {
        EncodedFrame(
            storage: storage, range: range, codec: codec, isKeyframe: isKeyframe,
            timestampMicroseconds: timestampMicroseconds, durationMicroseconds: durationMicroseconds, width: width,
            height: height)
    }
}
