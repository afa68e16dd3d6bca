import Foundation
import Testing

@testable import MediaPipeline

@Suite("Redundant audio (RFC 2198)")
struct AudioRedundancyTests {
    private func opus(_ bytes: [UInt8], milliseconds: Int64) -> EncodedFrame {
        EncodedFrame(
            bytes: bytes, codec: .opus, isKeyframe: true, timestampMicroseconds: milliseconds * 1000,
            durationMicroseconds: 20_000)
    }

    @Test("a packet repeating two earlier frames has the RFC 2198 layout, byte for byte")
    func layout() throws {
        var packetizer = try RTPPacketizer(
            codec: .opus, ssrc: 0x0102_0304, payloadType: RTPPayloadType.opus, firstSequenceNumber: 7,
            timestampOffset: 1000)
        let a = opus([0xA1, 0xA2, 0xA3], milliseconds: 0)
        let b = opus([0xB1, 0xB2, 0xB3, 0xB4, 0xB5], milliseconds: 20)
        let c = opus([0xC1, 0xC2], milliseconds: 40)
        let tooLarge = opus([UInt8](repeating: 0xEE, count: 1100), milliseconds: 30)
        var packets: [RTPPacket] = []
        try packetizer.packetize(c, redundantPayloadType: RTPPayloadType.red, earlier: [a, tooLarge, b][...]) {
            packets.append($0)
        }
        #expect(packets.count == 1)
        let packet = try #require(packets.first)
        #expect(packet.header.payloadType == 63)
        #expect(packet.header.sequenceNumber == 7)
        #expect(packet.header.timestamp == 1000 + 40 * 48)
        // Offsets in 48 kHz ticks: a is 1,920 back (0x780), b 960 (0x3C0); the 1,100-byte frame
        // does not fit the 10-bit length and is left out.
        let expected: [UInt8] =
            [0xEF, 0x1E, 0x00, 0x03]  // F=1, PT 111, offset 1920 (0x780 << 2 = 0x1E00), length 3
            + [0xEF, 0x0F, 0x00, 0x05]  // F=1, PT 111, offset 960 (0x3C0 << 2 = 0x0F00), length 5
            + [0x6F]  // F=0, PT 111: the primary
            + [0xA1, 0xA2, 0xA3, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xC1, 0xC2]
        #expect(packet.withUnsafePayload { Array($0) } == expected)

        var blocks: [AudioRedundancy.Block] = []
        try expected.withUnsafeBytes { payload in try AudioRedundancy.forEachBlock(in: payload) { blocks.append($0) } }
        #expect(
            blocks == [
                .init(payloadType: 111, timestampOffset: 1920, range: 9..<12, isPrimary: false),
                .init(payloadType: 111, timestampOffset: 960, range: 12..<17, isPrimary: false),
                .init(payloadType: 111, timestampOffset: 0, range: 17..<19, isPrimary: true),
            ])
    }

    @Test("a peer's RED packet gets the engine's payload types in every block header, and nothing past them")
    func blockPayloadTypesMapped() throws {
        var map = [UInt8](repeating: 0xFF, count: 128)
        map[100] = RTPPayloadType.opus  // the peer's Opus is 100
        // Two redundant blocks (Opus, and a payload type the peer did not describe), the primary.
        var payload: [UInt8] =
            [0xE4, 0x1E, 0x00, 0x02, 0x88, 0x0F, 0x00, 0x01, 0x64] + [0xE4, 0x64, 0x7F, 0x64, 0x64]
        payload.withUnsafeMutableBytes { AudioRedundancy.mapBlockPayloadTypes(in: $0, map) }
        #expect(payload == [0xEF, 0x1E, 0x00, 0x02, 0x88, 0x0F, 0x00, 0x01, 0x6F] + [0xE4, 0x64, 0x7F, 0x64, 0x64])
        var blocks: [AudioRedundancy.Block] = []
        try payload.withUnsafeBytes { try AudioRedundancy.forEachBlock(in: $0) { blocks.append($0) } }
        #expect(blocks.map(\.payloadType) == [111, 8, 111])
        // Cut inside a header: mapped as far as it goes, no read past the end.
        for length in 0..<9 {
            var cut = Array(payload.prefix(length))
            cut.withUnsafeMutableBytes { AudioRedundancy.mapBlockPayloadTypes(in: $0, map) }
            #expect(cut == Array(payload.prefix(length)))
        }
    }

    @Test("a truncated redundant payload is a typed error naming what is short")
    func truncated() {
        let cases: [[UInt8]] = [
            [],  // no header at all
            [0xEF, 0x0F],  // a redundant block header cut short
            [0xEF, 0x0F, 0x00, 0x64, 0x6F, 1, 2, 3],  // a 100-byte block with 3 bytes left
        ]
        for bytes in cases {
            do {
                try bytes.withUnsafeBytes { try AudioRedundancy.forEachBlock(in: $0) { _ in } }
                Issue.record("\(bytes) was read")
            } catch let error as MediaError {
                #expect(error.code == .invalidFormat)
                #expect("\(error)".contains("RED payload"))
            } catch {
                Issue.record("untyped error \(error)")
            }
        }
    }

    @Test("two packets lost in a row are played from the copies the next ones carry, sample for sample")
    func burstRebuiltExactly() throws {
        var settings = OpusEncoderConfiguration()
        settings.inbandForwardErrorCorrection = false
        let frames = try encodedTone(60, with: try OpusEncoder(configuration: settings))
        var packetizer = try RTPPacketizer(codec: .opus, ssrc: 9, payloadType: RTPPayloadType.opus)
        var packets: [RTPPacket] = []
        for index in frames.indices {
            try packetizer.packetize(
                frames[index], redundantPayloadType: RTPPayloadType.red, earlier: frames[max(0, index - 2)..<index]
            ) { packets.append($0) }
        }
        func play(dropping dropped: Set<Int>) throws -> (samples: [Int16], receiver: AudioReceiver) {
            let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
            var samples: [Int16] = []
            var next = 0
            for tick in 0..<140 {
                let now = Int64(tick) * 10_000
                while next < packets.count, Int64(next) * 20_000 <= now {
                    if !dropped.contains(next) { _ = receiver.receive(packets[next], now: Int64(next) * 20_000) }
                    next += 1
                }
                _ = receiver.produce(now: now, concealUpToMicroseconds: 100_000)
                samples += Array(receiver.frame)
            }
            return (samples, receiver)
        }
        // Both runs conceal alike after the last packet; nothing else.
        let (ideal, lossless) = try play(dropping: [])
        let (rebuilt, receiver) = try play(dropping: [30, 31])
        #expect(receiver.counters.packetsRecovered == 2)
        #expect(receiver.counters.concealedTicks == lossless.counters.concealedTicks)
        #expect(receiver.packetsLost == 2)
        #expect(rebuilt == ideal)
        #expect(ideal.contains { $0 != 0 })
    }
}

