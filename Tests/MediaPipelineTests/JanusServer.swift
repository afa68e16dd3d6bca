import Foundation
import Synchronization

@testable import MediaPipeline

/// A Janus (Debian's `janus`, 1.1.x) of the test's own, inside a network namespace made for it,
/// with only the VideoRoom plugin and the HTTP transport loaded. Removed when the value goes away
/// (or at ``stop()``): Janus stopped (SIGINT, then SIGKILL), every process in the namespace
/// killed and reaped, the namespace and the temporary folder deleted.
///
/// The namespace follows the recipe that works for media (Janus 1.1.2 skips loopback
/// interfaces when it gathers ICE candidates and fails with only `lo`): `lo` up and a veth pair
/// whose both ends stay inside, `127.0.0.2/32` on one end, IPv6 off, Janus's ICE restricted to
/// that end. Janus's one candidate is then `127.0.0.2`; media clients run inside too
/// (``run(_:)``, ``start(_:stdout:stderr:)``).
///
/// The test process stays in the root namespace; for signalling, ``url`` reaches Janus's HTTP
/// API through a bridge: a `socat` inside forwards a Unix socket in the temporary folder (a
/// path, so visible from both namespaces) to Janus's port, and a `socat` in the root namespace
/// listens on 127.0.0.1 at a kernel-chosen port and forwards to that socket. Media cannot cross.
final class JanusServer: @unchecked Sendable {
    /// The prefix of our namespaces' names (then the test process's pid, `x`, a serial).
    static let prefix = "mpjanus"
    /// Janus's HTTP port inside the namespace. The namespace is new and holds nothing else, so a
    /// fixed port cannot be taken there: no kernel-chosen port is needed inside.
    static let port = 8088
    /// The address Janus gathers its one ICE candidate on.
    static let mediaAddress = "127.0.0.2"

    let namespace: String
    let folder: String
    /// The Janus API as the test process reaches it (root namespace, through the bridge).
    private(set) var url = ""
    /// The Janus API inside the namespace, for clients run there.
    var insideURL: String { "\(scheme)://127.0.0.1:\(Self.port)/janus" }
    /// With HTTPS: the PEM file of the authority that signed Janus's certificate (made for this
    /// server, naming 127.0.0.1), which clients must trust.
    private(set) var authorityCertificatePath: String?
    private let scheme: String

    private var janus: Process?
    private var bridges: [Process] = []
    /// Every process this server started (Janus, the bridges, the clients), for ``leftovers()``.
    private let children = LockedValue<[Process]>([])
    private var stopped = false
    private static let serial = Atomic<Int>(0)

