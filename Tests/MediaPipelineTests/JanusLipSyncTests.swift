import Foundation
import Testing

@testable import MediaPipeline

@Suite("Lip sync through Janus: a publisher's marks recorded by a subscriber in sync", .serialized)
struct JanusLipSyncTests {
    /// A publisher (`pipebench join --video/--audio`) sends a beep and a white picture captured at
    /// one instant every 2 s through Janus, which rewrites the timestamps and sends sender reports
    /// of its own; the subscriber records the user's tracks and the channel composite (its live
    /// playout and canvases). Both files, read by ffmpeg, have every mark after the first two
    /// seconds within ±45 ms.
    @Test(
        "the subscriber's track and channel recordings hold each beep within ±45 ms of its picture",
        .timeLimit(.minutes(2)))
    func recordings() async throws { try await marksThroughJanus(lossPercent: 0) }

    /// The same with 10 % of the subscriber's datagrams dropped each way (from its fourth
    /// second on): both recordings hold every mark within ±45 ms, but for the few a packet lost
    /// beyond repair may spoil (the run's own loss says how many); the channel recording (the
    /// live playout against the canvases) also for a few pictures held behind a second round of
    /// repair (below).
    @Test(
        "10 % loss each way on the subscriber's link: the track and channel recordings hold each beep within ±45 ms of its picture",
        .timeLimit(.minutes(2)))
    func tenPercentLoss() async throws { try await marksThroughJanus(lossPercent: 10) }

    private func marksThroughJanus(lossPercent: Double) async throws {
        let files = TemporaryFolder()
        let (y4m, wav) = (files.file("marks.y4m"), files.file("marks.wav"))
        try writeMarkFiles(y4m: y4m, wav: wav, seconds: 8)
        let server = try JanusServer()
        defer { server.stop() }
        let publisher = try JoinRun(
            "publisher", on: server,
            ["--uid", "11", "--publish", "channel-1", "--video", y4m, "--audio", wav, "--duration", "90"])
        defer { publisher.stop() }
        let subscriber = try JoinRun(
            "subscriber", on: server,
            [
                "--uid", "22", "--subscribe", "channel-1", "--record-users", "--md5", "--duration", "90",
            ])
        defer { subscriber.stop() }
        var loss: (link: PortLoss, started: Date, before: (down: PortLoss.Counts, up: PortLoss.Counts))?
        if lossPercent > 0 {
            // Loss once the subscriber has decoded 3 s of pictures (Janus retransmits only once its
            // reports gave it the round trip).
            let first = await subscriber.waitFor(within: 40) { $0.pictures(in: "channel-1", uid: 11).count >= 75 }
            try #require(first, "the subscriber decodes the publisher:\n\(subscriber.summary)")
            let link = try await PortLoss(server: server, run: subscriber)
            try link.startCounting()
            loss = (link, Date(), (try link.counters("INPUT"), try link.counters("OUTPUT")))
            try link.startDropping(percent: lossPercent)
        }
        // 19 s of pictures (25 a second) decoded: eight marks after the first one.
        let decoded = await subscriber.waitFor(within: 60) { $0.pictures(in: "channel-1", uid: 11).count >= 475 }
        try #require(
            decoded, "the subscriber decodes 19 s of the publisher:\n\(subscriber.summary)\n\(publisher.summary)")
        // Marks the loss may spoil. Confidence, from this run's own loss: a video packet lost on
        // its first way stays missing when every round of requests fails (its retransmission
        // lost, or both copies of its request), at least 3 rounds (NackTracker.roundsNeeded), so
        // the run expects λ = lost × fail³ give-ups (≈ 60 × 0.109³ ≈ 0.08 at 10 %). Each drops
        // about 0.9 s of pictures until the live keyframe it asks for, spoiling at most one mark
        // (marks are 2 s apart): a missing picture or one shown late. The check allows as many
        // spoiled marks as a Poisson count of mean λ exceeds less than once in 1,000 runs; a
        // lossless run allows none.
        var spoilable = 0
        if let loss {
            let during = (down: try loss.link.counters("INPUT"), up: try loss.link.counters("OUTPUT"))
            let seconds = Date().timeIntervalSince(loss.started)
            let down = (offered: during.down.offered - loss.before.down.offered, dropped: during.down.dropped)
            let up = (offered: during.up.offered - loss.before.up.offered, dropped: during.up.dropped)
            let unrepairedExpected = PortLoss.unrepairedVideoExpected(down: down, up: up, seconds: seconds)
            spoilable = poissonQuantile(mean: unrepairedExpected, probability: 0.999)
            print(
                "lip sync through Janus: downlink dropped \(down.dropped) of \(down.offered), uplink \(up.dropped) of "
                    + "\(up.offered); λ = \(unrepairedExpected), \(spoilable) marks may be spoiled")
        }
        // SIGINT: both leave and write their files whole.
        subscriber.signal(SIGINT)
        publisher.signal(SIGINT)
        let subscriberStatus = await subscriber.waitForExit(within: 15)
        let publisherStatus = await publisher.waitForExit(within: 15)
        #expect(subscriberStatus == 0, "\(subscriber.summary)")
        #expect(publisherStatus == 0, "\(publisher.summary)")
        guard subscriberStatus == 0 else { return }
        for file in ["user-channel-1-11.webm", "channel-1.webm"] {
            let marks = try RecordedMarks(path: subscriber.folder.file(file))
            // The file starts at the first keyframe decoded; marks from its first beep + 1.5 s on.
            let offsets = marks.offsetsMs(from: (marks.beeps.first ?? 0) + 1.5)
            print(
                "lip sync through Janus, \(lossPercent) % loss, \(file): beeps \(marks.beeps), audio after picture (ms) \(offsets)"
            )
            #expect(offsets.count >= 6, "\(file): beeps \(marks.beeps)")
            // The live playout shows a picture when it is complete: one whose packet's
            // retransmission was lost waits out Janus's rule against repeated NACKs (200 ms),
            // about 260 ms in all, longer than the render delay has learnt in the first seconds
            // of loss, and is shown that late (or, with a give-up, not at all). Measured: 4 of
            // 99 marks (4 %) in 11 runs, never two in one run; at that rate 9 marks have 4 or
            // more such once in about 3,500 runs (3 or more once in 200), so 3 are allowed
            // beside the give-ups. The track recording places pictures on the sender's clock and
            // is not touched by it.
            let allowed = spoilable + (file.hasPrefix("user") || lossPercent == 0 ? 0 : 3)
            let spoiled = offsets.filter { offset in offset.map { abs($0) > 45 } ?? true }
            let detail = "audio after picture (ms) \(offsets), whites \(marks.whites)"
            #expect(
                spoiled.count <= allowed,
                "\(file): \(spoiled.count) beeps without their picture within ±45 ms (\(allowed) allowed): \(detail)")
        }
        server.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
    }
}
