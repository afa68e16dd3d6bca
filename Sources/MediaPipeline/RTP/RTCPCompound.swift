/// Reads and writes compound RTCP packets: the RTCP messages of one datagram, back to back,
/// each with its own 4-byte header (`V=2 P count/FMT | PT | length in 32-bit words minus one`).
public enum RTCPCompound {
    /// The messages in `bytes`. Messages of unknown types are returned as ``RTCPPacket/other(packetType:format:)``.
    /// - Throws: ``MediaError/Code/truncated`` when a message's length runs past the datagram or
    ///   its fields do not fit its length; ``MediaError/Code/invalidFormat`` for a version other
    ///   than 2, an RTP packet where RTCP was expected, or trailing bytes.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> [RTCPPacket] {
        var collector = Collector()
        try visit(bytes, &collector)
        return collector.packets
    }

    /// Walks the messages in `bytes`, telling `visitor` their fields as it goes: no message is
    /// built, so reading feedback allocates nothing. Throws as ``parse(_:)`` does; the visitor
    /// may have been told the messages before the fault.
    static func visit<Visitor: RTCPVisitor>(_ bytes: UnsafeRawBufferPointer, _ visitor: inout Visitor) throws {
        var offset = 0
        guard bytes.count >= 4 else {
            throw MediaError(.truncated, "RTCP datagram of \(bytes.count) bytes is shorter than one 4-byte header")
        }
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else {
                throw MediaError(.truncated, "RTCP datagram has \(bytes.count - offset) trailing bytes at \(offset)")
            }
            let first = bytes[offset]
            guard first >> 6 == 2 else {
                throw MediaError.invalidFormat("RTCP version \(first >> 6) at byte \(offset); only 2 exists")
            }
            let type = bytes[offset + 1]
            let length = (Int(bytes.uint16(at: offset + 2)) + 1) * 4
            guard offset + length <= bytes.count else {
                throw MediaError(
                    .truncated,
                    "RTCP message (type \(type)) of \(length) bytes at byte \(offset) runs past the datagram's \(bytes.count)"
                )
            }
            var body = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)])
            if first & 0x20 != 0 {
                let padding = Int(bytes[offset + length - 1])
                guard padding >= 1, padding <= body.count else {
                    throw MediaError.invalidFormat(
                        "RTCP padding count \(padding) exceeds its message's \(body.count) bytes")
                }
                body = UnsafeRawBufferPointer(rebasing: body[0..<(body.count - padding)])
            }
            try visitMessage(type: type, count: Int(first & 0x1F), body: body, &visitor)
            offset += length
        }
    }

    private static func visitMessage<Visitor: RTCPVisitor>(
        type: UInt8, count: Int, body: UnsafeRawBufferPointer, _ visitor: inout Visitor
    ) throws {
        // The description is built only for the error: reading RTCP allocates nothing.
        func need(_ bytes: Int, _ what: @autoclosure () -> String) throws {
            guard body.count >= bytes else {
                throw MediaError(
                    .truncated, "RTCP \(what()) needs \(bytes) bytes after its header; it has \(body.count)")
            }
        }
        func reportBlocks(at start: Int, from reporter: UInt32) {
            for index in 0..<count {
                let at = start + index * 24
                let lost = body.uint24(at: at + 5)
                visitor.reportBlock(
                    RTCPReportBlock(
                        ssrc: body.uint32(at: at), fractionLost: body[at + 4],
                        cumulativeLost: Int32(bitPattern: lost << 8) >> 8,  // 24-bit two's complement
                        extendedHighestSequenceNumber: body.uint32(at: at + 8), jitter: body.uint32(at: at + 12),
                        lastSenderReport: body.uint32(at: at + 16), delaySinceLastSenderReport: body.uint32(at: at + 20)
                    ),
                    from: reporter)
            }
        }
        switch type {
        case RTCPPacket.PacketType.senderReport:
            try need(24 + count * 24, "sender report with \(count) report blocks")
            let ssrc = body.uint32(at: 0)
            visitor.senderReport(
                ssrc: ssrc, ntpTimestamp: UInt64(body.uint32(at: 4)) << 32 | UInt64(body.uint32(at: 8)),
                rtpTimestamp: body.uint32(at: 12), packetCount: body.uint32(at: 16), octetCount: body.uint32(at: 20))
            reportBlocks(at: 24, from: ssrc)
        case RTCPPacket.PacketType.receiverReport:
            try need(4 + count * 24, "receiver report with \(count) report blocks")
            let ssrc = body.uint32(at: 0)
            visitor.receiverReport(ssrc: ssrc)
            reportBlocks(at: 4, from: ssrc)
        case RTCPPacket.PacketType.bye:
            try need(count * 4, "BYE with \(count) sources")
            visitor.bye(ssrcs: (0..<count).lazy.map { body.uint32(at: $0 * 4) })
        case RTCPPacket.PacketType.transportFeedback where count == 1:
            try need(8, "generic NACK")
            guard (body.count - 8) % 4 == 0 else {
                throw MediaError.invalidFormat(
                    "generic NACK has \(body.count - 8) bytes of entries, not a multiple of 4")
            }
            let (sender, media) = (body.uint32(at: 0), body.uint32(at: 4))
            visitor.nack(senderSSRC: sender, mediaSSRC: media)
            for entry in stride(from: 8, to: body.count, by: 4) {
                let packetId = body.uint16(at: entry)
                let bitmask = body.uint16(at: entry + 2)
                visitor.lost(packetId)
                for bit in 0..<16 where bitmask & (1 << bit) != 0 { visitor.lost(packetId &+ UInt16(bit + 1)) }
            }
        case RTCPPacket.PacketType.payloadFeedback where count == 1:
            try need(8, "picture loss indication")
            visitor.pictureLossIndication(senderSSRC: body.uint32(at: 0), mediaSSRC: body.uint32(at: 4))
        case RTCPPacket.PacketType.payloadFeedback where count == 4:
            try need(8, "full intra request")
            guard (body.count - 8) % 8 == 0 else {
                throw MediaError.invalidFormat(
                    "full intra request has \(body.count - 8) bytes of entries, not a multiple of 8")
            }
            let sender = body.uint32(at: 0)
            visitor.fullIntraRequest(senderSSRC: sender)
            for entry in stride(from: 8, to: body.count, by: 8) {
                visitor.fullIntraRequestEntry(
                    RTCPPacket.FullIntraRequestEntry(ssrc: body.uint32(at: entry), sequenceNumber: body[entry + 4]))
            }
        case RTCPPacket.PacketType.payloadFeedback
        where count == 15 && body.count >= 16 && body[8] == 0x52 && body[9] == 0x45 && body[10] == 0x4D
            && body[11] == 0x42:
            // REMB: sender, media 0, "REMB", SSRC count, 6-bit exponent and 18-bit mantissa, SSRCs.
            let sources = Int(body[12])
            try need(16 + sources * 4, "REMB with \(sources) SSRCs")
            let exponent = UInt64(body[13] >> 2)
            let mantissa = UInt64(body[13] & 0x03) << 16 | UInt64(body[14]) << 8 | UInt64(body[15])
            let bitsPerSecond = exponent > 46 ? UInt64.max : mantissa << exponent
            visitor.receiverEstimatedMaximumBitrate(
                bitsPerSecond: bitsPerSecond, ssrcs: (0..<sources).lazy.map { body.uint32(at: 16 + $0 * 4) })
        case RTCPPacket.PacketType.extendedReport:
            try need(4, "extended report")
            visitor.extendedReport(ssrc: body.uint32(at: 0))
            var at = 4
            while at < body.count {
                try need(at + 4, "extended report block header at byte \(at)")
                let blockType = body[at]
                let blockBytes = 4 + Int(body.uint16(at: at + 2)) * 4
                try need(
                    at + blockBytes, "extended report block (type \(blockType)) of \(blockBytes) bytes at byte \(at)")
                switch blockType {
                case 4:
                    guard blockBytes == 12 else {
                        throw MediaError.invalidFormat(
                            "XR receiver reference time block of \(blockBytes) bytes; it has 12")
                    }
                    visitor.receiverReferenceTime(
                        ntpTimestamp: UInt64(body.uint32(at: at + 4)) << 32 | UInt64(body.uint32(at: at + 8)))
                case 5:
                    guard (blockBytes - 4) % 12 == 0 else {
                        throw MediaError.invalidFormat(
                            "XR DLRR block has \(blockBytes - 4) bytes of sub-blocks, not a multiple of 12")
                    }
                    for item in stride(from: at + 4, to: at + blockBytes, by: 12) {
                        visitor.delaySinceLastReceiverReport(
                            RTCPPacket.DLRRItem(
                                ssrc: body.uint32(at: item), lastReceiverReport: body.uint32(at: item + 4),
                                delay: body.uint32(at: item + 8)))
                    }
                default:
                    break  // a block type this library does not use
                }
                at += blockBytes
            }
        default:
            visitor.other(packetType: type, format: UInt8(count))
        }
        visitor.endOfMessage()
    }

    /// Builds ``RTCPPacket`` values from a walk.
    private struct Collector: RTCPVisitor {
        var packets: [RTCPPacket] = []
        private var pending: RTCPPacket?
        private var blocks: [RTCPReportBlock] = []
        private var lostNumbers: [UInt16] = []
        private var entries: [RTCPPacket.FullIntraRequestEntry] = []
        private var referenceTime: UInt64?
        private var dlrr: [RTCPPacket.DLRRItem] = []

        mutating func senderReport(
            ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32
        ) {
            pending = .senderReport(
                ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp, packetCount: packetCount,
                octetCount: octetCount, reports: [])
        }
        mutating func receiverReport(ssrc: UInt32) { pending = .receiverReport(ssrc: ssrc, reports: []) }
        mutating func reportBlock(_ block: RTCPReportBlock, from reporter: UInt32) { blocks.append(block) }
        mutating func bye<Sources: Sequence<UInt32>>(ssrcs: Sources) { pending = .bye(ssrcs: Array(ssrcs)) }
        mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32) {
            pending = .nack(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, lostSequenceNumbers: [])
        }
        mutating func lost(_ sequenceNumber: UInt16) { lostNumbers.append(sequenceNumber) }
        mutating func pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32) {
            pending = .pictureLossIndication(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC)
        }
        mutating func fullIntraRequest(senderSSRC: UInt32) {
            pending = .fullIntraRequest(senderSSRC: senderSSRC, entries: [])
        }
        mutating func fullIntraRequestEntry(_ entry: RTCPPacket.FullIntraRequestEntry) { entries.append(entry) }
        mutating func extendedReport(ssrc: UInt32) {
            pending = .extendedReport(senderSSRC: ssrc, receiverReferenceTime: nil, delaySinceLastReceiverReports: [])
        }
        mutating func receiverReferenceTime(ntpTimestamp: UInt64) { referenceTime = ntpTimestamp }
        mutating func delaySinceLastReceiverReport(_ item: RTCPPacket.DLRRItem) { dlrr.append(item) }
        mutating func other(packetType: UInt8, format: UInt8) {
            pending = .other(packetType: packetType, format: format)
        }

        mutating func endOfMessage() {
            guard let message = pending else { return }
            switch message {
            case .senderReport(let ssrc, let ntp, let rtp, let packetCount, let octetCount, _):
                packets.append(
                    .senderReport(
                        ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packetCount,
                        octetCount: octetCount, reports: blocks))
            case .receiverReport(let ssrc, _): packets.append(.receiverReport(ssrc: ssrc, reports: blocks))
            case .nack(let sender, let media, _):
                packets.append(.nack(senderSSRC: sender, mediaSSRC: media, lostSequenceNumbers: lostNumbers))
            case .fullIntraRequest(let sender, _):
                packets.append(.fullIntraRequest(senderSSRC: sender, entries: entries))
            case .extendedReport(let sender, _, _):
                packets.append(
                    .extendedReport(
                        senderSSRC: sender, receiverReferenceTime: referenceTime, delaySinceLastReceiverReports: dlrr))
            default: packets.append(message)
            }
            pending = nil
            blocks = []
            lostNumbers = []
            entries = []
            referenceTime = nil
            dlrr = []
        }
    }

    /// The compound packet holding `packets` in order.
    /// - Precondition: a report holds at most 31 blocks, a BYE at most 31 sources;
    ///   ``RTCPPacket/other(packetType:format:)`` cannot be written.
    public static func serialize(_ packets: [RTCPPacket]) -> [UInt8] {
        var out: [UInt8] = []
        for packet in packets { append(packet, to: &out) }
        return out
    }

    private static func append(_ packet: RTCPPacket, to out: inout [UInt8]) {
        func header(_ count: Int, _ type: UInt8, bodyBytes: Int) {
            precondition(count < 32, "an RTCP message holds at most 31 items")
            out.append(0x80 | UInt8(count))
            out.append(type)
            appendUInt16(UInt16(bodyBytes / 4), to: &out)  // (4 + body) / 4 - 1
        }
        switch packet {
        case .senderReport(let ssrc, let ntp, let rtp, let packets, let octets, let reports):
            header(reports.count, RTCPPacket.PacketType.senderReport, bodyBytes: 24 + reports.count * 24)
            for word in [
                ssrc, UInt32(truncatingIfNeeded: ntp >> 32), UInt32(truncatingIfNeeded: ntp), rtp, packets, octets,
            ] {
                appendUInt32(word, to: &out)
            }
            for report in reports { appendReport(report, to: &out) }
        case .receiverReport(let ssrc, let reports):
            header(reports.count, RTCPPacket.PacketType.receiverReport, bodyBytes: 4 + reports.count * 24)
            appendUInt32(ssrc, to: &out)
            for report in reports { appendReport(report, to: &out) }
        case .bye(let ssrcs):
            header(ssrcs.count, RTCPPacket.PacketType.bye, bodyBytes: ssrcs.count * 4)
            for ssrc in ssrcs { appendUInt32(ssrc, to: &out) }
        case .nack(let sender, let media, let lost):
            let entries = nackEntries(lost)
            header(1, RTCPPacket.PacketType.transportFeedback, bodyBytes: 8 + entries.count * 4)
            appendUInt32(sender, to: &out)
            appendUInt32(media, to: &out)
            for (packetId, bitmask) in entries {
                appendUInt16(packetId, to: &out)
                appendUInt16(bitmask, to: &out)
            }
        case .pictureLossIndication(let sender, let media):
            header(1, RTCPPacket.PacketType.payloadFeedback, bodyBytes: 8)
            appendUInt32(sender, to: &out)
            appendUInt32(media, to: &out)
        case .fullIntraRequest(let sender, let entries):
            header(4, RTCPPacket.PacketType.payloadFeedback, bodyBytes: 8 + entries.count * 8)
            appendUInt32(sender, to: &out)
            appendUInt32(0, to: &out)  // media source: unused, set to 0 (RFC 5104 4.3.1.2)
            for entry in entries {
                appendUInt32(entry.ssrc, to: &out)
                out.append(entry.sequenceNumber)
                out.append(contentsOf: [0, 0, 0])
            }
        case .extendedReport(let sender, let referenceTime, let items):
            let blockBytes = (referenceTime == nil ? 0 : 12) + (items.isEmpty ? 0 : 4 + items.count * 12)
            header(0, RTCPPacket.PacketType.extendedReport, bodyBytes: 4 + blockBytes)
            appendUInt32(sender, to: &out)
            if let referenceTime {
                appendUInt32(4 << 24 | 2, to: &out)  // BT 4, reserved, length 2
                appendUInt32(UInt32(truncatingIfNeeded: referenceTime >> 32), to: &out)
                appendUInt32(UInt32(truncatingIfNeeded: referenceTime), to: &out)
            }
            if !items.isEmpty {
                appendUInt32(5 << 24 | UInt32(items.count * 3), to: &out)  // BT 5, reserved, length
                for item in items {
                    appendUInt32(item.ssrc, to: &out)
                    appendUInt32(item.lastReceiverReport, to: &out)
                    appendUInt32(item.delay, to: &out)
                }
            }
        case .other:
            preconditionFailure("an RTCP message of an unknown type cannot be written")
        }
    }

    /// Lost sequence numbers as (PID, BLP) pairs: each pair covers PID and the 16 numbers after
    /// it. Numbers are taken in wrap-aware order starting from the first given.
    static func nackEntries(_ lost: [UInt16]) -> [(UInt16, UInt16)] {
        guard let base = lost.first else { return [] }
        // Order by distance from the first number, so a list across a wrap stays in order.
        let ordered = Set(lost).sorted { ($0 &- base) < ($1 &- base) }
        var entries: [(UInt16, UInt16)] = []
        forEachNackEntry(ordered) { entries.append(($0, $1)) }
        return entries
    }

    /// Calls `body` with each (PID, BLP) entry of a generic NACK for `lost`, given in ascending
    /// wrap-aware order: an entry covers its number and, in its bitmask, the 16 after it.
    static func forEachNackEntry<Numbers: Sequence<UInt16>>(_ lost: Numbers, _ body: (UInt16, UInt16) -> Void) {
        var current: (packetId: UInt16, bitmask: UInt16)?
        for number in lost {
            if let entry = current, case let distance = number &- entry.packetId, distance <= 16 {
                if distance > 0 { current = (entry.packetId, entry.bitmask | 1 << (distance - 1)) }
                continue
            }
            if let entry = current { body(entry.packetId, entry.bitmask) }
            current = (number, 0)
        }
        if let entry = current { body(entry.packetId, entry.bitmask) }
    }

    private static func appendReport(_ report: RTCPReportBlock, to out: inout [UInt8]) {
        appendUInt32(report.ssrc, to: &out)
        let lost = UInt32(bitPattern: max(-0x80_0000, min(0x7F_FFFF, report.cumulativeLost))) & 0xFF_FFFF
        appendUInt32(UInt32(report.fractionLost) << 24 | lost, to: &out)
        appendUInt32(report.extendedHighestSequenceNumber, to: &out)
        appendUInt32(report.jitter, to: &out)
        appendUInt32(report.lastSenderReport, to: &out)
        appendUInt32(report.delaySinceLastSenderReport, to: &out)
    }

    private static func appendUInt16(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    private static func appendUInt32(_ value: UInt32, to out: inout [UInt8]) {
        appendUInt16(UInt16(truncatingIfNeeded: value >> 16), to: &out)
        appendUInt16(UInt16(truncatingIfNeeded: value), to: &out)
    }
}

