import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

// A real browser in the channel: headless Chromium running janus.js (Tests/Browser/room.html,
// driven by Tests/Browser/drive.py through Selenium and chromium-driver) and a `pipebench join`
// publisher meet in one room of the harness's Janus, inside its namespace. The browser's camera
// and microphone are fed from known media (a test pattern and the speech sample), so what our
// engine records of it can be compared with what it was fed; the page reads what it decodes of
// our engine from getStats.

/// A process inside the server's namespace printing JSON lines on standard output, kept in a
/// folder of its own. Killed (SIGKILL) and reaped at ``stop()`` or when the value goes away.
private final class LineProcess: @unchecked Sendable {
    let name: String
    let process: Process
    let folder: TemporaryFolder
    private struct Parsed {
        var offset = 0
        var lines: [String] = []
    }
    private let parsed = LockedValue(Parsed())

    init(_ name: String, on server: JanusServer, in folder: TemporaryFolder, _ arguments: [String]) throws {
        self.name = name
        self.folder = folder
        process = try server.start(
            arguments, stdout: folder.file("\(name).stdout"), stderr: folder.file("\(name).stderr"))
    }

    deinit { stop() }

    var stderr: String { (try? String(contentsOfFile: folder.file("\(name).stderr"), encoding: .utf8)) ?? "" }

    /// Every whole line printed so far.
    var lines: [String] {
        parsed.withLock { state in
            guard let data = FileManager.default.contents(atPath: folder.file("\(name).stdout")),
                data.count > state.offset
            else { return state.lines }
            let fresh = data[(data.startIndex + state.offset)...]
            guard let end = fresh.lastIndex(of: UInt8(ascii: "\n")) else { return state.lines }
            state.lines += String(decoding: fresh[..<end], as: UTF8.self).split(separator: "\n").map(String.init)
            state.offset = end - data.startIndex + 1
            return state.lines
        }
    }

