import Foundation
import Synchronization

@testable import MediaPipeline

/// Two network namespaces of the test's own, joined by a veth pair (A 10.200.0.1, B
/// 10.200.0.2), where packets leaving A can be dropped at random by the kernel (an iptables
/// `statistic` rule) and held back for a delay with jitter and reordering (an NFQUEUE rule and
/// `Tests/Tools/nfdelay.c`, which releases them from the kernel's queue when due): this
/// machine's kernel has no netem. Removed when the value goes away. Traffic never leaves the two
/// namespaces.
final class NamespaceLink {
    static let addressA = "10.200.0.1"
    static let addressB = "10.200.0.2"
    let a: String
    let b: String
    private static let serial = Atomic<Int>(0)

    private let deviceA: String

    /// Makes the pair, with no loss yet.
    init() throws {
        // The test process's pid (up to 7 digits), then a serial: device names stay within 15
        // characters, and a namespace whose process is gone is known to be left behind.
        let id = "\(getpid())x\(Self.serial.wrappingAdd(1, ordering: .relaxed).oldValue)"
        a = "mpa\(id)"
        b = "mpb\(id)"
        let (va, vb) = ("va\(id)", "vb\(id)")
        deviceA = va
        let steps: [[String]] = [
            ["netns", "add", a], ["netns", "add", b],
            ["link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b],
            ["-n", a, "addr", "add", "\(Self.addressA)/24", "dev", va],
            ["-n", b, "addr", "add", "\(Self.addressB)/24", "dev", vb],
            ["-n", a, "link", "set", va, "up"], ["-n", b, "link", "set", vb, "up"],
            ["-n", a, "link", "set", "lo", "up"], ["-n", b, "link", "set", "lo", "up"],
        ]
        for step in steps {
            let result = try runTool("/usr/sbin/ip", step)
            guard result.status == 0 else {
                removeNamespaces()
                throw LinkError("ip \(step.joined(separator: " ")) failed (root and iproute2 needed): \(result.stderr)")
            }
        }
        // Each side knows the other's link address from the start. Otherwise the first packets
        // wait for ARP, and one sent as it completes overtakes them: captured in B, a file
        // sender's first keyframe arrived with its ninth packet first, under load.
        for (side, device, other, otherDevice, otherAddress) in [
            (a, va, b, vb, Self.addressB), (b, vb, a, va, Self.addressA),
        ] {
            let listing = try runTool("/usr/sbin/ip", ["-n", other, "-o", "link", "show", otherDevice]).stdout
            let words = listing.split(separator: " ")
            guard let at = words.firstIndex(of: "link/ether"), at + 1 < words.count else {
                removeNamespaces()
                throw LinkError("no link address for \(otherDevice) in \(other): \(listing)")
            }
            let neighbour = try runTool(
                "/usr/sbin/ip",
                [
                    "-n", side, "neigh", "replace", otherAddress, "lladdr", String(words[at + 1]), "dev", device, "nud",
                    "permanent",
                ])
            guard neighbour.status == 0 else {
                removeNamespaces()
                throw LinkError("ip neigh in \(side) failed: \(neighbour.stderr)")
            }
        }
        // Rules that only count what leaves A, and what of it goes to the video port (see
        // waitForTraffic).
        for (match, marker) in [([String](), "mp-count"), (["--dport", "\(Self.videoPort)"], "mp-video")] {
            let counter = try runTool(
                "/usr/sbin/ip",
                ["netns", "exec", a, "iptables", "-A", "OUTPUT", "-o", va, "-p", "udp"] + match + [
                    "-m", "comment", "--comment", marker,
                ])
            guard counter.status == 0 else {
                removeNamespaces()
                throw LinkError(
                    "iptables in namespace \(a) failed (the iptables package is needed): \(counter.stderr)")
            }
        }
    }

    /// From now on, drops `lossPercent` of the UDP datagrams leaving A.
    func dropFromA(lossPercent: Double) throws {
        let probability = String(format: "%.4f", lossPercent / 100)
        let rule = try runTool(
            "/usr/sbin/ip",
            [
                "netns", "exec", a, "iptables", "-A", "OUTPUT", "-o", deviceA, "-p", "udp", "-m", "statistic",
                "--mode", "random", "--probability", probability, "-j", "DROP",
            ])
        guard rule.status == 0 else {
            throw LinkError("iptables in namespace \(a) failed (the iptables package is needed): \(rule.stderr)")
        }
    }

    /// The delay line, while it runs.
    private var delayLine: Process?
    /// The delay line's output, removed with the link.
    private let files = TemporaryFolder()

    deinit {
        delayLine?.wait(upTo: 0)
        removeNamespaces()
    }

    /// From now on, holds each UDP datagram leaving A for `delayMilliseconds` ±
    /// `jitterMilliseconds` (uniform), except `reorderPercent` of them, released at once
    /// (overtaking those held), as netem's `delay D J reorder R` does. After ``dropFromA(lossPercent:)``
    /// when both are used: what is dropped is not delayed.
    func delayFromA(delayMilliseconds: Int, jitterMilliseconds: Int, reorderPercent: Int, seed: Int = 1) throws {
        delayLine = try Self.startDelayLine(
            queue: 7, delayMilliseconds: delayMilliseconds, jitterMilliseconds: jitterMilliseconds,
            reorderPercent: reorderPercent, seed: seed, output: files.file("nfdelay")
        ) { arguments, stdout, stderr in try start(in: a, arguments, stdout: stdout, stderr: stderr) }
        let rule = try runTool(
            "/usr/sbin/ip",
            [
                "netns", "exec", a, "iptables", "-A", "OUTPUT", "-o", deviceA, "-p", "udp", "-j", "NFQUEUE",
                "--queue-num", "7",
            ])
        guard rule.status == 0 else { throw LinkError("iptables NFQUEUE in namespace \(a) failed: \(rule.stderr)") }
    }

    /// Starts `nfdelay` on NFQUEUE `queue` through `start` (which runs it in a namespace, its
    /// standard output and error to `output`.out and .err) and waits up to 10 s for it to say
    /// its queue is bound, so no packet meets a queue nobody reads. The caller adds the NFQUEUE
    /// rule next; the process is the caller's to stop.
    static func startDelayLine(
        queue: Int, delayMilliseconds: Int, jitterMilliseconds: Int, reorderPercent: Int, seed: Int, output: String,
        start: (_ arguments: [String], _ stdout: String, _ stderr: String) throws -> Process
    ) throws -> Process {
        let tool = try delayTool()
        let errors = output + ".err"
        let line = try start(
            [tool, "\(queue)", "\(delayMilliseconds)", "\(jitterMilliseconds)", "\(reorderPercent)", "\(seed)"],
            output + ".out", errors)
        let deadline = Date().addingTimeInterval(10)
        func ready() -> Bool { ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains("ready") }
        while !ready() && line.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        guard ready() else {
            throw LinkError(
                "the delay line did not start (nfnetlink_queue is needed): \(String(describing: try? String(contentsOfFile: errors, encoding: .utf8)))"
            )
        }
        return line
    }

    /// `nfdelay`, built from `Tests/Tools/nfdelay.c` (gcc, libnetfilter-queue-dev) beside
    /// pipebench in the build folder when missing or older than its source (a build product,
    /// not a temporary file: nothing to remove after the run). Built under a name of its own
    /// and renamed, so parallel runs never start a half-written binary.
    private static func delayTool() throws -> String {
        try delayToolBuild.withLock { built in
            if let built { return built }
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Tools/nfdelay.c").path
            let binary = URL(fileURLWithPath: Fixtures.pipebench).deletingLastPathComponent().path + "/nfdelay"
            func modified(_ path: String) -> Date? {
                (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            }
            if let made = modified(binary), let written = modified(source), made >= written {
                built = binary
                return binary
            }
            let partial = binary + ".\(getpid())"
            let result = try runTool("/usr/bin/gcc", ["-O2", "-o", partial, source, "-lnetfilter_queue"])
            guard result.status == 0, rename(partial, binary) == 0 else {
                unlink(partial)
                throw LinkError("building nfdelay failed: \(result.stderr)")
            }
            built = binary
            return binary
        }
    }
    private static let delayToolBuild = LockedValue<String?>(nil)

    private func removeNamespaces() {
        _ = try? runTool("/usr/sbin/ip", ["netns", "del", a])
        _ = try? runTool("/usr/sbin/ip", ["netns", "del", b])
    }

    /// UDP datagrams the kernel dropped on their way out of A so far.
    func dropped() throws -> Int { try counter(of: "statistic") }

    /// Waits (up to `seconds`) until UDP `ports` are bound in `namespace`: a receiver started
    /// there is ready, so a sender started next loses nothing to a port nobody holds yet (a file
    /// sender cannot make its first keyframe again). A fixed sleep was not enough under a loaded
    /// CI run. Throws when they are not bound in time.
    func waitForListeners(_ ports: [Int], in namespace: String, upTo seconds: Double = 20) throws {
        try waitForUDPListeners(ports, in: namespace, upTo: seconds)
    }

    /// The port the tests' video goes to (RTCP on the next one).
    static let videoPort = 5004

    /// Waits (up to `seconds`) until `datagrams` UDP datagrams have left A (with `toVideoPort`:
    /// to ``videoPort``): a stream under way, whose receiver has its first packets, before
    /// impairments start (no receiver can ask for the packets before its first one, and a file
    /// sender cannot make the first keyframe again). Throws when they do not come.
    func waitForTraffic(datagrams: Int, toVideoPort: Bool = false, upTo seconds: Double = 15) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try counter(of: toVideoPort ? "mp-video" : "mp-count") < datagrams {
            guard Date() < deadline else {
                throw LinkError("fewer than \(datagrams) datagrams left \(a) in \(seconds) s")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The packet count of A's OUTPUT rule whose listing contains `marker`.
    private func counter(of marker: String) throws -> Int {
        let listing = try runTool("/usr/sbin/ip", ["netns", "exec", a, "iptables", "-L", "OUTPUT", "-n", "-v", "-x"])
        let rule = listing.stdout.split(separator: "\n").first { $0.contains(marker) } ?? ""
        return Int(rule.split(separator: " ").first ?? "") ?? -1
    }

    /// Starts `arguments` inside `namespace`, its output into `stdout` and `stderr` files.
    func start(in namespace: String, _ arguments: [String], stdout: String, stderr: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", namespace] + arguments
        for path in [stdout, stderr] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdout))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }
}

struct LinkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Process {
    /// Waits up to `seconds` for the process to end; terminates (then kills) it if it does not.
    /// Returns whether it ended by itself.
    @discardableResult
    func wait(upTo seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        guard isRunning else { return true }
        terminate()
        let killAt = Date().addingTimeInterval(3)
        while isRunning && Date() < killAt { Thread.sleep(forTimeInterval: 0.05) }
        if isRunning { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
        return false
    }
}
