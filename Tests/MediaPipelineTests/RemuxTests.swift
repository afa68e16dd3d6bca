import Foundation
import Testing

@testable import MediaPipeline

@Suite("Remuxing IVF, Ogg Opus and WebM without re-encoding, checked with ffmpeg and vpxdec", .timeLimit(.minutes(5)))
struct RemuxTests {
    /// The packets of a one-stream file as ffmpeg demuxes them, without times (IVF, Ogg and WebM
    /// count time differently).
    private func packetBytes(_ path: String, stream: Int = 0) throws -> [Packet] {
        (try ffmpegPackets(path)[stream] ?? []).map { Packet(size: $0.size, md5: $0.md5) }
    }

    /// The samples ffmpeg's libopus decode gives (16-bit, no dither: what our decoder gives).
    private func libopusSamples(_ path: String) throws -> [Int16] { try ffmpegAudio(path, libopus: true) }

    @Test("IVF + Ogg Opus → WebM: the same packets, a clean seekable file, the same pictures and samples")
    func intoWebM() throws {
        let folder = TemporaryFolder()
        let ogg = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: ogg)
        let webm = folder.file("both.webm")
        let summary = try MediaRemuxer.remux(inputs: [Fixtures.motionIVF, ogg], output: webm)
        #expect(summary.tracks.map(\.codec) == [.vp8, .opus])
        #expect(summary.frames == [90, 201])  // 4 s and the pre-skip in 20 ms packets

        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "format=duration", "-of", "csv=p=0", webm])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout == "4.000000\n")  // the speech's 4 s, to the sample
        let info = try runTool("mkvinfo", ["-a", webm])
        #expect(info.status == 0 && !info.stdout.lowercased().contains("error"), "\(info.stdout)")

        // Byte-identical packets, track by track.
        #expect(try packetBytes(webm, stream: 0) == (try packetBytes(Fixtures.motionIVF)))
        #expect(try packetBytes(webm, stream: 1) == (try packetBytes(ogg)))
        // vpxdec's pictures and libopus's samples are those of the sources, to the sample.
        #expect(try vpxdecFrameMD5s(webm) == (try vpxdecFrameMD5s(Fixtures.motionIVF)))
        let fromWebM = try libopusSamples(webm)
        #expect(fromWebM == (try libopusSamples(ogg)))
        #expect(fromWebM.count == 192_000 * 2)
    }

    @Test("ffmpeg's WebM → IVF and Ogg Opus: vpxdec's pictures and opusdec's exact samples of the same streams")
    func outOfWebM() throws {
        let folder = TemporaryFolder()
        let webm = folder.file("ffmpeg.webm")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", Fixtures.oddY4M, "-i", Fixtures.speechWAV, "-t", "2", "-c:v", "libvpx",
                "-b:v", "200k", "-c:a", "libopus", "-shortest", webm,
            ])
        let ivf = folder.file("video.ivf")
        let ogg = folder.file("audio.opus")
        try MediaRemuxer.remux(inputs: [webm], output: ivf)
        try MediaRemuxer.remux(inputs: [webm], output: ogg)
        #expect(try packetBytes(ivf) == (try packetBytes(webm, stream: 0)))
        #expect(try packetBytes(ogg) == (try packetBytes(webm, stream: 1)))
        #expect(try vpxdecFrameMD5s(ivf) == (try vpxdecFrameMD5s(webm)))
        // The pre-skip and end trimming survive: the Ogg file decodes to the WebM track's
        // samples at the same count (ffmpeg and libopus for both; our decoder for the Ogg file).
        let decoded = folder.file("audio.wav")
        try AudioFileDecoder.decode(input: ogg, output: decoded)
        let expected = try libopusSamples(webm)
        #expect(try libopusSamples(ogg) == expected)
        #expect(try wavSamples(decoded) == expected)
        // The IVF file's millisecond time base still reads as 15 fps.
        let info = try MediaFileInfo.probe(path: ivf)
        #expect(info.frames == 30)
        #expect(abs(info.framesPerSecond - 15) < 0.1, "\(info.framesPerSecond)")
    }

    @Test("IVF → WebM → IVF and Ogg → WebM → Ogg give back the same frames and the same samples")
    func roundTrips() throws {
        let folder = TemporaryFolder()
        let webm = folder.file("video.webm")
        let ivf = folder.file("back.ivf")
        try MediaRemuxer.remux(inputs: [Fixtures.motionIVF], output: webm)
        try MediaRemuxer.remux(inputs: [webm], output: ivf)
        let original = IVFFrames(Fixtures.motionIVF)
        #expect(try IVFFrames(ivf).all() == (try original.all()))

        let ogg = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: ogg)
        let audioWebM = folder.file("audio.webm")
        let oggBack = folder.file("back.opus")
        try MediaRemuxer.remux(inputs: [ogg], output: audioWebM)
        try MediaRemuxer.remux(inputs: [audioWebM], output: oggBack)
        #expect(try libopusSamples(oggBack) == (try libopusSamples(ogg)))
        #expect(try libopusSamples(audioWebM).count == 192_000 * 2)
    }

    @Test("bad remuxes are typed errors naming the file")
    func badRemuxes() throws {
        let folder = TemporaryFolder()
        expectMediaError(naming: Fixtures.speechWAV) {
            try MediaRemuxer.remux(inputs: [Fixtures.speechWAV], output: folder.file("x.webm"))
        }
        expectMediaError(naming: folder.file("x.opus")) {
            try MediaRemuxer.remux(inputs: [Fixtures.motionIVF], output: folder.file("x.opus"))
        }
        expectMediaError(naming: folder.file("x.ivf")) {
            try MediaRemuxer.remux(inputs: [Fixtures.motionIVF, Fixtures.motionIVF], output: folder.file("x.ivf"))
        }
        expectMediaError(naming: folder.file("x.wav")) {
            try MediaRemuxer.remux(inputs: [Fixtures.motionIVF], output: folder.file("x.wav"))
        }
        #expect(folder.contents.isEmpty)
    }
}

