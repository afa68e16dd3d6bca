/// One packet of an Ogg logical stream, with the page facts a decoder needs for trimming.
struct OggPacket {
    /// The packet's bytes.
    var bytes: [UInt8]
    /// The granule position of the page on which the packet ends, when it is the last packet
    /// completed on that page; -1 otherwise.
    var granulePosition: Int64
    /// True when the packet ends on the stream's end-of-stream page and is its last.
    var isLast: Bool
}

/// Reads the packets of a single Ogg logical stream (RFC 3533), checking capture patterns,
/// versions, checksums, page sequence numbers and packet continuation. A second logical stream,
/// multiplexed or chained, is reported as unsupported rather than read wrongly.
final class OggPacketReader {
    private let file: FileByteReader
    private var serial: UInt32?
    private var nextSequence: UInt32 = 0
    private var pageIndex = 0
    private var sawEndOfStream = false
    private var ready: [OggPacket] = []
    private var readyIndex = 0
    private var partial: [UInt8] = []
    private var partialOpen = false
    /// The largest packet accepted, in bytes; a larger one is a corrupt stream.
    static let maximumPacketBytes = 16 << 20

    init(file: FileByteReader) { self.file = file }

    /// The next packet, or nil after the end-of-stream page.
    func nextPacket() throws -> OggPacket? {
        while readyIndex == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            guard try readPage() else { return nil }
        }
        defer { readyIndex += 1 }
        return ready[readyIndex]
    }

    /// Reads one page into `ready`; false at a clean end after the end-of-stream page.
    private func readPage() throws -> Bool {
        let pageStart = file.offset
        if sawEndOfStream {
            guard try file.atEnd() else {
                let header = try file.readBytes(min(27, Int(file.remaining ?? 27)), what: "Ogg page header")
                if header.count == 27, header.printable(0..<4) == "OggS", (header[5] & 0x02) != 0 {
                    throw MediaError.unsupported(
                        "chained Ogg stream: a new logical stream starts at byte \(pageStart) after the first one ended"
                    )
                }
                throw MediaError.invalidFormat("unexpected data at byte \(pageStart) after the end-of-stream page")
            }
            return false
        }
        if try file.atEnd() {
            if partialOpen {
                throw MediaError(.truncated, "file ends inside a packet continued across pages (truncated file)")
            }
            throw MediaError(
                .truncated, "file ends at byte \(pageStart) without an end-of-stream page (truncated file)")
        }
        var header = try file.readBytes(27, what: "Ogg page header (page \(pageIndex))")
        guard header.printable(0..<4) == "OggS" else {
            throw MediaError.invalidFormat(
                "expected an Ogg page ('OggS') at byte \(pageStart), found '\(header.printable(0..<4))'")
        }
        guard header[4] == 0 else {
            throw MediaError.invalidFormat(
                "Ogg page \(pageIndex) at byte \(pageStart) has version \(header[4]); 0 expected")
        }
        let flags = header[5]
        let granule = Int64(bitPattern: header.le64(6))
        let pageSerial = header.le32(14)
        let sequence = header.le32(18)
        let storedCRC = header.le32(22)
        let segmentCount = Int(header[26])
        let lacing = try file.readBytes(segmentCount, what: "Ogg page \(pageIndex) segment table")
        let bodySize = lacing.reduce(0) { $0 + Int($1) }
        let body = try file.readBytes(bodySize, what: "Ogg page \(pageIndex) body (\(bodySize) bytes)")

        header[22] = 0
        header[23] = 0
        header[24] = 0
        header[25] = 0
        var crc = header.withUnsafeBytes { OggCRC.update(0, $0) }
        crc = lacing.withUnsafeBytes { OggCRC.update(crc, $0) }
        crc = body.withUnsafeBytes { OggCRC.update(crc, $0) }
        guard crc == storedCRC else {
            throw MediaError.invalidFormat(
                "Ogg page \(pageIndex) at byte \(pageStart) fails its checksum (stored \(hex(storedCRC)), computed \(hex(crc)))"
            )
        }
        if let serial {
            guard pageSerial == serial else {
                throw MediaError.unsupported(
                    (flags & 0x02) != 0
                        ? "Ogg file holds several logical streams (serial \(hex(pageSerial)) starts at byte \(pageStart)); only single-stream files are supported"
                        : "Ogg page at byte \(pageStart) belongs to another logical stream (serial \(hex(pageSerial))); multiplexed files are not supported"
                )
            }
            guard (flags & 0x02) == 0 else {
                throw MediaError.invalidFormat(
                    "Ogg page \(pageIndex) at byte \(pageStart) repeats the beginning-of-stream flag")
            }
            guard sequence == nextSequence else {
                throw MediaError.invalidFormat(
                    "Ogg page sequence jumps from \(nextSequence &- 1) to \(sequence) at byte \(pageStart) (a page is missing)"
                )
            }
        } else {
            guard (flags & 0x02) != 0 else {
                throw MediaError.invalidFormat("the first Ogg page lacks the beginning-of-stream flag")
            }
            serial = pageSerial
        }
        nextSequence = sequence &+ 1

        let continued = (flags & 0x01) != 0
        if continued != partialOpen {
            throw MediaError.invalidFormat(
                continued
                    ? "Ogg page \(pageIndex) at byte \(pageStart) continues a packet that no earlier page started"
                    : "Ogg page \(pageIndex) at byte \(pageStart) drops the packet that the previous page left unfinished"
            )
        }
        var offset = 0
        var lastComplete = -1
        for (index, value) in lacing.enumerated() {
            partial.append(contentsOf: body[offset..<offset + Int(value)])
            offset += Int(value)
            partialOpen = true
            guard partial.count <= OggPacketReader.maximumPacketBytes else {
                throw MediaError.invalidFormat(
                    "Ogg packet grows past \(OggPacketReader.maximumPacketBytes) bytes at page \(pageIndex)")
            }
            if value < 255 {
                ready.append(OggPacket(bytes: partial, granulePosition: -1, isLast: false))
                partial.removeAll(keepingCapacity: true)
                partialOpen = false
                lastComplete = index
            }
        }
        if lastComplete >= 0 { ready[ready.count - 1].granulePosition = granule }
        if (flags & 0x04) != 0 {
            sawEndOfStream = true
            if partialOpen { throw MediaError.invalidFormat("the end-of-stream page ends inside a packet") }
            if !ready.isEmpty { ready[ready.count - 1].isLast = true }
        }
        pageIndex += 1
        return true
    }

    private func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16, uppercase: true).leftPadded(to: 8) }
}
