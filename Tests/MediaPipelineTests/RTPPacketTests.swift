import Foundation
import Testing

@testable import MediaPipeline

/// Bytes of a parsed descriptor or header written through `write`.
private func written(_ count: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0xEE, count: count + 4)
    let used = bytes.withUnsafeMutableBytes { write($0) }
    return Array(bytes[..<used])
}

@Suite("RTP header and payload descriptors")
struct RTPWireFormatTests {
    @Test("the RTP header reads RFC 3550's layout: CSRCs, extension and padding skipped")
    func header() throws {
        // V=2 P=1 X=1 CC=1 | M=1 PT=111 | seq 0xABCD | ts 0x01020304 | ssrc 0xDEADBEEF | 1 CSRC |
        // extension: profile 0xBEDE, 1 word | payload 3 bytes | padding 2 (last byte = count).
        let bytes: [UInt8] =
            [0xB1, 0xEF, 0xAB, 0xCD, 0x01, 0x02, 0x03, 0x04, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 9]
            + [0xBE, 0xDE, 0x00, 0x01, 1, 2, 3, 4] + [0x55, 0x66, 0x77] + [0x00, 0x02]
        let packet = try RTPPacket(bytes)
        #expect(packet.header.marker)
        #expect(packet.header.payloadType == 111)
        #expect(packet.header.sequenceNumber == 0xABCD)
        #expect(packet.header.timestamp == 0x0102_0304)
        #expect(packet.header.ssrc == 0xDEAD_BEEF)
        #expect(packet.header.byteCount == 24)
        #expect(packet.withUnsafePayload { Array($0) } == [0x55, 0x66, 0x77])

        let plain = RTPHeader(marker: false, payloadType: 96, sequenceNumber: 65535, timestamp: 90000, ssrc: 7)
        #expect(
            written(12) {
                plain.write(into: $0)
                return 12
            } == [0x80, 96, 0xFF, 0xFF, 0, 1, 0x5F, 0x90, 0, 0, 0, 7])
    }

    @Test("broken RTP headers are typed errors naming what is wrong")
    func brokenHeaders() {
        let good: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xAA]
        for length in 0..<12 {
            #expect(throws: MediaError.self) { try RTPPacket(Array(good[..<length])) }
        }
        #expect { try RTPPacket([0x40] + good.dropFirst()) } throws: { ($0 as? MediaError)?.code == .invalidFormat }
        // Two CSRCs announced, none present; an extension longer than the packet; padding past the payload.
        #expect { try RTPPacket([0x82] + good.dropFirst()) } throws: { ($0 as? MediaError)?.code == .truncated }
        #expect { try RTPPacket([0x90] + good.dropFirst().dropLast() + [0xBE, 0xDE, 0, 9]) } throws: {
            ($0 as? MediaError)?.code == .truncated
        }
        #expect { try RTPPacket([0xA0] + good.dropFirst(1).dropLast() + [40]) } throws: {
            ($0 as? MediaError)?.message.contains("padding count 40") == true
        }
    }

    @Test("VP8 descriptors follow RFC 7741 4.2: X, N, S, PID, I with M, L, T, K")
    func vp8Descriptor() throws {
        var descriptor = VP8PayloadDescriptor()
        descriptor.startOfPartition = true
        descriptor.pictureId = 0x1234
        // X=1 S=1 PID=0 | I=1 | M=1 + 15-bit 0x1234
        #expect(written(4) { descriptor.write(into: $0) } == [0x90, 0x80, 0x92, 0x34])
        descriptor.pictureIdIs15Bit = false
        descriptor.pictureId = 0x55
        #expect(written(3) { descriptor.write(into: $0) } == [0x90, 0x80, 0x55])

        // Every optional field: X N S PID=3 | I L T K | 15-bit 0x7FFF | TL0PICIDX 9 | TID 2 Y KEYIDX 5
        let full: [UInt8] = [0xB3, 0xF0, 0xFF, 0xFF, 0x09, 0xA5, 0x42]
        let parsed = try full.withUnsafeBytes { try VP8PayloadDescriptor(parsing: $0) }
        #expect(parsed.nonReference && parsed.startOfPartition && parsed.partitionIndex == 3)
        #expect(parsed.pictureId == 0x7FFF && parsed.pictureIdIs15Bit)
        #expect(parsed.temporalLayerZeroIndex == 9)
        #expect(parsed.temporalLayerId == 2 && parsed.layerSync && parsed.keyIndex == 5)
        #expect(parsed.byteCount == 6)
        #expect(written(6) { parsed.write(into: $0) } == Array(full[..<6]))
        #expect(!parsed.startsFrame)
        for length in 0..<7 {
            #expect(throws: MediaError.self) {
                try Array(full[..<length]).withUnsafeBytes { try VP8PayloadDescriptor(parsing: $0) }
            }
        }
    }

    @Test("VP9 descriptors follow RFC 9628 4.2: I P L F B E V Z, layer indices, P_DIFFs, scalability structure")
    func vp9Descriptor() throws {
        // Non-flexible keyframe start with SS: I=1 L=1 B=1 V=1 | M + 15-bit 0x0102 | TID 2 U SID 1 D | TL0PICIDX 7 |
        // SS: N_S=0 Y=1 G=1 | 640 | 360 | N_G=1 | TID 0 U=0 R=1 | P_DIFF 1 | frame data
        let keyframe: [UInt8] = [
            0xAA, 0x81, 0x02, 0x53, 0x07, 0x18, 0x02, 0x80, 0x01, 0x68, 0x01, 0x04, 0x01, 0xFF,
        ]
        let parsed = try keyframe.withUnsafeBytes { try VP9PayloadDescriptor(parsing: $0) }
        #expect(!parsed.interPicturePredicted && !parsed.flexibleMode && parsed.startOfFrame && !parsed.endOfFrame)
        #expect(parsed.pictureId == 0x0102)
        #expect(
            parsed.layer
                == .init(temporalId: 2, switchingUpPoint: true, spatialId: 1, interLayerDependency: true))
        #expect(parsed.temporalLayerZeroIndex == 7)
        let structure = try #require(parsed.scalability)
        #expect(structure.spatialLayerCount == 1)
        #expect(structure.sizes.count == 1 && structure.sizes[0] == (640, 360))
        #expect(structure.pictureGroup?.count == 1 && structure.pictureGroup?[0].references == [1])
        #expect(parsed.byteCount == 13)
        #expect(written(13) { parsed.write(into: $0) } == Array(keyframe[..<13]))

        // Flexible mode, predicted, end of frame: I P F E (7-bit PictureID 5) | P_DIFF 1 N=1 | P_DIFF 3 N=0 | data
        let flexible: [UInt8] = [0xD4, 0x05, 0x03, 0x06, 0xAB]
        let predicted = try flexible.withUnsafeBytes { try VP9PayloadDescriptor(parsing: $0) }
        #expect(predicted.interPicturePredicted && predicted.flexibleMode && predicted.endOfFrame)
        #expect(predicted.pictureId == 5 && !predicted.pictureIdIs15Bit)
        #expect(predicted.referenceDifferences == [1, 3])
        #expect(written(4) { predicted.write(into: $0) } == Array(flexible[..<4]))
        // Four P_DIFFs is one too many.
        let tooMany: [UInt8] = [0xD4, 0x05, 0x03, 0x03, 0x03, 0x02, 0xAB]
        #expect { try tooMany.withUnsafeBytes { try VP9PayloadDescriptor(parsing: $0) } } throws: {
            ($0 as? MediaError)?.code == .invalidFormat
        }
        for length in 0..<keyframe.count {
            #expect(throws: MediaError.self) {
                try Array(keyframe[..<length]).withUnsafeBytes { try VP9PayloadDescriptor(parsing: $0) }
            }
        }
    }

    @Test("sequence numbers and timestamps unwrap across 65535 and 2^32, packets from before the wrap stay old")
    func unwrapping() {
        var sequences = SequenceUnwrapper()
        let values: [UInt16] = [65533, 65534, 65535, 0, 65535, 1, 2]
        let unwrapped = values.map { sequences.unwrap($0) }
        let base = unwrapped[0]
        #expect(unwrapped.map { $0 - base } == [0, 1, 2, 3, 2, 4, 5])
        var timestamps = TimestampUnwrapper()
        let t0 = timestamps.unwrap(UInt32.max - 100)
        #expect(timestamps.unwrap(50) - t0 == 151)
        #expect(timestamps.unwrap(UInt32.max) - t0 == 100)
    }
}