    /// Waits up to `seconds` for `condition`, polling; false if it never held (or the process
    /// ended without it).
    func waitFor(within seconds: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !Task.isCancelled {
            if condition() { return true }
            if !process.isRunning { return condition() }
            if Date() >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Sends `signal` and waits up to `seconds` for the end; the exit status, or nil if it still runs.
    func end(with signal: Int32, within seconds: Double) async -> Int32? {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard !process.isRunning else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// One event line of `pipebench join --events-json`.
private struct EngineEvent {
    var channel: String
    var event: String
    var ms: Int
    var text: String
    var uid: UInt32?

    init?(_ line: String) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
            let channel = object["channel"] as? String, let event = object["event"] as? String
        else { return nil }
        self.channel = channel
        self.event = event
        ms = (object["ms"] as? Int) ?? 0
        text = (object["text"] as? String) ?? ""
        if let range = text.range(of: "uid: ") { uid = UInt32(text[range.upperBound...].prefix { $0.isNumber }) }
    }

    func hasState(_ name: String) -> Bool {
        text.contains("state: \(name)") || text.contains("state: RemoteStreamState.\(name)")
    }
}

/// One line of Tests/Browser/drive.py: a phase, with the page's `window.mp` on polls.
private struct DriverLine: Decodable {
    var s: Double
    var phase: String
    var error: String?
    var mp: PageState?
}

/// The page's `window.mp` (Tests/Browser/room.html).
private struct PageState: Decodable {
    struct Event: Decodable {
        var ms: Double
        var text: String
    }
    struct InboundVideo: Decodable {
        var framesDecoded: Int?
        var frameWidth: Int?
        var frameHeight: Int?
        var freezeCount: Int?
        var totalFreezesDuration: Double?
        var packetsLost: Int?
        var nackCount: Int?
        var pliCount: Int?
        var framesDropped: Int?
    }
    struct InboundAudio: Decodable {
        var totalSamplesReceived: Int?
        var concealedSamples: Int?
        var silentConcealedSamples: Int?
        var concealmentEvents: Int?
        var insertedSamplesForDeceleration: Int?
        var removedSamplesForAcceleration: Int?
        var packetsReceived: Int?
        var packetsLost: Int?
        var jitter: Double?
    }
    struct Outbound: Decodable {
        var framesEncoded: Int?
        var frameWidth: Int?
        var frameHeight: Int?
        var targetBitrate: Double?
        var qualityLimitationReason: String?
    }
    var events: [Event]
    var errors: [String]
    var published: Bool
    var subscribed: Bool
    var left: Bool?
    var subscribeRequestMs: Double?
    var firstFrameMs: Double?
    var maxStallMs: Double
    var video: InboundVideo
    var audio: InboundAudio
    var publish: [String: Outbound]

    /// When the page noted `text` first (ms since navigation).
    func time(of text: String) -> Double? { events.first { $0.text.hasPrefix(text) }?.ms }
}

extension LineProcess {
    fileprivate var engineEvents: [EngineEvent] { lines.compactMap(EngineEvent.init) }

    fileprivate func events(_ event: String, uid: UInt32? = nil) -> [EngineEvent] {
        engineEvents.filter { $0.event == event && (uid == nil || $0.uid == uid) }
    }

    fileprivate var driverLines: [DriverLine] {
        lines.compactMap { try? JSONDecoder().decode(DriverLine.self, from: Data($0.utf8)) }
    }

    /// The page's latest state.
    fileprivate var page: PageState? { driverLines.last { $0.mp != nil }?.mp }

    /// For failure messages: the state, standard error and the last lines (statistics left out).
    fileprivate func summary(last count: Int = 20) -> String {
        let shown = lines.filter { !$0.contains("Stats\",\"ms\"") }.suffix(count).map { String($0.prefix(1500)) }
        return "\(name) (\(process.isRunning ? "running" : "exit \(process.terminationStatus)")): stderr: "
            + "\(stderr.suffix(800))\nlast lines:\n\(shown.joined(separator: "\n"))"
    }
}

/// Frames of planar I420 pictures of one size, back to back (as ffmpeg's `-f rawvideo -pix_fmt
/// yuv420p` writes, or a Y4M's frames without their headers).
private struct RawPictures {
    let width: Int
    let height: Int
    let data: [UInt8]
    /// Where each frame starts in ``data``.
    let starts: [Int]
    var frameSize: Int { width * height * 3 / 2 }
    var count: Int { starts.count }

    init(raw path: String, width: Int, height: Int) throws {
        self.width = width
        self.height = height
        data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let size = width * height * 3 / 2
        starts = Array(stride(from: 0, to: data.count - size + 1, by: size))
    }

    /// A Y4M whose frames carry no parameters (`FRAME\n`), as ffmpeg writes it.
    init(y4m path: String, width: Int, height: Int) throws {
        self.width = width
        self.height = height
        data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let size = width * height * 3 / 2
        var starts: [Int] = []
        guard var position = data.firstIndex(of: UInt8(ascii: "\n")).map({ $0 + 1 }) else {
            throw MediaError.invalidArgument("\(path) has no Y4M header")
        }
        while position + 6 + size <= data.count {
            guard let newline = data[position...].prefix(64).firstIndex(of: UInt8(ascii: "\n")) else { break }
            starts.append(newline + 1)
            position = newline + 1 + size
        }
        self.starts = starts
    }

    /// Every `step`-th luma sample of every `step`-th row of `frame`, for a coarse search.
    func thumbnail(_ frame: Int, step: Int = 8) -> [Int32] {
        var out: [Int32] = []
        data.withUnsafeBufferPointer { bytes in
            for y in stride(from: 0, to: height, by: step) {
                for x in stride(from: 0, to: width, by: step) {
                    out.append(Int32(bytes[starts[frame] + y * width + x]))
                }
            }
        }
        return out
    }

    /// PSNR in dB of `frame` against `other`'s `otherFrame` over all three planes (ffmpeg's
    /// "average": the summed squared error of Y, U and V over their samples).
    func psnr(_ frame: Int, against other: RawPictures, _ otherFrame: Int) -> Double {
        let size = frameSize
        var squared: UInt64 = 0
        data.withUnsafeBufferPointer { a in
            other.data.withUnsafeBufferPointer { b in
                let pa = a.baseAddress! + starts[frame]
                let pb = b.baseAddress! + other.starts[otherFrame]
                for i in 0..<size {
                    let d = Int32(pa[i]) - Int32(pb[i])
                    squared &+= UInt64(d * d)
                }
            }
        }
        let mse = Double(squared) / Double(size)
        return mse > 0 ? 10 * log10(255 * 255 / mse) : 99
    }
}

/// For `frame` of `test`, the source frame with the best PSNR: candidates by their thumbnails'
/// squared error, the best few compared whole.
private func bestMatch(_ frame: Int, of test: RawPictures, in source: RawPictures, sourceThumbnails: [[Int32]]) -> (
    index: Int, psnr: Double
) {
    let thumbnail = test.thumbnail(frame)
    let ranked = sourceThumbnails.indices.map { index -> (Int, Int64) in
        var sum: Int64 = 0
        for (a, b) in zip(thumbnail, sourceThumbnails[index]) { sum += Int64((a - b) * (a - b)) }
        return (index, sum)
    }.sorted { $0.1 < $1.1 }
    return ranked.prefix(4).map { (index: $0.0, psnr: test.psnr(frame, against: source, $0.0)) }
        .max { $0.psnr < $1.psnr }!
}

/// Processes among `pids` (with their start times, field 22 of /proc/PID/stat) that still exist.
private func stillAlive(_ pids: [Int32: String]) -> [String] {
    pids.compactMap { pid, started in
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        return fields.count > 19 && String(fields[19]) == started ? "\(pid) \(fields[0])" : nil
    }
}

/// The processes in `namespace` now, with their start times.
private func namespacePIDs(_ namespace: String) -> [Int32: String] {
    let listing = (try? runTool("/usr/sbin/ip", ["netns", "pids", namespace]).stdout) ?? ""
    var pids: [Int32: String] = [:]
    for pid in listing.split(separator: "\n").compactMap({ Int32($0) }) {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        if fields.count > 19 { pids[pid] = String(fields[19]) }
    }
    return pids
}

private func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

@Suite("Janus browser: headless Chromium with janus.js and our engine in one room", .serialized)
struct JanusBrowserTests {
    static let browserFolder = Fixtures.packageRoot + "/Tests/Browser"
    /// The browser's publisher id: numeric-looking, so our engine sees it as this uid.
    static let browserUID: UInt32 = 77
    static let engineUID: UInt32 = 11
    /// The camera's pictures: a test pattern whose every frame differs (10 s at 15 fps, looped
    /// by Chromium).
    static let width = 640
    static let height = 360
    static let frameRate = 15

    /// Requires Chromium, its driver, janus.js and Selenium.
    static func requireBrowser() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/share/javascript/janus-gateway/janus.js"] {
            try #require(
                FileManager.default.fileExists(atPath: tool), "\(tool) missing: scripts/install-deps.sh --test")
        }
        let hasSelenium = try runTool("/usr/bin/python3", ["-c", "import selenium"]).status == 0
        try #require(hasSelenium, "python3-selenium missing: scripts/install-deps.sh --test")
    }

