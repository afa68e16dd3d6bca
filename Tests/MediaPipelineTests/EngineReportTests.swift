import Foundation
import MediaPipelineTesting
import Testing

@testable import MediaPipeline

@Suite("RTCP sender and receiver reports")
struct EngineReportTests {
    @Test("reception statistics follow RFC 3550: loss fraction, cumulative loss, extended sequence, jitter")
    func receptionStatistics() throws {
        var statistics = ReceptionStatistics(clockRate: 90_000)
        // 100 packets 10 ms apart (900 ticks), sequence numbers across the wrap, every 10th lost;
        // arrivals 2 ms late every other packet: transit changes by 180 ticks each time.
        for index in 0..<100 where index % 10 != 9 {
            let header = RTPHeader(
                marker: false, payloadType: 96, sequenceNumber: UInt16(truncatingIfNeeded: 65_500 + index),
                timestamp: UInt32(index * 900), ssrc: 5)
            statistics.count(header, arrivalMicroseconds: Int64(index) * 10_000 + (index % 2 == 0 ? 0 : 2_000))
        }
        statistics.senderReport(ntpTimestamp: 0x0001_0002_0003_0004, arrivalMicroseconds: 500_000)
        let report = statistics.reportBlock(nowMicroseconds: 1_500_000)
        let block = try #require(report)
        #expect(block.ssrc == 5)
        #expect(block.cumulativeLost == 9)  // 99 expected (to the last received), 90 received
        #expect(block.fractionLost == UInt8(9 * 256 / 99))
        #expect(block.extendedHighestSequenceNumber == 1 << 16 | UInt32(65_500 + 98 - 65_536))
        #expect((150...180).contains(block.jitter), "jitter \(block.jitter)")
        #expect(block.lastSenderReport == 0x0002_0003)
        #expect(block.delaySinceLastSenderReport == 65_536)  // one second
        // The next report covers only what came since.
        #expect(statistics.reportBlock(nowMicroseconds: 2_500_000)?.fractionLost == 0)
    }

    @Test("the round trip from LSR and DLSR: now - LSR - DLSR")
    func roundTrip() {
        let sent = NTPTime.timestamp(microseconds: 10_000_000)
        let block = RTCPReportBlock(
            ssrc: 1, fractionLost: 0, cumulativeLost: 0, extendedHighestSequenceNumber: 0, jitter: 0,
            lastSenderReport: UInt32(truncatingIfNeeded: sent >> 16), delaySinceLastSenderReport: 65_536 / 2)
        let roundTrip = NTPTime.roundTripMicroseconds(block, nowMicroseconds: 10_580_000)
        #expect(roundTrip.map { abs($0 - 80_000) <= 20 } == true, "\(String(describing: roundTrip))")
    }

    @Test("sender reports carry the wall-clock NTP time: the clock's origin plus its reading (RFC 3550 6.4.1)")
    func senderReportWallClock() throws {
        // 2030-06-01 00:00:00 UTC is 4,115,836,800 s after 1900-01-01.
        let origin: Int64 = 1_906_848_000_000_000
        let session = TestSession(clock: VirtualClock(startMicroseconds: 5_000_000, originUnixMicroseconds: origin))
        let scripted = ScriptedTransport(hub: session.hub)
        let reports = SentReports()
        let clock = session.clock
        scripted.observeRTCP { bytes, _, _ in reports.note(bytes, at: clock.nowMicroseconds) }
        let host = try session.user(transport: scripted)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 300, video: true, publishers: [host])
        let sent = reports.senderReports
        #expect(sent.count >= 4, "sender reports: \(sent.count)")
        for (ntp, clock) in sent {
            let expected = (4_115_836_800 * 1_000_000 as Int64) + clock
            #expect(
                abs(NTPTime.microseconds(ntp) - expected) <= 1, "NTP \(NTPTime.microseconds(ntp)) at clock \(clock)")
        }
    }

    @Test("over a link of 40 ms each way and 10 % loss, the publisher learns an 80 ms round trip and the loss")
    func publisherLearns() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.hub.setLinkConditions(
            LinkConditions(lossPercent: 10, delayMs: 40), channelId: "a", publisher: 1, receiver: 2)
        try session.run(ticks: 400, video: true, publishers: [host])
        let stats = try host.channel("a").statistics
        #expect((75...95).contains(stats.roundTripTimeMs), "round trip \(stats.roundTripTimeMs) ms")
        // The last report's fraction lost, over its interval (seeded: 19 %, a noisy figure on so
        // short an interval; within 2 points of it).
        #expect((17...21).contains(stats.txPacketLossPercent), "loss \(stats.txPacketLossPercent) %")
        #expect(try viewer.channel("a").statistics.rxPacketsLost > 0)
    }
}

/// The sender reports seen on a transport: each one's NTP timestamp and the clock time it was sent.
private final class SentReports: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(ntp: UInt64, clock: Int64)] = []

    func note(_ bytes: [UInt8], at clock: Int64) {
        guard let messages = try? bytes.withUnsafeBytes({ try RTCPCompound.parse($0) }) else { return }
        for case .senderReport(_, let ntp, _, _, _, _) in messages { lock.withLock { seen.append((ntp, clock)) } }
    }

    var senderReports: [(ntp: UInt64, clock: Int64)] { lock.withLock { seen } }
}
