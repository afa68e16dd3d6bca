import ArgumentParser
import Foundation
import MediaPipeline
import MediaPipelineTesting

/// `pipebench matrix`: the impairment matrix, measured over the in-process network.
struct MatrixCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "matrix",
        abstract: "Measure audio and video through impaired links: every cell of loss × jitter × reordering × "
            + "round trip, against a lossless run of the same session.",
        discussion: "Each cell is a session of --channels × --users remote broadcasters encoding their own speech "
            + "and picture live, received by one local user. Prints one row per cell as it finishes and, with "
            + "--markdown, writes the table (docs/impairment-matrix.md) to a file. --targets runs the cells the targets name."
    )

    @Option(help: "Channels.") var channels = 2
    @Option(help: "Remote broadcasters per channel.") var users = 4
    @Option(help: "Session length per cell, in seconds.") var duration = 30.0
    @Option(
        name: .customLong("samples"),
        help: "Folder with the bundled samples (default: found beside the executable, or ./samples).")
    var samplesOption: String?
    @Option(help: "Seed of every random choice.") var seed: UInt64 = 1
    @Flag(help: "Run only the cells the targets name (and a few around them).") var targets = false
    @Option(help: "Run one cell with this loss (percent) instead of the matrix.") var loss: Double?
    @Option(help: "The one cell's mean loss burst in packets.") var burst = 1.0
    @Option(help: "The one cell's jitter (± ms).") var jitter = 0.0
    @Option(help: "The one cell's reordering (percent).") var reorder = 0.0
    @Option(help: "The one cell's round trip (ms).") var rtt = 50.0
    @Option(help: "Run every N-th cell starting at K, as K/N (to spread the matrix over processes).")
    var shard: String?
    @Option(help: "Write the table as Markdown to this file.") var markdown: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let samples = try SampleFolder.locate(samplesOption)
        guard (1...8).contains(channels), (1...16).contains(users) else {
            throw ValidationError("--channels must be 1...8 and --users 1...16")
        }
        guard duration >= 4, duration <= 600 else { throw ValidationError("--duration \(duration) is outside 4...600") }
        let media = try SampleMedia(
            speechWAV: "\(samples)/speech-48k-stereo.wav", videoIVF: "\(samples)/motion-640x360.ivf")
        let runner = try ImpairmentRunner(
            media: media, channels: channels, usersPerChannel: users, durationSeconds: duration, seed: seed)
        var cells = targets ? ImpairmentCell.targets : ImpairmentCell.matrix
        if let loss {
            let cell = ImpairmentCell(
                lossPercent: loss, meanBurstLength: burst, jitterMs: jitter, reorderPercent: reorder, roundTripMs: rtt)
            try cell.link.validate()
            cells = [cell]
        }
        if let shard {
            let parts = shard.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] > 0, (0..<parts[1]).contains(parts[0]) else {
                throw ValidationError("--shard '\(shard)' is not K/N with 0 <= K < N")
            }
            cells = cells.enumerated().filter { $0.offset % parts[1] == parts[0] }.map(\.element)
        }
        if !json { print(Self.header) }
        var results: [ImpairmentResult] = []
        for (index, cell) in cells.enumerated() {
            if !json { Terminal.progress("cell \(index + 1)/\(cells.count)", Double(index) / Double(cells.count)) }
            let result = try runner.run(cell)
            results.append(result)
            Terminal.clearProgress()
            if !json { print(Self.row(result)) }
        }
        if let markdown {
            let text = Self.table(results, channels: channels, users: users, duration: duration, seed: seed)
            // Written whole: to a temporary file first, then moved into place.
            let temporary = markdown + ".partial"
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
            if FileManager.default.fileExists(atPath: markdown) { try FileManager.default.removeItem(atPath: markdown) }
            try FileManager.default.moveItem(atPath: temporary, toPath: markdown)
        }
        if json { print(Report.json(["cells": results.map(Self.object)])) }
    }

    static let header =
        "| loss % | burst | jitter ms | reorder % | RTT ms | audio concealed % (audible) | audio delay ms (jitter p95) | audio SNR dB "
        + "| FEC | video frozen % | wrong pictures | video PSNR dB | keyframe req. (max/stream) | NACKs "
        + "| KB resent | link loss % | first audio / picture ms |\n"
        + "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

    static func row(_ result: ImpairmentResult) -> String {
        let cell = result.cell
        let linkLoss =
            result.packetsOffered > 0 ? Double(result.packetsLostByLinks) * 100 / Double(result.packetsOffered) : 0
        return String(
            format:
                "| %.0f | %@ | %.0f | %.0f | %.0f | %.2f (%.2f) | %.0f (%.0f) | %.1f | %lld | %.2f | %d | %.1f | %lld (%lld) | %lld | %.0f | %.1f | %lld / %lld |",
            cell.lossPercent, cell.lossPercent > 0 && cell.meanBurstLength > 1 ? "\(Int(cell.meanBurstLength))" : "1",
            cell.jitterMs, cell.reorderPercent, cell.roundTripMs, result.audioConcealedPercent,
            result.audioAudibleConcealedPercent, result.audioMeanDelayMs,
            cell.jitterP95Ms, result.audioSNRdB, result.audioPacketsRecoveredByFEC, result.videoFrozenPercent,
            result.videoWrongPictures, result.videoPSNRdB, result.keyframeRequests,
            result.keyframeRequestsPerStreamMax, result.nacksSent, Double(result.bytesRetransmitted) / 1000, linkLoss,
            result.firstAudioMsMax, result.firstVideoMsMax)
    }

    static func table(_ results: [ImpairmentResult], channels: Int, users: Int, duration: Double, seed: UInt64)
        -> String
    {
        var lines = [
            "<!-- generated by: pipebench matrix --markdown FILE (channels \(channels), users \(users), "
                + "\(Int(duration)) s per cell, seed \(seed)) -->",
            header,
        ]
        lines += results.map(row)
        return lines.joined(separator: "\n") + "\n"
    }

    static func object(_ result: ImpairmentResult) -> [String: Any] {
        let cell = result.cell
        return [
            "lossPercent": cell.lossPercent, "meanBurstLength": cell.meanBurstLength, "jitterMs": cell.jitterMs,
            "reorderPercent": cell.reorderPercent, "roundTripMs": cell.roundTripMs, "jitterP95Ms": cell.jitterP95Ms,
            "audioConcealedPercent": result.audioConcealedPercent,
            "audioAudibleConcealedPercent": result.audioAudibleConcealedPercent,
            "audioMeanDelayMs": result.audioMeanDelayMs,
            "audioSNRdB": result.audioSNRdB, "audioPacketsRecoveredByFEC": result.audioPacketsRecoveredByFEC,
            "videoFrozenPercent": result.videoFrozenPercent, "videoWrongPictures": result.videoWrongPictures,
            "videoUnjudgedPictures": result.videoUnjudgedPictures,
            "firstAudioMsMax": result.firstAudioMsMax, "firstVideoMsMax": result.firstVideoMsMax,
            "videoPSNRdB": result.videoPSNRdB, "keyframeRequests": result.keyframeRequests,
            "keyframeRequestsPerStreamMax": result.keyframeRequestsPerStreamMax, "nacksSent": result.nacksSent,
            "bytesRetransmitted": result.bytesRetransmitted, "packetsLostByLinks": result.packetsLostByLinks,
            "packetsOffered": result.packetsOffered, "elapsedSeconds": result.elapsedSeconds,
        ]
    }
}
