import Foundation
import Testing

@testable import MediaPipeline

@Suite("IVF and Y4M files against vpxdec, vpxenc and ffmpeg", .timeLimit(.minutes(5)))
struct VideoFileTests {
    @Test("a vpxenc file decodes to vpxdec's exact per-frame MD5s")
    func vpxencFile() throws {
        let summary = try VideoFileDecoder.decode(input: Fixtures.motionIVF, output: .none, computeMD5: true)
        #expect(summary.frames == 90)
        #expect(summary.frameMD5s == (try vpxdecFrameMD5s(Fixtures.motionIVF)))
    }

    @Test(
        "our VP8 and VP9 files decode in vpxdec and ffmpeg, with our MD5s equal to vpxdec's",
        arguments: [(VideoCodec.vp8, "odd"), (.vp9, "odd"), (.vp8, "motion"), (.vp9, "motion")])
    func oursDecodeElsewhere(codec: VideoCodec, source: String) throws {
        let folder = TemporaryFolder()
        var y4m = Fixtures.oddY4M
        if source == "motion" {
            y4m = folder.file("motion.y4m")
            try VideoFileDecoder.decode(input: Fixtures.motionIVF, output: .y4m(y4m))
        }
        let ivf = folder.file("out.ivf")
        let encoded = try VideoFileEncoder.encode(
            input: y4m, output: ivf, settings: VPXEncoderConfiguration(codec: codec, width: 1, height: 1))
        let ours = try VideoFileDecoder.decode(input: ivf, output: .y4m(folder.file("ours.y4m")), computeMD5: true)
        #expect(ours.frames == encoded.frames)
        #expect(ours.frameMD5s == (try vpxdecFrameMD5s(ivf)))
        let probe = try reference(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=nb_read_frames,width,height", "-of", "csv=p=0", ivf,
            ])
        #expect(
            probe.trimmingCharacters(in: .whitespacesAndNewlines)
                == "\(encoded.width),\(encoded.height),\(encoded.frames)")

        // Quality: our PSNR against the source, cross-checked with ffmpeg's psnr filter.
        let psnr = try PictureQuality.averagePSNR(referenceY4M: y4m, testY4M: folder.file("ours.y4m"))
        #expect(psnr > 30, "PSNR \(psnr) dB")
        let log = try runTool(
            "ffmpeg", ["-nostdin", "-i", folder.file("ours.y4m"), "-i", y4m, "-lavfi", "psnr", "-f", "null", "-"]
        ).stderr
        let average = log.split(separator: " ").first { $0.hasPrefix("average:") }.flatMap { Double($0.dropFirst(8)) }
        let ffmpegPSNR = try #require(average, "no PSNR in ffmpeg's output")
        #expect(abs(ffmpegPSNR - psnr) < 0.05, "ours \(psnr) dB, ffmpeg \(ffmpegPSNR) dB")
    }

    @Test("our Y4M and raw I420 output are what ffmpeg and vpxdec write")
    func y4mWriter() throws {
        let folder = TemporaryFolder()
        try VideoFileDecoder.decode(input: Fixtures.motionIVF, output: .y4m(folder.file("ours.y4m")))
        try VideoFileDecoder.decode(input: Fixtures.motionIVF, output: .rawI420(folder.file("ours.yuv")))
        try reference("vpxdec", ["--i420", "-o", folder.file("ref.yuv"), Fixtures.motionIVF])
        #expect(FileManager.default.contentsEqual(atPath: folder.file("ours.yuv"), andPath: folder.file("ref.yuv")))
        try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", folder.file("ours.y4m"), "-f", "rawvideo", folder.file("ff.yuv")])
        #expect(FileManager.default.contentsEqual(atPath: folder.file("ff.yuv"), andPath: folder.file("ref.yuv")))
    }

    @Test(
        "Y4M variants from ffmpeg are read; non-4:2:0 is refused", arguments: ["yuv420p", "yuv422p", "yuv444p", "gray"])
    func y4mVariants(pixelFormat: String) throws {
        let folder = TemporaryFolder()
        let y4m = folder.file("v.y4m")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=112x64:rate=25:duration=0.2",
                "-vf", "crop=99:51:0:0:exact=1,setfield=tff", "-pix_fmt", pixelFormat, "-strict", "-1", y4m,
            ])
        if pixelFormat == "yuv420p" {
            let reader = try Y4MReader(path: y4m)
            #expect(reader.header.width == 99 && reader.header.height == 51)
            #expect(reader.header.frameRateNumerator == 25 && reader.header.frameRateDenominator == 1)
            #expect(reader.header.interlace == "t")
            var frames = 0
            while try reader.readFrame() != nil { frames += 1 }
            #expect(frames == 5)
        } else {
            let error = #expect(throws: MediaError.self) { try Y4MReader(path: y4m) }
            #expect(error?.code == .unsupported)
        }
    }
}
