import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench remux IN... OUT`: IVF and Ogg Opus into WebM, WebM into IVF or Ogg Opus, without
/// re-encoding.
struct RemuxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remux",
        abstract: "Move compressed frames between IVF, Ogg Opus and WebM without re-encoding.",
        discussion:
            "Several inputs (an IVF and an Ogg Opus file, say) become the tracks of one WebM file, interleaved by "
            + "time. A WebM input's video track remuxes to .ivf, its Opus track to .opus or .ogg.")

    @Argument(help: "Input files (IVF, Ogg Opus, WebM), then the output (.webm, .ivf, .opus or .ogg).")
    var files: [String]
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(help: "Print no progress bar and no summary line (--md5 and --json still print).") var quiet = false

    func run() throws {
        guard files.count >= 2 else { throw ValidationError("name at least one input and the output") }
        let inputs = Array(files.dropLast())
        let output = files.last!
        let progress: ProgressHandler? = quiet || json ? nil : { Terminal.progress("remuxing", $0) }
        let (summary, elapsed) = try measure {
            try MediaRemuxer.remux(inputs: inputs, output: output, progress: progress)
        }
        Terminal.clearProgress()
        let tracks = zip(summary.tracks, summary.frames).map { track, frames in
            "\(track.codec.description) (\(frames) \(track.codec == .opus ? "packets" : "frames"))"
        }
        if json {
            print(
                Report.json([
                    "command": "remux", "inputs": inputs, "output": output, "elapsedSeconds": elapsed,
                    "tracks": zip(summary.tracks, summary.frames).map { ["codec": $0.codec.rawValue, "frames": $1] },
                    "compressedBytes": summary.compressedBytes, "skippedTracks": summary.skippedTracks,
                ]))
            return
        }
        // Tracks left out are said even with --quiet (on standard error): data not written.
        for skipped in summary.skippedTracks { printError("not written (codec not held here): \(skipped)") }
        guard !quiet else { return }
        print("remuxed \(inputs.joined(separator: " + ")) → \(output): \(tracks.joined(separator: ", "))")
    }
}
