import Foundation
import MediaPipelineTesting
import Synchronization
import Testing

@testable import MediaPipeline

// Loss on a subscriber's link through Janus: a publisher of pre-encoded frames and a subscriber,
// each a `pipebench join` process inside the harness's namespace, with 10 % of the subscriber's
// datagrams dropped in the kernel (iptables `statistic` rules matching the subscriber's ICE
// ports, both ways). NACKs go to Janus, which retransmits video (RTX) and audio (the packet
// itself) from its own buffer; the publisher's in-band FEC covers what stays lost.

/// The kernel's loss on one engine's link inside a Janus server's namespace: iptables rules
/// that match the engine's ICE ports (everything in the namespace is on 127.0.0.2, so ports
/// single it out; the kernel chose them, ``JoinRun/udpPorts(on:)`` read them). A counting rule
/// per direction from ``startCounting()``, a `statistic` DROP rule per direction from
/// ``startDropping(percent:)``. The rules live in the namespace and go with it.
struct PortLoss {
    let server: JanusServer
    let ports: [Int]

    /// Reads `run`'s ports, waiting up to 5 s for it to have bound one (it has once it decodes).
    init(server: JanusServer, run: JoinRun) async throws {
        self.server = server
        var ports: [Int] = []
        let deadline = Date().addingTimeInterval(5)
        while ports.isEmpty && Date() < deadline {
            ports = try run.udpPorts(on: server)
            if ports.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        guard !ports.isEmpty, ports.count <= 15 else {
            throw LinkError("\(run.name)'s UDP ports in the namespace: \(ports) (none, or more than one rule can list)")
        }
        self.ports = ports
    }

    private var list: String { ports.map(String.init).joined(separator: ",") }

    /// Datagrams towards the engine (downlink): INPUT, by destination port; from it (uplink):
    /// OUTPUT, by source port. On loopback each datagram passes OUTPUT then INPUT, and each rule
    /// matches it once only.
    private func match(_ chain: String) -> [String] {
        chain == "INPUT"
            ? ["INPUT", "-p", "udp", "-m", "multiport", "--dports", list]
            : ["OUTPUT", "-p", "udp", "-m", "multiport", "--sports", list]
    }

    /// Adds the counting rules (they count, drop nothing).
    func startCounting() throws {
        for chain in ["INPUT", "OUTPUT"] {
            try iptables(["-A"] + match(chain) + ["-m", "comment", "--comment", "mp-offered"])
        }
    }

    /// Drops `percent` of the datagrams each way from now on.
    func startDropping(percent: Double) throws {
        for chain in ["INPUT", "OUTPUT"] {
            try iptables(
                ["-A"] + match(chain) + [
                    "-m", "statistic", "--mode", "random", "--probability", String(format: "%.4f", percent / 100),
                    "-j", "DROP",
                ])
        }
    }

    /// From now on, holds each datagram each way for `delayMilliseconds` ± `jitterMilliseconds`
    /// (uniform; a wait at or below 0 is none), as ``LinkConditions`` does on `LocalHub`: an
    /// `nfdelay` per direction in the namespace (queues 8 and 9; stopped with the server) and an
    /// NFQUEUE rule after the drop rule, so what is dropped is not delayed. Packets of different
    /// waits overtake each other, as jitter that wide makes them. Returns the delay lines, for
    /// the caller to stop (`wait(upTo: 0)`) before it counts what is left behind.
    func startDelaying(delayMilliseconds: Int, jitterMilliseconds: Int) throws -> [Process] {
        try [(8, "INPUT"), (9, "OUTPUT")].map { queue, chain in
            let line = try NamespaceLink.startDelayLine(
                queue: queue, delayMilliseconds: delayMilliseconds, jitterMilliseconds: jitterMilliseconds,
                reorderPercent: 0, seed: queue, output: server.folder + "/nfdelay-\(chain)"
            ) { arguments, stdout, stderr in try server.start(arguments, stdout: stdout, stderr: stderr) }
            do {
                try iptables(["-A"] + match(chain) + ["-j", "NFQUEUE", "--queue-num", "\(queue)"])
            } catch {
                _ = line.wait(upTo: 0)
                throw error
            }
            return line
        }
    }

    /// Datagrams offered to a chain (counted before the drop rule) and dropped by it.
    typealias Counts = (offered: Int, dropped: Int)

    /// The video packets a subscriber is expected to leave unrepaired (λ), from the datagrams
    /// `down` and `up` offered and dropped over `seconds` of loss: the downlink's datagrams less
    /// the audio's 50 a second (RTCP and retransmissions stay in: λ errs high) lost on their first
    /// way, each staying missing when 3 rounds of requests fail (NackTracker.roundsNeeded's least),
    /// a round failing when its retransmission is lost or both copies of its request are.
    static func unrepairedVideoExpected(down: Counts, up: Counts, seconds: Double) -> Double {
        let downShare = Double(down.dropped) / Double(max(1, down.offered))
        let upShare = Double(up.dropped) / Double(max(1, up.offered))
        let videoLost = Double(max(0, down.offered - Int(50 * seconds))) * downShare
        return videoLost * pow(downShare + (1 - downShare) * upShare * upShare, 3)
    }

    /// Datagrams offered (counted before the drop rule) and dropped so far in `chain`.
    func counters(_ chain: String) throws -> Counts {
        let listing = try server.run(["iptables", "-L", chain, "-n", "-v", "-x"]).stdout
        func packets(_ marker: String) -> Int {
            let line = listing.split(separator: "\n").first { $0.contains(marker) } ?? ""
            return Int(line.split(separator: " ").first ?? "") ?? 0
        }
        return (packets("mp-offered"), packets("statistic"))
    }

    private func iptables(_ arguments: [String]) throws {
        let result = try server.run(["iptables"] + arguments)
        guard result.status == 0 else {
            throw LinkError("iptables \(arguments.joined(separator: " ")) failed in the namespace: \(result.stderr)")
        }
    }
}

@Suite("Janus loss: a subscriber's lossy link, repaired through Janus", .serialized)
struct JanusLossTests {
    /// Seconds of media under loss.
    static let lossySeconds = 20.0

