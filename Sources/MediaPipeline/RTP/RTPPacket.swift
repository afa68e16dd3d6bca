/// One RTP packet: its bytes as they travel, shared by reference, and its parsed header.
///
/// Copying an `RTPPacket` never copies its bytes, so fan-out to any number of receivers passes
/// the same storage to each. Senders build packets in recycled storage (``RTPPacketizer``).
public struct RTPPacket: Sendable {
    /// The whole packet: header, payload and any padding.
    public let bytes: [UInt8]
    /// The parsed header.
    public let header: RTPHeader

    /// Parses `bytes` as an RTP packet, keeping them by reference.
    /// - Throws: what ``RTPHeader/init(parsing:)`` throws.
    public init(_ bytes: [UInt8]) throws {
        header = try bytes.withUnsafeBytes { try RTPHeader(parsing: $0) }
        self.bytes = bytes
    }

    /// A packet whose header is known to describe `bytes` (built by this library).
    init(trusted bytes: [UInt8], header: RTPHeader) {
        self.bytes = bytes
        self.header = header
    }

    /// Where the payload lies in ``bytes``.
    public var payloadRange: Range<Int> { header.byteCount..<(bytes.count - header.paddingByteCount) }

    /// Bytes of payload.
    public var payloadByteCount: Int { payloadRange.count }

    /// Calls `body` with the payload's bytes.
    /// - Warning: the pointer must not escape `body`.
    public func withUnsafePayload<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let range = payloadRange
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
}
