import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench roundtrip`: encodes and decodes the bundled samples and reports size, speed and
/// quality of each step. The main job until the multi-channel engine exists.
struct RoundTripCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roundtrip",
        abstract: "Encode and decode the bundled samples; report bitrate, speed, SNR and PSNR.")

    @Option(help: "Folder with the bundled samples.") var samples = "samples"
    @Option(help: "Folder for the outputs (created if missing).") var output = "out"
    @Option(help: "Opus bitrate (64k by default).") var audioBitrate = Bitrate(argument: "64k")!
    @Option(help: "VP8/VP9 bitrate (500k by default).") var videoBitrate = Bitrate(argument: "500k")!
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let speech = "\(samples)/speech-48k-stereo.wav"
        let motion = "\(samples)/motion-640x360.ivf"
        let odd = "\(samples)/odd-161x91.y4m"
        var rows: [[String: Any]] = []
        func step(_ name: String, _ body: () throws -> TranscodeSummary, quality: (() throws -> (String, Double))? = nil) throws {
            if !json { Terminal.progress(name, 0) }
            let (summary, elapsed) = try measure(body)
            var row = Report.summaryObject(name, summary, elapsedSeconds: elapsed)
            var line = Report.summaryLine(name, summary, elapsedSeconds: elapsed)
            if let quality {
                let (metric, value) = try quality()
                row[metric] = (value * 100).rounded() / 100
                line += String(format: ", %@ %.2f dB", metric == "snrDecibels" ? "SNR" : "PSNR", value)
            }
            rows.append(row)
            Terminal.clearProgress()
            if !json { print(line) }
        }
        var audio = OpusEncoderConfiguration()
        audio.bitrateBitsPerSecond = audioBitrate.bitsPerSecond
        try step("encode", { try AudioFileEncoder.encode(input: speech, output: "\(output)/speech.opus", settings: audio) })
        try step("decode", { try AudioFileDecoder.decode(input: "\(output)/speech.opus", output: "\(output)/speech.wav") }) {
            let source = try SignalQuality.loadWAV(speech).samples
            let decoded = try SignalQuality.loadWAV("\(output)/speech.wav").samples
            guard source.count == decoded.count else {
                throw MediaError(.codecFailure, "decoded \(decoded.count) samples; the source has \(source.count)")
            }
            return ("snrDecibels", SignalQuality.snr(reference: source, test: decoded))
        }
        try step("decode", { try VideoFileDecoder.decode(input: motion, output: .y4m("\(output)/motion.y4m")) })
        for codec in VideoCodec.allCases {
            var settings = VPXEncoderConfiguration(codec: codec, width: 1, height: 1)
            settings.bitrateBitsPerSecond = videoBitrate.bitsPerSecond
            let encoded = "\(output)/motion-\(codec.rawValue).ivf"
            try step("encode", { try VideoFileEncoder.encode(input: "\(output)/motion.y4m", output: encoded, settings: settings) })
            try step("decode", { try VideoFileDecoder.decode(input: encoded, output: .y4m("\(output)/motion-\(codec.rawValue).y4m")) }) {
                ("psnrDecibels", try PictureQuality.averagePSNR(referenceY4M: "\(output)/motion.y4m", testY4M: "\(output)/motion-\(codec.rawValue).y4m"))
            }
        }
        var oddSettings = VPXEncoderConfiguration(width: 1, height: 1)
        oddSettings.bitrateBitsPerSecond = 300_000
        try step("encode", { try VideoFileEncoder.encode(input: odd, output: "\(output)/odd-vp8.ivf", settings: oddSettings) })
        try step("decode", { try VideoFileDecoder.decode(input: "\(output)/odd-vp8.ivf", output: .y4m("\(output)/odd-vp8.y4m")) }) {
            ("psnrDecibels", try PictureQuality.averagePSNR(referenceY4M: odd, testY4M: "\(output)/odd-vp8.y4m"))
        }
        if json { print(Report.json(["steps": rows])) } else { print("outputs in \(output)/") }
    }
}
