import Foundation
import Testing

@testable import MediaPipeline

/// An endpoint that records the RTP and RTCP it receives, with the clock time of arrival.
private final class Recorder: TransportEndpoint, @unchecked Sendable {
    let clock: VirtualClock
    private let lock = NSLock()
    private var arrivals: [(sequence: UInt16, atMicroseconds: Int64)] = []
    private var feedback = 0
    init(clock: VirtualClock) { self.clock = clock }
    var received: [(sequence: UInt16, atMicroseconds: Int64)] { lock.withLock { arrivals } }
    var feedbackReceived: Int { lock.withLock { feedback } }
    func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {}
    func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {}
    func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {}
    func transportReceive(_ packet: RTPPacket, stream: MediaStreamID) {
        lock.withLock { arrivals.append((packet.header.sequenceNumber, clock.nowMicroseconds)) }
    }
    func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        lock.withLock { feedback += 1 }
    }
    func transportConnectionStateChanged(channelId: String, state: ConnectionState, reason: ConnectionChangedReason) {}
}

/// A hub with a sender (uid 1) and a recording receiver (uid 2) in channel "n".
private struct Network {
    let clock = VirtualClock()
    let hub: LocalHub
    let sender: Recorder
    let receiver: Recorder

    init(seed: UInt64, conditions: LinkConditions) throws {
        hub = LocalHub(clock: clock, seed: seed)
        sender = Recorder(clock: clock)
        receiver = Recorder(clock: clock)
        _ = try hub.join(
            channelId: "n", uid: 1, role: .broadcaster, media: [.audio], receivesMedia: true, endpoint: sender)
        _ = try hub.join(
            channelId: "n", uid: 2, role: .audience, media: [], receivesMedia: true, endpoint: receiver)
        try hub.setLinkConditions(conditions, channelId: "n", publisher: 1, receiver: 2)
    }

    /// Sends `count` Opus-typed packets of `size` bytes, one every `intervalMs`, then lets 2 s pass.
    func run(count: Int, size: Int = 100, intervalMs: Int64 = 20) throws {
        for index in 0..<count {
            var bytes = [UInt8](repeating: 0, count: size)
            let header = RTPHeader(
                marker: false, payloadType: RTPPayloadType.opus, sequenceNumber: UInt16(truncatingIfNeeded: index),
                timestamp: UInt32(index) * 960, ssrc: 1)
            bytes.withUnsafeMutableBytes { header.write(into: $0) }
            hub.send(try RTPPacket(bytes), stream: .audio(channelId: "n", uid: 1))
            for _ in 0..<intervalMs {
                clock.advance(byMicroseconds: 1000)
                hub.deliverDue()
            }
        }
        for _ in 0..<2000 {
            clock.advance(byMicroseconds: 1000)
            hub.deliverDue()
        }
    }
}

@Suite("LocalHub as a simulated network")
struct LocalHubNetworkTests {
    @Test("the same seed loses the same packets; another seed loses others")
    func deterministic() throws {
        let conditions = LinkConditions(lossPercent: 10, jitterMs: 30)
        let first = try Network(seed: 42, conditions: conditions)
        let again = try Network(seed: 42, conditions: conditions)
        let other = try Network(seed: 43, conditions: conditions)
        for network in [first, again, other] { try network.run(count: 500) }
        #expect(first.receiver.received.map(\.sequence) == again.receiver.received.map(\.sequence))
        #expect(first.receiver.received.map(\.atMicroseconds) == again.receiver.received.map(\.atMicroseconds))
        #expect(first.receiver.received.map(\.sequence) != other.receiver.received.map(\.sequence))
    }