    /// Starts Janus with `sessionTimeout` (seconds) and the VideoRoom rooms "channel-1",
    /// "channel-2" (`notify_joining = true`) and "pinned" (pin "1234"), string ids; with
    /// `stringIDs` false the rooms are 1001, 1002 and 1003 and ids are numbers. With `https`
    /// the API is served over HTTPS only, with a certificate for 127.0.0.1 signed by an
    /// authority made for this server (``authorityCertificatePath``).
    init(sessionTimeout: Int = 60, stringIDs: Bool = true, https: Bool = false) throws {
        Self.sweepStale()
        namespace = "\(Self.prefix)\(getpid())x\(Self.serial.wrappingAdd(1, ordering: .relaxed).oldValue)"
        folder = TemporaryFolder.root + "\(namespace)-" + UUID().uuidString.prefix(8)
        scheme = https ? "https" : "http"
        do {
            try makeNamespace()
            if https { try makeCertificates() }
            try writeConfiguration(sessionTimeout: sessionTimeout, stringIDs: stringIDs)
            try startJanus()
            try startBridge()
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Runs `arguments` inside the namespace and waits for it.
    func run(_ arguments: [String]) throws -> ToolResult {
        try runTool("/usr/sbin/ip", ["netns", "exec", namespace] + arguments)
    }

    /// Starts `arguments` inside the namespace, its output into files; the caller waits for it
    /// (whatever still runs in the namespace is killed at ``stop()``).
    func start(_ arguments: [String], stdout: String, stderr: String) throws -> Process {
        let process = try startWithSignalsUnblocked(
            ["/usr/sbin/ip", "netns", "exec", namespace] + arguments, stdout: stdout, stderr: stderr)
        children.withLock { $0.append(process) }
        return process
    }

    /// What this server leaves behind after ``stop()``: its namespace if it still exists, and
    /// each process it started that still runs. Tests run in parallel, so a test checks its own
    /// server's leftovers, not every namespace of the process.
    func leftovers() -> [String] {
        var found: [String] = []
        if Self.existingNamespaces().contains(namespace) { found.append("namespace \(namespace)") }
        for process in children.withLock({ $0 }) + [janus].compactMap({ $0 }) + bridges where process.isRunning {
            found.append(
                "pid \(process.processIdentifier) \(process.arguments?.dropFirst(2).joined(separator: " ") ?? "")")
        }
        return found
    }

    /// Kills Janus (SIGKILL), as a crash would, and reaps it; the namespace stays.
    func killJanus() {
        guard let janus, janus.isRunning else { return }
        kill(janus.processIdentifier, SIGKILL)
        janus.waitUntilExit()
    }

    /// Janus's log so far.
    var log: String { (try? String(contentsOfFile: folder + "/janus.log", encoding: .utf8)) ?? "" }

    /// Stops everything and removes the namespace and the folder. Safe to call more than once.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for bridge in bridges where bridge.isRunning { bridge.terminate() }
        for bridge in bridges { Self.reap(bridge, within: 2) }
        if let janus {
            if janus.isRunning { janus.interrupt() }
            Self.reap(janus, within: 5)
        }
        Self.removeNamespace(namespace)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Deletes namespaces with our prefix whose test process is gone (a run that crashed), and
    /// kills what still runs in them.
    static func sweepStale() {
        guard let listing = try? runTool("/usr/sbin/ip", ["netns", "list"]).stdout else { return }
        for line in listing.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix(prefix), let x = name.firstIndex(of: "x"),
                let pid = Int32(name[name.index(name.startIndex, offsetBy: prefix.count)..<x])
            else { continue }
            if pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH { removeNamespace(name) }
        }
    }

    /// Our namespaces that exist now.
    static func existingNamespaces() -> [String] {
        let listing = (try? runTool("/usr/sbin/ip", ["netns", "list"]).stdout) ?? ""
        return listing.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
            .filter { $0.hasPrefix("\(prefix)\(getpid())x") }
    }

    // MARK: Setup

    private func makeNamespace() throws {
        let steps: [[String]] = [
            ["ip", "netns", "add", namespace],
            ["ip", "-n", namespace, "link", "set", "lo", "up"],
            ["ip", "-n", namespace, "link", "add", "jv0", "type", "veth", "peer", "name", "jv1"],
            ["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
            ["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
            ["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.jv0.disable_ipv6=1"],
            ["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.jv1.disable_ipv6=1"],
            ["ip", "-n", namespace, "link", "set", "jv0", "up"],
            ["ip", "-n", namespace, "link", "set", "jv1", "up"],
            ["ip", "-n", namespace, "addr", "add", "\(Self.mediaAddress)/32", "dev", "jv0"],
        ]
        for step in steps {
            let result = try runTool("/usr/sbin/ip", Array(step.dropFirst()))
            guard result.status == 0 else {
                throw LinkError("\(step.joined(separator: " ")) failed (root and iproute2 needed): \(result.stderr)")
            }
        }
    }

    private func writeConfiguration(sessionTimeout: Int, stringIDs: Bool) throws {
        let libraries = "/usr/lib/x86_64-linux-gnu/janus"
        let manager = FileManager.default
        guard manager.fileExists(atPath: "/usr/bin/janus") else { throw LinkError("janus is not installed") }
        for sub in ["plugins", "transports", "events", "loggers"] {
            try manager.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true)
        }
        try manager.createSymbolicLink(
            atPath: folder + "/plugins/libjanus_videoroom.so",
            withDestinationPath: libraries + "/plugins/libjanus_videoroom.so")
        try manager.createSymbolicLink(
            atPath: folder + "/transports/libjanus_http.so",
            withDestinationPath: libraries + "/transports/libjanus_http.so")
        let core = """
            general: {
                configs_folder = "\(folder)"
                plugins_folder = "\(folder)/plugins"
                transports_folder = "\(folder)/transports"
                events_folder = "\(folder)/events"
                loggers_folder = "\(folder)/loggers"
                debug_level = 4
                session_timeout = \(sessionTimeout)
            }
            certificates: {
            }
            media: {
                ipv6 = false
                min_nack_queue = 1000
            }
            nat: {
                ice_enforce_list = "jv0"
            }
            plugins: {
            }
            transports: {
            }
            events: {
            }
            loggers: {
            }

            """
        let listen =
            authorityCertificatePath == nil
            ? """
                http = true
                port = \(Self.port)
                ip = "127.0.0.1"
                https = false
            """
            : """
                http = false
                https = true
                secure_port = \(Self.port)
                secure_ip = "127.0.0.1"
            """
        let http = """
            general: {
                json = "plain"
                base_path = "/janus"
            \(listen)
            }
            admin: {
                admin_http = false
                admin_https = false
            }
            cors: {
            }
            certificates: {
            \(authorityCertificatePath == nil ? "" : "    cert_pem = \"\(folder)/server.pem\"\n    cert_key = \"\(folder)/server.key\"")
            }

            """
        let rooms = stringIDs ? ["channel-1", "channel-2", "pinned"] : ["1001", "1002", "1003"]
        let videoroom = """
            general: {
                string_ids = \(stringIDs)
            }
            room-\(rooms[0]): {
                description = "first"
                publishers = 6
            }
            room-\(rooms[1]): {
                description = "second, notify_joining"
                publishers = 6
                notify_joining = true
            }
            room-\(rooms[2]): {
                description = "pinned"
                pin = "1234"
                publishers = 6
            }

            """
        try core.write(toFile: folder + "/janus.jcfg", atomically: true, encoding: .utf8)
        try http.write(toFile: folder + "/janus.transport.http.jcfg", atomically: true, encoding: .utf8)
        try videoroom.write(toFile: folder + "/janus.plugin.videoroom.jcfg", atomically: true, encoding: .utf8)
    }

    /// An authority and a certificate it signs for 127.0.0.1 (P-256, valid one day), in the folder.
    private func makeCertificates() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "subjectAltName = IP:127.0.0.1\n".write(toFile: folder + "/server.ext", atomically: true, encoding: .utf8)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509"] + key
                + [
                    "-keyout", folder + "/ca.key", "-out", folder + "/ca.pem", "-days", "1", "-subj",
                    "/CN=Test authority",
                ],
            ["req"] + key + [
                "-keyout", folder + "/server.key", "-out", folder + "/server.csr", "-subj", "/CN=127.0.0.1",
            ],
            [
                "x509", "-req", "-in", folder + "/server.csr", "-CA", folder + "/ca.pem", "-CAkey", folder + "/ca.key",
                "-CAcreateserial", "-out", folder + "/server.pem", "-days", "1", "-extfile", folder + "/server.ext",
            ],
        ]
        for step in steps {
            let result = try runTool("/usr/bin/openssl", step)
            guard result.status == 0 else { throw LinkError("openssl \(step[0]) failed: \(result.stderr)") }
        }
        authorityCertificatePath = folder + "/ca.pem"
    }

