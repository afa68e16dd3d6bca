import Foundation
import Testing

@testable import MediaPipeline

/// Per decoded frame of `path`, as ffprobe reports it: width, height and whether it is a
/// keyframe.
private func ffprobeFrames(_ path: String) throws -> [(width: Int, height: Int, key: Bool)] {
    try reference(
        "ffprobe",
        [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width,height,key_frame", "-of", "csv=p=0",
            path,
        ]
    )
    .split(separator: "\n").compactMap { line in
        // ffprobe prints the fields in its own order: key_frame,width,height.
        let fields = line.split(separator: ",").compactMap { Int($0) }
        guard fields.count == 3 else { return nil }
        return (fields[1], fields[2], fields[0] == 1)
    }
}

@Suite("Resolution change mid-stream: through the engine and into a recording", .timeLimit(.minutes(5)))
struct EngineResolutionChangeTests {
    @Test(
        "a publisher going from 320x180 to 640x360: a keyframe at the new size, videoSizeChanged, the canvas shows the new pictures, the recording holds both sizes"
    )
    func engineAndRecording() throws {
        let folder = TemporaryFolder()
        let session = TestSession()
        let host = try session.user()
        try host.join("a", uid: 1)
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let canvas = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "a", uid: 1, width: 640, height: 360, renderMode: .fill))
        let recording = try viewer.engine.startRecording(channelId: "a", uid: 1, path: folder.file("user.webm"))
        var pushed: [(width: Int, height: Int)] = []
        var lastPicture: I420Buffer?
        for tick in 0..<400 {
            try host.pushAudio()
            if tick % 7 == 0 {
                let (width, height) = tick < 200 ? (320, 180) : (640, 360)
                let picture = try syntheticPicture(width: width, height: height, frame: tick / 7)
                try host.engine.pushVideo(picture, timestampMicroseconds: session.clock.nowMicroseconds)
                pushed.append((width, height))
                lastPicture = picture
            }
            viewer.pull()
            viewer.engine.renderVideo()
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
        }
        // Let the last pictures through the render delay.
        try session.run(ticks: 50, video: true, publishers: [])
        let written = try viewer.engine.stopRecording(recording)

        let sizes = viewer.logs["a"]!.events.compactMap { event -> [Int]? in
            if case .videoSizeChanged(1, let width, let height) = event { [width, height] } else { nil }
        }
        #expect(sizes == [[320, 180], [640, 360]], "size changes: \(sizes)")
        // The canvas shows the publisher's last picture, at the new size (fill, same size).
        let last = try #require(lastPicture)
        let psnr = try canvas.snapshot().withView { shown in
            last.withView { PictureQuality.psnr(reference: $0, test: shown) }
        }
        #expect(psnr > 30, "canvas PSNR \(psnr) dB against the last 640x360 picture")
        #expect(try viewer.channel("a").remoteVideoStats(1)?.width == 640)

        // The recording, as ffprobe decodes it: every picture pushed, the first ones at
        // 320x180, then a keyframe at 640x360 and the rest at that size.
        let frames = try ffprobeFrames(folder.file("user.webm"))
        #expect(Int64(frames.count) == written.video, "ffprobe: \(frames.count) frames, recorded \(written.video)")
        #expect(frames.count == pushed.count, "ffprobe: \(frames.count) frames of \(pushed.count) pushed")
        let firstLarge = try #require(frames.firstIndex { $0.width == 640 }, "no 640x360 frame recorded")
        #expect(frames[firstLarge].key, "the first 640x360 frame is not a keyframe")
        #expect(frames[..<firstLarge].allSatisfy { $0.width == 320 && $0.height == 180 })
        #expect(frames[firstLarge...].allSatisfy { $0.width == 640 && $0.height == 360 })
        #expect(firstLarge == pushed.firstIndex { $0.width == 640 }, "the switch at frame \(firstLarge)")
    }
}

@Suite("RTP: a resolution change mid-stream over UDP", .timeLimit(.minutes(5)))
struct RTPNetworkTestsResolutionChange {
    @Test(
        "pipebench send of an IVF that changes size mid-stream: pipebench receive writes every frame byte for byte, and vpxdec decodes it as it decodes the source"
    )
    func sizeChangeOverRTP() throws {
        let folder = TemporaryFolder()
        // 15 pictures at 320x180, then a new encoder (its first frame a keyframe) for 15 at
        // 640x360, in one IVF (the header names the first size; frames carry their own).
        let source = folder.file("change.ivf")
        let writer = try IVFWriter(
            path: source,
            header: IVFHeader(codec: .vp8, width: 320, height: 180, timebaseNumerator: 1, timebaseDenominator: 30))
        var index: Int64 = 0
        for (width, height) in [(320, 180), (640, 360)] {
            let encoder = try VPXEncoder(configuration: VPXEncoderConfiguration(width: width, height: height))
            for frame in 0..<15 {
                let encoded = try encoder.encode(try syntheticPicture(width: width, height: height, frame: frame))
                try writer.write(encoded.bytes, timestamp: index)
                index += 1
            }
        }
        try writer.finish()
        let sourceMD5s = try vpxdecFrameMD5s(source)
        #expect(sourceMD5s.count == 30)

        let sdp = folder.file("ours.sdp")
        let sender = try RTPNetworkTests.startSend([source, "--quiet"], sdp: sdp, startDelay: 1.5)
        defer { sender.finish(within: 0) }
        let received = folder.file("received.ivf")
        let result = try pipebench(["receive", sdp, received, "--idle", "1.5", "--quiet"])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(result.status == 0, "\(result.stderr)")
        // Every frame as sent, and vpxdec's pictures of the received file are the source's.
        let sent = try RTPImpairedNetworkTests.frameDigests(ivf: source)
        let got = try RTPImpairedNetworkTests.frameDigests(ivf: received)
        #expect(got == sent, "\(got.count) frames received of \(sent.count)")
        #expect(try vpxdecFrameMD5s(received) == sourceMD5s)
        let sizes = try ffprobeFrames(received).map { "\($0.width)x\($0.height)" }
        #expect(sizes == Array(repeating: "320x180", count: 15) + Array(repeating: "640x360", count: 15), "\(sizes)")
    }
}