// MARK: - Reports in recycled storage

extension RTCPCompound {
    /// A sender report without report blocks, written into `recycler`'s storage: what a
    /// publisher sends about each stream once a second, with no allocation.
    static func senderReport(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        in recycler: inout ByteRecycler
    ) -> [UInt8] {
        recycler.bytes(count: 28) { out in
            out[0] = 0x80
            out[1] = RTCPPacket.PacketType.senderReport
            out.put(UInt16(6), at: 2)
            out.put(ssrc, at: 4)
            out.put(UInt32(truncatingIfNeeded: ntpTimestamp >> 32), at: 8)
            out.put(UInt32(truncatingIfNeeded: ntpTimestamp), at: 12)
            out.put(rtpTimestamp, at: 16)
            out.put(packetCount, at: 20)
            out.put(octetCount, at: 24)
        }
    }

    /// A receiver report from `ssrc` with up to two report blocks (a user's audio and video),
    /// followed by an XR receiver reference time (RFC 3611 4.4) of `ntpTimestamp` when one is
    /// given (so that a receive-only endpoint learns its round trip), written into `recycler`'s
    /// storage.
    static func receiverReport(
        ssrc: UInt32, _ first: RTCPReportBlock?, _ second: RTCPReportBlock?, referenceTime ntpTimestamp: UInt64? = nil,
        in recycler: inout ByteRecycler
    ) -> [UInt8] {
        let count = (first == nil ? 0 : 1) + (second == nil ? 0 : 1)
        let reportBytes = 8 + count * 24
        return recycler.bytes(count: reportBytes + (ntpTimestamp == nil ? 0 : 20)) { out in
            if let ntpTimestamp {
                out[reportBytes] = 0x80
                out[reportBytes + 1] = RTCPPacket.PacketType.extendedReport
                out.put(UInt16(4), at: reportBytes + 2)
                out.put(ssrc, at: reportBytes + 4)
                out.put(UInt32(4 << 24 | 2), at: reportBytes + 8)
                out.put(UInt32(truncatingIfNeeded: ntpTimestamp >> 32), at: reportBytes + 12)
                out.put(UInt32(truncatingIfNeeded: ntpTimestamp), at: reportBytes + 16)
            }
            out[0] = 0x80 | UInt8(count)
            out[1] = RTCPPacket.PacketType.receiverReport
            out.put(UInt16(1 + count * 6), at: 2)
            out.put(ssrc, at: 4)
            var offset = 8
            func write(_ block: RTCPReportBlock?) {
                guard let block else { return }
                out.put(block.ssrc, at: offset)
                let lost = UInt32(bitPattern: max(-0x80_0000, min(0x7F_FFFF, block.cumulativeLost))) & 0xFF_FFFF
                out.put(UInt32(block.fractionLost) << 24 | lost, at: offset + 4)
                out.put(block.extendedHighestSequenceNumber, at: offset + 8)
                out.put(block.jitter, at: offset + 12)
                out.put(block.lastSenderReport, at: offset + 16)
                out.put(block.delaySinceLastSenderReport, at: offset + 20)
                offset += 24
            }
            write(first)
            write(second)
        }
    }