    @Test(
        "10 % loss both ways on the subscriber's link: no picture across a gap, video frozen only as the loss pattern allows, NACK and RTX through Janus",
        .timeLimit(.minutes(2)))
    func subscriberLinkLoss() async throws {
        let reference = try Reference.md5s(variant: 1)
        let server = try JanusServer()
        defer { server.stop() }

        let a = try JoinRun(
            "A", on: server,
            ["--uid", "11", "--variant", "1", "--publish", "channel-1", "--encode-audio", "--duration", "90"])
        defer { a.stop() }
        let aJoined = await a.waitFor(within: 40) { $0.joined("channel-1") }
        try #require(aJoined, "A joined:\n\(a.summary)")
        // --verbose: the connection's statistics (retransmissions received) at the end.
        let b = try JoinRun(
            "B", on: server, ["--uid", "22", "--subscribe", "channel-1", "--duration", "90", "--md5", "--verbose"])
        defer { b.stop() }
        // Loss once B decodes and Janus knows B's round trip (it retransmits only then), as on
        // the in-process network where the loss starts with the media: B's statistics say its
        // streams are in sync (Janus's sender reports for both came), and two statistics
        // periods (4 s) later (after one, a run froze 5.6 % in a clean-clone run) B's reception reports have answered a sender report.
        let decoding = await b.waitFor(within: 40) { $0.pictures(in: "channel-1", uid: 11).count >= 15 }
        try #require(decoding, "B decodes A:\n\(b.summary)")
        let answered = await b.waitFor(within: 20) { run in
            let stats = run.events("remoteVideoStats", in: "channel-1", uid: 11)
            guard let synced = stats.firstIndex(where: { $0.text.contains("isAVSynced: true") }) else { return false }
            return stats.count > synced + 2
        }
        try #require(answered, "B's video in sync (Janus's sender reports came):\n\(b.summary)")
        let loss = try await PortLoss(server: server, run: b)
        try loss.startCounting()
        let before = (down: try loss.counters("INPUT"), up: try loss.counters("OUTPUT"))
        try loss.startDropping(percent: 10)
        let lossStartIndex = b.lines.count
        let lossStarted = Date()
        try await Task.sleep(for: .seconds(Self.lossySeconds))
        let during = (down: try loss.counters("INPUT"), up: try loss.counters("OUTPUT"))
        let lossEndIndex = b.lines.count
        let lossSeconds = Date().timeIntervalSince(lossStarted)

        b.signal(SIGINT)
        let bStatus = await b.waitForExit(within: 15)
        #expect(bStatus == 0, "B's exit:\n\(b.summary)")
        a.signal(SIGINT)
        let aStatus = await a.waitForExit(within: 15)
        #expect(aStatus == 0, "A's exit:\n\(a.summary)")

        // The window under loss: from B's last statistics before the loss to its last before
        // the end (statistics come every 2 s, cumulative since subscribing).
        let all = b.lines
        func window(_ event: String) -> (first: JoinLine, last: JoinLine)? {
            let stats = all.filter { $0.event == event && $0.channel == "channel-1" && $0.uid == 11 }
            guard let first = stats.last(where: { $0.index < lossStartIndex }),
                let last = stats.last(where: { $0.index < lossEndIndex }), last.index > first.index
            else { return nil }
            return (first, last)
        }
        let videoWindow = try #require(window("remoteVideoStats"), "B's video statistics:\n\(b.summary)")
        let audioWindow = try #require(window("remoteAudioStats"), "B's audio statistics:\n\(b.summary)")
        func delta(_ window: (first: JoinLine, last: JoinLine), _ name: String) -> Double {
            (window.last.figure(name) ?? 0) - (window.first.figure(name) ?? 0)
        }

        // The link did lose about 10 % each way.
        let down = (offered: during.down.offered - before.down.offered, dropped: during.down.dropped)
        let up = (offered: during.up.offered - before.up.offered, dropped: during.up.dropped)
        let downShare = Double(down.dropped) / Double(max(1, down.offered))
        let upShare = Double(up.dropped) / Double(max(1, up.offered))
        // Each datagram is dropped independently with probability 0.1: the shares stray from it
        // by more than four standard deviations of their own counts in one run in 16,000
        // (downlink about 2,400 datagrams: ±2.4 points; uplink about 450: ±5.7 points).
        #expect(down.offered > 500, "downlink: \(down)")
        #expect(up.offered > 100, "uplink: \(up)")
        #expect(abs(downShare - 0.1) <= binomialTolerance(probability: 0.1, trials: down.offered), "downlink: \(down)")
        #expect(abs(upShare - 0.1) <= binomialTolerance(probability: 0.1, trials: up.offered), "uplink: \(up)")

        // No picture decoded across a gap: every one B decoded is one of A's pictures.
        let pictures = all.filter { $0.md5 != nil && $0.channel == "channel-1" && $0.uid == 11 }
        let lossyPictures = pictures.filter { $0.index >= lossStartIndex && $0.index < lossEndIndex }
        let strangers = pictures.filter { !reference.contains($0.md5!) }
        #expect(strangers.isEmpty, "\(strangers.count) of \(pictures.count) pictures are not variant 1's")
        #expect(all.filter { $0.md5 != nil && ($0.channel != "channel-1" || $0.uid != 11) }.isEmpty)

        // Video: NACKs repaired the losses (a pre-encoded publisher cannot answer a keyframe
        // request: a packet never repaired freezes the picture until the next keyframe, 2 s).
        let frozenMs = delta(videoWindow, "totalFrozenTimeMs")
        let activeMs = delta(videoWindow, "totalActiveTimeMs")
        let frozenShare = frozenMs / max(1, activeMs)
        let nacks = delta(videoWindow, "nacksSent")
        let keyframeRequests = delta(videoWindow, "keyframeRequestsSent")
        let decoded = delta(videoWindow, "framesDecoded")
        let dropped = delta(videoWindow, "framesDroppedBeforeDecode")
        #expect(activeMs >= 1000 * (Self.lossySeconds - 4), "video active \(activeMs) ms in the window")
        #expect(nacks > 0, "no NACK sent under loss")
        let retransmissions =
            b.stderr.split(separator: "\n").first {
                $0.contains("janus connection:") && $0.contains("publisher: Optional(11)")
            }
            .flatMap { line -> Int? in
                guard let range = line.range(of: "retransmissionsReceived: ") else { return nil }
                return Int(line[range.upperBound...].prefix { $0.isNumber })
            } ?? -1
        #expect(retransmissions >= 0, "B's connection statistics (--verbose) not found:\n\(b.stderr.suffix(1000))")
        // Janus 1.1.2 keeps a subscriber's video for retransmission only once that stream has a
        // round trip, from a receiver report whose first block names the video; the transport
        // sends one report per block so that it has one, and Janus answers NACKs over RTX.
        #expect(retransmissions > 0, "retransmissions received by B: \(retransmissions)")
        // Janus ignores a NACK for a packet it resent within 200 ms: each NACK goes twice (a lost
        // request would cost a round), and the frame buffer waits rounds of 200 ms (the
        // transport's feedback profile), so a retransmission lost twice still comes in time.
        // Confidence, from this run's own loss: a packet lost on its first way (the downlink's
        // share of ~1,400 video packets) stays missing when every round of requests fails, a
        // round failing when its retransmission is lost or both copies of its request are. The
        // receiver waits at least 3 rounds (NackTracker.roundsNeeded; 4 at 10 % loss), so the
        // run expects at most λ = lost × fail³ unrepaired packets (≈ 140 × 0.109³ ≈ 0.18 at
        // 10 %). Each freezes the picture until the file publisher's next keyframe (2 s; it
        // cannot make one on request): the bound allows as many freezes as a Poisson count of
        // mean λ exceeds less than once in 1,000 runs (2 or 3 at 10 %; 1,129 ms frozen was seen
        // once), and only when B did give up (asked for a keyframe); otherwise 2 % of the window,
        // for a repair that came late, and one more picture held behind a second round of repair
        // (about 260 ms, a retransmission lost and asked for again after Janus's 200 ms rule)
        // while the render delay still climbs towards it at lip sync's pace (LipSync.pace: 40 ms
        // per 100 ms, so that the audio follows; it jumped at once before, and the beeps were
        // up to 370 ms off their pictures): 563 ms frozen of 20 s was seen so in 1 of 5 runs,
        // 0 in the others. Broken repair freezes in most keyframe intervals.
        let unrepairedExpected = PortLoss.unrepairedVideoExpected(down: down, up: up, seconds: lossSeconds)
        let freezesAllowed = keyframeRequests > 0 ? poissonQuantile(mean: unrepairedExpected, probability: 0.999) : 0
        let lateRepairMs = 500.0
        #expect(
            frozenMs <= 0.02 * activeMs + lateRepairMs + 2_500 * Double(freezesAllowed),
            "video frozen \(frozenMs) of \(activeMs) ms (\(freezesAllowed) freezes allowed, λ = \(unrepairedExpected))")
        // 15 fps shown, less the freezes allowed (296 of 300 in a run without one).
        #expect(
            Double(lossyPictures.count) >= 15 * (lossSeconds - 2.5 * Double(freezesAllowed)) * 0.95,
            "\(lossyPictures.count) pictures under loss")