@Suite("In-band FEC and the jitter buffer")
struct InBandRedundancyDelayTests {
    @Test(
        "under 10 % loss the buffer learns to hold a packet until the next one's FEC can rebuild it; without FEC it does not"
    )
    func targetCoversFEC() throws {
        var settings = OpusEncoderConfiguration()
        settings.application = .voip
        settings.bitrateBitsPerSecond = 32000
        settings.inbandForwardErrorCorrection = true
        settings.expectedPacketLossPercent = 10
        let withFEC = try encodedTone(300, with: try OpusEncoder(configuration: settings))
        settings.inbandForwardErrorCorrection = false
        let withoutFEC = try encodedTone(300, with: try OpusEncoder(configuration: settings))
        func run(_ frames: [EncodedFrame]) throws -> AudioReceiver {
            var packetizer = try RTPPacketizer(codec: .opus, ssrc: 9, payloadType: RTPPayloadType.opus)
            var packets: [RTPPacket] = []
            for frame in frames { try packetizer.packetize(frame) { packets.append($0) } }
            let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
            var next = 0
            // Every packet on time (no jitter at all); every tenth lost, from packet 20 on.
            for tick in 0..<(2 * packets.count) {
                let now = Int64(tick) * 10_000
                while next < packets.count, Int64(next) * 20_000 <= now {
                    if next < 20 || next % 10 != 5 { _ = receiver.receive(packets[next], now: Int64(next) * 20_000) }
                    next += 1
                }
                _ = receiver.produce(now: now, concealUpToMicroseconds: 100_000)
            }
            return receiver
        }
        let fec = try run(withFEC)
        let plain = try run(withoutFEC)
        // 28 packets lost (25, 35, …, 295). With FEC the target covers the next packet's 20 ms
        // (so a lost packet's time comes after its successor, which can rebuild it, has come);
        // without, it stays at what the (absent) jitter asks. Losses whose successor carries
        // LBRR (the tone's active frames) are rebuilt.
        #expect(fec.packetsLost == 28 && plain.packetsLost == 28)
        #expect(fec.targetDelayMicroseconds >= 20_000, "target \(fec.targetDelayMicroseconds) µs")
        #expect(plain.targetDelayMicroseconds < 20_000, "target \(plain.targetDelayMicroseconds) µs")
        #expect(fec.counters.packetsRecovered >= 15, "\(fec.counters.packetsRecovered) of 28 rebuilt")
        #expect(plain.counters.packetsRecovered == 0)
    }
}
