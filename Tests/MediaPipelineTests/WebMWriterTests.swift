import Foundation
import Testing

@testable import MediaPipeline

@Suite("WebM writer against ffprobe, mkvinfo, ffmpeg and vpxdec", .timeLimit(.minutes(5)))
struct WebMWriterTests {
    @Test("EBML sizes and IDs are written as RFC 8794 spells them")
    func variableLengthIntegers() {
        func size(_ value: UInt64, width: Int? = nil) -> [UInt8] {
            var bytes: [UInt8] = []
            EBML.appendSize(value, width: width, to: &bytes)
            return bytes
        }
        #expect(size(0) == [0x80])
        #expect(size(1) == [0x81])
        #expect(size(126) == [0xFE])
        // 127 in one byte would be all ones, which means "unknown size": two bytes.
        #expect(size(127) == [0x40, 0x7F])
        #expect(size(0x3FFF) == [0x20, 0x3F, 0xFF])
        #expect(size(5, width: 8) == [0x01, 0, 0, 0, 0, 0, 0, 0x05])
        var id: [UInt8] = []
        EBML.appendID(EBML.ID.segment, to: &id)
        EBML.appendID(EBML.ID.simpleBlock, to: &id)
        EBML.appendID(EBML.ID.timestampScale, to: &id)
        #expect(id == [0x18, 0x53, 0x80, 0x67, 0xA3, 0x2A, 0xD7, 0xB1])
        var void: [UInt8] = []
        EBML.appendVoid(totalBytes: 200, to: &void)
        #expect(void.count == 200 && void.prefix(2) == [0xEC, 0x01])
    }

