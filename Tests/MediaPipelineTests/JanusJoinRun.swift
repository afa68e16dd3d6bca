import Foundation
import MediaPipelineTesting
import Synchronization
import Testing

@testable import MediaPipeline

/// One line of `pipebench join --events-json`: a channel event or a decoded picture's MD5.
struct JoinLine: Sendable {
    /// Its position in the output (events and pictures counted together).
    var index: Int
    var channel: String
    /// The event's case name; nil for a picture's line.
    var event: String?
    /// Milliseconds since the process started its printer.
    var ms: Int
    /// The event's full description.
    var text: String
    /// A decoded picture's MD5 (pictures only).
    var md5: String?
    /// A decoded picture's width and height (pictures only).
    var width: Int?, height: Int?
    /// A picture's uid, or the first `uid: N` of an event's text.
    var uid: UInt32?

    /// The number after `name: ` in the event's text (`totalFrozenTimeMs: 120`), if any.
    func figure(_ name: String) -> Double? {
        guard let range = text.range(of: "\(name): ") else { return nil }
        return Double(text[range.upperBound...].prefix { $0.isNumber || $0 == "." || $0 == "-" })
    }

    /// Whether the event's `state:` is `name` (as `decoding` or `RemoteStreamState.decoding`).
    func hasState(_ name: String) -> Bool {
        text.contains("state: \(name)") || text.contains("state: RemoteStreamState.\(name)")
    }

    init?(index: Int, json: Substring) {
        guard let data = json.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let channel = object["channel"] as? String
        else { return nil }
        self.index = index
        self.channel = channel
        event = object["event"] as? String
        ms = (object["ms"] as? Int) ?? 0
        text = (object["text"] as? String) ?? ""
        md5 = object["md5"] as? String
        width = object["width"] as? Int
        height = object["height"] as? Int
        if let uid = object["uid"] as? Int {
            self.uid = UInt32(uid)
        } else if let range = text.range(of: "uid: ") {
            self.uid = UInt32(text[range.upperBound...].prefix { $0.isNumber })
        }
    }
}

/// A `pipebench join` process inside the server's namespace, its output in a folder of its own.
/// Killed (SIGKILL) and reaped at ``stop()`` or when the value goes away, whatever path the test
/// takes.
final class JoinRun: @unchecked Sendable {
    let name: String
    let process: Process
    let folder = TemporaryFolder()
    let startedAt = Date()
    private struct Parsed {
        var offset = 0
        var lines: [JoinLine] = []
    }
    private let parsed = LockedValue(Parsed())

