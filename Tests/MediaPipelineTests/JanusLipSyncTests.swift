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
    func recordings() async throws {
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
            ["--uid", "22", "--subscribe", "channel-1", "--record-users", "--md5", "--duration", "90"])
        defer { subscriber.stop() }
        // 16 s of pictures (25 a second) decoded: seven marks after the first one.
        let decoded = await subscriber.waitFor(within: 60) { $0.pictures(in: "channel-1", uid: 11).count >= 400 }
        try #require(
            decoded, "the subscriber decodes 16 s of the publisher:\n\(subscriber.summary)\n\(publisher.summary)")
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
            print("lip sync through Janus, \(file): beeps \(marks.beeps), audio after picture (ms) \(offsets)")
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
