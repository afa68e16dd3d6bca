import Foundation
import Testing

@testable import MediaPipeline

@Suite("Recording a remote stream without re-encoding", .timeLimit(.minutes(5)))
struct RecordingTests {
    /// A publisher of 320x180 video at 15 fps and audio, and a viewer behind `link` that shows
    /// the video in a canvas of the same size.
    private final class Room {
        let session = TestSession()
        let host: TestUser
        let viewer: TestUser
        let canvas: CanvasBuffer
        /// The MD5 of every picture the viewer's canvas showed, in order.
        var shown: [String] = []
        private var tick = 0

        init(link: LinkConditions) throws {
            host = try session.user()
            viewer = try session.user()
            try host.join("a", uid: 1)
            try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
            canvas = try viewer.engine.setupRemoteVideo(
                VideoCanvas(channelId: "a", uid: 1, width: 320, height: 180, renderMode: .fit))
            try session.hub.setLinkConditions(link, channelId: "a", publisher: 1, receiver: 2)
        }

        func run(ticks: Int) throws {
            var rendered = canvas.framesRendered
            for _ in 0..<ticks {
                try host.pushAudio()
                if tick % 7 == 0 {
                    try host.pushVideo(width: 320, height: 180, timestamp: session.clock.nowMicroseconds)
                }
                viewer.pull()
                viewer.engine.renderVideo()
                if canvas.framesRendered != rendered {
                    rendered = canvas.framesRendered
                    shown.append(canvas.withLockedPicture { $0.md5() })
                }
                session.clock.advance(byMicroseconds: 10_000)
                session.hub.deliverDue()
                tick += 1
            }
        }
    }

    @Test("under 10 % loss the recording holds, frame for frame, what the receiver decoded and showed")
    func recordingUnderLoss() throws {
        let folder = TemporaryFolder()
        let path = folder.file("user-1.webm")
        let room = try Room(link: LinkConditions(lossPercent: 10, delayMs: 25))
        let recording = try room.viewer.engine.startRecording(channelId: "a", uid: 1, path: path)
        try room.run(ticks: 600)  // 6 s
        let decodedBefore = try room.viewer.channel("a").statistics.videoFramesDecoded
        let audioDecoded = try #require(
            room.viewer.engine.receiverStore.receivers(StreamKey(channelId: "a", uid: 1)).audio
        ).counters.packetsDecoded
        let written = try room.viewer.engine.stopRecording(recording)
        #expect(written.video == decodedBefore)
        // Every audio packet decoded goes in, but for those captured before the file's first
        // picture (the file's time 0, on the sender's clock): played after it, yet earlier.
        #expect(written.audio <= Int64(audioDecoded) && written.audio >= Int64(audioDecoded) - 3, "\(written)")
        #expect(written.video >= 80, "\(written)")  // 6 s at 15 fps, less what the loss cost

