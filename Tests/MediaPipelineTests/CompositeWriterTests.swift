import Foundation
import Testing

@testable import MediaPipeline

@Suite("Composite writer: a picture and a mix encoded once into WebM", .timeLimit(.minutes(5)))
struct CompositeWriterTests {
    @Test("ffmpeg decodes the file to the pictures (PSNR ≥ 30 dB) and the tone (SNR ≥ 20 dB) given, at their lengths")
    func composite() throws {
        let folder = TemporaryFolder()
        let path = folder.file("composite.webm")
        let writer = try CompositeWriter(path: path, width: 320, height: 180, framesPerSecond: 15)
        let tone = testTone(samplesPerChannel: 48_000 * 2)  // 2 s
        var pictures: [I420Buffer] = []
        // Every 10 ms, 10 ms of tone; every 1/15 s a picture, as a session's ticks give them.
        for tick in 0..<200 {
            try tone[tick * 960..<(tick + 1) * 960].withUnsafeBufferPointer { try writer.addAudio($0) }
            if tick * 15 % 100 < 15 {
                let picture = try syntheticPicture(width: 320, height: 180, frame: pictures.count)
                try picture.withView { try writer.addPicture($0, timestampMicroseconds: Int64(tick) * 10_000) }
                pictures.append(picture)
            }
        }
        try writer.finish()
        // 2 s of tone and the encoder's 6.5 ms lookahead: 101 packets, the last one mostly padding.
        #expect(writer.pictures == 30 && writer.audioPackets == 101)

        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout == "2.007000\n")  // the last picture, at 1.94 s, lasts 1/15 s
        // Video: each decoded picture against the one given.
        let yuv = folder.file("video.yuv")
        try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo", yuv])
        let frameBytes = 320 * 180 * 3 / 2
        let decoded = [UInt8](try Data(contentsOf: URL(fileURLWithPath: yuv)))
        #expect(decoded.count == frameBytes * 30)
        for (index, picture) in pictures.enumerated() where decoded.count >= (index + 1) * frameBytes {
            let copy = try rawI420Picture(decoded, index: index, width: 320, height: 180)
            let psnr = picture.withView { a in copy.withView { b in PictureQuality.psnr(reference: a, test: b) } }
            #expect(psnr >= 30, "picture \(index): \(psnr) dB")
        }
        // Audio: the tone, to the sample (the pre-skip dropped), within Opus's quality.
        let audio = try ffmpegAudio(path)
        #expect(audio.count == tone.count)
        #expect(SignalQuality.snr(reference: tone, test: audio) >= 20)
    }
}