    /// Starts `pipebench join URL --local-address 127.0.0.2 --events-json …` with `arguments`
    /// (URL: the server's inside URL unless given), as the user `asUser` when given (so that a
    /// firewall rule matching its uid cuts its traffic alone). The release build runs, unless the
    /// tests are sanitized (`Fixtures.realTimePipebench`): these engines work in real time
    /// beside each other and Janus, and a debug build starved of CPU (three engines encoding,
    /// decoding and recording on two cores) delivers its packets late enough that the
    /// subscribers' jitter buffers conceal and stretch what the tests listen to.
    init(_ name: String, on server: JanusServer, url: String? = nil, asUser: UInt32? = nil, _ arguments: [String])
        throws
    {
        self.name = name
        var command: [String] = []
        if let asUser {
            chmod(folder.path, 0o777)
            command = ["/usr/bin/setpriv", "--reuid=\(asUser)", "--regid=\(asUser)", "--clear-groups"]
        }
        process = try server.start(
            command + [
                try Fixtures.realTimePipebench(), "join", url ?? server.insideURL, "--local-address",
                JanusServer.mediaAddress,
                "--events-json", "--samples", Fixtures.samples, "--output", folder.path,
            ] + arguments, stdout: folder.file("stdout"), stderr: folder.file("stderr"))
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    var stderr: String { (try? String(contentsOfFile: folder.file("stderr"), encoding: .utf8)) ?? "" }

    /// Every whole line printed so far.
    var lines: [JoinLine] {
        parsed.withLock { state in
            guard let data = FileManager.default.contents(atPath: folder.file("stdout")), data.count > state.offset
            else { return state.lines }
            let fresh = data[(data.startIndex + state.offset)...]
            guard let end = fresh.lastIndex(of: UInt8(ascii: "\n")) else { return state.lines }
            let text = String(decoding: fresh[..<end], as: UTF8.self)
            for line in text.split(separator: "\n") {
                if let parsed = JoinLine(index: state.lines.count, json: line) { state.lines.append(parsed) }
            }
            state.offset = end - data.startIndex + 1
            return state.lines
        }
    }

    /// Events named `event` (any channel, any uid unless given).
    func events(_ event: String, in channel: String? = nil, uid: UInt32? = nil) -> [JoinLine] {
        lines.filter {
            $0.event == event && (channel == nil || $0.channel == channel) && (uid == nil || $0.uid == uid)
        }
    }

    /// Decoded pictures (any channel, any uid unless given).
    func pictures(in channel: String? = nil, uid: UInt32? = nil) -> [JoinLine] {
        lines.filter { $0.md5 != nil && (channel == nil || $0.channel == channel) && (uid == nil || $0.uid == uid) }
    }

    func joined(_ channel: String) -> Bool { !events("joinSuccess", in: channel).isEmpty }

    /// Waits up to `seconds` for `condition`, polling; false if it never held (or the process
    /// ended without it, or, with `failingOnError`, printed an `error` event first).
    func waitFor(within seconds: Double, failingOnError: Bool = true, _ condition: (JoinRun) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !Task.isCancelled {
            if condition(self) { return true }
            if !process.isRunning || (failingOnError && !events("error").isEmpty) { return condition(self) }
            if Date() >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits up to `seconds` for the process to end; its exit status, or nil if it still runs.
    func waitForExit(within seconds: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard !process.isRunning else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The UDP ports the process has bound in the server's namespace (its ICE sockets: the
    /// kernel chose them), read from `ss`; empty once it has none or has ended.
    func udpPorts(on server: JanusServer) throws -> [Int] {
        let listing = try server.run(["ss", "-uanpH"]).stdout
        return listing.split(separator: "\n").filter { $0.contains("pid=\(pid),") }.compactMap { line in
            // UNCONN 0 0 127.0.0.2:47055 0.0.0.0:* users:(("pipebench",pid=470,fd=3))
            let local = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first ?? ""
            return Int(local.split(separator: ":").last ?? "")
        }.sorted()
    }

    func signal(_ number: Int32) {
        if process.isRunning { kill(pid, number) }
    }

    /// Kills the process if it still runs, and reaps it.
    func stop() {
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// For failure messages: the state, standard error and the events (pictures counted).
    var summary: String {
        let all = lines
        let events = all.filter { $0.event != nil && $0.event != "rtcStats" && !$0.event!.hasSuffix("Stats") }
        let pictures = Dictionary(grouping: all.filter { $0.md5 != nil }) { "\($0.channel)/\($0.uid ?? 0)" }
            .mapValues(\.count)
        return """
            \(name) (pid \(pid), \(isRunning ? "running" : "exit \(process.terminationStatus)")) stderr: \
            \(stderr.suffix(600))
            events: \(events.map { "\($0.ms) \($0.channel) \($0.text)" }.joined(separator: "\n  "))
            pictures: \(pictures)
            """
    }
}

/// What publishers started by the tests send: the MD5s `vpxdec --md5 --i420` gives for each
/// picture of user variant `variant`'s VP8 frames (what a publisher with `--variant` sends,
/// looped) or of the samples' low layer, computed once each; the voices.
enum Reference {
    private static let cache = LockedValue<[Int: Set<String>]>([:])
    private static let media = LockedValue<SampleMedia?>(nil)

    private static func sampleMedia() throws -> SampleMedia {
        try media.withLock { media in
            if let media { return media }
            let made = try SampleMedia(speechWAV: Fixtures.speechWAV, videoIVF: Fixtures.motionIVF)
            media = made
            return made
        }
    }

    /// User variant `variant`'s speech as a publisher with `--variant` sends it (one loop of its
    /// pre-encoded Opus packets, decoded by libopus), mono at 48 kHz.
    static func speech(variant: Int) throws -> [Double] {
        let packets = try sampleMedia().userMedia(variant: variant).opusPackets
        let decoder = try OpusDecoder(sampleRate: 48_000, channelCount: 2)
        var pcm = [Int16](repeating: 0, count: 2 * 5_760)
        var mono: [Double] = []
        for packet in packets {
            let count = try packet.withUnsafeBytes { bytes in
                try pcm.withUnsafeMutableBufferPointer { try decoder.decode(bytes, into: $0) }
            }
            for index in 0..<count { mono.append((Double(pcm[2 * index]) + Double(pcm[2 * index + 1])) / 2) }
        }
        return mono
    }

    static func md5s(variant: Int) throws -> Set<String> {
        try md5s(key: variant) { try $0.userMedia(variant: variant).vp8Frames }
    }

    /// The MD5s of the samples' low layer (``SampleMedia/lowVP8Frames()``: what a publisher of
    /// the pre-encoded samples sends as its low stream with `--dual-stream`).
    static func lowLayerMD5s() throws -> Set<String> { try md5s(key: Int.min) { try $0.lowVP8Frames() } }

    /// The MD5s of `frames(sampleMedia)` as vpxdec decodes them, cached under `key`.
    private static func md5s(key: Int, _ frames: (SampleMedia) throws -> [EncodedFrame]) throws -> Set<String> {
        if let known = cache.withLock({ $0[key] }) { return known }
        let sampleMedia = try sampleMedia()
        let frames = try frames(sampleMedia)
        let folder = TemporaryFolder()
        let path = folder.file("frames-\(key).ivf")
        let writer = try IVFWriter(
            path: path,
            header: IVFHeader(
                codec: .vp8, width: frames[0].width, height: frames[0].height,
                timebaseDenominator: sampleMedia.videoFrameRate))
        for (index, frame) in frames.enumerated() { try writer.write(frame.bytes, timestamp: Int64(index)) }
        try writer.finish()
        let digests = try vpxdecFrameMD5s(path)
        #expect(digests.count == frames.count, "vpxdec decoded \(digests.count) of \(frames.count) frames")
        let set = Set(digests)
        cache.withLock { $0[key] = set }
        return set
    }
}
