import Foundation
import Testing

@testable import MediaPipeline

/// Paths, temporary folders and external tools for the tests.
enum Fixtures {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let samples = packageRoot + "/samples"
    static let speechWAV = samples + "/speech-48k-stereo.wav"
    static let motionIVF = samples + "/motion-640x360.ivf"
    static let oddY4M = samples + "/odd-161x91.y4m"

    /// The pipebench binary built beside the test bundle.
    static var pipebench: String {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path + "/pipebench"
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return packageRoot + "/.build/debug/pipebench"
    }

    /// The pipebench that tests running engines in real time beside each other start: the
    /// release build, whose media work keeps its time on a loaded machine where a debug build's
    /// falls behind; but the ThreadSanitizer test build (scripts/tsan.sh, `.build-tsan`) runs
    /// its own sanitized pipebench, so that a race in the child fails the test.
    static func realTimePipebench() throws -> String {
        let beside = pipebench
        return beside.contains("/.build-tsan/") ? beside : try releasePipebench()
    }

    /// The release build of pipebench, for the tests that measure optimised code (allocation
    /// counts mean something only there). Refused when missing, or older than a file it is
    /// built from (Package.swift, Sources/): a plain `swift test` would judge a stale binary.
    /// scripts/test.sh builds it first and then stamps the build (`pipebench.stamp` beside it):
    /// a build whose objects come out unchanged (a comment edited) leaves the binary's date as
    /// it was, and the stamp says the sources were built.
    static func releasePipebench() throws -> String {
        let path = packageRoot + "/.build/release/pipebench"
        let build = "run scripts/test.sh, or swift build -c release --product pipebench && touch \(path).stamp"
        let files = FileManager.default
        guard files.isExecutableFile(atPath: path),
            let linked = try files.attributesOfItem(atPath: path)[.modificationDate] as? Date
        else { throw TestFailure("no release build at \(path): \(build)") }
        let stamped = (try? files.attributesOfItem(atPath: path + ".stamp")[.modificationDate] as? Date) ?? nil
        let built = max(linked, stamped ?? .distantPast)
        var newest: (path: String, date: Date)?
        var sources = [packageRoot + "/Package.swift"]
        if let walker = files.enumerator(atPath: packageRoot + "/Sources") {
            for case let relative as String in walker { sources.append(packageRoot + "/Sources/" + relative) }
        }
        for source in sources {
            guard let date = try? files.attributesOfItem(atPath: source)[.modificationDate] as? Date,
                date > newest?.date ?? .distantPast
            else { continue }
            newest = (source, date)
        }
        if let newest, newest.date > built {
            throw TestFailure("the release build at \(path) is older than \(newest.path): \(build)")
        }
        return path
    }
}

/// A test's own failure, with its message.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A temporary folder removed when the value is dropped.
final class TemporaryFolder {
    /// Where the tests put their temporary files: `MEDIAPIPELINE_TEST_TMPDIR` when set
    /// (scripts/test.sh gives each run a folder of its own, which scripts/leftovers.sh checks
    /// afterwards), else the system's temporary folder. Ends with a slash.
    static let root: String = {
        guard let folder = ProcessInfo.processInfo.environment["MEDIAPIPELINE_TEST_TMPDIR"], !folder.isEmpty else {
            return NSTemporaryDirectory()
        }
        return folder.hasSuffix("/") ? folder : folder + "/"
    }()

    let path: String
    init() {
        path = Self.root + "mediapipeline-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
    /// Names of the files in the folder, hidden ones included.
    var contents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] }
}

struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs an external program to completion, its outputs captured through files (no pipe stalls).
/// One that runs longer than `timeLimitSeconds` is killed (by its PID), reaped, and reported as
/// a thrown ``TestFailure`` naming the command: a hung tool fails its test instead of the run.
@discardableResult
func runTool(
    _ executable: String, _ arguments: [String], in directory: String? = nil, timeLimitSeconds: Double = 300
) throws -> ToolResult {
    let folder = TemporaryFolder()
    let out = folder.file("stdout")
    let err = folder.file("stderr")
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/" + executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    guard process.finish(within: timeLimitSeconds) else {
        throw TestFailure(
            "\(executable) \(arguments.joined(separator: " ")) still ran after \(Int(timeLimitSeconds)) s: killed")
    }
    func text(_ path: String) -> String {
        let handle = FileHandle(forReadingAtPath: path)
        defer { try? handle?.close() }
        return String(decoding: (try? handle?.readToEnd()) ?? Data(), as: UTF8.self)
    }
    return ToolResult(status: process.terminationStatus, stdout: text(out), stderr: text(err))
}

