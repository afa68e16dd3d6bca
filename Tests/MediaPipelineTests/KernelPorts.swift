import Foundation

// Ports for tests that cross loopback: chosen by the kernel (bind to port 0), never picked at
// random, so parallel runs and other programs do not meet; and waits for a process to have
// bound its ports, instead of a fixed sleep.

/// `count` consecutive UDP ports on 127.0.0.1, the first even (RTP, RTCP on the next), free
/// when the call returns: the kernel chooses the first (bind to 0), and the others are
/// checked by binding them. Released before returning, to be passed to the process that binds
/// them. Tries up to 200 of the kernel's choices.
func kernelUDPPorts(count: Int) throws -> Int {
    let (port, sockets) = try kernelBoundUDPPorts(count: count, even: true)
    for fd in sockets { close(fd) }
    return port
}

/// `count` UDP sockets bound to consecutive ports of 127.0.0.1, the first the kernel's choice
/// (even, with `even`), each with a receive buffer of `receiveBufferBytes` when given: held by
/// this process, with no race with other programs. The caller closes them. Tries up to 200 of
/// the kernel's choices.
func kernelBoundUDPPorts(count: Int, even: Bool = false, receiveBufferBytes: Int32? = nil) throws -> (
    port: Int, sockets: [Int32]
) {
    for _ in 0..<200 {
        var sockets: [Int32] = []
        func bound(_ port: Int) -> Int? { bindUDP(port: port, receiveBufferBytes: receiveBufferBytes, into: &sockets) }
        if let first = bound(0), !even || first % 2 == 0, first + count <= 65536,
            (1..<count).allSatisfy({ bound(first + $0) != nil })
        {
            return (first, sockets)
        }
        for fd in sockets { close(fd) }
    }
    throw TestFailure(
        "the kernel gave no \(count) consecutive free UDP ports\(even ? " starting even" : "") in 200 tries")
}

/// A TCP port on 127.0.0.1 that nobody listens on (bound by the kernel's choice, then closed).
func kernelTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
    defer { close(fd) }
    guard let port = bind(fd, port: 0) else { throw TestFailure("bind to 127.0.0.1:0 failed: errno \(errno)") }
    return port
}

/// Binds a new UDP socket to 127.0.0.1:`port` (0: the kernel's choice), with a receive buffer
/// of `receiveBufferBytes` when given, appending it to `sockets`; the port bound, or nil.
private func bindUDP(port: Int, receiveBufferBytes: Int32?, into sockets: inout [Int32]) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    sockets.append(fd)
    if var size = receiveBufferBytes {
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    return bind(fd, port: port)
}

private func bind(_ fd: Int32, port: Int) -> Int? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            Glibc.bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}

/// Waits up to `seconds` until UDP `ports` are all bound (in `namespace`, or this machine's
/// own when nil), as `ss` lists them; throws naming the ports missing.
func waitForUDPListeners(_ ports: [Int], in namespace: String? = nil, upTo seconds: Double = 20) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        let command = (namespace.map { ["netns", "exec", $0] } ?? []) + ["ss", "-Hlun"]
        let listing =
            try namespace == nil ? runTool("/usr/bin/ss", ["-Hlun"]).stdout : runTool("/usr/sbin/ip", command).stdout
        // Local address column: "10.200.0.2:5004", "0.0.0.0:5004" or "[::]:5004".
        let bound = Set(
            listing.split(separator: "\n").compactMap { line -> Int? in
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                guard columns.count >= 4, let colon = columns[3].lastIndex(of: ":") else { return nil }
                return Int(columns[3][columns[3].index(after: colon)...])
            })
        if ports.allSatisfy(bound.contains) { return }
        guard Date() < deadline else {
            throw TestFailure(
                "UDP ports \(ports.filter { !bound.contains($0) }) not bound in \(namespace ?? "this machine") within \(seconds) s"
            )
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
}
