import ArgumentParser
import Foundation
import MediaPipeline
import MediaPipelineTesting

#if canImport(Glibc)
    import Glibc
#endif

/// `pipebench simulate`: a multi-channel session on the in-process hub, the main job.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run a multi-channel session: remote users replay sample media; the local user publishes in one "
            + "channel, subscribes everywhere, mixes audio and renders every remote user into a canvas.",
        discussion: "Writes into --output: CHANNEL.webm per channel (its grid of remote users in VP8 and its "
            + "mix in Opus, playable in ffplay and browsers), playout.wav (the mix of every channel), "
            + "canvas-CHANNEL-UID.y4m per remote user, and grid-CHANNEL.png per channel (the last picture). Prints each channel's statistics reports as they come (every 2 s: "
            + "loss, delays, frame rates, freezes, recovery) and sums them at the end, with a summary per channel. "
            + "The link options impair the simulated network between every remote user and the local user; --seed "
            + "replays the same session.")

    @Option(help: "Channels.") var channels = 2
    @Option(help: "Remote broadcasters per channel.") var users = 3
    @Option(help: "Session length in seconds.") var duration = 3.0
    @Option(help: "Canvas size, WIDTHxHEIGHT.") var canvas = "320x180"
    @Option(help: "Render mode: hidden, fit or fill.") var renderMode = "hidden"
    @Option(
        name: .customLong("samples"),
        help: "Folder with the bundled samples (default: found beside the executable, or ./samples).")
    var samplesOption: String?
    @Option(help: "Folder for the outputs (created if missing).") var output = "out/simulate"
    @Option(help: "Size of each channel's WebM grid, WIDTHxHEIGHT.") var composite = "640x360"
    @Flag(help: "Write no video files, neither a Y4M per canvas nor a WebM per channel (for timing).")
    var noCanvasVideo = false
    @Flag(help: "The local user only subscribes (publishes nothing).") var noPublish = false
    @Flag(help: "Pace the session by the wall clock (live speed) instead of running as fast as possible.")
    var realtime = false
    @Flag(help: "Print JSON.") var json = false
    @Option(help: "Link from every remote user to the local user: packets lost, in percent.") var loss: Percent?
    @Option(help: "Mean loss burst in packets (1: independent losses; more: Gilbert-Elliott bursts).")
    var burst = 1.0
    @Option(help: "Link delay, one way (40 or 40ms).") var delay: Milliseconds?
    @Option(help: "Link jitter: delays vary within ± this (20ms).") var jitter: Milliseconds?
    @Option(help: "Packets held back so later ones overtake them, in percent.") var reorder: Percent?
    @Option(help: "Packets delivered twice, in percent.") var duplicate: Percent?
    @Option(help: "Link capacity (500k, 2M).") var bandwidth: Bitrate?
    @Option(help: "Seed of every random choice: the same seed replays the same session.") var seed: UInt64 = 1

    func run() throws {
        let samples = try SampleFolder.locate(samplesOption)
        let size = canvas.lowercased().split(separator: "x").compactMap { Int($0) }
        guard size.count == 2 else { throw ValidationError("--canvas '\(canvas)' is not WIDTHxHEIGHT") }
        let modes: [String: RenderMode] = ["hidden": .hidden, "fit": .fit, "fill": .fill]
        guard let mode = modes[renderMode] else {
            throw ValidationError("--render-mode '\(renderMode)' is not hidden, fit or fill")
        }
        var settings = SimulationConfiguration()
        settings.channels = channels
        settings.usersPerChannel = users
        settings.durationSeconds = duration
        settings.canvasWidth = size[0]
        settings.canvasHeight = size[1]
        settings.renderMode = mode
        settings.localPublishes = !noPublish
        settings.seed = seed
        settings.link = LinkConditions(
            lossPercent: loss?.value ?? 0, meanBurstLength: burst, delayMs: delay?.value ?? 0,
            jitterMs: jitter?.value ?? 0, reorderPercent: reorder?.value ?? 0, duplicatePercent: duplicate?.value ?? 0,
            bandwidthBitsPerSecond: bandwidth?.bitsPerSecond)

        if !json { Terminal.progress("preparing", 0) }
        let media = try SampleMedia(
            speechWAV: "\(samples)/speech-48k-stereo.wav", videoIVF: "\(samples)/motion-640x360.ivf")
        let simulator = try SessionSimulator(configuration: settings, media: media)
        defer { simulator.finish() }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let playout = try WAVWriter(path: "\(output)/playout.wav", sampleRate: 48000, channelCount: 2)
        var canvasWriters: [(CanvasBuffer, Y4MWriter)] = []
        // Per channel: the engine records its grid and its mix, encoded once into one WebM file.
        var composites: [ChannelRecording] = []
        if !noCanvasVideo {
            let gridSize = composite.lowercased().split(separator: "x").compactMap { Int($0) }
            guard gridSize.count == 2, gridSize.allSatisfy({ (16...4096).contains($0) && $0 % 2 == 0 }) else {
                throw ValidationError("--composite '\(composite)' is not WIDTHxHEIGHT (even, 16...4096)")
            }
            var videoSettings = VPXEncoderConfiguration(width: gridSize[0], height: gridSize[1])
            videoSettings.bitrateBitsPerSecond = gridSize[0] * gridSize[1] * 3
            videoSettings.keyframeIntervalFrames = 2 * media.videoFrameRate
            for channel in simulator.channels {
                composites.append(
                    try simulator.local.startChannelRecording(
                        channelId: channel.channelId, path: "\(output)/\(channel.channelId).webm",
                        width: gridSize[0], height: gridSize[1], framesPerSecond: media.videoFrameRate,
                        videoSettings: videoSettings))
            }
            for channel in simulator.channels {
                for canvas in simulator.local.canvases(inChannel: channel.channelId) {
                    let binding = canvas.canvas
                    let header = Y4MHeader(
                        width: binding.width, height: binding.height, frameRateNumerator: media.videoFrameRate)
                    canvasWriters.append(
                        (
                            canvas,
                            try Y4MWriter(
                                path: "\(output)/canvas-\(binding.channelId)-\(binding.uid).y4m", header: header)
                        ))
                }
            }
        }
        // Each channel's interval is printed when its channel report (the interval's last) comes.
        var intervals = StatisticsIntervals()
        let printInterval = { (record: StatisticsRecord) in
            guard let (sessionMs, summary) = intervals.add(record) else { return }
            Terminal.clearProgress()
            print(Self.intervalLine(summary, sessionMs: sessionMs))
        }
        if !json { print(Self.intervalHeader) }
        let pacing = ContinuousClock()
        let start = pacing.now
        var ticks = 0
        let (report, elapsed) = try measure {
            try simulator.run(
                playout: { samples in
                    try playout.write(samples)
                    ticks += 1
                    // Live pacing lives here, in the command: the engine itself never sleeps.
                    if realtime {
                        let ahead = start + .milliseconds(10 * ticks) - pacing.now
                        let microseconds =
                            ahead.components.seconds * 1_000_000 + ahead.components.attoseconds / 1_000_000_000_000
                        if microseconds > 0 { usleep(UInt32(microseconds)) }
                    }
                },
                videoTick: {
                    for (canvas, writer) in canvasWriters { try canvas.withLockedPicture { try writer.write($0) } }
                },
                statistics: json ? nil : printInterval, progress: json ? nil : { Terminal.progress("simulating", $0) })
        }
        try playout.finish()
        for (_, writer) in canvasWriters { try writer.finish() }
        for composite in composites { try simulator.local.stopChannelRecording(composite) }
        let grid = try I420Buffer(width: 1280, height: 720)
        for channel in simulator.channels {
            simulator.local.renderGrid(channelId: channel.channelId, into: grid, labels: true)
            try grid.withView { try PNGWriter.write($0, to: "\(output)/grid-\(channel.channelId).png") }
        }
        Terminal.clearProgress()
        let files =
            composites.map(\.path) + ["\(output)/playout.wav"] + canvasWriters.map(\.1.path)
            + simulator.channels.map { "\(output)/grid-\($0.channelId).png" }
        print(json ? jsonReport(report, elapsed, files: files) : textReport(report, elapsed, files: files))
    }

    private func realtime(_ report: SimulationReport, _ elapsed: Double) -> Double {
        elapsed > 0 ? report.durationSeconds / elapsed : 0
    }

    /// The columns: "rx kbps" and "loss %" are the channel's (what it received from all its
    /// users); delays, audio loss and fps are means per remote user; "frozen ms" is per user
    /// (audio: Agora's, a report with 4 % of its frames lost counts whole; video: gaps over
    /// 500 ms between decoded frames, from a stream's first frame on); rebuilt packets, NACKs and
    /// PLIs are summed over the users. An interval's line counts what happened in those 2 s; the
    /// `all` line, the whole session.
    static let intervalHeader =
        "time s  channel        rx kbps  loss %  net ms | audio loss %  jb ms  rebuilt  frozen ms | video fps  "
        + "frozen ms  NACKs  PLIs   (per user, but rx kbps, loss %, rebuilt, NACKs, PLIs: all users)"

    /// One line of statistics: a 2 s interval (what happened in it) or the whole session.
    static func intervalLine(_ summary: ChannelStatisticsSummary, sessionMs: Int64?) -> String {
        String(
            format: "%@  %@ %7.0f %7.1f %7.0f | %12.1f %6.0f %8lld %10lld | %9.1f %10lld %6lld %5lld",
            sessionMs.map { String(format: "%6.1f", Double($0) / 1000) } ?? "   all",
            summary.channelId.padding(toLength: 14, withPad: " ", startingAt: 0), summary.receivedKbps,
            summary.receivedPacketLossPercent, summary.networkDelayMs, summary.audioLossRatePercent,
            summary.jitterBufferDelayMs, summary.audioPacketsRecovered, summary.audioFrozenMsPerUser,
            summary.renderedFramesPerSecond, summary.videoFrozenMsPerUser, summary.nacksSent,
            summary.keyframeRequestsSent)
    }

    private func textReport(_ report: SimulationReport, _ elapsed: Double, files: [String]) -> String {
        var lines = ChannelStatisticsSummary.summarize(report.statistics).map {
            Self.intervalLine($0, sessionMs: nil)
        }
        lines += [
            "channel        users  audio 10ms  video dec  rendered  states  decoding    pkts sent  pkts lost  "
                + "frames dropped  PLIs  frozen ms"
        ]
        for channel in report.channels {
            let stats = channel.stats
            lines.append(
                String(
                    format: "%@ %5d %11lld %10lld %9d %7d %9d %12lld %10lld %15lld %5lld %10lld",
                    channel.channelId.padding(toLength: 14, withPad: " ", startingAt: 0),
                    channel.users, stats.audioFramesDecoded, stats.videoFramesDecoded,
                    channel.canvasFramesRendered, channel.stateChanges, channel.streamsDecoding,
                    channel.link.packetsOffered, stats.rxPacketsLost, stats.videoFramesDroppedBeforeDecode,
                    stats.keyframeRequestsSent, stats.videoFrozenMs))
        }
        let stats = report.localStatistics
        lines.append(
            String(
                format:
                    "%.1f s simulated in %.2f s: %.1f× realtime; local encodes: %lld audio, %lld video",
                report.durationSeconds, elapsed, realtime(report, elapsed), stats.audioFramesEncoded,
                stats.videoFramesEncoded))
        let webm = files.filter { $0.hasSuffix(".webm") }
        if !webm.isEmpty { lines.append("each channel's grid and mix, to play: " + webm.joined(separator: ", ")) }
        lines.append(
            "also: \(output)/playout.wav (the mix), \(files.filter { $0.hasSuffix(".y4m") }.count) canvas Y4M files, "
                + "\(files.filter { $0.hasSuffix(".png") }.joined(separator: ", "))")
        return lines.joined(separator: "\n")
    }

    private func jsonReport(_ report: SimulationReport, _ elapsed: Double, files: [String]) -> String {
        Report.json([
            "durationSeconds": report.durationSeconds, "elapsedSeconds": elapsed,
            "speedRealtime": realtime(report, elapsed), "playoutPeak": report.playoutPeak,
            "audioFramesEncoded": report.localStatistics.audioFramesEncoded,
            "videoFramesEncoded": report.localStatistics.videoFramesEncoded,
            "peakResidentKilobytes": peakResidentKilobytes(), "output": output, "files": files,
            "channels": report.channels.map { channel -> [String: Any] in
                [
                    "channelId": channel.channelId, "users": channel.users,
                    "audioFramesDecoded": channel.stats.audioFramesDecoded,
                    "videoFramesDecoded": channel.stats.videoFramesDecoded,
                    "canvasFramesRendered": channel.canvasFramesRendered, "stateChanges": channel.stateChanges,
                    "streamsDecoding": channel.streamsDecoding,
                    "packetsSent": channel.link.packetsOffered, "packetsDroppedByLink": channel.link.packetsLost,
                    "packetsDuplicatedByLink": channel.link.packetsDuplicated,
                    "packetsReceived": channel.stats.rxPackets,
                    "packetsLost": channel.stats.rxPacketsLost,
                    "videoFramesDroppedBeforeDecode": channel.stats.videoFramesDroppedBeforeDecode,
                    "keyframeRequestsSent": channel.stats.keyframeRequestsSent,
                    "videoFrozenMs": channel.stats.videoFrozenMs,
                    "statistics": statisticsJSON(report.statistics.filter { $0.channelId == channel.channelId }),
                ]
            },
        ])
    }

    /// A channel's statistics reports: each 2 s interval summed, and the whole session.
    private func statisticsJSON(_ records: [StatisticsRecord]) -> [String: Any] {
        func object(_ summary: ChannelStatisticsSummary) -> [String: Any] {
            [
                "receivedKbps": summary.receivedKbps, "receivedPacketLossPercent": summary.receivedPacketLossPercent,
                "roundTripMs": summary.roundTripMs, "networkDelayMs": summary.networkDelayMs,
                "audioFrames": summary.audioFrames,
                "audioFramesConcealed": summary.audioFramesConcealed,
                "audioPacketsRecovered": summary.audioPacketsRecovered, "audioFrozenMs": summary.audioFrozenMs,
                "jitterBufferDelayMs": summary.jitterBufferDelayMs,
                "audioLossRatePercent": summary.audioLossRatePercent,
                "videoFramesDecoded": summary.videoFramesDecoded, "videoFrozenMs": summary.videoFrozenMs,
                "nacksSent": summary.nacksSent, "keyframeRequestsSent": summary.keyframeRequestsSent,
                "renderedFramesPerSecond": summary.renderedFramesPerSecond, "users": summary.users,
            ]
        }
        var intervals: [[String: Any]] = []
        var splitter = StatisticsIntervals()
        for record in records {
            guard let (sessionMs, summary) = splitter.add(record) else { continue }
            var entry = object(summary)
            entry["sessionMs"] = sessionMs
            intervals.append(entry)
        }
        return [
            "intervals": intervals,
            "session": ChannelStatisticsSummary.summarize(records).first.map(object) ?? [:],
        ]
    }
}
