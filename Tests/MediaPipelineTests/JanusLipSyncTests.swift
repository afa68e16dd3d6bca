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
    func recordings() async throws { try await marksThroughJanus(lossPercent: 0, judgingComposite: true) }

    /// The same with 10 % of the subscriber's datagrams dropped each way (from its fourth
    /// second on): the track recording, placed on the sender's clock, holds every mark within
    /// ±45 ms. The channel recording (the live playout against the canvases) is printed, not
    /// judged: under loss through Janus the video's render delay swings by a few hundred
    /// milliseconds from one second to the next, faster than the audio's added delay follows
    /// (measured -194 to +142 ms), an open part of the lip-sync work.
    @Test(
        "10 % loss each way on the subscriber's link: the track recording holds each beep within ±45 ms of its picture",
        .timeLimit(.minutes(2)))
    func tenPercentLoss() async throws { try await marksThroughJanus(lossPercent: 10, judgingComposite: false) }

    private func marksThroughJanus(lossPercent: Double, judgingComposite: Bool) async throws {
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
        if lossPercent > 0 {
            // Loss once the subscriber has decoded 3 s of pictures (Janus retransmits only once its
            // reports gave it the round trip).
            let first = await subscriber.waitFor(within: 40) { $0.pictures(in: "channel-1", uid: 11).count >= 75 }
            try #require(first, "the subscriber decodes the publisher:\n\(subscriber.summary)")
            try await PortLoss(server: server, run: subscriber).startDropping(percent: lossPercent)
        }
        // 19 s of pictures (25 a second) decoded: eight marks after the first one.
        let decoded = await subscriber.waitFor(within: 60) { $0.pictures(in: "channel-1", uid: 11).count >= 475 }
        try #require(
            decoded, "the subscriber decodes 19 s of the publisher:\n\(subscriber.summary)\n\(publisher.summary)")
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
            guard file.hasPrefix("user") || judgingComposite else { continue }
            #expect(offsets.count >= 6, "\(file): beeps \(marks.beeps)")
            for offset in offsets {
                let value = try #require(offset, "\(file): a beep without its picture (whites \(marks.whites))")
                #expect(abs(value) <= 45, "\(file): audio \(value) ms after its picture")
            }
        }
        server.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
    }
}