/// Starts `arguments` (the program's absolute path first), its outputs to files, with no
/// signal blocked: children of the test process inherit its threads' mask, where SIGINT and
/// SIGTERM are blocked (seen in /proc/PID/status: Janus and socat ignored both, and every stop
/// waited for SIGKILL; gst-launch-1.0 -e ignored the SIGINT that ends it with an end of
/// stream). A Python `exec` wrapper unblocks them and keeps the pid.
func startWithSignalsUnblocked(_ arguments: [String], stdout: String, stderr: String) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments =
        [
            "-c",
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
        ] + arguments
    for path in [stdout, stderr] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdout))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
}

extension Process {
    /// Waits up to `seconds` for the process to end; if it has not, kills it (SIGKILL, by its
    /// PID). Reaps it either way. Whether it ended by itself.
    @discardableResult
    func finish(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var pause = 0.001
        while isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
        let ended = !isRunning
        if !ended { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
        return ended
    }
}

/// Runs a reference tool and fails the test if it fails.
@discardableResult
func reference(_ executable: String, _ arguments: [String]) throws -> String {
    let result = try runTool(executable, arguments)
    #expect(result.status == 0, "\(executable) \(arguments.joined(separator: " ")) failed: \(result.stderr)")
    return result.stdout
}

/// Runs pipebench.
func pipebench(_ arguments: [String]) throws -> ToolResult { try runTool(Fixtures.pipebench, arguments) }

/// Interleaved samples of a WAV file, read with our reader (its format checks are tested apart).
func wavSamples(_ path: String) throws -> [Int16] { try SignalQuality.loadWAV(path).samples }

/// Raw little-endian Int16 samples from a file that ffmpeg wrote with `-f s16le`.
func rawInt16(_ path: String) throws -> [Int16] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { raw in
        (0..<data.count / 2).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
    }
}

/// The number of audio samples per channel ffmpeg decodes from a file, at 48 kHz.
func ffmpegSampleCount(_ path: String, channels: Int) throws -> Int {
    let folder = TemporaryFolder()
    try reference(
        "ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-ar", "48000", folder.file("out.raw")])
    let size = (try FileManager.default.attributesOfItem(atPath: folder.file("out.raw"))[.size] as? Int) ?? -1
    return size / (2 * channels)
}

/// Per-frame MD5s printed by `vpxdec --md5 --i420` for `ivf`.
func vpxdecFrameMD5s(_ ivf: String) throws -> [String] {
    let folder = TemporaryFolder()
    let output = try reference("vpxdec", ["--md5", "--i420", "-o", folder.file("frame-%4.i420"), ivf])
    return output.split(separator: "\n").map { String($0.prefix(32)) }
}

/// A deterministic stereo test signal: two tones with a slow amplitude envelope.
func testTone(samplesPerChannel: Int, sampleRate: Int = 48000, channels: Int = 2, amplitude: Double = 12000) -> [Int16]
{
    var samples: [Int16] = []
    samples.reserveCapacity(samplesPerChannel * channels)
    for i in 0..<samplesPerChannel {
        let t = Double(i) / Double(sampleRate)
        let envelope = 0.6 + 0.4 * sin(2 * .pi * 3 * t)
        for c in 0..<channels {
            let f = c == 0 ? 440.0 : 660.0
            samples.append(Int16(amplitude * envelope * sin(2 * .pi * f * t)))
        }
    }
    return samples
}