/// The frames of an IVF file, bytes only.
private struct IVFFrames {
    let path: String
    init(_ path: String) { self.path = path }
    func all() throws -> [[UInt8]] {
        let reader = try IVFReader(path: path)
        var frames: [[UInt8]] = []
        while let frame = try reader.readFrame() { frames.append(frame.bytes) }
        return frames
    }
}

@Suite("IVF's length field: frames for libvpx, time units for ffmpeg", .timeLimit(.minutes(5)))
struct IVFLengthTests {
    @Test(
        "an IVF remuxed from a 1/1000 WebM lasts its content in ffprobe; ffmpeg's own such IVF reads whole; a short one is truncated"
    )
    func lengthField() throws {
        let folder = TemporaryFolder()
        let webm = folder.file("motion.webm")
        let ours = folder.file("ours.ivf")
        #expect(try pipebench(["remux", Fixtures.motionIVF, webm, "--quiet"]).status == 0)
        #expect(try pipebench(["remux", webm, ours, "--quiet"]).status == 0)
        let duration = try reference(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", ours])
        #expect(
            abs((Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 3.0) < 0.05, "\(duration)")
        // ffmpeg writes the duration in 1/1000 units there (3000 for 90 frames): read whole.
        let theirs = folder.file("theirs.ivf")
        _ = try reference("ffmpeg", ["-nostdin", "-v", "error", "-i", webm, "-c", "copy", theirs])
        let reader = try IVFReader(path: theirs)
        #expect(reader.header.frameCount == 3000 && reader.header.timebaseDenominator == 1000)
        var frames = 0
        while try reader.readFrame() != nil { frames += 1 }
        #expect(frames == 90)
        // vpxenc's convention (a frame a unit) still tells a file cut short.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.motionIVF)))
        var end = 32  // after the header, then 45 whole frames
        for _ in 0..<45 {
            end +=
                12
                + (Int(bytes[end]) | Int(bytes[end + 1]) << 8 | Int(bytes[end + 2]) << 16 | Int(bytes[end + 3]) << 24)
        }
        let cut = folder.file("cut.ivf")
        try Data(bytes.prefix(end)).write(to: URL(fileURLWithPath: cut))
        let short = try IVFReader(path: cut)
        do {
            while try short.readFrame() != nil {}
            Issue.record("45 of 90 frames read as whole")
        } catch let error as MediaError {
            #expect(error.code == .truncated && error.message.contains("declares 90"), "\(error)")
        }
        // A container fuzzer's find: frame timestamps near Int64's ends (the span overflowed).
        let seed = try [UInt8](
            Data(
                contentsOf: URL(
                    fileURLWithPath: Fixtures.packageRoot + "/Fuzz/Seeds/containers/ivf-regression-huge-timestamps")))
        let huge = folder.file("huge.ivf")
        try Data(seed.dropFirst()).write(to: URL(fileURLWithPath: huge))
        do {
            _ = try VideoFileDecoder.decode(input: huge, output: .none, computeMD5: true)
        } catch is MediaError {}  // an error is fine; a trap is not
    }
}