    @Test("VP8 and VP9 encodes to WebM read cleanly, seek to keyframes and decode to the IVF encode's frames")
    func videoFiles() throws {
        let folder = TemporaryFolder()
        for codec in [VideoCodec.vp8, .vp9] {
            var settings = VPXEncoderConfiguration(codec: codec, width: 1, height: 1)
            settings.keyframeIntervalFrames = 10
            let webm = folder.file("odd-\(codec).webm")
            let ivf = folder.file("odd-\(codec).ivf")
            let summary = try VideoFileEncoder.encode(input: Fixtures.oddY4M, output: webm, settings: settings)
            try VideoFileEncoder.encode(input: Fixtures.oddY4M, output: ivf, settings: settings)
            #expect(summary.frames == 30)
            #expect(try MediaFileKind.detect(path: webm) == .webm)

            // ffprobe: no warning, the exact frame count, size and duration (30 frames at 15 fps).
            let probe = try runTool(
                "ffprobe",
                [
                    "-v", "warning", "-count_frames", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames:format=duration,format_name", "-of", "csv=p=0", webm,
                ])
            #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
            let lines = probe.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "\(codec == .vp8 ? "vp8" : "vp9"),161,91,30", "\(lines)")
            #expect(lines.last == "\"matroska,webm\",2.000000", "\(lines)")

            // mkvinfo (mkvtoolnix) walks every element (-a) without an error or a warning; the
            // Cues point at the three clusters, one per keyframe.
            let info = try runTool("mkvinfo", ["-a", webm])
            #expect(info.status == 0, "\(info.stdout)\(info.stderr)")
            #expect(!info.stdout.lowercased().contains("error") && !info.stdout.lowercased().contains("warning"))
            #expect(info.stdout.contains("Document type: webm"))
            #expect(info.stdout.components(separatedBy: "+ Cluster timestamp").count == 4)
            #expect(info.stdout.components(separatedBy: "+ Cue point").count == 4)

            // Seeking through the Cues: from 1.0 s, ffprobe starts at the keyframe of 0.667 s.
            let seek = try reference(
                "ffprobe",
                [
                    "-v", "warning", "-read_intervals", "1.0%+0.1", "-show_entries", "packet=pts_time,flags", "-of",
                    "csv", webm,
                ])
            #expect(seek.split(separator: "\n").first == "packet,0.667000,K_", "\(seek)")

            // The same frames as the IVF of the same encode, decoded by vpxdec and by ffmpeg.
            #expect(
                try reference("vpxdec", ["--md5", "--i420", webm])
                    == (try reference("vpxdec", ["--md5", "--i420", ivf])))
            func frameHashes(_ path: String) throws -> [Substring] {
                try reference("ffmpeg", ["-v", "warning", "-i", path, "-f", "framemd5", "-"])
                    .split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
            }
            let hashes = try frameHashes(webm)
            #expect(hashes.count == 30)
            #expect(hashes == (try frameHashes(ivf)))
        }
    }

    @Test("an Opus encode to WebM decodes to the source's exact length, sample for sample as the Ogg Opus encode")
    func opusFile() throws {
        let folder = TemporaryFolder()
        let webm = folder.file("speech.webm")
        let ogg = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: webm)
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: ogg)
        let probe = try runTool(
            "ffprobe",
            [
                "-v", "warning", "-show_entries", "stream=codec_name,channels,sample_rate:format=duration", "-of",
                "csv=p=0", webm,
            ])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["opus,48000,2", "4.000000"])
        let info = try runTool("mkvinfo", ["-a", webm])
        #expect(info.status == 0 && !info.stdout.lowercased().contains("error"), "\(info.stdout)")
        // The pre-skip as CodecDelay (312 samples = 6.5 ms), the last block's padding dropped.
        #expect(info.stdout.contains("Codec-inherent delay: 00:00:00.006500000"))
        #expect(info.stdout.contains("Discard padding"))
        // ffmpeg trims both files to the WAV's 192,000 frames, to the same samples.
        func decoded(_ path: String) throws -> Data {
            let out = folder.file(URL(fileURLWithPath: path).lastPathComponent + ".s16")
            try reference("ffmpeg", ["-v", "warning", "-y", "-i", path, "-f", "s16le", out])
            return try Data(contentsOf: URL(fileURLWithPath: out))
        }
        let fromWebM = try decoded(webm)
        #expect(fromWebM.count == 192_000 * 4)
        #expect(fromWebM == (try decoded(ogg)))
    }

    @Test("Y4M and WAV into one WebM: the video's frames and the audio's samples are those of the separate encodes")
    func audioBesideVideo() throws {
        let folder = TemporaryFolder()
        // 30 frames of 15 fps video (2 s) and 4 s of speech at 48 kHz: audio runs on past the video.
        let both = folder.file("both.webm")
        let settings = VPXEncoderConfiguration(codec: .vp8, width: 1, height: 1)
        let summary = try VideoFileEncoder.encode(
            input: Fixtures.oddY4M, output: both, settings: settings, audio: Fixtures.speechWAV)
        #expect(summary.frames == 30)
        let probe = try runTool(
            "ffprobe",
            [
                "-v", "warning", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames:format=duration",
                "-of", "csv=p=0", both,
            ])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["vp8,30", "opus,201", "4.000000"], "\(probe.stdout)")
        // Interleaved by time: no audio block more than a video frame ahead of the video before it.
        let reader = try WebMReader(path: both)
        var videoTime: Int64 = 0
        var ahead: Int64 = 0
        var videoFrames = 0
        while let frame = try reader.readFrame() {
            if frame.track == 0 {
                videoTime = frame.timestampNanoseconds
                videoFrames += 1
            } else if videoFrames < 30 {
                ahead = max(ahead, frame.timestampNanoseconds - videoTime)
            }
        }
        #expect(ahead <= 67_000_000, "audio \(ahead) ns ahead of the video")
        // The same pictures as the video encoded alone, the same samples as the audio alone.
        let ivf = folder.file("alone.ivf")
        try VideoFileEncoder.encode(input: Fixtures.oddY4M, output: ivf, settings: settings)
        #expect(try vpxdecFrameMD5s(both) == (try vpxdecFrameMD5s(ivf)))
        let ogg = folder.file("alone.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: ogg)
        let audio = try ffmpegAudio(both, libopus: true)
        #expect(audio.count == 192_000 * 2)
        #expect(audio == (try ffmpegAudio(ogg, libopus: true)))
        #expect(throws: MediaError.self) {
            try VideoFileEncoder.encode(
                input: Fixtures.oddY4M, output: folder.file("x.ivf"), settings: settings, audio: Fixtures.speechWAV)
        }
    }

    @Test("bad calls are typed errors naming the file; a writer never finished leaves no file")
    func badCalls() throws {
        let folder = TemporaryFolder()
        let path = folder.file("bad.webm")
        expectMediaError(naming: path) { _ = try WebMWriter(path: path, tracks: []) }
        expectMediaError(naming: path, "0x90") {
            _ = try WebMWriter(path: path, tracks: [.video(.vp8, width: 0, height: 90)])
        }
        expectMediaError(naming: path) { _ = try WebMWriter(path: path, tracks: [WebMTrack(codec: .opus)]) }
        do {
            let writer = try WebMWriter(path: path, tracks: [.video(.vp8, width: 160, height: 90)])
            let frame: [UInt8] = [0x10, 0x02, 0x00]
            try frame.withUnsafeBytes {
                try writer.write(track: 0, $0, timestampMicroseconds: 40_000, durationMicroseconds: 0, isKeyframe: true)
            }
            do {
                try frame.withUnsafeBytes {
                    try writer.write(track: 0, $0, timestampMicroseconds: 0, durationMicroseconds: 0, isKeyframe: false)
                }
                Issue.record("a frame going back in time was written")
            } catch let error as MediaError {
                #expect(error.code == .invalidArgument && "\(error)".contains(path))
            }
            #expect(throws: MediaError.self) {
                try frame.withUnsafeBytes {
                    try writer.write(
                        track: 1, $0, timestampMicroseconds: 80_000, durationMicroseconds: 0, isKeyframe: false)
                }
            }
        }
        // Dropped without finish(): nothing at the destination.
        #expect(!FileManager.default.fileExists(atPath: path))
        let empty = try WebMWriter(path: path, tracks: [.video(.vp8, width: 160, height: 90)])
        expectMediaError(naming: path) { try empty.finish() }
    }
}