    /// Writes the camera's pictures (``width`` x ``height``, 10 s at ``frameRate``) as a Y4M in
    /// `folder`; returns its path.
    static func makeCamera(in folder: TemporaryFolder) throws -> String {
        let camera = folder.file("camera.y4m")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                "testsrc2=size=\(Self.width)x\(Self.height):rate=\(Self.frameRate):duration=10", "-pix_fmt", "yuv420p",
                "-f", "yuv4mpegpipe", camera,
            ])
        return camera
    }

    @Test(
        "browser and engine see and hear each other: recorded pictures match the camera's, the page decodes ours",
        .timeLimit(.minutes(3)))
    func browserAndEngine() async throws {
        try Self.requireBrowser()
        let media = TemporaryFolder()
        let camera = try Self.makeCamera(in: media)
        let microphone = Fixtures.speechWAV

        let server = try JanusServer()
        defer { server.stop() }
        let outputs = TemporaryFolder()
        let engine = try LineProcess(
            "engine", on: server, in: outputs,
            [
                try Fixtures.realTimePipebench(), "join", server.insideURL, "--local-address", JanusServer.mediaAddress,
                "--events-json", "--samples", Fixtures.samples, "--output", outputs.path, "--publish", "channel-1",
                "--uid", "\(Self.engineUID)", "--variant", "1", "--record-users", "--duration", "120",
            ])
        defer { engine.stop() }
        let engineJoined = await engine.waitFor(within: 40) { !engine.events("joinSuccess").isEmpty }
        try #require(engineJoined, "the engine joined channel-1:\n\(engine.summary())")

        let driverStarted = Date()
        let driver = try LineProcess(
            "driver", on: server, in: outputs,
            [
                "/usr/bin/python3", Self.browserFolder + "/drive.py", "--janus", server.insideURL, "--room",
                "channel-1", "--id", "\(Self.browserUID)", "--feed", "\(Self.engineUID)", "--video", camera,
                "--audio", microphone, "--seconds", "150",
            ])
        defer { driver.stop() }

        // Both ways: the engine decodes the browser's video, the page ours; then 6 s more of
        // media each way (90 pictures at 15 fps).
        let enoughFrames = 90
        let bothDecoding = await driver.waitFor(within: 60) {
            guard driver.driverLines.allSatisfy({ $0.phase != "failed" }) else { return true }
            return !engine.events("remoteVideoStateChanged", uid: Self.browserUID).filter { $0.hasState("decoding") }
                .isEmpty && (driver.page?.video.framesDecoded ?? 0) >= enoughFrames
                && (driver.page?.audio.totalSamplesReceived ?? 0) >= 4 * 48_000
        }
        let failure = driver.driverLines.first { $0.phase == "failed" }
        #expect(failure == nil, "the driver failed: \(failure?.error ?? "")\n\(driver.summary())")
        try #require(bothDecoding, "both decoding:\n\(engine.summary())\n\(driver.summary())")
        // The page's state while both still send.
        let page = try #require(driver.page)
        let browserPIDs = namespacePIDs(server.namespace)
        let phases = driver.driverLines.filter { $0.phase != "poll" }.map { "\($0.phase) \(format($0.s, 2)) s" }
        print("JanusBrowser: driver \(phases.joined(separator: ", ")) after it started")

        // The browser leaves (the page leaves the room, then the driver quits Chromium): our
        // engine is told that 77 quit.
        let driverStatus = await driver.end(with: SIGTERM, within: 20)
        #expect(driverStatus == 0, "the driver's exit:\n\(driver.summary())")
        let left = driver.driverLines.last { $0.phase == "stopped" }?.mp?.left ?? false
        #expect(left, "the page left the room:\n\(driver.summary())")
        let offline = await engine.waitFor(within: 15) { !engine.events("userOffline", uid: Self.browserUID).isEmpty }
        let janusSaw = server.log.split(separator: "\n").filter {
            $0.contains("leav") || $0.contains("npublish") || $0.contains("angup") || $0.contains("estroy")
        }
        let offlineDetail =
            "\(engine.summary())\nJanus: \(janusSaw.suffix(20).joined(separator: "\n"))"
        #expect(offline, "userOffline \(Self.browserUID) after the browser left:\n\(offlineDetail)")
        let quit = engine.events("userOffline", uid: Self.browserUID)
        #expect(quit.allSatisfy { $0.text.contains("quit") }, "userOffline: \(quit.map(\.text))")
        // The engine leaves (SIGINT: a clean leave, the recordings written whole).
        let engineStatus = await engine.end(with: SIGINT, within: 20)
        #expect(engineStatus == 0, "the engine's exit:\n\(engine.summary())")

        // The engine's view: the browser announced as uid 77, decoded.
        let joined = engine.events("userJoined")
        #expect(joined.map(\.uid) == [Self.browserUID], "userJoined: \(joined.map(\.text))")
        #expect(engine.events("error").isEmpty, "errors: \(engine.events("error").map(\.text))")
        let announced = try #require(joined.first)
        let videoDecoding = engine.events("remoteVideoStateChanged", uid: Self.browserUID).first {
            $0.hasState("decoding")
        }
        let audioDecoding = engine.events("remoteAudioStateChanged", uid: Self.browserUID).first {
            $0.hasState("decoding")
        }
        let sizes = engine.events("videoSizeChanged", uid: Self.browserUID).map(\.text)
        #expect(sizes.allSatisfy { $0.contains("width: 640, height: 360") }, "video sizes: \(sizes)")
        #expect(audioDecoding != nil, "the engine decodes the browser's audio:\n\(engine.summary())")
        print(
            "JanusBrowser: engine: userJoined \(Self.browserUID) \(announced.ms) ms after its start, video decoding "
                + "\((videoDecoding?.ms ?? 0) - announced.ms) ms after it, audio decoding "
                + "\((audioDecoding?.ms ?? 0) - announced.ms) ms; userOffline: "
                + "\(engine.events("userOffline", uid: Self.browserUID).map(\.text))")

        // The page's view of our engine.
        #expect(page.errors.isEmpty, "page errors: \(page.errors)")
        #expect((page.video.framesDecoded ?? 0) >= enoughFrames, "framesDecoded \(page.video.framesDecoded ?? 0)")
        #expect(page.video.frameWidth == 640 && page.video.frameHeight == 360, "decoded size \(page.video)")
        let firstFrame = try #require(page.firstFrameMs, "no frame presented")
        #expect(page.maxStallMs <= 500, "longest gap between presented frames: \(page.maxStallMs) ms")
        let audio = page.audio
        let samples = audio.totalSamplesReceived ?? 0
        let concealed = audio.concealedSamples ?? 0
        #expect(samples >= 4 * 48_000, "audio samples received: \(samples)")
        print(
            "JanusBrowser: page: joined at \(page.time(of: "joined").map { format($0, 0) } ?? "-") ms after navigation, "
                + "first picture of \(Self.engineUID) presented \(format(firstFrame - (page.subscribeRequestMs ?? 0), 0)) ms "
                + "after subscribing (\(format(firstFrame, 0)) ms after navigation); framesDecoded "
                + "\(page.video.framesDecoded ?? 0) at \(page.video.frameWidth ?? 0)x\(page.video.frameHeight ?? 0), "
                + "freezeCount \(page.video.freezeCount ?? -1), totalFreezesDuration "
                + "\(page.video.totalFreezesDuration ?? -1) s, longest gap between presented frames "
                + "\(format(page.maxStallMs, 0)) ms, framesDropped \(page.video.framesDropped ?? -1), packetsLost "
                + "\(page.video.packetsLost ?? -1), nack \(page.video.nackCount ?? -1), pli \(page.video.pliCount ?? -1)"
        )
        print(
            "JanusBrowser: page audio: totalSamplesReceived \(samples), concealedSamples \(concealed) "
                + "(\(format(100 * Double(concealed) / Double(max(samples, 1)))) %), concealmentEvents "
                + "\(audio.concealmentEvents ?? -1), silentConcealed \(audio.silentConcealedSamples ?? -1), inserted "
                + "\(audio.insertedSamplesForDeceleration ?? -1), removed \(audio.removedSamplesForAcceleration ?? -1), "
                + "packetsReceived \(audio.packetsReceived ?? -1), packetsLost \(audio.packetsLost ?? -1), jitter "
                + "\(audio.jitter.map { format($0 * 1000, 1) } ?? "-") ms")
        let sent = page.publish["video"]
        print(
            "JanusBrowser: page publishing: \(sent?.frameWidth ?? 0)x\(sent?.frameHeight ?? 0), framesEncoded "
                + "\(sent?.framesEncoded ?? 0), targetBitrate \(Int(sent?.targetBitrate ?? 0)), quality limitation "
                + "\(sent?.qualityLimitationReason ?? "-"); the driver ran \(format(Date().timeIntervalSince(driverStarted))) s"
        )

        // The recording of the browser: VP8 at the camera's size, Opus.
        let recording = outputs.file("user-channel-1-\(Self.browserUID).webm")
        try #require(FileManager.default.fileExists(atPath: recording), "no \(recording): \(outputs.contents)")
        let probe = try reference(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", recording])
        let streams = probe.split(separator: "\n").map { String($0) }
        #expect(streams.contains("vp8,640,360"), "recorded streams: \(streams)")
        #expect(streams.contains("opus"), "recorded streams: \(streams)")

        // Its pictures against the camera's: each sampled picture's best source frame.
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", recording, "-map", "0:v", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                media.file("recorded.yuv"),
            ])
        let recorded = try RawPictures(raw: media.file("recorded.yuv"), width: Self.width, height: Self.height)
        let source = try RawPictures(y4m: camera, width: Self.width, height: Self.height)
        #expect(source.count == 10 * Self.frameRate, "camera frames: \(source.count)")
        try #require(recorded.count >= 60, "recorded pictures: \(recorded.count)")
        let thumbnails = (0..<source.count).map { source.thumbnail($0) }
        let sampled = stride(from: 0, to: recorded.count, by: max(1, recorded.count / 16)).map { $0 }
        let matches = sampled.map { bestMatch($0, of: recorded, in: source, sourceThumbnails: thumbnails) }
        let psnrs = matches.map(\.psnr)
        let worst = psnrs.min() ?? 0
        let mean = psnrs.reduce(0, +) / Double(max(psnrs.count, 1))
        #expect(worst >= 30, "PSNR of recorded pictures against the camera's: \(psnrs.map { format($0) })")
        // The camera's frames come in order: sampled pictures step through the looped source
        // by about their distance (frames the browser skipped shift it by a few).
        let steps = zip(zip(sampled, sampled.dropFirst()), zip(matches, matches.dropFirst())).map { pair, match in
            ((match.1.index - match.0.index) - (pair.1 - pair.0) + 10 * source.count) % source.count
        }
        print(
            "JanusBrowser: recording: \(recorded.count) pictures; PSNR against the camera's best frame: min "
                + "\(format(worst)) dB, mean \(format(mean)) dB over \(psnrs.count) sampled (source frames "
                + "\(matches.map(\.index)); drift per step in frames \(steps))")

        // Its audio: speech, not silence, and the speech the microphone was fed.
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", recording, "-map", "0:a", "-f", "s16le", "-ac", "1", "-ar", "48000",
                media.file("recorded.pcm"),
            ])
        let heard = try rawInt16(media.file("recorded.pcm"))
        let fed = try wavSamples(microphone)
        let fedMono = stride(from: 0, to: fed.count - 1, by: 2).map { (Double(fed[$0]) + Double(fed[$0 + 1])) / 2 }
        let fedRMS = (fedMono.reduce(0) { $0 + $1 * $1 } / Double(fedMono.count)).squareRoot()
        let heardRMS = rms(heard[...])
        #expect(heard.count >= 4 * 48_000, "recorded audio: \(heard.count) samples")
        #expect(heardRMS >= 0.2 * fedRMS, "recorded audio RMS \(format(heardRMS)) against the fed \(format(fedRMS))")
        // Three seconds from the second second on, located in the looped speech.
        let window = heard.dropFirst(48_000).prefix(3 * 48_000).map(Double.init)
        let located = locate(window, in: fedMono)
        #expect(located.envelopeCorrelation >= 0.8, "envelope correlation \(located.envelopeCorrelation)")
        print(
            "JanusBrowser: recorded audio: \(heard.count) samples, RMS \(format(heardRMS)) (fed \(format(fedRMS))), "
                + "10 ms envelope correlation with the fed speech \(format(located.envelopeCorrelation, 3)), waveform "
                + "correlation \(format(located.waveformCorrelation, 3)) at \(located.lag) samples into it")

        // Nothing of ours left.
        let inside = namespacePIDs(server.namespace).merging(browserPIDs) { a, _ in a }
        server.stop()
        engine.stop()
        driver.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
        #expect(stillAlive(inside).isEmpty, "processes of the namespace left: \(stillAlive(inside))")
    }

    @Test(
        "a browser's own simulcast: the engine asking for the low stream gets the browser's half-size encoding, and its full-size one within 2 s of asking for high",
        .timeLimit(.minutes(3)))
    func browserSimulcast() async throws {
        try Self.requireBrowser()
        let media = TemporaryFolder()
        let camera = try Self.makeCamera(in: media)
        let server = try JanusServer()
        defer { server.stop() }
        let outputs = TemporaryFolder()
        // The browser publishes its camera as two encodings (rid h at 640x360, rid l at
        // 320x180), as janus.js sends simulcast; it subscribes to nobody (uid 1 never comes).
        let driver = try LineProcess(
            "driver", on: server, in: outputs,
            [
                "/usr/bin/python3", Self.browserFolder + "/drive.py", "--janus", server.insideURL, "--room",
                "channel-1", "--id", "\(Self.browserUID)", "--feed", "1", "--video", camera, "--audio",
                Fixtures.speechWAV, "--seconds", "150", "--simulcast",
            ])
        defer { driver.stop() }
        let sending = await driver.waitFor(within: 60) {
            guard driver.driverLines.allSatisfy({ $0.phase != "failed" }), let page = driver.page else {
                return driver.driverLines.contains { $0.phase == "failed" }
            }
            return page.published && (page.publish["video:l"]?.framesEncoded ?? 0) >= 30
                && (page.publish["video:h"]?.framesEncoded ?? 0) >= 30
        }
        let failure = driver.driverLines.first { $0.phase == "failed" }
        #expect(failure == nil, "the driver failed: \(failure?.error ?? "")\n\(driver.summary())")
        try #require(sending, "the browser sends both encodings:\n\(driver.summary())")

        // The engine subscribes asking for the low stream of every publisher, and 8 s after it
        // started for the browser's high stream.
        let switchAtMs = 8_000
        let c = try JoinRun(
            "C", on: server,
            [
                "--uid", "33", "--subscribe", "channel-1", "--remote-video-type", "low", "--at",
                "\(switchAtMs / 1000):high-video:\(Self.browserUID)", "--duration", "60", "--md5",
            ])
        defer { c.stop() }
        func sizes() -> [String] {
            c.pictures(in: "channel-1", uid: Self.browserUID).map { "\($0.width ?? 0)x\($0.height ?? 0)" }
        }
        // Janus relays the first keyframe of either encoding, before the low wish applies: a
        // run of low pictures, then (after the switch C asked for) high ones; and C's statistics
        // (every 2 s) say low, then high.
        func statsShowSwitch() -> Bool {
            let stats = c.events("remoteVideoStats", in: "channel-1", uid: Self.browserUID)
            guard let low = stats.firstIndex(where: { $0.text.contains("rxStreamType: low") }) else { return false }
            return stats[low...].contains { $0.text.contains("rxStreamType: high") }
        }
        let switched = await c.waitFor(within: 40) { _ in
            let seen = sizes()
            guard let firstLow = seen.firstIndex(of: "320x180") else { return false }
            return seen[firstLow...].filter { $0 == "320x180" }.count >= 15
                && seen[firstLow...].filter { $0 == "640x360" }.count >= 30 && statsShowSwitch()
        }
        let page = driver.page
        let encodings = ["video:h", "video:l"].map { rid in
            let sent = page?.publish[rid]
            return "\(rid) \(sent?.frameWidth ?? 0)x\(sent?.frameHeight ?? 0) framesEncoded \(sent?.framesEncoded ?? 0)"
                + " targetBitrate \(Int(sent?.targetBitrate ?? 0)) limited by \(sent?.qualityLimitationReason ?? "-")"
        }
        let seen = sizes()
        print(
            "JanusBrowser simulcast: the browser sends \(encodings.joined(separator: "; ")); C's pictures in order: \(runLengths(seen))"
        )
        #expect(switched, "C's sizes of \(Self.browserUID): \(runLengths(seen))\n\(c.summary)\n\(driver.summary())")

        // At most the first keyframe's few pictures high before the low ones; low until the
        // switch C asked for, high after it: one change.
        let pictures = c.pictures(in: "channel-1", uid: Self.browserUID)
        let firstLow = try #require(pictures.firstIndex { $0.width == 320 })
        #expect(firstLow <= 3 && pictures[..<firstLow].allSatisfy { $0.width == 640 }, "\(runLengths(seen))")
        #expect(pictures[firstLow].ms < switchAtMs, "first low picture at \(pictures[firstLow].ms) ms")
        let firstHigh = try #require(pictures[firstLow...].firstIndex { $0.width == 640 })
        #expect(
            pictures[firstLow..<firstHigh].allSatisfy { $0.width == 320 && $0.height == 180 }, "\(runLengths(seen))")
        #expect(pictures[firstHigh...].allSatisfy { $0.width == 640 && $0.height == 360 }, "\(runLengths(seen))")
        // The switch: Janus asks the browser for a keyframe of its high encoding, which comes
        // within a round trip on loopback and an encode.
        let wait = pictures[firstHigh].ms - switchAtMs
        #expect(wait >= 0 && wait <= 2_000, "first high picture \(wait) ms after asking")
        let stats = c.events("remoteVideoStats", in: "channel-1", uid: Self.browserUID)
        let lowStats = stats.firstIndex { $0.text.contains("rxStreamType: low") }
        let highStats = stats.lastIndex { $0.text.contains("rxStreamType: high") }
        #expect(lowStats != nil && highStats != nil && lowStats! < highStats!, "rxStreamType: \(stats.map(\.text))")
        #expect(c.events("error").isEmpty, "C's errors: \(c.events("error").map(\.text))")
        let requests = stats.last?.figure("keyframeRequestsSent") ?? -1
        print(
            "JanusBrowser simulcast: first high picture \(wait) ms after asking; C sent \(Int(requests)) keyframe requests"
        )

        // The browser leaves as a page closing does (the driver quits Chromium), then C.
        let inside = namespacePIDs(server.namespace)
        let driverStatus = await driver.end(with: SIGTERM, within: 20)
        #expect(driverStatus == 0, "the driver's exit:\n\(driver.summary())")
        c.signal(SIGINT)
        let cStatus = await c.waitForExit(within: 20)
        #expect(cStatus == 0, "C's exit:\n\(c.summary)")
        server.stop()
        c.stop()
        driver.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
        // Chromium's helpers, orphaned when it quits, are reaped by init: give it up to 10 s.
        let deadline = Date().addingTimeInterval(10)
        while !stillAlive(inside).isEmpty && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(stillAlive(inside).isEmpty, "processes of the namespace left: \(stillAlive(inside))")
    }
}