    private func startJanus() throws {
        // -F: the configuration folder (plugins read theirs there), -C: the core's file, -o: no
        // colours in the log.
        let process = try start(
            ["/usr/bin/janus", "-F", folder, "-C", folder + "/janus.jcfg", "-o"],
            stdout: folder + "/janus.log", stderr: folder + "/janus.err")
        janus = process
        try waitFor("Janus listening on port \(Self.port)", upTo: 20) {
            guard process.isRunning else { throw LinkError("janus exited: \(self.log)") }
            let listening = try self.run(["ss", "-Hltn", "sport = :\(Self.port)"]).stdout
            return !listening.isEmpty
        }
    }

    private func startBridge() throws {
        let socket = folder + "/janus.sock"
        bridges.append(
            try start(
                ["/usr/bin/socat", "UNIX-LISTEN:\(socket),fork,mode=600", "TCP:127.0.0.1:\(Self.port)"],
                stdout: folder + "/bridge-inside.log", stderr: folder + "/bridge-inside.err"))
        try waitFor("the bridge's socket", upTo: 10) { FileManager.default.fileExists(atPath: socket) }
        let outside = try startWithSignalsUnblocked(
            ["/usr/bin/socat", "TCP-LISTEN:0,bind=127.0.0.1,fork,reuseaddr", "UNIX-CONNECT:\(socket)"],
            stdout: folder + "/bridge-outside.log", stderr: folder + "/bridge-outside.err")
        bridges.append(outside)
        var port = 0
        try waitFor("the bridge's port", upTo: 10) {
            guard outside.isRunning else { throw LinkError("socat exited (apt-get install socat)") }
            let listing = try runTool("/usr/bin/ss", ["-Hltnp"]).stdout
            guard
                let line = listing.split(separator: "\n").first(where: {
                    $0.contains("pid=\(outside.processIdentifier),")
                }),
                let local = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first,
                let colon = local.lastIndex(of: ":"), let found = Int(local[local.index(after: colon)...])
            else { return false }
            port = found
            return true
        }
        url = "\(scheme)://127.0.0.1:\(port)/janus"
    }

    // MARK: Processes

    private func waitFor(_ what: String, upTo seconds: Double, _ ready: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !ready() {
            guard Date() < deadline else { throw LinkError("\(what): not ready within \(seconds) s") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Waits up to `seconds` for `process` to end after its signal, then kills it; reaps it.
    private static func reap(_ process: Process, within seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Kills what still runs in `name` (by pid) and deletes the namespace.
    private static func removeNamespace(_ name: String) {
        let pids = (try? runTool("/usr/sbin/ip", ["netns", "pids", name]).stdout) ?? ""
        for pid in pids.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        _ = try? runTool("/usr/sbin/ip", ["netns", "del", name])
    }
}