        // Audio: B's answer asks Janus for NACK on audio, so Janus keeps B's audio and resends
        // what B asks for (each NACK twice, at once: the packet can still come before its time
        // to play). A encodes live; Janus reports only A's own (clean) leg to it, so the
        // transport's feedback profile keeps Opus in-band FEC on at 10 % expected loss, for a
        // packet whose request or retransmission is lost too; B's jitter buffer counts both
        // (a retransmission's arrival, the successor's FEC) towards its target delay.
        let audioFrames = delta(audioWindow, "frames")
        let concealed = delta(audioWindow, "framesConcealed")
        let concealedShare = concealed / max(1, audioFrames)
        let audioLossIntervals = all.filter {
            $0.event == "remoteAudioStats" && $0.channel == "channel-1" && $0.uid == 11
                && $0.index > audioWindow.first.index && $0.index <= audioWindow.last.index
        }.compactMap { $0.figure("packetLossRatePercent") }
        let audioLostShare =
            audioLossIntervals.isEmpty ? 0 : audioLossIntervals.reduce(0, +) / Double(audioLossIntervals.count) / 100
        let recovered = delta(audioWindow, "packetsRecoveredByFEC")
        #expect(audioFrames >= 100 * (Self.lossySeconds - 4), "\(audioFrames) audio ticks in the window")
        // (FEC rebuilds only a packet whose NACKs and retransmissions were all lost: 0 to 3 a
        // run, so its count is printed, not judged; the in-process loss tests judge FEC.)
        // Confidence: runs conceal 1 to 9 ticks of ~2,000 (a lost 20 ms packet is 2 ticks), about
        // 2.5 packets a run; 30 ticks are 15 packets, which a Poisson count of mean 2.5 reaches
        // less than once in 10^7 runs.
        #expect(concealedShare <= 0.015, "audio: \(concealed) of \(audioFrames) ticks concealed")

        let leave = all.first { $0.event == "leave" && $0.channel == "channel-1" }
        print(
            String(
                format:
                    "JanusLoss: %.1f s under loss; B's downlink dropped %d of %d datagrams (%.1f %%), uplink %d of %d (%.1f %%); "
                    + "video: %d pictures (%d under loss), none across a gap (%d strangers), frozen %.0f of %.0f ms (%.2f %%), "
                    + "%.0f NACKs, %d retransmissions received, %.0f keyframe requests, %.0f decoded, %.0f dropped before "
                    + "decode; audio: %.0f of %.0f ticks concealed (%.2f %%), packets lost after repair %.2f %%, %.0f rebuilt by FEC",
                lossSeconds, down.dropped, down.offered, downShare * 100, up.dropped, up.offered, upShare * 100,
                pictures.count, lossyPictures.count, strangers.count, frozenMs, activeMs, frozenShare * 100, nacks,
                retransmissions, keyframeRequests, decoded, dropped, concealed, audioFrames, concealedShare * 100,
                audioLostShare * 100, recovered))
        print("JanusLoss: B's leave: \(leave?.text ?? "none")")

        server.stop()
        a.stop()
        b.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
    }
}
