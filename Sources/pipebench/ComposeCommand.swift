import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench compose IN... OUT.webm`: video files laid into a grid, their audio mixed.
struct ComposeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Lay video files into a grid and mix their audio into one WebM file (like ffmpeg's xstack + amix).",
        discussion:
            "Inputs are IVF, WebM or Ogg Opus files; those with video take the grid's cells in order (an N×N grid, "
            + "each cell filled in hidden mode), every input's audio is mixed. Each input keeps its own timing; the "
            + "result is as long as the longest input, at most 24 hours (a longer input is refused).")

    @Argument(help: "Input files (IVF, WebM, Ogg Opus), then the output (.webm).") var files: [String]
    @Option(help: "Picture size, WIDTHxHEIGHT.") var size = "1920x1080"
    @Option(help: "Frames per second.") var fps = 30
    @Option(help: "Video codec: vp8 or vp9.") var codec: VideoCodec?
    @Option(help: "Video bitrate; k and M suffixes accepted (default 4M).") var bitrate: Bitrate?
    @Option(parsing: .unconditional, help: "VPX speed (cpu-used), -16...16 (default -8).") var speed: Int?
    @Option(help: "Threads for decoding the inputs and for the encoder (default 2).") var threads = 2
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(help: "Print no progress bar and no summary line (--md5 and --json still print).") var quiet = false

    func run() throws {
        guard files.count >= 2 else { throw ValidationError("name at least one input and the output") }
        let dimensions = size.lowercased().split(separator: "x").compactMap { Int($0) }
        guard dimensions.count == 2 else { throw ValidationError("--size '\(size)' is not WIDTHxHEIGHT") }
        guard (1...240).contains(fps) else { throw ValidationError("--fps \(fps) is outside 1...240") }
        guard (1...64).contains(threads) else { throw ValidationError("--threads \(threads) is outside 1...64") }
        var settings = VPXEncoderConfiguration(codec: codec ?? .vp8, width: 1, height: 1)
        settings.bitrateBitsPerSecond = bitrate?.bitsPerSecond ?? 4_000_000
        settings.speed = speed ?? -8
        settings.threads = threads
        settings.keyframeIntervalFrames = 2 * fps
        let inputs = Array(files.dropLast())
        let output = files.last!
        let progress: ProgressHandler? = quiet || json ? nil : { Terminal.progress("composing", $0) }
        let (summary, elapsed) = try measure {
            try FileCompositor.compose(
                inputs: inputs, output: output, width: dimensions[0], height: dimensions[1], framesPerSecond: fps,
                videoSettings: settings, threads: threads, progress: progress)
        }
        Terminal.clearProgress()
        let speedRealtime = elapsed > 0 ? summary.durationSeconds / elapsed : 0
        if json {
            print(
                Report.json([
                    "command": "compose", "inputs": inputs, "output": output, "pictures": summary.pictures,
                    "audioPackets": summary.audioPackets, "framesDecoded": summary.framesDecoded,
                    "audioInputs": summary.audioInputs, "durationSeconds": summary.durationSeconds,
                    "elapsedSeconds": elapsed, "picturesPerSecond": Double(summary.pictures) / max(elapsed, 1e-9),
                    "speedRealtime": speedRealtime,
                ]))
            return
        }
        guard !quiet else { return }
        print(
            String(
                format: "composed %d inputs → %@: %lld pictures %@ at %d fps (%.3f s), %d audio inputs mixed; "
                    + "%.1f pictures/s, %.1f× realtime",
                inputs.count, output, summary.pictures, size, fps, summary.durationSeconds, summary.audioInputs,
                Double(summary.pictures) / max(elapsed, 1e-9), speedRealtime))
    }
}
