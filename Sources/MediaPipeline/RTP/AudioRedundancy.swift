/// The RTP payload format for redundant audio data (RFC 2198), as browsers send it for Opus
/// ("red/48000/2" whose blocks are all Opus): each packet carries the new frame (the primary
/// block) after copies of one or two earlier frames, so a lost packet is rebuilt exactly from
/// the next one or the one after.
///
/// Layout: a 4-byte header per redundant block (F bit set, 7-bit payload type, 14-bit
/// timestamp offset back from the packet's timestamp, 10-bit block length), a 1-byte header for
/// the primary block (F clear, payload type), then the blocks' data in the same order, the
/// primary's running to the end of the payload.
public enum AudioRedundancy {
    /// The largest redundant block the 10-bit length field can state.
    public static let maximumBlockByteCount = 1023
    /// The largest timestamp offset the 14-bit field can state (341 ms at 48 kHz).
    public static let maximumTimestampOffset: UInt32 = 0x3FFF

    /// One block of a redundant audio payload.
    public struct Block: Equatable, Sendable {
        /// The block's own payload type (Opus's, here).
        public var payloadType: UInt8
        /// How far before the packet's RTP timestamp the block's audio starts (0 for the primary).
        public var timestampOffset: UInt32
        /// Where the block's data lies in the payload.
        public var range: Range<Int>
        /// True for the packet's own new frame, the last block.
        public var isPrimary: Bool
    }

    /// Reads the blocks of `payload` in order (redundant ones, oldest first as senders write
    /// them, then the primary), calling `body` with each; allocates nothing.
    /// - Throws: ``MediaError/Code/invalidFormat`` naming the block when a header or a block
    ///   runs past the payload's end.
    public static func forEachBlock(in payload: UnsafeRawBufferPointer, _ body: (Block) -> Void) throws {
        // The headers first: their count is known only at the primary's (F clear).
        var headerEnd = 0
        var dataLength = 0
        var blocks = 0
        while true {
            guard headerEnd < payload.count else {
                throw MediaError.invalidFormat(
                    "RED payload of \(payload.count) bytes ends inside block header \(blocks)")
            }
            if payload[headerEnd] & 0x80 == 0 {
                headerEnd += 1
                break
            }
            guard headerEnd + 4 <= payload.count else {
                throw MediaError.invalidFormat(
                    "RED payload of \(payload.count) bytes ends inside block header \(blocks)")
            }
            dataLength += Int(payload[headerEnd + 2] & 0x03) << 8 | Int(payload[headerEnd + 3])
            headerEnd += 4
            blocks += 1
        }
        guard headerEnd + dataLength <= payload.count else {
            throw MediaError.invalidFormat(
                "RED payload of \(payload.count) bytes is shorter than its \(blocks) redundant blocks (\(dataLength) bytes after \(headerEnd) header bytes)"
            )
        }
        var header = 0
        var data = headerEnd
        for _ in 0..<blocks {
            let offset = UInt32(payload[header + 1]) << 6 | UInt32(payload[header + 2] >> 2)
            let length = Int(payload[header + 2] & 0x03) << 8 | Int(payload[header + 3])
            body(
                Block(
                    payloadType: payload[header] & 0x7F, timestampOffset: offset, range: data..<(data + length),
                    isPrimary: false))
            data += length
            header += 4
        }
        body(
            Block(payloadType: payload[header] & 0x7F, timestampOffset: 0, range: data..<payload.count, isPrimary: true)
        )
    }

    /// Rewrites each block header's payload type in place through `map` (indexed by the payload
    /// type found; a value with the top bit set leaves it as is), up to and including the primary's
    /// header, or to the payload's end if it comes first. A peer's RED packet gets the engine's
    /// payload types this way. Allocates nothing; a malformed payload is left for
    /// ``forEachBlock(in:_:)`` to refuse.
    static func mapBlockPayloadTypes(in payload: UnsafeMutableRawBufferPointer, _ map: [UInt8]) {
        var header = 0
        while header < payload.count {
            let byte = payload[header]
            let mapped = map[Int(byte & 0x7F)]
            if mapped & 0x80 == 0 { payload[header] = byte & 0x80 | mapped }
            if byte & 0x80 == 0 { return }
            header += 4
        }
    }

    /// Whether a frame of `byteCount` bytes, `timestampOffset` before the primary, can be carried
    /// as a redundant block.
    public static func fits(byteCount: Int, timestampOffset: Int64) -> Bool {
        byteCount > 0 && byteCount <= maximumBlockByteCount && timestampOffset > 0
            && timestampOffset <= Int64(maximumTimestampOffset)
    }

    /// Writes one redundant block's header (4 bytes) at `out`.
    static func writeRedundantHeader(
        payloadType: UInt8, timestampOffset: UInt32, byteCount: Int, into out: UnsafeMutableRawBufferPointer
    ) {
        out[0] = 0x80 | payloadType
        out[1] = UInt8(truncatingIfNeeded: timestampOffset >> 6)
        out[2] = UInt8(truncatingIfNeeded: timestampOffset << 2) | UInt8(truncatingIfNeeded: byteCount >> 8)
        out[3] = UInt8(truncatingIfNeeded: byteCount)
    }
}
