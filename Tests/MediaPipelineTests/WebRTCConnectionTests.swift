import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

/// What one side of a back-to-back pair received, in order.
private final class Received: Sendable {
    let rtp = LockedValue<[[UInt8]]>([])
    let rtcp = LockedValue<[[UInt8]]>([])
    let states = LockedValue<[WebRTCConnection.State]>([])

    var handlers: WebRTCConnection.Handlers {
        .init(
            rtp: { bytes in self.rtp.withLock { $0.append(Array(bytes)) } },
            rtcp: { bytes in self.rtcp.withLock { $0.append(Array(bytes)) } },
            state: { state in self.states.withLock { $0.append(state) } })
    }
}

/// Polls `condition` every 5 ms until it holds or `seconds` pass; true when it held.
private func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// Two connections on 127.0.0.1 wired to each other: `a` controls ICE and is the DTLS client,
/// `b` the controlled side and the DTLS server.
private struct ConnectedPair {
    let a: WebRTCConnection, b: WebRTCConnection
    let receivedByA = Received(), receivedByB = Received()

    init(bFingerprint: String? = nil) throws {
        let pair = try WebRTCConnection.LoopbackPair(
            a: receivedByA.handlers, b: receivedByB.handlers, bFingerprint: bFingerprint)
        (a, b) = (pair.a, pair.b)
    }
}

/// An RTP packet of `payloadBytes` bytes (a counting pattern from `seed`).
private func packet(sequence: UInt16, payloadType: UInt8 = 96, payloadBytes: Int = 1_000, seed: UInt8 = 0)
    throws -> RTPPacket
{
    var bytes = [UInt8](repeating: 0, count: RTPHeader.fixedByteCount + payloadBytes)
    bytes.withUnsafeMutableBytes { buffer in
        RTPHeader(
            marker: false, payloadType: payloadType, sequenceNumber: sequence, timestamp: 90_000,
            ssrc: 0x1234_5678
        ).write(into: buffer)
    }
    for index in RTPHeader.fixedByteCount..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index) &+ seed }
    return try RTPPacket(bytes)
}