    /// An XR with one DLRR sub-block (RFC 3611 4.5) from `ssrc`: the answer to `item.ssrc`'s
    /// receiver reference time, written into `recycler`'s storage.
    static func delaySinceLastReceiverReport(ssrc: UInt32, _ item: RTCPPacket.DLRRItem, in recycler: inout ByteRecycler)
        -> [UInt8]
    {
        recycler.bytes(count: 24) { out in
            out[0] = 0x80
            out[1] = RTCPPacket.PacketType.extendedReport
            out.put(UInt16(5), at: 2)
            out.put(ssrc, at: 4)
            out.put(UInt32(5 << 24 | 3), at: 8)
            out.put(item.ssrc, at: 12)
            out.put(item.lastReceiverReport, at: 16)
            out.put(item.delay, at: 20)
        }
    }

    /// A generic NACK (RFC 4585 6.2.1) from `senderSSRC` for `mediaSSRC`'s packets `lost`
    /// (in ascending wrap-aware order, as a ``NackTracker`` gives them), written into
    /// `recycler`'s storage. Each 4-byte entry covers a packet and the 16 after it.
    static func nack(
        senderSSRC: UInt32, mediaSSRC: UInt32, lost: UnsafeBufferPointer<UInt16>, in recycler: inout ByteRecycler
    ) -> [UInt8] {
        var entries = 0
        forEachNackEntry(lost) { _, _ in entries += 1 }
        return recycler.bytes(count: 12 + entries * 4) { out in
            out[0] = 0x81
            out[1] = RTCPPacket.PacketType.transportFeedback
            out.put(UInt16(2 + entries), at: 2)
            out.put(senderSSRC, at: 4)
            out.put(mediaSSRC, at: 8)
            var offset = 12
            forEachNackEntry(lost) { packetId, bitmask in
                out.put(packetId, at: offset)
                out.put(bitmask, at: offset + 2)
                offset += 4
            }
        }
    }
}
