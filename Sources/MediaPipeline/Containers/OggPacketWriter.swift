/// Writes the packets of one Ogg logical stream (RFC 3533) into pages: packets longer than a
/// page continue on the next, each page carries the granule position of the last packet it
/// completes, and the first and last pages carry the beginning- and end-of-stream flags.
final class OggPacketWriter {
    private let output: AtomicFileWriter
    private let serial: UInt32
    private var sequence: UInt32 = 0
    private var lacing: [UInt8] = []
    private var body: [UInt8] = []
    private var granule: Int64 = -1
    private var startsWithContinuation = false
    private var pageBuffer: [UInt8] = []

    init(output: AtomicFileWriter, serial: UInt32) {
        self.output = output
        self.serial = serial
    }

    /// Adds a packet ending at `granulePosition`. `flush` ends the page after it (as for header
    /// packets); `endOfStream` ends the stream with it.
    func write(_ packet: [UInt8], granulePosition: Int64, flush: Bool, endOfStream: Bool = false) throws {
        var offset = 0
        while true {
            if lacing.count == 255 {
                try emitPage(endOfStream: false)
                startsWithContinuation = offset > 0  // the page ended inside this packet
            }
            let value = min(255, packet.count - offset)
            lacing.append(UInt8(value))
            body.append(contentsOf: packet[offset..<offset + value])
            offset += value
            if value < 255 { break }
        }
        granule = granulePosition
        if flush || endOfStream { try emitPage(endOfStream: endOfStream) }
    }

    /// Writes the current page now, if it holds anything.
    func flush() throws { if !lacing.isEmpty { try emitPage(endOfStream: false) } }

    private func emitPage(endOfStream: Bool) throws {
        pageBuffer.removeAll(keepingCapacity: true)
        pageBuffer.appendASCII("OggS")
        pageBuffer.append(0)
        var flags: UInt8 = 0
        if startsWithContinuation { flags |= 0x01 }
        if sequence == 0 { flags |= 0x02 }
        if endOfStream { flags |= 0x04 }
        pageBuffer.append(flags)
        // A page on which no packet ends carries granule position -1 (RFC 3533 §6).
        let pageGranule = lacing.last == 255 ? -1 : granule
        pageBuffer.appendLE64(UInt64(bitPattern: pageGranule))
        pageBuffer.appendLE32(serial)
        pageBuffer.appendLE32(sequence)
        pageBuffer.appendLE32(0)
        pageBuffer.append(UInt8(lacing.count))
        pageBuffer.append(contentsOf: lacing)
        pageBuffer.append(contentsOf: body)
        let crc = pageBuffer.withUnsafeBytes { OggCRC.update(0, $0) }
        pageBuffer[22] = UInt8(crc & 0xFF)
        pageBuffer[23] = UInt8((crc >> 8) & 0xFF)
        pageBuffer[24] = UInt8((crc >> 16) & 0xFF)
        pageBuffer[25] = UInt8(crc >> 24)
        try output.write(pageBuffer)
        sequence &+= 1
        lacing.removeAll(keepingCapacity: true)
        body.removeAll(keepingCapacity: true)
        startsWithContinuation = false
    }
}
