import ArgumentParser
import MediaPipeline

/// `pipebench encode IN OUT`: WAV → Ogg Opus or WebM, Y4M → IVF or WebM (with `--audio WAV`, both
/// in one WebM file).
struct EncodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "Encode WAV to Ogg Opus or WebM, or Y4M to IVF or WebM (VP8/VP9), or Y4M and WAV into one WebM.",
        discussion:
            "With --audio, a Y4M input's video and the WAV's audio go into one WebM file, interleaved by time; "
            + "--bitrate then sets the video's, --audio-bitrate the audio's, and the Opus options apply to the audio.")

    @Argument(help: "Input file: WAV (PCM 16/24/32-bit or float, mono/stereo, any rate) or Y4M (4:2:0).")
    var input: String
    @Argument(help: "Output file: .opus or .webm for audio, .ivf or .webm for video.")
    var output: String

    @Option(help: "Video codec: vp8 or vp9.") var codec: VideoCodec?
    @Option(
        help:
            "Target bitrate in bits per second; k and M suffixes accepted (64k, 1.5M). Default: 64k audio, 500k video.")
    var bitrate: Bitrate?
    @Option(help: "With a Y4M input: a WAV file whose Opus encode goes beside the video (WebM output).")
    var audio: String?
    @Option(
        name: .customLong("audio-bitrate"), help: "With --audio: the Opus bitrate (default 64k); k and M suffixes.")
    var audioBitrate: Bitrate?
    @Option(help: "Opus complexity 0...10 (default 10).") var complexity: Int?
    @Option(name: .customLong("frame-size"), help: "Opus frame duration in ms: 2.5, 5, 10, 20, 40, 60 (default 20).")
    var frameSizeMs: Double?
    @Option(help: "Opus application: voip, audio, lowdelay (default audio).") var application: OpusApplication?
    @Flag(help: "Opus constant bitrate instead of VBR.") var cbr = false
    @Flag(help: "Opus in-band forward error correction.") var fec = false
    @Option(name: .customLong("expected-loss"), help: "Opus expected packet loss in percent, 0...100.")
    var expectedLoss: Int?
    @Flag(help: "Opus discontinuous transmission.") var dtx = false
    @Option(
        parsing: .unconditional, help: "VPX speed (cpu-used), -16...16; negative values are fixed speeds (default -6).")
    var speed: Int?
    @Option(
        name: .customLong("keyframe-interval"),
        help: "Longest distance between VPX keyframes, in frames (default 3000).")
    var keyframeInterval: Int?
    @Option(help: "VPX encoder threads (default 1).") var threads: Int?
    @Flag(name: .customLong("error-resilient"), help: "VPX error-resilient mode.") var errorResilient = false
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(help: "Print no progress bar and no summary line (--md5 and --json still print).") var quiet = false

    func run() throws {
        let kind = try MediaFileKind.detect(path: input)
        let target = MediaFileKind.forOutput(path: output)
        let progress: ProgressHandler? = quiet || json ? nil : { Terminal.progress("encoding", $0) }
        let (summary, elapsed): (TranscodeSummary, Double)
        switch kind {
        case .wav:
            guard target == .oggOpus || target == .webm else {
                throw ValidationError(
                    "audio encodes to Ogg Opus or WebM: name the output .opus or .webm, not '\(output)'")
            }
            try rejectVideoOptions()
            guard audio == nil, audioBitrate == nil else {
                throw ValidationError("--audio and --audio-bitrate go with a Y4M input; '\(input)' is the audio")
            }
            (summary, elapsed) = try measure {
                try AudioFileEncoder.encode(
                    input: input, output: output, settings: try opusSettings(bitrate: bitrate), progress: progress)
            }
        case .y4m:
            guard target == .ivf || target == .webm else {
                throw ValidationError("video encodes to IVF or WebM: name the output .ivf or .webm, not '\(output)'")
            }
            if audio == nil {
                try rejectAudioOptions()
            } else {
                guard target == .webm else {
                    throw ValidationError("audio beside video needs a WebM output: name it .webm, not '\(output)'")
                }
            }
            var audioSettings = try opusSettings(bitrate: audioBitrate)
            if audio == nil { audioSettings = OpusEncoderConfiguration() }
            var settings = VPXEncoderConfiguration(codec: codec ?? .vp8, width: 1, height: 1)
            if let bitrate { settings.bitrateBitsPerSecond = bitrate.bitsPerSecond }
            if let speed { settings.speed = speed }
            if let keyframeInterval { settings.keyframeIntervalFrames = keyframeInterval }
            if let threads { settings.threads = threads }
            settings.errorResilient = errorResilient
            (summary, elapsed) = try measure {
                try VideoFileEncoder.encode(
                    input: input, output: output, settings: settings, audio: audio, audioSettings: audioSettings,
                    progress: progress)
            }
        default:
            throw MediaError.unsupportedInput(input, kind, "encode takes WAV or Y4M")
        }
        Terminal.clearProgress()
        guard !quiet || json else { return }
        print(
            json
                ? Report.json(Report.summaryObject("encode", summary, elapsedSeconds: elapsed))
                : Report.summaryLine("encoded", summary, elapsedSeconds: elapsed))
    }

    private func opusSettings(bitrate: Bitrate?) throws -> OpusEncoderConfiguration {
        var settings = OpusEncoderConfiguration()
        if let bitrate { settings.bitrateBitsPerSecond = bitrate.bitsPerSecond }
        if let complexity { settings.complexity = complexity }
        if let frameSizeMs {
            guard frameSizeMs.isFinite, frameSizeMs > 0, frameSizeMs < 1000 else {
                throw ValidationError("--frame-size \(frameSizeMs) is not one of 2.5, 5, 10, 20, 40, 60")
            }
            settings.frameDurationMicroseconds = Int((frameSizeMs * 1000).rounded())
        }
        if let application { settings.application = application }
        settings.variableBitrate = !cbr
        settings.inbandForwardErrorCorrection = fec
        if let expectedLoss { settings.expectedPacketLossPercent = expectedLoss }
        settings.discontinuousTransmission = dtx
        try settings.validate()
        return settings
    }

    private func rejectVideoOptions() throws {
        let given = [
            ("--codec", codec != nil), ("--speed", speed != nil), ("--keyframe-interval", keyframeInterval != nil),
            ("--threads", threads != nil), ("--error-resilient", errorResilient),
        ].filter(\.1).map(\.0)
        if let first = given.first { throw ValidationError("\(first) applies to video; '\(input)' is WAV audio") }
    }

    private func rejectAudioOptions() throws {
        let given = [
            ("--complexity", complexity != nil), ("--frame-size", frameSizeMs != nil),
            ("--application", application != nil), ("--cbr", cbr), ("--fec", fec),
            ("--expected-loss", expectedLoss != nil), ("--dtx", dtx),
        ].filter(\.1).map(\.0)
        if let first = given.first { throw ValidationError("\(first) applies to audio; '\(input)' is Y4M video") }
    }
}

extension MediaError {
    static func unsupportedInput(_ path: String, _ kind: MediaFileKind, _ rule: String) -> MediaError {
        MediaError(.unsupported, "is \(kind.rawValue); \(rule)", file: path)
    }
}
