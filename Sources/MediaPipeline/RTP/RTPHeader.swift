/// The fixed RTP header (RFC 3550 section 5.1) and where the payload starts.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |           synchronization source (SSRC) identifier            |
/// |            contributing source (CSRC) identifiers             | (CC times)
/// | header extension (X): profile, length in 32-bit words, data   |
/// ```
public struct RTPHeader: Sendable, Equatable {
    /// Bytes of the fixed header, without CSRCs or extension.
    public static let fixedByteCount = 12

    /// The marker bit: the last packet of a video frame; the first after silence for audio.
    public var marker: Bool
    /// The payload type, 0...127.
    public var payloadType: UInt8
    /// The packet's sequence number (wraps at 65536).
    public var sequenceNumber: UInt16
    /// The media timestamp in the payload's clock (48 kHz for Opus, 90 kHz for video).
    public var timestamp: UInt32
    /// The stream's synchronization source.
    public var ssrc: UInt32
    /// Bytes before the payload: fixed header, CSRCs and extension.
    public var byteCount: Int
    /// Padding bytes at the end of the packet (the P bit's count).
    public var paddingByteCount: Int

    /// A header with no CSRCs, extension or padding.
    public init(marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        byteCount = Self.fixedByteCount
        paddingByteCount = 0
    }

    /// Parses the header of the RTP packet in `bytes`.
    /// - Throws: ``MediaError/Code/truncated`` when the packet ends inside its header, CSRC list or
    ///   extension, ``MediaError/Code/invalidFormat`` for a version other than 2 or a padding
    ///   count larger than the payload.
    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count >= Self.fixedByteCount else {
            throw MediaError(.truncated, "RTP packet of \(bytes.count) bytes is shorter than its 12-byte header")
        }
        let first = bytes[0]
        guard first >> 6 == 2 else { throw MediaError.invalidFormat("RTP version \(first >> 6); only 2 exists") }
        marker = bytes[1] & 0x80 != 0
        payloadType = bytes[1] & 0x7F
        sequenceNumber = bytes.uint16(at: 2)
        timestamp = bytes.uint32(at: 4)
        ssrc = bytes.uint32(at: 8)
        var offset = Self.fixedByteCount + Int(first & 0x0F) * 4
        guard offset <= bytes.count else {
            throw MediaError(.truncated, "RTP packet of \(bytes.count) bytes ends inside its \(first & 0x0F) CSRCs")
        }
        if first & 0x10 != 0 {
            guard offset + 4 <= bytes.count else {
                throw MediaError(.truncated, "RTP packet of \(bytes.count) bytes ends inside its extension header")
            }
            offset += 4 + Int(bytes.uint16(at: offset + 2)) * 4
            guard offset <= bytes.count else {
                throw MediaError(.truncated, "RTP header extension runs past the packet's \(bytes.count) bytes")
            }
        }
        byteCount = offset
        paddingByteCount = 0
        if first & 0x20 != 0 {
            let padding = bytes.count > offset ? Int(bytes[bytes.count - 1]) : 0
            guard padding >= 1, offset + padding <= bytes.count else {
                throw MediaError.invalidFormat(
                    "RTP padding count \(padding) does not fit the \(bytes.count - offset) bytes after the header")
            }
            paddingByteCount = padding
        }
    }

    /// Writes the fixed header (no CSRCs, extension or padding) at the start of `bytes`.
    /// - Precondition: `bytes` holds at least 12 bytes.
    public func write(into bytes: UnsafeMutableRawBufferPointer) {
        bytes[0] = 0x80
        bytes[1] = (marker ? 0x80 : 0) | (payloadType & 0x7F)
        bytes.put(sequenceNumber, at: 2)
        bytes.put(timestamp, at: 4)
        bytes.put(ssrc, at: 8)
    }
}