@Suite("RTCP messages")
struct RTCPTests {
    @Test("PLI, FIR, NACK, SR, RR and BYE have RFC 3550, 4585 and 5104 layouts and read back")
    func layouts() throws {
        let pli = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: 0x0102_0304, mediaSSRC: 0x0A0B_0C0D)])
        #expect(pli == [0x81, 206, 0, 2, 1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D])

        let fir = RTCPCompound.serialize([
            .fullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 0x0A0B_0C0D, sequenceNumber: 7)])
        ])
        #expect(fir == [0x84, 206, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 7, 0, 0, 0])

        // 100 with 101 and 103 in its bitmask; 117 is 17 past 100, so it opens an entry; 65535
        // and 0 across the wrap share one.
        let nack = RTCPCompound.serialize([
            .nack(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [100, 101, 103, 117, 65535, 0])
        ])
        #expect(
            nack == [0x81, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 100, 0x00, 0x05, 0, 117, 0, 0, 0xFF, 0xFF, 0, 1])
        let block = RTCPReportBlock(
            ssrc: 9, fractionLost: 64, cumulativeLost: -3, extendedHighestSequenceNumber: 0x0001_0005, jitter: 120,
            lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 65536)
        let report = RTCPCompound.serialize([.receiverReport(ssrc: 5, reports: [block])])
        #expect(report.count == 32 && Array(report[..<4]) == [0x81, 201, 0, 7])
        #expect(Array(report[12..<16]) == [64, 0xFF, 0xFF, 0xFD])  // fraction, then -3 in 24 bits

        let messages: [RTCPPacket] = [
            .senderReport(
                ssrc: 5, ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 48000, packetCount: 10, octetCount: 1000,
                reports: [block]),
            .receiverReport(ssrc: 6, reports: []),
            .nack(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [65535, 0, 3]),
            .pictureLossIndication(senderSSRC: 1, mediaSSRC: 2),
            .fullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 2, sequenceNumber: 255)]),
            .bye(ssrcs: [5, 6]),
        ]
        let compound = RTCPCompound.serialize(messages)
        #expect(try compound.withUnsafeBytes { try RTCPCompound.parse($0) } == messages)
        // An SDES message is read past.
        let sdes: [UInt8] = [0x81, 202, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0]
        #expect(
            try (sdes + pli).withUnsafeBytes { try RTCPCompound.parse($0) }.first == .other(packetType: 202, format: 1))
    }

    @Test("NACKs written in recycled storage match RFC 4585's layout; XR RRTR and DLRR follow RFC 3611")
    func feedbackWriters() throws {
        var recycler = ByteRecycler(slotCount: 2, capacity: 64)
        // The same numbers as the hand-checked NACK above, in the order a tracker gives them.
        let lost: [UInt16] = [65535, 0, 100, 101, 103, 117]
        let nack = lost.withUnsafeBufferPointer {
            RTCPCompound.nack(senderSSRC: 1, mediaSSRC: 2, lost: $0, in: &recycler)
        }
        #expect(
            nack == [0x81, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFF, 0, 1, 0, 100, 0x00, 0x05, 0, 117, 0, 0])
        #expect(
            try nack.withUnsafeBytes { try RTCPCompound.parse($0) }
                == [.nack(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: lost)])
        // RRTR: BT 4, length 2, then the NTP time (RFC 3611 4.4), after the receiver report.
        let report = RTCPCompound.receiverReport(
            ssrc: 6, nil, nil, referenceTime: 0x0102_0304_0506_0708, in: &recycler)
        #expect(
            report == [0x80, 201, 0, 1, 0, 0, 0, 6, 0x80, 207, 0, 4, 0, 0, 0, 6, 4, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8])
        // DLRR: BT 5, length 3 per receiver, then SSRC, LRR, DLRR (RFC 3611 4.5).
        let answer = RTCPCompound.delaySinceLastReceiverReport(
            ssrc: 9, .init(ssrc: 6, lastReceiverReport: 0x0304_0506, delay: 0x10000), in: &recycler)
        #expect(answer == [0x80, 207, 0, 5, 0, 0, 0, 9, 5, 0, 0, 3, 0, 0, 0, 6, 3, 4, 5, 6, 0, 1, 0, 0])
        let messages: [RTCPPacket] = [
            .receiverReport(ssrc: 6, reports: []),
            .extendedReport(
                senderSSRC: 6, receiverReferenceTime: 0x0102_0304_0506_0708, delaySinceLastReceiverReports: []),
        ]
        #expect(try report.withUnsafeBytes { try RTCPCompound.parse($0) } == messages)
        let both = RTCPPacket.extendedReport(
            senderSSRC: 9, receiverReferenceTime: 7,
            delaySinceLastReceiverReports: [
                .init(ssrc: 6, lastReceiverReport: 1, delay: 2), .init(ssrc: 8, lastReceiverReport: 3, delay: 4),
            ])
        #expect(try RTCPCompound.serialize([both]).withUnsafeBytes { try RTCPCompound.parse($0) } == [both])
        // An XR block of an unknown type is read past; one longer than its message is an error.
        let unknown: [UInt8] = [0x80, 207, 0, 3, 0, 0, 0, 9, 42, 0, 0, 1, 0, 0, 0, 0]
        #expect(
            try unknown.withUnsafeBytes { try RTCPCompound.parse($0) }
                == [.extendedReport(senderSSRC: 9, receiverReferenceTime: nil, delaySinceLastReceiverReports: [])])
        let overlong: [UInt8] = [0x80, 207, 0, 2, 0, 0, 0, 9, 4, 0, 0, 2]
        #expect(throws: MediaError.self) { try overlong.withUnsafeBytes { try RTCPCompound.parse($0) } }
    }

    @Test("truncated or inconsistent RTCP is a typed error")
    func broken() {
        let report = RTCPCompound.serialize([
            .receiverReport(
                ssrc: 6,
                reports: [
                    .init(
                        ssrc: 1, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0, jitter: 0,
                        lastSenderReport: 0, delaySinceLastSenderReport: 0)
                ])
        ])
        for length in 0..<report.count {
            #expect(throws: MediaError.self) {
                try Array(report[..<length]).withUnsafeBytes { try RTCPCompound.parse($0) }
            }
        }
        // A report count larger than the message; an RTP packet given as RTCP.
        var lying = report
        lying[0] = 0x82
        #expect(throws: MediaError.self) { try lying.withUnsafeBytes { try RTCPCompound.parse($0) } }
        let rtp: [UInt8] = [0x40, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2]
        #expect(throws: MediaError.self) { try rtp.withUnsafeBytes { try RTCPCompound.parse($0) } }
    }
}