@Suite("WebM writer's live mode: written in place, cluster by cluster", .timeLimit(.minutes(5)))
struct WebMLiveWriterTests {
    /// 90 frames (3 s at 30 fps) of a moving 64x48 picture, a keyframe every second.
    private static let frames: [EncodedFrame] = {
        var settings = VPXEncoderConfiguration(codec: .vp8, width: 64, height: 48)
        settings.keyframeIntervalFrames = 30
        let encoder = try! VPXEncoder(configuration: settings)
        return (0..<90).map { try! encoder.encode(try! syntheticPicture(width: 64, height: 48, frame: $0)) }
    }()

    /// Writes ``frames`` to `path` in `mode`; with `stopAfter`, the writer is dropped after that
    /// many frames without finishing, as a process that dies leaves it.
    private func write(_ path: String, mode: WebMWriter.Mode, stopAfter: Int? = nil) throws {
        let writer = try WebMWriter(path: path, tracks: [.video(.vp8, width: 64, height: 48)], mode: mode)
        for (index, frame) in Self.frames.enumerated() {
            if let stopAfter, index == stopAfter { return }
            try frame.withUnsafeBytes {
                try writer.write(
                    track: 0, $0, timestampMicroseconds: Int64(index) * 1_000_000 / 30, durationMicroseconds: 33_333,
                    isKeyframe: frame.isKeyframe)
            }
        }
        try writer.finish()
    }

    @Test("a finished live file reads, seeks and decodes as the seekable one does, with the same packets")
    func finishedLiveFile() throws {
        let folder = TemporaryFolder()
        let live = folder.file("live.webm")
        let seekable = folder.file("seekable.webm")
        try write(live, mode: .live)
        try write(seekable, mode: .seekable)
        let probe = try runTool(
            "ffprobe",
            [
                "-v", "warning", "-count_frames", "-show_entries", "stream=nb_read_frames:format=duration", "-of",
                "csv=p=0", live,
            ])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["90", "3.000000"])
        let info = try runTool("mkvinfo", ["-a", live])
        #expect(info.status == 0 && !info.stdout.lowercased().contains("error"), "\(info.stdout)")
        // One cluster a second (the live limit), each listed in the Cues.
        #expect(info.stdout.components(separatedBy: "+ Cluster timestamp").count == 4)
        let seek = try reference(
            "ffprobe",
            ["-v", "warning", "-read_intervals", "1.5%", "-show_entries", "packet=pts_time", "-of", "csv=p=0", live])
        #expect(seek.split(separator: "\n").first == "1.000000", "\(seek)")  // the keyframe before 1.5 s
        #expect(try ffmpegPackets(live) == (try ffmpegPackets(seekable)))
        #expect(try vpxdecFrameMD5s(live) == (try vpxdecFrameMD5s(seekable)))
    }

    @Test("a live file whose writer died mid-cluster holds every complete cluster and reads cleanly")
    func interruptedLiveFile() throws {
        let folder = TemporaryFolder()
        let live = folder.file("interrupted.webm")
        let whole = folder.file("whole.webm")
        try write(live, mode: .live, stopAfter: 75)  // 2.5 s: clusters at 0 and 1 s complete
        try write(whole, mode: .seekable)
        let reader = try WebMReader(path: live)
        var frames = 0
        while try reader.readFrame() != nil { frames += 1 }
        #expect(frames == 60)
        let probe = try runTool(
            "ffprobe",
            ["-v", "warning", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", live])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout == "60\n")
        #expect(try vpxdecFrameMD5s(live) == Array(try vpxdecFrameMD5s(whole).prefix(60)))
        // Written in place with unknown sizes: nothing patched, nothing hidden.
        let info = try reference("mkvinfo", ["-a", live])
        #expect(info.contains("Segment: size unknown"), "\(info)")
        #expect(folder.contents.sorted() == ["interrupted.webm", "whole.webm"])
    }
}
