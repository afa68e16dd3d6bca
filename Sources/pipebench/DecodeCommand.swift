import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench decode IN [OUT]`: Ogg Opus → WAV, IVF → Y4M or raw I420, WebM → either (its first
/// Opus track to WAV, its first VP8/VP9 track to Y4M or raw I420), with per-frame MD5s.
struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode Ogg Opus to WAV, IVF to Y4M / raw I420, or WebM to either.",
        discussion:
            "With --md5, prints each decoded frame's MD5 over its packed I420 planes, as `vpxdec --md5 --i420` does. "
            + "A WebM file's Opus track decodes to a .wav output, its video track to the others.")

    @Argument(help: "Input file: Ogg Opus, IVF or WebM.") var input: String
    @Argument(help: "Output file: .wav for audio; .y4m, or .yuv/.i420 for raw I420. Optional with --md5.") var output:
        String?
    @Flag(help: "Write packed raw I420 frames whatever the output's extension.") var i420 = false
    @Flag(help: "Print per-frame MD5s of the decoded pictures.") var md5 = false
    @Option(help: "Audio output rate in Hz: 8000, 12000, 16000, 24000 or 48000 (default 48000).") var rate: Int?
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(help: "Print no progress bar and no summary line (--md5 and --json still print).") var quiet = false

    func run() throws {
        let kind = try MediaFileKind.detect(path: input)
        let progress: ProgressHandler? = quiet || json ? nil : { Terminal.progress("decoding", $0) }
        let (summary, elapsed): (TranscodeSummary, Double)
        let wanted = output.flatMap(MediaFileKind.forOutput(path:))
        let decodesAudio = kind == .oggOpus || (kind == .webm && wanted == .wav)
        switch kind {
        case .oggOpus, .ivf, .webm: break
        default: throw MediaError.unsupportedInput(input, kind, "decode takes Ogg Opus, IVF or WebM")
        }
        if decodesAudio {
            guard let output else { throw ValidationError("an output .wav file is needed") }
            guard wanted == .wav else {
                throw ValidationError("Opus audio decodes to WAV: name the output .wav, not '\(output)'")
            }
            guard !md5, !i420 else {
                throw ValidationError("--md5 and --i420 apply to video; '\(input)' decodes to audio")
            }
            (summary, elapsed) = try measure {
                try AudioFileDecoder.decode(input: input, output: output, sampleRate: rate ?? 48000, progress: progress)
            }
        } else {
            guard rate == nil else { throw ValidationError("--rate applies to audio (a .wav output)") }
            let target: VideoFileDecoder.Output
            if let output {
                if i420 || wanted == .rawI420 {
                    target = .rawI420(output)
                } else if wanted == .y4m {
                    target = .y4m(output)
                } else {
                    throw ValidationError(
                        "video decodes to .y4m or raw I420 (.yuv, .i420, or --i420)\(kind == .webm ? ", audio to .wav" : ""), not '\(output)'"
                    )
                }
            } else {
                guard md5 else { throw ValidationError("an output file is needed (or --md5 to only check frames)") }
                target = .none
            }
            (summary, elapsed) = try measure {
                try VideoFileDecoder.decode(input: input, output: target, computeMD5: md5, progress: progress)
            }
        }
        Terminal.clearProgress()
        if json {
            print(Report.json(Report.summaryObject("decode", summary, elapsedSeconds: elapsed)))
            return
        }
        for (index, sum) in summary.frameMD5s.enumerated() {
            print("\(sum)  frame-\(String(format: "%04d", index + 1)).i420")
        }
        guard !quiet else { return }
        print(Report.summaryLine("decoded", summary, elapsedSeconds: elapsed))
    }
}
