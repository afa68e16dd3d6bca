import Foundation
import Testing

@testable import MediaPipeline

@Suite("Ogg Opus files against opusdec, opusenc and ffmpeg", .timeLimit(.minutes(5)))
struct OggOpusFileTests {
    @Test("our file plays in opusdec and ffmpeg with the exact input length and a high SNR")
    func oursPlaysElsewhere() throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        let summary = try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        #expect(summary.frames == 192_000)
        let source = try wavSamples(Fixtures.speechWAV)

        try reference("opusdec", ["--quiet", "--rate", "48000", opus, folder.file("opusdec.wav")])
        let opusdec = try wavSamples(folder.file("opusdec.wav"))
        #expect(opusdec.count == source.count)
        #expect(try ffmpegSampleCount(opus, channels: 2) == 192_000)

        try AudioFileDecoder.decode(input: opus, output: folder.file("ours.wav"))
        let ours = try wavSamples(folder.file("ours.wav"))
        #expect(ours.count == source.count)
        let snr = SignalQuality.snr(reference: source, test: ours)
        // Measured 20.0 dB on the bundled speech (opusenc: 20.2 dB, ffmpeg/libopus: 20.0 dB).
        #expect(snr > 18, "SNR \(snr) dB")
        // opusdec decodes in float and dithers to 16 bits; ours rounds. They agree closely.
        let agreement = SignalQuality.snr(reference: opusdec, test: ours)
        // Measured: 59 dB, at most 17 LSB apart (opusdec's dither).
        #expect(agreement > 50, "ours vs opusdec: \(agreement) dB")
    }

    @Test("files made by opusenc and ffmpeg decode to the exact sample count, matching opusdec")
    func othersDecodeHere() throws {
        let folder = TemporaryFolder()
        let byOpusenc = folder.file("opusenc.opus")
        let byFFmpeg = folder.file("ffmpeg.opus")
        try reference("opusenc", ["--quiet", "--bitrate", "64", Fixtures.speechWAV, byOpusenc])
        try reference(
            "ffmpeg", ["-nostdin", "-v", "error", "-i", Fixtures.speechWAV, "-c:a", "libopus", "-b:a", "64k", byFFmpeg])
        for file in [byOpusenc, byFFmpeg] {
            let ours = folder.file("ours.wav")
            let summary = try AudioFileDecoder.decode(input: file, output: ours)
            #expect(summary.frames == 192_000, "\(file)")
            try reference("opusdec", ["--quiet", "--rate", "48000", file, folder.file("ref.wav")])
            let expected = try wavSamples(folder.file("ref.wav"))
            let decoded = try wavSamples(ours)
            #expect(decoded.count == expected.count)
            let agreement = SignalQuality.snr(reference: expected, test: decoded)
            let worst = zip(expected, decoded).map { abs(Int($0) - Int($1)) }.max() ?? 0
            // Measured: 59 dB, at most 16 LSB apart (opusdec dithers its float output to 16 bits).
            #expect(agreement > 50 && worst <= 32, "\(file): \(agreement) dB, worst sample difference \(worst)")
        }
    }

    @Test(
        "a 44.1 kHz source is resampled and keeps its duration; 16 kHz is encoded natively",
        arguments: [44100, 16000, 22050])
    func otherRates(rate: Int) throws {
        let folder = TemporaryFolder()
        let wav = folder.file("in.wav")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", Fixtures.speechWAV, "-ar", String(rate), "-t", "1.234", "-c:a",
                "pcm_s16le", wav,
            ])
        let source = try WAVReader(path: wav).format
        let opus = folder.file("out.opus")
        try AudioFileEncoder.encode(input: wav, output: opus)
        let expected = Int((source.frameCount * 48000 + Int64(rate / 2)) / Int64(rate))
        let reader = try OggOpusReader(path: opus)
        #expect(reader.head.inputSampleRate == rate)
        #expect(try ffmpegSampleCount(opus, channels: 2) == expected)
        try reference("opusdec", ["--quiet", "--rate", "48000", opus, folder.file("ref.wav")])
        #expect(try wavSamples(folder.file("ref.wav")).count == expected * 2)
        #expect(try AudioFileDecoder.decode(input: opus, output: folder.file("ours.wav")).frames == Int64(expected))
    }

    @Test(
        "24-bit, 32-bit float and mono WAV files read as ffmpeg reads them",
        arguments: ["pcm_s24le", "pcm_f32le", "pcm_s32le", "mono"])
    func wavEncodings(codec: String) throws {
        let folder = TemporaryFolder()
        let wav = folder.file("in.wav")
        let channels = codec == "mono" ? 1 : 2
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", Fixtures.speechWAV, "-t", "0.5", "-ac", String(channels),
                "-c:a", codec == "mono" ? "pcm_s16le" : codec, wav,
            ])
        try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", wav, "-f", "s16le", "-c:a", "pcm_s16le", folder.file("ref.raw")])
        let expected = try rawInt16(folder.file("ref.raw"))
        let ours = try wavSamples(wav)
        #expect(ours.count == expected.count)
        let worst = zip(expected, ours).map { abs(Int($0) - Int($1)) }.max() ?? 99
        #expect(worst <= 1, "worst difference \(worst)")
        // And the mono file round-trips through Opus with its length.
        if channels == 1 {
            try AudioFileEncoder.encode(input: wav, output: folder.file("m.opus"))
            #expect(try ffmpegSampleCount(folder.file("m.opus"), channels: 1) == 24000)
        }
    }

    @Test("our WAV output is read by ffmpeg sample for sample")
    func wavWriter() throws {
        let folder = TemporaryFolder()
        let samples = testTone(samplesPerChannel: 4800)
        let writer = try WAVWriter(path: folder.file("t.wav"), sampleRate: 48000, channelCount: 2)
        try writer.write(samples)
        try writer.finish()
        try reference(
            "ffmpeg", ["-nostdin", "-v", "error", "-i", folder.file("t.wav"), "-f", "s16le", folder.file("t.raw")])
        #expect(try rawInt16(folder.file("t.raw")) == samples)
    }

    @Test("chained and multistream files are refused as unsupported")
    func unsupportedLayouts() throws {
        let folder = TemporaryFolder()
        let one = folder.file("one.opus")
        try reference("opusenc", ["--quiet", "--serial", "1", Fixtures.speechWAV, one])
        let two = folder.file("two.opus")
        try reference("opusenc", ["--quiet", "--serial", "2", Fixtures.speechWAV, two])
        let chained = folder.file("chained.opus")
        var data = try Data(contentsOf: URL(fileURLWithPath: one))
        data.append(try Data(contentsOf: URL(fileURLWithPath: two)))
        try data.write(to: URL(fileURLWithPath: chained))
        let error = #expect(throws: MediaError.self) {
            try AudioFileDecoder.decode(input: chained, output: folder.file("x.wav"))
        }
        #expect(error?.code == .unsupported)
        #expect(error?.description.contains("chained") == true)
        #expect(!FileManager.default.fileExists(atPath: folder.file("x.wav")))

        let surround = folder.file("surround.wav")
        try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=f=440:d=0.3", "-ac", "6", "-ar", "48000", surround])
        let multistream = folder.file("multi.opus")
        try reference("opusenc", ["--quiet", surround, multistream])
        // 5.1 (family 1, multistream) reads and decodes, folded to stereo, to the length opusenc
        // wrote (0.3 s at 48 kHz).
        let multi = try OggOpusReader(path: multistream)
        #expect(multi.head.mappingFamily == 1 && multi.head.channelCount == 6 && multi.head.streamCount == 4)
        let folded = folder.file("multi.wav")
        let summary = try AudioFileDecoder.decode(input: multistream, output: folded)
        #expect(summary.channelCount == 2 && summary.frames == 14_400, "\(summary)")
        #expect(try wavSamples(folded).count == 2 * 14_400)
    }
}