        // The file reads cleanly in the tools, and vpxdec decodes it to the pictures the canvas
        // showed, in order: every shown picture is one of the recording's, none out of place.
        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["vp8", "opus"])
        let info = try runTool("mkvinfo", ["-a", path])
        #expect(info.status == 0 && !info.stdout.lowercased().contains("error"), "\(info.stdout)")
        let decoded = try vpxdecFrameMD5s(path)
        #expect(Int64(decoded.count) == written.video)
        var next = 0
        var missing: [Int] = []
        for (index, picture) in room.shown.enumerated() {
            guard let found = decoded[next...].firstIndex(of: picture) else {
                missing.append(index)
                continue
            }
            next = found + 1
        }
        #expect(
            missing.isEmpty,
            "shown pictures not in the recording, in order: \(missing.prefix(5)) of \(room.shown.count)")
        #expect(room.shown.count > 50)
        // The audio decodes (libopus through ffmpeg) to as many 20 ms packets as were decoded live,
        // less the 312 samples of encoder delay the file declares (CodecDelay) and ffmpeg trims.
        #expect(try ffmpegAudio(path, libopus: true).count == (Int(written.audio) * 960 - 312) * 2)

        let events = room.viewer.logs["a"]!.events
        #expect(events.contains(.recordingStarted(uid: 1, path: path)))
        #expect(
            events.contains(
                .recordingStopped(uid: 1, path: path, audioFrames: written.audio, videoFrames: written.video)))
    }

    @Test("a channel composite holds the grid the engine renders and the channel's mix, at their times")
    func channelComposite() throws {
        let folder = TemporaryFolder()
        let path = folder.file("channel-a.webm")
        let room = try Room(link: LinkConditions(delayMs: 20))
        let engine = room.viewer.engine
        let recording = try engine.startChannelRecording(
            channelId: "a", path: path, width: 640, height: 360, framesPerSecond: 15)
        // The channel mix of every tick, as the app would read it, and the grid as it stood at
        // the last render a picture was due at (every 1/15 s from the start).
        var mix: [Int16] = []
        var frame = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
        let grid = try I420Buffer(width: 640, height: 360)
        var nextDue: Int64 = room.session.clock.nowMicroseconds
        for _ in 0..<300 {
            let now = room.session.clock.nowMicroseconds
            try room.run(ticks: 1)
            try frame.withUnsafeMutableBufferPointer { try room.viewer.channel("a").copyChannelMix(into: $0) }
            mix += frame
            if now >= nextDue {
                engine.renderGrid(channelId: "a", into: grid, labels: true)
                nextDue += 66_666
            }
        }
        let written = try engine.stopChannelRecording(recording)
        // 3 s: a picture each 1/15 s (the renders come every 10 ms), 20 ms packets of 3 s and the lookahead.
        #expect(written.pictures == 45 && written.audioPackets == 151, "\(written)")
        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["vp8,640,360", "opus"])
        // The last picture is the grid the engine renders (its uid label included).
        let yuv = folder.file("grid.yuv")
        try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo", yuv])
        let pictures = [UInt8](try Data(contentsOf: URL(fileURLWithPath: yuv)))
        let size = 640 * 360 * 3 / 2
        #expect(pictures.count == size * Int(written.pictures))
        let last = try rawI420Picture(pictures, index: Int(written.pictures) - 1, width: 640, height: 360)
        let psnr = grid.withView { a in last.withView { PictureQuality.psnr(reference: a, test: $0) } }
        #expect(psnr >= 45, "\(psnr) dB")  // 48.0 dB
        // The audio is the channel mix, to the sample, within Opus's quality.
        let decoded = try ffmpegAudio(path)
        #expect(decoded.count == mix.count)
        let snr = SignalQuality.snr(reference: mix, test: decoded)
        #expect(snr >= 38, "\(snr) dB")  // 40.3 dB: what the engine mixed is what ffmpeg decodes
        let events = room.viewer.logs["a"]!.events
        #expect(events.contains(.recordingStarted(uid: 0, path: path)))
        #expect(
            events.contains(
                .recordingStopped(uid: 0, path: path, audioFrames: written.audioPackets, videoFrames: written.pictures))
        )
        #expect(throws: EngineError.self) { try engine.stopChannelRecording(recording) }
        #expect(throws: EngineError.self) { try engine.startChannelRecording(channelId: "b", path: path) }
    }

    @Test("a disk that fails is an event; what was written before stays; bad calls are typed errors")
    func failures() throws {
        let folder = TemporaryFolder()
        let room = try Room(link: LinkConditions())
        let engine = room.viewer.engine
        // /dev/full refuses every write with "No space left on device".
        let full = folder.file("full.webm")
        try FileManager.default.createSymbolicLink(atPath: full, withDestinationPath: "/dev/full")
        let recording = try engine.startRecording(channelId: "a", uid: 1, path: full)
        try room.run(ticks: 250)
        let failed = room.viewer.logs["a"]!.events.compactMap { event -> String? in
            if case .recordingFailed(1, full, let message) = event { return message }
            return nil
        }
        #expect(failed.count == 1, "\(failed)")
        #expect(failed.first?.contains("No space left on device") == true, "\(failed)")
        #expect(throws: MediaError.self) { try engine.stopRecording(recording) }

        #expect(throws: EngineError.self) {
            try engine.startRecording(channelId: "b", uid: 1, path: folder.file("x.webm"))
        }
        #expect(throws: EngineError.self) {
            try engine.startRecording(channelId: "a", uid: 1, path: folder.file("x.wav"))
        }
        #expect(throws: EngineError.self) {
            try engine.startRecording(channelId: "a", uid: 1, path: folder.file("x.opus"), media: [.audio, .video])
        }
        let audioOnly = try engine.startRecording(channelId: "a", uid: 1, path: folder.file("x.opus"), media: .audio)
        #expect(throws: EngineError.self) {
            try engine.startRecording(channelId: "a", uid: 1, path: folder.file("y.webm"))
        }
        try room.run(ticks: 100)
        let written = try engine.stopRecording(audioOnly)
        #expect(written.audio > 40 && written.video == 0, "\(written)")
        #expect(throws: EngineError.self) { try engine.stopRecording(audioOnly) }
        // The Ogg Opus recording decodes in opusdec to as many samples as packets were written,
        // less the declared pre-skip (libopus's 312), in the sender's channels (stereo, from the
        // packets' TOC).
        let wav = folder.file("x.wav")
        try reference("opusdec", ["--quiet", folder.file("x.opus"), wav])
        #expect(try wavSamples(wav).count == (Int(written.audio) * 960 - 312) * 2)
        let head = try OggOpusReader(path: folder.file("x.opus")).head
        #expect(head.channelCount == 2 && head.preSkip == 312, "\(head)")
    }
}

