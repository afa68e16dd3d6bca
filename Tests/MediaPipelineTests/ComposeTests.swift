import Foundation
import Testing

@testable import MediaPipeline

@Suite("Composing files into a grid with their audio mixed", .timeLimit(.minutes(5)))
struct ComposeTests {
    /// Frame `index` of `path` decoded by ffmpeg and scaled by it to `width` × `height`, as raw I420.
    private func ffmpegFrame(_ path: String, index: Int, width: Int, height: Int, crop: String? = nil) throws
        -> I420Buffer
    {
        let folder = TemporaryFolder()
        let raw = folder.file("frame.yuv")
        var filters = "select=eq(n\\,\(index))"
        if let crop { filters += ",crop=\(crop)" }
        filters += ",scale=\(width):\(height):flags=bilinear"
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", path, "-vf", filters, "-fps_mode", "passthrough", "-frames:v", "1",
                "-f",
                "rawvideo", "-pix_fmt", "yuv420p", raw,
            ])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        #expect(bytes.count == width * height * 3 / 2)
        return try rawI420Picture(bytes, index: 0, width: width, height: height)
    }

    @Test(
        "each cell shows its input's frame of the time (PSNR ≥ 30 dB against ffmpeg's own scaling); the audio is the input's"
    )
    func grid() throws {
        let folder = TemporaryFolder()
        // Two different videos (the motion sample, and the odd-size sample at 15 fps) and speech.
        let odd = folder.file("odd.ivf")
        try VideoFileEncoder.encode(
            input: Fixtures.oddY4M, output: odd, settings: VPXEncoderConfiguration(width: 1, height: 1))
        let speech = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: speech)
        let output = folder.file("grid.webm")
        let summary = try FileCompositor.compose(
            inputs: [Fixtures.motionIVF, odd, speech], output: output, width: 640, height: 360, framesPerSecond: 15)
        // As long as the longest input (the 4 s speech): 60 pictures; 90 + 30 frames decoded.
        #expect(summary.pictures == 60 && summary.framesDecoded == 120 && summary.audioInputs == 1, "\(summary)")
        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "format=duration", "-of", "csv=p=0", output])
        #expect(probe.status == 0 && probe.stderr.isEmpty && probe.stdout == "4.000000\n", "\(probe)")

        // Picture 10 (0.667 s) of the 2x2 grid: the motion sample's frame 20 in the top-left
        // 320x180 cell (640x360 scaled by half), the odd sample's frame 10 in the top-right one
        // (161x91 cropped to the cell's 16:9 and scaled up); the bottom row is black.
        let composed = try ffmpegFrame(output, index: 10, width: 640, height: 360)
        let left = try ffmpegFrame(Fixtures.motionIVF, index: 20, width: 320, height: 180)
        let right = try ffmpegFrame(odd, index: 10, width: 320, height: 180, crop: "160:90")
        func cellPSNR(_ expected: I420Buffer, x: Int) throws -> Double {
            let cell = try I420Buffer(width: 320, height: 180)
            composed.withView { whole in
                cell.withMutableView { view in
                    for row in 0..<180 {
                        (view.y + row * view.strideY).update(from: whole.y + row * whole.strideY + x, count: 320)
                    }
                    for row in 0..<90 {
                        (view.u + row * view.strideU).update(from: whole.u + row * whole.strideU + x / 2, count: 160)
                        (view.v + row * view.strideV).update(from: whole.v + row * whole.strideV + x / 2, count: 160)
                    }
                }
            }
            return expected.withView { a in cell.withView { PictureQuality.psnr(reference: a, test: $0) } }
        }
        let leftPSNR = try cellPSNR(left, x: 0)
        let rightPSNR = try cellPSNR(right, x: 320)
        #expect(leftPSNR >= 34, "\(leftPSNR) dB")  // 36.0 dB
        #expect(rightPSNR >= 26, "\(rightPSNR) dB")  // 27.2 dB
        // A frame from another time does not match as well: the cells follow their inputs' clocks.
        let earlier = try ffmpegFrame(Fixtures.motionIVF, index: 2, width: 320, height: 180)
        #expect(try cellPSNR(earlier, x: 0) < leftPSNR - 3)

        // The one audio input, mixed alone, is the speech: same length, within Opus's quality.
        let (mixed, expected) = (try ffmpegAudio(output), try ffmpegAudio(speech))
        #expect(mixed.count == expected.count)
        let snr = SignalQuality.snr(reference: expected, test: mixed)
        #expect(snr >= 22, "\(snr) dB")  // 23.3 dB
    }

    @Test("bad inputs and settings are typed errors naming the file; no output is left")
    func badInputs() throws {
        let folder = TemporaryFolder()
        expectMediaError(naming: Fixtures.speechWAV) {
            try FileCompositor.compose(inputs: [Fixtures.speechWAV], output: folder.file("x.webm"))
        }
        expectMediaError(naming: folder.file("x.ivf")) {
            try FileCompositor.compose(inputs: [Fixtures.motionIVF], output: folder.file("x.ivf"))
        }
        // No input: no file to name; the message says what is missing.
        expectMediaError(naming: "needs an input file") {
            try FileCompositor.compose(inputs: [], output: folder.file("x.webm"))
        }
        let cut = folder.file("cut.ivf")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Fixtures.motionIVF))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        do {
            try FileCompositor.compose(inputs: [Fixtures.motionIVF, cut], output: folder.file("x.webm"))
            Issue.record("a truncated input was accepted")
        } catch let error as MediaError {
            #expect(error.file == cut, "\(error)")
        }
        #expect(folder.contents == ["cut.ivf"])
        // Audio alone: refused in words (it wrote black pictures).
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        do {
            try FileCompositor.compose(inputs: [opus], output: folder.file("audio.webm"))
            Issue.record("an audio-only composition was written")
        } catch let error as MediaError {
            #expect(error.code == .invalidArgument && error.message.contains("no input has video"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.file("audio.webm")))
    }
}