/// A synthetic moving picture: gradients that shift with `frame`.
func syntheticPicture(width: Int, height: Int, frame: Int) throws -> I420Buffer {
    let buffer = try I420Buffer(width: width, height: height)
    buffer.withMutableView { view in
        for y in 0..<height {
            for x in 0..<width { view.y[y * view.strideY + x] = UInt8(truncatingIfNeeded: x * 2 + y + frame * 3) }
        }
        for y in 0..<view.chromaHeight {
            for x in 0..<view.chromaWidth {
                view.u[y * view.strideU + x] = UInt8(truncatingIfNeeded: 128 + x - frame)
                view.v[y * view.strideV + x] = UInt8(truncatingIfNeeded: 128 + y + frame)
            }
        }
    }
    return buffer
}

/// `count` 20 ms Opus frames of ``testTone(samplesPerChannel:sampleRate:channels:amplitude:)``
/// (48 kHz stereo) encoded by `encoder`, with media times from 0.
func encodedTone(_ count: Int, with encoder: OpusEncoder) throws -> [EncodedFrame] {
    let pcm = testTone(samplesPerChannel: 960 * count)
    return try (0..<count).map { index in
        let samples = Array(pcm[(index * 1920)..<((index + 1) * 1920)])
        return try encoder.encode(
            AudioFrame(samples: samples, sampleRate: 48000, channelCount: 2, timestampSamples: Int64(index * 960)))
    }
}

/// Picture `index` of packed raw I420 pictures of `width` × `height` (even sizes), as ffmpeg's
/// `-f rawvideo -pix_fmt yuv420p` writes them.
func rawI420Picture(_ bytes: [UInt8], index: Int, width: Int, height: Int) throws -> I420Buffer {
    let size = width * height * 3 / 2
    #expect(bytes.count >= (index + 1) * size, "\(bytes.count) bytes hold no picture \(index)")
    let picture = try I420Buffer(width: width, height: height)
    guard bytes.count >= (index + 1) * size else { return picture }
    picture.withMutableView { view in
        bytes.withUnsafeBufferPointer { all in
            let base = all.baseAddress! + index * size
            let chroma = width / 2
            for row in 0..<height { (view.y + row * view.strideY).update(from: base + row * width, count: width) }
            for row in 0..<height / 2 {
                (view.u + row * view.strideU).update(from: base + width * height + row * chroma, count: chroma)
                (view.v + row * view.strideV).update(from: base + width * height * 5 / 4 + row * chroma, count: chroma)
            }
        }
    }
    return picture
}

/// The first audio track of `path` as ffmpeg decodes it to 16-bit samples, with libopus when
/// `libopus` (bit-exact with our decoder) or ffmpeg's own Opus decoder.
func ffmpegAudio(_ path: String, libopus: Bool = false) throws -> [Int16] {
    let folder = TemporaryFolder()
    let raw = folder.file("audio.s16")
    try reference(
        "ffmpeg",
        ["-nostdin", "-v", "error"] + (libopus ? ["-c:a", "libopus"] : []) + [
            "-i", path, "-map", "0:a", "-f", "s16le", raw,
        ])
    return try rawInt16(raw)
}

/// Expects `body` to throw a ``MediaError`` whose message names `name` (a file's path, a
/// field or a value), and contains `words` when given.
func expectMediaError(
    naming name: String, _ words: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected an error naming \(name), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as MediaError {
        #expect("\(error)".contains(name), "\(error) does not name \(name)", sourceLocation: sourceLocation)
        if let words {
            #expect("\(error)".contains(words), "\(error) does not say \(words)", sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("expected a MediaError naming \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

/// How far the share of successes in `trials` independent trials, each a success with
/// `probability`, may stray from `probability` before a check calls it wrong: four standard
/// deviations (normal approximation), exceeded by chance in about one run in 16,000.
func binomialTolerance(probability: Double, trials: Int) -> Double {
    4 * (probability * (1 - probability) / Double(max(1, trials))).squareRoot()
}

/// The smallest `k` with P(X ≤ k) ≥ `probability` for X Poisson with `mean`: with 0.999, the
/// most events of that count a check may allow for a false alarm rarer than once in 1,000 runs.
func poissonQuantile(mean: Double, probability: Double) -> Int {
    var term = exp(-mean)
    var cumulative = term
    var k = 0
    while cumulative < probability && k < 10_000 {
        k += 1
        term *= mean / Double(k)
        cumulative += term
    }
    return k
}