@Suite("Stream recorder: the file's header from the stream", .timeLimit(.minutes(5)))
struct StreamRecorderHeaderTests {
    @Test(
        "an Ogg recording of a mono sender says one channel and libopus's pre-skip; its time starts at the first packet"
    )
    func monoOgg() throws {
        let folder = TemporaryFolder()
        var settings = OpusEncoderConfiguration()
        settings.channelCount = 1
        let encoder = try OpusEncoder(configuration: settings)
        let tone = testTone(samplesPerChannel: 960 * 50, channels: 1)
        let path = folder.file("mono.opus")
        // Recording asked for 2 s before the first packet: nothing of that wait is in the file.
        let recorder = try StreamRecorder(
            path: path, key: StreamKey(channelId: "a", uid: 1), media: .audio, now: 0)
        for index in 0..<50 {
            let frame = try encoder.encode(
                AudioFrame(
                    samples: Array(tone[(index * 960)..<((index + 1) * 960)]), sampleRate: 48000, channelCount: 1,
                    timestampSamples: Int64(index * 960)))
            recorder.record(frame, kind: .audio, now: 2_000_000 + Int64(index) * 20_000)
        }
        _ = try recorder.finish()
        let head = try OggOpusReader(path: path).head
        #expect(head.channelCount == 1 && head.preSkip == 312, "\(head)")
        let wav = folder.file("mono.wav")
        try reference("opusdec", ["--quiet", path, wav])
        #expect(try wavSamples(wav).count == 50 * 960 - 312)
        let webm = folder.file("mono.webm")
        let track = try StreamRecorder(path: webm, key: StreamKey(channelId: "a", uid: 1), media: .audio, now: 0)
        let again = try OpusEncoder(configuration: settings)
        for index in 0..<50 {
            let frame = try again.encode(
                AudioFrame(
                    samples: Array(tone[(index * 960)..<((index + 1) * 960)]), sampleRate: 48000, channelCount: 1,
                    timestampSamples: Int64(index * 960)))
            track.record(frame, kind: .audio, now: 2_000_000 + Int64(index) * 20_000)
        }
        _ = try track.finish()
        let probe = try reference(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=channels,start_time:format=duration", "-of", "csv=p=0", webm])
        let numbers = probe.split(whereSeparator: { $0 == "\n" || $0 == "," }).compactMap { Double($0) }
        // channels 1, the first packet at 0 (ffprobe shows the pre-skip as a start of -0.0065 s),
        // and the file lasts the packets' 1 s, not the 2 s waited before them.
        #expect(numbers.count == 3 && numbers[0] == 1, "\(probe)")
        #expect(numbers.count == 3 && abs(numbers[1] + 0.0065) < 0.001, "start \(probe)")
        #expect(numbers.last.map { (0.9..<1.1).contains($0) } == true, "\(probe)")
    }
}
