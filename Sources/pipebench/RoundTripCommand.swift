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
        /// Runs one file job, then its quality check (a metric name and value in dB), and reports both.
        func step(
            _ name: String, quality: (() throws -> (metric: String, decibels: Double))? = nil,
            _ body: () throws -> TranscodeSummary
        ) throws {
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
        func speechSNR() throws -> (metric: String, decibels: Double) {
            let source = try SignalQuality.loadWAV(speech).samples
            let decoded = try SignalQuality.loadWAV("\(output)/speech.wav").samples
            guard source.count == decoded.count else {
                throw MediaError(.codecFailure, "decoded \(decoded.count) samples; the source has \(source.count)")
            }
            return ("snrDecibels", SignalQuality.snr(reference: source, test: decoded))
        }
        func psnr(_ reference: String, _ test: String) throws -> (metric: String, decibels: Double) {
            ("psnrDecibels", try PictureQuality.averagePSNR(referenceY4M: reference, testY4M: test))
        }

        var audio = OpusEncoderConfiguration()
        audio.bitrateBitsPerSecond = audioBitrate.bitsPerSecond
        let opus = "\(output)/speech.opus"
        try step("encode") { try AudioFileEncoder.encode(input: speech, output: opus, settings: audio) }
        try step("decode", quality: speechSNR) {
            try AudioFileDecoder.decode(input: opus, output: "\(output)/speech.wav")
        }
        let motionY4M = "\(output)/motion.y4m"
        try step("decode") { try VideoFileDecoder.decode(input: motion, output: .y4m(motionY4M)) }
        for codec in VideoCodec.allCases {
            var settings = VPXEncoderConfiguration(codec: codec, width: 1, height: 1)
            settings.bitrateBitsPerSecond = videoBitrate.bitsPerSecond
            let encoded = "\(output)/motion-\(codec.rawValue).ivf"
            let decoded = "\(output)/motion-\(codec.rawValue).y4m"
            try step("encode") { try VideoFileEncoder.encode(input: motionY4M, output: encoded, settings: settings) }
            let quality = { try psnr(motionY4M, decoded) }
            try step("decode", quality: quality) {
                try VideoFileDecoder.decode(input: encoded, output: .y4m(decoded))
            }
        }
        var oddSettings = VPXEncoderConfiguration(width: 1, height: 1)
        oddSettings.bitrateBitsPerSecond = 300_000
        let oddIVF = "\(output)/odd-vp8.ivf"
        let oddDecoded = "\(output)/odd-vp8.y4m"
        try step("encode") { try VideoFileEncoder.encode(input: odd, output: oddIVF, settings: oddSettings) }
        let oddQuality = { try psnr(odd, oddDecoded) }
        try step("decode", quality: oddQuality) {
            try VideoFileDecoder.decode(input: oddIVF, output: .y4m(oddDecoded))
        }
        if json { print(Report.json(["steps": rows])) } else { print("outputs in \(output)/") }
    }
}