    @Test("uniform loss and Gilbert-Elliott bursts reach their loss rate and mean burst length")
    func lossModels() throws {
        for burst in [1.0, 3.0] {
            let network = try Network(seed: 5, conditions: LinkConditions(lossPercent: 10, meanBurstLength: burst))
            try network.run(count: 20_000, intervalMs: 1)
            let received = Set(network.receiver.received.map(\.sequence))
            var lostRuns: [Int] = []
            var run = 0
            for index in 0..<20_000 {
                if received.contains(UInt16(truncatingIfNeeded: index)) {
                    if run > 0 { lostRuns.append(run) }
                    run = 0
                } else {
                    run += 1
                }
            }
            let lossRate = 1 - Double(network.receiver.received.count) / 20_000
            let meanRun = Double(lostRuns.reduce(0, +)) / Double(lostRuns.count)
            #expect(abs(lossRate - 0.10) < 0.012, "burst \(burst): loss \(lossRate)")
            #expect(abs(meanRun - burst * (burst == 1 ? 1.11 : 1)) < 0.35, "burst \(burst): mean run \(meanRun)")
            let stats = try #require(
                network.hub.linkStatistics(channelId: "n", publisher: 1, receiver: 2))
            #expect(stats.packetsOffered == 20_000 && stats.packetsLost == Int64(20_000 - received.count))
        }
    }

    @Test("delay holds every packet exactly; jitter spreads and reorders; reordering and duplication at their rates")
    func timing() throws {
        let delayed = try Network(seed: 1, conditions: LinkConditions(delayMs: 40))
        try delayed.run(count: 100)
        #expect(delayed.receiver.received.enumerated().allSatisfy { $1.atMicroseconds == Int64($0) * 20_000 + 40_000 })

        let jittery = try Network(seed: 1, conditions: LinkConditions(delayMs: 50, jitterMs: 30))
        try jittery.run(count: 1000)
        let arrivals = jittery.receiver.received
        #expect(arrivals.count == 1000)
        let delays = arrivals.map { $0.atMicroseconds - Int64($0.sequence) * 20_000 }
        #expect(delays.allSatisfy { (20_000...80_000).contains($0) })
        #expect(zip(arrivals, arrivals.dropFirst()).contains { $0.sequence > $1.sequence }, "jitter never reordered")

        let reordered = try Network(seed: 2, conditions: LinkConditions(reorderPercent: 5))
        try reordered.run(count: 4000, intervalMs: 5)  // closer than the 20 ms a reordered packet waits
        let sequence = reordered.receiver.received.map(\.sequence)
        let overtaken = zip(sequence, sequence.dropFirst()).filter { $0 > $1 }.count
        #expect((150...250).contains(overtaken), "\(overtaken) of 4000 reordered")

        let duplicated = try Network(seed: 3, conditions: LinkConditions(duplicatePercent: 10))
        try duplicated.run(count: 4000)
        #expect((4_320...4_480).contains(duplicated.receiver.received.count))
    }

    @Test("a bandwidth cap spaces packets by their size and drops what would queue too long")
    func bandwidth() throws {
        // 100 kbit/s and 1,250-byte packets: 10 packets a second. 20 sent at once: the ones that
        // would wait over 500 ms are dropped.
        let network = try Network(
            seed: 1, conditions: LinkConditions(bandwidthBitsPerSecond: 100_000))
        try network.run(count: 20, size: 1250, intervalMs: 0)
        let times = network.receiver.received.map(\.atMicroseconds)
        #expect(times == (1...6).map { Int64($0) * 100_000 })
        let stats = try #require(network.hub.linkStatistics(channelId: "n", publisher: 1, receiver: 2))
        #expect(stats.packetsLost == 14)
    }

    @Test("feedback crosses the link the other way: an outage blocks it, delay holds it")
    func feedbackPath() throws {
        let blocked = try Network(seed: 1, conditions: LinkConditions(blocked: true))
        blocked.hub.sendRTCP([0x81, 206, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1], channelId: "n", from: 2, to: 1)
        #expect(blocked.sender.feedbackReceived == 0)
        let delayed = try Network(seed: 1, conditions: LinkConditions(delayMs: 30))
        delayed.hub.sendRTCP([0x81, 206, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1], channelId: "n", from: 2, to: 1)
        #expect(delayed.sender.feedbackReceived == 0)
        delayed.clock.advance(byMicroseconds: 30_000)
        delayed.hub.deliverDue()
        #expect(delayed.sender.feedbackReceived == 1)
    }

    @Test("conditions out of range, or delays without a clock, are refused naming the value")
    func refused() throws {
        let hub = LocalHub()
        #expect {
            try hub.setLinkConditions(.init(delayMs: 10), channelId: "n", publisher: 1, receiver: 2)
        } throws: { ($0 as? MediaError)?.message.contains("clock") == true }
        #expect {
            try hub.setLinkConditions(.init(lossPercent: 120), channelId: "n", publisher: 1, receiver: 2)
        } throws: { ($0 as? MediaError)?.message.contains("loss percent 120") == true }
    }
}
