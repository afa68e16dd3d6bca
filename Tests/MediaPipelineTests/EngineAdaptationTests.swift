import Foundation
import MediaPipelineTesting
import Synchronization
import Testing

@testable import MediaPipeline

/// What the publisher put on the wire, per second of the session: seen on its transport as
/// the packets leave (first sends only: retransmissions go another way).
private final class WireLog: Sendable {
    struct Second {
        var videoPayloadBytes = 0
        var audioPackets = 0
        /// Audio packets by how many earlier frames they repeat (RFC 2198 blocks before the
        /// primary one): plain Opus counts as 0.
        var audioByRedundancy = [0, 0, 0]
    }
    let seconds = LockedValue<[Int: Second]>([:])

    func record(_ packet: RTPPacket, at microseconds: Int64) {
        let second = Int(microseconds / 1_000_000)
        seconds.withLock { all in
            var entry = all[second] ?? Second()
            switch packet.header.payloadType {
            case RTPPayloadType.vp8, RTPPayloadType.vp9: entry.videoPayloadBytes += packet.payloadByteCount
            case RTPPayloadType.opus:
                entry.audioPackets += 1
                entry.audioByRedundancy[0] += 1
            case RTPPayloadType.red:
                entry.audioPackets += 1
                let blocks = packet.withUnsafePayload { Self.redundantBlocks($0) }
                entry.audioByRedundancy[min(2, blocks)] += 1
            default: break
            }
            all[second] = entry
        }
    }

    /// RFC 2198: a 4-byte header (F bit set) per redundant block, then a 1-byte final header.
    static func redundantBlocks(_ payload: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        var blocks = 0
        while offset < payload.count, payload[offset] & 0x80 != 0 {
            blocks += 1
            offset += 4
        }
        return blocks
    }

    func second(_ index: Int) -> Second { seconds.withLock { $0[index] ?? Second() } }
}

@Suite("Engine: the publisher adapts to the loss its subscribers report, and recovers", .timeLimit(.minutes(5)))
struct EngineAdaptationTests {
    /// A grainy 640x360 picture (a moving gradient with pseudo-random grain of 4 levels,
    /// seeded per frame): the encoder spends all the bitrate it is given on it, so the bytes on
    /// the wire follow the target.
    private func noise(frame: Int) throws -> I420Buffer {
        let buffer = try I420Buffer(width: 640, height: 360)
        var state = UInt64(frame) &* 0x9E37_79B9_7F4A_7C15 | 1
        buffer.withMutableView { view in
            for y in 0..<360 {
                for x in stride(from: 0, to: 640, by: 8) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    for i in 0..<8 {
                        let grain = Int(truncatingIfNeeded: (state >> (8 * i)) & 3)
                        view.y[y * view.strideY + x + i] = UInt8(
                            truncatingIfNeeded: (x + i) / 3 + y / 2 + frame * 2 + grain)
                    }
                }
            }
            for y in 0..<view.chromaHeight {
                for x in 0..<view.chromaWidth {
                    view.u[y * view.strideU + x] = 128
                    view.v[y * view.strideV + x] = 128
                }
            }
        }
        return buffer
    }

    @Test(
        "20 % loss for 8 s: the video bitrate on the wire falls, Opus FEC turns on and packets repeat two earlier frames; 20 s after the loss ends all three are back"
    )
    func lossAndRecovery() throws {
        let session = TestSession()
        let scripted = ScriptedTransport(hub: session.hub)
        let wire = WireLog()
        let clock = session.clock
        scripted.scriptPackets { packet, _ in
            wire.record(packet, at: clock.nowMicroseconds)
            return .deliver
        }
        let host = try session.user(transport: scripted)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        func fec() -> Bool {
            host.engine.local.withLock { ($0.audioEncoder as? OpusEncoder)?.inbandForwardErrorCorrection } ?? false
        }
        var fecBySecond: [Int: Bool] = [:]
        var targets: [Int] = []
        var tick = 0
        func run(seconds: Int) throws {
            for _ in 0..<seconds * 100 {
                try host.pushAudio()
                if tick % 7 == 0 {
                    try host.engine.pushVideo(try noise(frame: tick / 7), timestampMicroseconds: clock.nowMicroseconds)
                }
                viewer.pull()
                viewer.engine.renderVideo()
                clock.advance(byMicroseconds: 10_000)
                session.hub.deliverDue()
                tick += 1
                if tick % 100 == 0 {
                    fecBySecond[tick / 100 - 1] = fec()
                    targets.append(host.engine.rateControl.withLock { $0.videoBitsPerSecond / 1000 })
                }
            }
        }
        try session.hub.setLinkConditions(.init(delayMs: 20), channelId: "a", publisher: 1, receiver: 2)
        try run(seconds: 4)
        try session.hub.setLinkConditions(
            .init(lossPercent: 20, delayMs: 20), channelId: "a", publisher: 1, receiver: 2)
        try run(seconds: 8)
        try session.hub.setLinkConditions(.init(delayMs: 20), channelId: "a", publisher: 1, receiver: 2)
        try run(seconds: 20)

        let kbps = (0..<32).map { wire.second($0).videoPayloadBytes * 8 / 1000 }
        let redundancy = (0..<32).map { wire.second($0).audioByRedundancy }
        print("adaptation: video kbit/s on the wire by second \(kbps)")
        print("adaptation: video target kbit/s by second \(targets)")
        print("adaptation: audio packets by frames repeated (0, 1, 2) by second \(redundancy)")
        print("adaptation: Opus FEC by second \((0..<32).map { fecBySecond[$0] == true ? 1 : 0 })")

        // Before the loss: the configured 500 kbit/s (the wire within 15 %: libvpx's rate
        // control over one second), no FEC, plain Opus packets.
        for second in 2..<4 {
            #expect(targets[second] == 500 && abs(kbps[second] - 500) <= 75, "second \(second): \(kbps[second]) kbit/s")
            #expect(fecBySecond[second] == false && redundancy[second][1] + redundancy[second][2] == 0)
        }
        // Under 20 % loss (seconds 4-11): the target is cut by half the loss each 300 ms plus a
        // round trip while reports say more than 10 % (seeded: 500 to 200 kbit/s), and the
        // wire follows a second behind; FEC is on; once the smoothed loss passes 8 %, each
        // packet carries the two frames before it.
        #expect(targets[11] <= 250, "targets \(targets)")
        #expect(kbps[11...12].allSatisfy { $0 <= 300 }, "on the wire: \(kbps)")
        #expect((6..<12).allSatisfy { fecBySecond[$0] == true }, "FEC by second: \(fecBySecond)")
        #expect(
            (9..<12).allSatisfy { redundancy[$0][2] >= 40 },
            "packets repeating two frames: \(redundancy.map { $0[2] }) of 50 a second")
        // After it: reports of no loss turn FEC and the redundancy off within a few seconds
        // (the smoothed loss decays by 0.7 a report), and the target climbs 8 % a second back
        // to 500 kbit/s (seeded: by second 24), the wire with it.
        #expect((22..<32).allSatisfy { fecBySecond[$0] == false }, "FEC by second: \(fecBySecond)")
        #expect(
            (22..<32).allSatisfy { redundancy[$0][1] + redundancy[$0][2] == 0 },
            "redundant packets: \(redundancy.map { $0[1] + $0[2] })")
        #expect(targets[26...].allSatisfy { $0 == 500 }, "targets \(targets)")
        let lastFour = kbps[28..<32].reduce(0, +) / 4
        #expect(abs(lastFour - 500) <= 75, "the last four seconds: \(kbps[28..<32]) kbit/s")
    }
}