@Suite("WebRTC connection: ICE, DTLS-SRTP and RFC 7983 demultiplexing back to back")
struct WebRTCConnectionTests {
    @Test("two connections agree keys; RTP and RTCP cross protected and arrive as sent, payload type rewritten")
    func mediaCrosses() throws {
        let pair = try ConnectedPair()
        defer {
            pair.a.close()
            pair.b.close()
        }
        #expect(eventually { pair.a.isConnected && pair.b.isConnected })
        #expect(pair.receivedByA.states.withLock { $0.last } == .connected)
        #expect(pair.receivedByB.states.withLock { $0.last } == .connected)

        var sent: [[UInt8]] = []
        for sequence in 0..<50 {
            let original = try packet(sequence: UInt16(sequence), seed: UInt8(sequence))
            #expect(pair.a.sendRTP(original, payloadType: 100))
            var expected = original.bytes
            expected[1] = expected[1] & 0x80 | 100
            sent.append(expected)
            // The caller's packet is left as it was (it may go to other connections too).
            #expect(original.header.payloadType == 96)
            #expect(original.bytes[1] & 0x7F == 96)
        }
        #expect(eventually { pair.receivedByB.rtp.withLock { $0.count } == 50 })
        #expect(pair.receivedByB.rtp.withLock { $0 } == sent)

        // RTCP both ways: a receiver report and a PLI.
        let report = RTCPCompound.serialize([.receiverReport(ssrc: 7, reports: [])])
        let pli = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: 7, mediaSSRC: 0x1234_5678)])
        report.withUnsafeBytes { #expect(pair.b.sendRTCP($0)) }
        pli.withUnsafeBytes { #expect(pair.a.sendRTCP($0)) }
        #expect(eventually { pair.receivedByA.rtcp.withLock { $0.count } == 1 })
        #expect(eventually { pair.receivedByB.rtcp.withLock { $0.count } == 1 })
        #expect(pair.receivedByA.rtcp.withLock { $0 } == [report])
        #expect(pair.receivedByB.rtcp.withLock { $0 } == [pli])

        let statisticsA = pair.a.statistics
        #expect(statisticsA.rtpSent == 50)
        #expect(statisticsA.rtcpSent == 1)
        #expect(pair.b.statistics.rtpReceived == 50)
        #expect(pair.b.statistics.unprotectFailures == 0)
    }

    @Test("a simulcast encoding's extension block goes after the header; a packet with an extension keeps its own")
    func extensionBlockInserted() throws {
        let pair = try ConnectedPair()
        defer {
            pair.a.close()
            pair.b.close()
        }
        #expect(eventually { pair.a.isConnected && pair.b.isConnected })
        let block = try RTPOneByteExtensionBlock([(1, "1"), (2, "l")]).bytes
        let plain = try packet(sequence: 7, payloadBytes: 300, seed: 3)
        #expect(pair.a.sendRTP(plain, payloadType: 100, extensionBlock: block))
        // One that has an extension already (profile 0xBEDE, one word: element 5 = "x"); its own
        // sequence number (SRTP drops a replayed one).
        var extended = plain.bytes
        extended[0] |= 0x10
        extended[3] = 8
        extended.insert(contentsOf: [0xBE, 0xDE, 0, 1, 0x50, UInt8(ascii: "x"), 0, 0], at: RTPHeader.fixedByteCount)
        #expect(pair.a.sendRTP(try RTPPacket(extended), payloadType: 100, extensionBlock: block))
        #expect(eventually { pair.receivedByB.rtp.withLock { $0.count } == 2 })
        let received = pair.receivedByB.rtp.withLock { $0 }
        try #require(received.count == 2)

        // The first: X set, the block between the fixed header and the payload, byte for byte.
        var expected =
            Array(plain.bytes[..<RTPHeader.fixedByteCount]) + block
            + Array(plain.bytes[RTPHeader.fixedByteCount...])
        expected[0] |= 0x10
        expected[1] = expected[1] & 0x80 | 100
        #expect(received[0] == expected)
        let header = try received[0].withUnsafeBytes { try RTPHeader(parsing: $0) }
        #expect(header.byteCount == RTPHeader.fixedByteCount + 8 && header.sequenceNumber == 7)
        received[0].withUnsafeBytes { bytes in
            #expect(oneByteExtensionValue(1, in: bytes) == Array("1".utf8))
            #expect(oneByteExtensionValue(2, in: bytes) == Array("l".utf8))
            #expect(oneByteExtensionValue(3, in: bytes) == nil)
        }
        // The second: as it was, its own extension kept.
        var expectedExtended = extended
        expectedExtended[1] = expectedExtended[1] & 0x80 | 100
        #expect(received[1] == expectedExtended)
        received[1].withUnsafeBytes { bytes in
            #expect(oneByteExtensionValue(5, in: bytes) == Array("x".utf8))
            #expect(oneByteExtensionValue(2, in: bytes) == nil)
        }
    }

    @Test("redundant audio to a peer that took Opus alone goes as its primary block, as plain Opus")
    func redundantAudioAsPrimary() throws {
        let pair = try ConnectedPair()
        defer {
            pair.a.close()
            pair.b.close()
        }
        #expect(eventually { pair.a.isConnected && pair.b.isConnected })
        // RFC 2198: one redundant block (Opus, 960 ticks back, 3 bytes), then the primary (5 bytes).
        let redundant: [UInt8] = [0xA1, 0xA2, 0xA3]
        let primary: [UInt8] = [1, 2, 3, 4, 5]
        let payload: [UInt8] =
            [0x80 | 111, UInt8(960 >> 6), UInt8((960 & 0x3F) << 2), UInt8(redundant.count), 111] + redundant + primary
        var bytes = [UInt8](repeating: 0, count: RTPHeader.fixedByteCount)
        let header = RTPHeader(
            marker: false, payloadType: RTPPayloadType.red, sequenceNumber: 7, timestamp: 48_000, ssrc: 0xABCD)
        bytes.withUnsafeMutableBytes { header.write(into: $0) }
        let red = try RTPPacket(bytes + payload)
        var map = [UInt8](repeating: PayloadTypeMap.none, count: 128)
        map[Int(RTPPayloadType.opus)] = 109  // the peer's number for Opus; no RED agreed
        JanusPublication(connection: pair.a, wirePayloadType: map).send(red)
        #expect(eventually { pair.receivedByB.rtp.withLock { $0.count } == 1 })
        var expected = bytes + primary
        expected[1] = 109
        #expect(pair.receivedByB.rtp.withLock { $0.first } == expected)
        // A payload type agreed on neither side is not sent at all.
        JanusPublication(connection: pair.a, wirePayloadType: map).send(try packet(sequence: 8, payloadType: 96))
        #expect(pair.a.statistics.rtpSent == 1)
    }

    @Test("a wrong fingerprint fails the connection: no keys, nothing sent")
    func wrongFingerprint() throws {
        let other = try DTLSCertificate.generate()
        let pair = try ConnectedPair(bFingerprint: other.fingerprint)
        defer {
            pair.a.close()
            pair.b.close()
        }
        #expect(
            eventually {
                pair.receivedByA.states.withLock { states in
                    states.contains { if case .failed = $0 { true } else { false } }
                }
            })
        #expect(!pair.a.isConnected)
        #expect(!pair.a.sendRTP(try packet(sequence: 1), payloadType: 96))
        #expect(pair.a.statistics.sendFailures == 1)
    }

    @Test("nothing is sent before the keys; after close nothing is sent or handed on")
    func beforeAndAfter() throws {
        let pair = try ConnectedPair()
        #expect(eventually { pair.a.isConnected && pair.b.isConnected })
        pair.b.close()
        #expect(!pair.b.isConnected)
        #expect(!pair.b.sendRTP(try packet(sequence: 1), payloadType: 96))
        let before = pair.receivedByB.rtp.withLock { $0.count }
        for sequence in 0..<10 { pair.a.sendRTP(try packet(sequence: UInt16(sequence)), payloadType: 96) }
        usleep(50_000)
        #expect(pair.receivedByB.rtp.withLock { $0.count } == before)
        pair.a.close()
        pair.a.close()  // idempotent
    }
}
