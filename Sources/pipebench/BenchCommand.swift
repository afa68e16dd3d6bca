import ArgumentParser
import Foundation
import MediaPipeline
import MediaPipelineTesting

/// `pipebench bench`: a self-contained throughput run on the bundled samples. Codec paths
/// through MediaPipeline's types against the same work in direct C; the mixer, fan-out,
/// canvas rendering and subscriber tick with their cost per stream and allocations; and the
/// session capacity on one and on all decode threads, against a C reference of the same media
/// work, and on the low layer of dual stream publishers, with each search's peak memory.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure codec, mixer, fan-out, rendering and session throughput, and the session capacity.",
        discussion: "Build with -c release for meaningful figures. Codec paths run --repeats times, alternating "
            + "ours and C; medians are reported, and ours/C is the wrappers' cost. The session capacity is the "
            + "most remote users (Opus 32 kbit/s + VP8 360p 15 fps 500 kbit/s, replayed) one engine decodes, "
            + "mixes and renders into 320x180 canvases in real time, against the same decoding, mixing and "
            + "rendering in direct C (libopus, libvpx, libyuv); and, on all threads, the same with every user "
            + "also sending a low layer (dual stream: VP8 320x180 7.5 fps 100 kbit/s), which the canvases take. "
            + "Each search runs in a child process, for its peak memory.")

    @Option(
        name: .customLong("samples"),
        help: "Folder with the bundled samples (default: found beside the executable, or ./samples).")
    var samplesOption: String?
    @Option(help: "Runs per measurement (median reported).") var repeats = 7
    @Option(help: "Session seconds timed per capacity trial.") var capacitySeconds = 3.0
    @Option(help: "Most trials per capacity search (fewer: a quicker, rougher figure).") var capacityMaxTrials = 14
    @Option(help: "Users in each capacity search's first trial (the low layer's: 3 × the high layer's capacity).")
    var capacityFirstUsers = 16
    /// Set in the child processes the capacity section runs: one search of this target on
    /// `--threads`, printed as JSON.
    @Option(help: .hidden) var capacityTarget: CapacityTarget?
    /// With `--capacity-target`: one trial of this many users instead of a search (the peak
    /// memory of both targets at the same load).
    @Option(help: .hidden) var capacityUsers: Int?
    /// With `--capacity-target engine` (or `engine-low`) and `--capacity-users`: one interleaved
    /// trial of the engine and the C reference on that layer in this process
    /// (``BenchCapacity/interleavedRealtimeFactors(users:threads:layer:sliceTicks:)``).
    @Flag(help: .hidden) var capacityInterleaved = false
    @Option(help: "Decode threads for the full capacity figure (default: the machine's cores).")
    var threads = ProcessInfo.processInfo.activeProcessorCount
    @Flag(help: "Skip the session capacity search.") var noCapacity = false
    @Option(
        help:
            ArgumentHelp(
                "Run only these sections (comma-separated: codecs, srtp, webrtc, mixer, fan-out, render, tick, "
                    + "control, capacity)."))
    var only: String?
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let samples = try SampleFolder.locate(samplesOption)
        guard repeats > 0 else { throw ValidationError("--repeats must be at least 1") }
        guard capacitySeconds >= 0.5, capacitySeconds <= 60 else {
            throw ValidationError("--capacity-seconds \(capacitySeconds) is outside 0.5...60")
        }
        guard (1...64).contains(threads) else { throw ValidationError("--threads \(threads) is outside 1...64") }
        guard (1...14).contains(capacityMaxTrials) else {
            throw ValidationError("--capacity-max-trials \(capacityMaxTrials) is outside 1...14")
        }
        guard (1...4096).contains(capacityFirstUsers) else {
            throw ValidationError("--capacity-first-users \(capacityFirstUsers) is outside 1...4096")
        }
        if let capacityUsers, !(1...4096).contains(capacityUsers) {
            throw ValidationError("--capacity-users \(capacityUsers) is outside 1...4096")
        }
        if capacityInterleaved, capacityUsers == nil || ![.engine, .engineLowLayer].contains(capacityTarget) {
            throw ValidationError(
                "--capacity-interleaved needs --capacity-target engine or engine-low, and --capacity-users")
        }
        if let capacityTarget {
            let media = try SampleMedia(
                speechWAV: "\(samples)/speech-48k-stereo.wav", videoIVF: "\(samples)/motion-640x360.ivf")
            // The low layer is prepared with the rest, before the search (and its peak memory) begins.
            if capacityTarget.layer == .low { _ = try media.lowVP8Frames() }
            let search = BenchCapacity(
                media: media, seconds: capacitySeconds, maximumTrials: capacityMaxTrials,
                firstTrialUsers: capacityFirstUsers, progress: { _, _ in })
            try CapacityComparison.searchAndPrint(
                capacityTarget, threads: threads, users: capacityUsers, interleaved: capacityInterleaved,
                search: search)
            return
        }
        #if DEBUG
            if !json { printError("note: a debug build; run `swift run -c release pipebench bench` for real figures") }
        #endif
        let progress: (String, Double) -> Void = { label, fraction in
            if !json { Terminal.progress(label, fraction) }
        }
        let sections = try selectedSections()
        try BenchMeasure.checkCounter()
        var rows: [BenchRow] = []
        var vp8DecodeMicroseconds: Double?
        let codecs = BenchCodecs(samples: samples, repeats: repeats, progress: progress)
        if sections.contains("codecs") {
            rows += try codecs.opusRows()
            let pictures = try codecs.samplePictures()
            for codec in VideoCodec.allCases {
                let (codecRows, decode) = try codecs.vpxRows(codec, pictures: pictures)
                rows += codecRows
                if codec == .vp8 { vp8DecodeMicroseconds = decode }
            }
        }

        if sections.contains("srtp") {
            rows += try BenchSRTP(repeats: repeats, progress: progress).rows()
        }
        // After the SRTP rows: their floor needs a process that has made no SRTP context yet.
        if sections.contains("webrtc") {
            rows.append(try BenchWebRTC(repeats: repeats, progress: progress).row())
        }

        // The engine sections replay the sample media (the capacity searches load their own).
        var media: SampleMedia?
        if !sections.isDisjoint(with: ["mixer", "fan-out", "render", "tick", "control"]) {
            progress("preparing sample media", 0)
            media = try SampleMedia(
                speechWAV: "\(samples)/speech-48k-stereo.wav", videoIVF: "\(samples)/motion-640x360.ivf")
        }
        let engine = BenchEngine(repeats: repeats, progress: progress)
        if sections.contains("mixer"), let media {
            let speech = media.audioFrames.flatMap(\.samples)
            for sources in [2, 8, 32, 256, 1024] { rows.append(try engine.mixerRow(sources: sources, speech: speech)) }
        }
        var encodesPerFrame: Double?
        if sections.contains("fan-out"), let media {
            rows += try [1, 10, 100, 1000].map { try engine.fanOutRow(subscribers: $0, packet: media.opusPackets[0]) }
            let encodeOnce = try [1, 1000].map { try engine.encodeOnceRow(subscribers: $0, audio: media.audioFrames) }
            rows += encodeOnce.map(\.row)
            encodesPerFrame = encodeOnce[1].encodesPerFrame
        }
        if sections.contains("render"), let media {
            for mode in RenderMode.allCases {
                rows.append(try engine.renderRow(pictures: media.pictures, width: 320, height: 180, mode: mode))
                rows.append(try engine.renderRow(pictures: media.pictures, width: 1280, height: 720, mode: mode))
            }
        }
        if sections.contains("tick"), let media {
            for users in [1, 8, 32] { rows.append(try engine.tickRow(users: users, media: media, threads: threads)) }
        }
        if sections.contains("control"), let media {
            rows += try engine.controlLatencyRows(users: 32, media: media, threads: threads)
        }

        var capacity: (one: Int, all: Int)?
        var trials: [String: [CapacityTrialResult]] = [:]
        var comparison: CapacityComparison?
        if sections.contains("capacity") {
            let options = [
                "--samples", samples, "--capacity-seconds", "\(capacitySeconds)", "--capacity-max-trials",
                "\(capacityMaxTrials)",
            ]
            let searches = try CapacityComparison(
                threads: threads, options: options, firstTrialUsers: capacityFirstUsers, progress: progress)
            let (one, all) = (searches.engine[1], searches.engine[threads])
            capacity = (one?.users ?? 0, all?.users ?? 0)
            // By assignment: with --threads 1 both keys are "1" (a literal with a key twice traps).
            trials["1"] = one?.trials ?? []
            trials["\(threads)"] = all?.trials ?? []
            comparison = searches
        }
        Terminal.clearProgress()

        // The derived figures the targets are stated in, for the sections that ran.
        var figures: [(key: String, name: String, value: Double, target: String)] = []
        if let worst = rows.filter({ $0.section == "codecs" }).compactMap(\.ratio).max() {
            figures.append(("worstCodecRatio", "worst codec ours/C", worst, "at most 1.05"))
        }
        if let encodesPerFrame {
            figures.append(
                ("encodesPerFrameWith1000Subscribers", "encoder runs per frame, 1000 subscribers", encodesPerFrame, "1")
            )
        }
        let fanOut = rows.filter { $0.path.hasPrefix("one Opus packet") }
        if fanOut.count == 4 {
            let extra = (fanOut[3].microsecondsPerUnit - fanOut[0].microsecondsPerUnit) / 999
            figures.append(
                ("microsecondsPerExtraSubscriber", "µs per extra subscriber (1 → 1000)", extra, "at most 0.3"))
        }
        if let slowest = rows.filter({ $0.section == "mixer" }).map(\.speed).min() {
            figures.append(
                ("mixerSlowestMsamplesPerSecond", "mixer, slowest case, Msamples/s", slowest, "at least 1000"))
        }
        if let decode = vp8DecodeMicroseconds,
            let render = rows.filter({ $0.section == "render" && $0.path.contains("320x180") }).map(
                \.microsecondsPerUnit
            )
            .max()
        {
            figures.append(
                ("renderShareOfDecode", "360p → 320x180 render / VP8 360p decode", render / decode, "under 0.15"))
        }
        if let latency = rows.filter({ $0.section == "control" }).map(\.microsecondsPerUnit).max() {
            figures.append(
                ("controlLatencyP99Microseconds", "control call / statistics read p99, µs", latency, "under 1000"))
        }
        let srtp = rows.filter { $0.section == "srtp" }
        // SRTP's C floor is stock libsrtp2 (Debian's, on NSS); ours is libsrtp2 on our OpenSSL crypto.
        if let worst = srtp.compactMap(\.ratio).max() {
            figures.append(("worstSRTPRatio", "worst SRTP ours/stock libsrtp2 (all rows)", worst, "at most 1.1"))
        }
        if let ours = srtp.map(\.allocationsPerUnit).max() {
            figures.append(("srtpAllocationsPerPacket", "allocations per SRTP/SRTCP packet, ours", ours, "0"))
        }
        if let stock = srtp.compactMap(\.cAllocationsPerUnit).max() {
            figures.append(
                ("srtpStockAllocationsPerPacket", "allocations per packet, stock libsrtp2 (NSS)", stock, "(reference)"))
        }
        if let webrtc = rows.first(where: { $0.section == "webrtc" }) {
            figures.append(
                (
                    "webrtcAllocationsPerPacket", "allocations per RTP packet sent and received over WebRTC",
                    webrtc.allocationsPerUnit, "0"
                ))
        }
        if let allocations = rows.filter({ !["codecs", "srtp", "webrtc"].contains($0.section) }).map(
            \.allocationsPerUnit
        )
        .max() {
            figures.append(
                ("engineAllocationsPerUnit", "allocations per tick or frame, engine paths", allocations, "0"))
        }

        if json {
            var object: [String: Any] = ["paths": rows.map(\.jsonObject), "threads": threads]
            for figure in figures { object[figure.key] = figure.value }
            if let capacity {
                object["sessionCapacityUsers"] = capacity.all
                object["sessionCapacityUsersOneThread"] = capacity.one
                object["sessionCapacityScaling"] = capacity.one > 0 ? Double(capacity.all) / Double(capacity.one) : 0
                object["capacityTrials"] = trials.mapValues { list in
                    list.map { ["users": $0.users, "realtimeFactor": $0.realtimeFactor] as [String: Any] }
                }
            }
            for (key, value) in comparison?.jsonFigures ?? [:] { object[key] = value }
            print(Report.json(object))
            return
        }
        printTables(rows)
        for row in rows where row.section == "srtp" {
            print(
                "\(row.path): ours " + String(format: "%.0f", row.microsecondsPerUnit * 1000)
                    + " ns, stock libsrtp2 from C "
                    + String(format: "%.0f", (row.cMicrosecondsPerUnit ?? 0) * 1000) + " ns per packet; allocations "
                    + String(format: "%.2f", row.allocationsPerUnit) + ", stock libsrtp2's "
                    + String(format: "%.2f", row.cAllocationsPerUnit ?? 0))
        }
        print("")
        for figure in figures {
            print(
                figure.name.padding(toLength: 48, withPad: " ", startingAt: 0)
                    + String(format: "%10.3f", figure.value) + "   target: \(figure.target)")
        }
        if let capacity {
            print("")
            let scaling = capacity.one > 0 ? Double(capacity.all) / Double(capacity.one) : 0
            print(
                "session capacity: \(capacity.all) users in real time on \(threads) threads, \(capacity.one) on 1 "
                    + String(format: "(%.2f×)", scaling)
                    + "; each user Opus 32 kbit/s + VP8 640x360 15 fps 500 kbit/s into a 320x180 canvas")
        }
        for line in comparison?.lines ?? [] { print(line) }
    }

    /// The sections `--only` and `--no-capacity` leave.
    private func selectedSections() throws -> Set<String> {
        let all: Set<String> = [
            "codecs", "srtp", "webrtc", "mixer", "fan-out", "render", "tick", "control", "capacity",
        ]
        var chosen = all
        if let only {
            chosen = Set(only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            if let unknown = chosen.subtracting(all).sorted().first {
                throw ValidationError("--only: unknown section '\(unknown)' (\(all.sorted().joined(separator: ", ")))")
            }
        }
        if noCapacity { chosen.remove("capacity") }
        return chosen
    }

    private func printTables(_ rows: [BenchRow]) {
        var sections: [String] = []
        for row in rows where !sections.contains(row.section) { sections.append(row.section) }
        for section in sections {
            print("")
            print("== \(section)")
            print(
                "path                                   unit          µs/unit    C µs/unit   ours/C        speed"
                    + "     µs/stream   allocs/unit")
            for row in rows where row.section == section {
                let c =
                    row.cMicrosecondsPerUnit.map { String(format: "%12.1f", $0) } ?? String(repeating: " ", count: 12)
                let ratio = row.ratio.map { String(format: "%8.3f", $0) } ?? String(repeating: " ", count: 8)
                let perStream =
                    row.perStreamMicroseconds.map { String(format: "%12.3f", $0) } ?? String(repeating: " ", count: 12)
                let speed = String(format: "%9.0f %@", row.speed, row.speedUnit)
                print(
                    row.path.padding(toLength: 38, withPad: " ", startingAt: 0) + " "
                        + row.unit.padding(toLength: 10, withPad: " ", startingAt: 0)
                        + String(format: "%12.1f", row.microsecondsPerUnit) + c + ratio + " "
                        + speed.padding(toLength: 20, withPad: " ", startingAt: 0) + perStream
                        + String(format: "%14.2f", row.allocationsPerUnit)
                        + (row.identicalOutput == false ? "  OUTPUT DIFFERS" : ""))
            }
        }
    }
}
