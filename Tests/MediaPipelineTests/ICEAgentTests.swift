import Foundation
import Testing

@testable import MediaPipeline

/// What one agent's callbacks saw: states, datagrams, and whether a callback ran off the loop
/// thread or after close returned.
private final class Observer: Sendable {
    /// Everything seen, under one lock.
    private let record = LockedValue(
        (states: [ICEAgent.State](), datagrams: [[UInt8]](), pairs: [String](), offLoop: 0, afterClose: 0))
    /// The agent the callbacks check their thread against (set once it exists, cleared at the end).
    let agent = LockedValue<ICEAgent?>(nil)
    /// Set when close returned.
    let closed = LockedValue(false)

    /// The states reported, in order.
    var states: [ICEAgent.State] { record.withLock { $0.states } }
    /// The datagrams received, in order.
    var datagrams: [[UInt8]] { record.withLock { $0.datagrams } }
    /// The selected pairs reported, as "local -> remote".
    var pairs: [String] { record.withLock { $0.pairs } }
    /// Callbacks that ran off the agent's loop thread.
    var offLoop: Int { record.withLock { $0.offLoop } }
    /// Callbacks that ran after close returned.
    var afterClose: Int { record.withLock { $0.afterClose } }

    /// A callback ran: counts it against the rules.
    private func check() {
        let onLoop = agent.withLock { $0?.isOnLoopThread ?? true }
        let late = closed.withLock { $0 }
        record.withLock {
            if !onLoop { $0.offLoop += 1 }
            if late { $0.afterClose += 1 }
        }
    }

    /// The state callback.
    func stateChanged(_ state: ICEAgent.State) {
        check()
        record.withLock { $0.states.append(state) }
    }

    /// The selected-pair callback.
    func selected(_ local: String, _ remote: String) {
        check()
        record.withLock { $0.pairs.append("\(local) -> \(remote)") }
    }

    /// The receive callback.
    func received(_ bytes: UnsafeRawBufferPointer) {
        check()
        record.withLock { $0.datagrams.append(Array(bytes)) }
    }
}

/// An agent with its observer.
private struct Peer {
    /// The agent, on 127.0.0.1.
    let agent: ICEAgent
    /// What its callbacks saw.
    let observer: Observer

    /// A new agent, controlling or controlled, observed.

    init(controlling: Bool) throws {
        let observer = Observer()
        let agent = try ICEAgent(
            controlling: controlling, localAddresses: ["127.0.0.1"],
            onStateChange: { observer.stateChanged($0) }, onReceive: { observer.received($0) },
            onSelectedPair: { observer.selected($0, $1) })
        observer.agent.withLock { $0 = agent }
        self.agent = agent
        self.observer = observer
    }

    /// Closes the agent and notes that close returned; breaks the observer's reference.
    func close() {
        agent.close()
        observer.closed.withLock { $0 = true }
        observer.agent.withLock { $0 = nil }
    }
}

/// Polls `condition` until it holds or `seconds` pass.
private func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

/// Gathers both sides, exchanges credentials and candidates, and waits until both are connected.
private func connect(_ a: Peer, _ b: Peer) throws -> (a: [String], b: [String]) {
    let candidatesA = try a.agent.gatherCandidates(timeoutMilliseconds: 3000)
    let candidatesB = try b.agent.gatherCandidates(timeoutMilliseconds: 3000)
    try a.agent.setRemote(credentials: b.agent.localCredentials, candidates: candidatesB)
    try b.agent.setRemote(credentials: a.agent.localCredentials, candidates: candidatesA)
    #expect(eventually { a.agent.state == .connected && b.agent.state == .connected })
    return (candidatesA, candidatesB)
}

/// A datagram of `count` bytes whose content depends on `seed`.
private func datagram(_ count: Int, seed: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) }
}

/// The port of a candidate attribute value ("candidate:1 1 UDP prio addr port typ host").
private func port(of candidate: String) -> UInt16? {
    let fields = candidate.split(separator: " ")
    return fields.count > 5 ? UInt16(fields[5]) : nil
}

/// Whether a UDP socket can bind 127.0.0.1:`port` (nobody holds it).
private func udpPortIsFree(_ port: UInt16) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { Glibc.close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    return bound == 0
}

@Suite("ICE over libnice: two agents on loopback", .serialized)
struct ICEAgentTests {
    @Test("Controlling and controlled agents connect and carry datagrams intact both ways")
    func connectsAndCarriesDatagrams() throws {
        let a = try Peer(controlling: true)
        let b = try Peer(controlling: false)
        defer {
            a.close()
            b.close()
        }
        #expect(a.agent.state == .new)
        #expect(!a.agent.localCredentials.ufrag.isEmpty && !a.agent.localCredentials.password.isEmpty)
        #expect(a.agent.localCredentials != b.agent.localCredentials)
        #expect(![UInt8](arrayLiteral: 1, 2, 3).withUnsafeBytes { a.agent.send($0) }, "no pair yet")

        let (candidatesA, candidatesB) = try connect(a, b)
        #expect(eventually { a.agent.isNominated && b.agent.isNominated })
        for candidate in candidatesA + candidatesB {
            #expect(candidate.hasPrefix("candidate:") && candidate.contains(" UDP "), "\(candidate)")
            #expect(candidate.contains(" 127.0.0.1 ") && candidate.hasSuffix(" typ host"), "\(candidate)")
        }
        #expect(candidatesA.count == 1 && candidatesB.count == 1)
        let portA = try #require(port(of: candidatesA[0]))
        let portB = try #require(port(of: candidatesB[0]))
        let pair = try #require(a.agent.selectedPair)
        #expect(pair.local == "127.0.0.1:\(portA)" && pair.remote == "127.0.0.1:\(portB)")
        #expect(a.observer.pairs.last == "\(pair.local) -> \(pair.remote)")
        #expect(a.observer.states.last == .connected && b.observer.states.contains(.connecting))

        // Datagrams of many sizes, each way, sent from this thread and from the loop thread.
        let sizes = [1, 2, 20, 172, 1000, 1200]
        for (index, size) in sizes.enumerated() {
            #expect(datagram(size, seed: index).withUnsafeBytes { a.agent.send($0) })
            #expect(datagram(size, seed: 100 + index).withUnsafeBytes { b.agent.send($0) })
        }
        let agentB = b.agent
        b.agent.perform { _ = datagram(64, seed: 999).withUnsafeBytes { agentB.send($0) } }
        #expect(
            eventually { b.observer.datagrams.count == sizes.count && a.observer.datagrams.count == sizes.count + 1 })
        #expect(b.observer.datagrams == sizes.enumerated().map { datagram($1, seed: $0) })
        #expect(
            Array(a.observer.datagrams.prefix(sizes.count)) == sizes.enumerated().map { datagram($1, seed: 100 + $0) })
        #expect(a.observer.datagrams.last == datagram(64, seed: 999))
        #expect(a.observer.offLoop == 0 && b.observer.offLoop == 0, "callbacks run on the loop thread")
    }

    @Test(
        "Two controlling, or two controlled, agents connect: libnice resolves the role conflict (487), one side nominates",
        arguments: [true, false])
    func roleConflict(controlling: Bool) throws {
        let a = try Peer(controlling: controlling)
        let b = try Peer(controlling: controlling)
        defer {
            a.close()
            b.close()
        }
        _ = try connect(a, b)
        // Both controlled would never nominate, and both controlling would refuse each other's
        // checks, without the switch of one side's role.
        #expect(eventually { a.agent.isNominated && b.agent.isNominated })
        #expect(a.agent.selectedPair?.local == b.agent.selectedPair?.remote)
        #expect(datagram(300, seed: 1).withUnsafeBytes { a.agent.send($0) })
        #expect(datagram(301, seed: 2).withUnsafeBytes { b.agent.send($0) })
        #expect(eventually { b.observer.datagrams == [datagram(300, seed: 1)] })
        #expect(eventually { a.observer.datagrams == [datagram(301, seed: 2)] })
        #expect(!a.observer.states.contains(.failed) && !b.observer.states.contains(.failed))
    }

    @Test("A malformed remote candidate, empty credentials or a bad local address are typed errors naming the value")
    func malformedInput() throws {
        let a = try Peer(controlling: true)
        defer { a.close() }
        _ = try a.agent.gatherCandidates(timeoutMilliseconds: 3000)
        let good = "candidate:1 1 UDP 2015363327 127.0.0.1 40001 typ host"
        let remote = ICEAgent.Credentials(ufrag: "abcd", password: "0123456789abcdefghijkl")
        for bad in [
            "candidate:garbage", "candidate:1 1 UDP 2015363327 127.0.0.1 port typ host",
            "candidate:1 1 UDP 2015363327 127.0.0.1 40001 typ nonsense", "m=audio 9 UDP/TLS/RTP/SAVPF 111",
            "candidate:1 1 UDP 2015363327 not-an-ip 40001 typ host",
        ] {
            let error = #expect(throws: MediaError.self) {
                try a.agent.setRemote(credentials: remote, candidates: [good, bad])
            }
            #expect(
                error?.code == .invalidFormat && error?.message.contains("'\(bad)'") == true,
                "\(String(describing: error))")
        }
        // "a=" is accepted, and an RTCP component (rtcp-mux) is skipped.
        try a.agent.setRemote(
            credentials: remote, candidates: ["a=" + good, good.replacingOccurrences(of: ":1 1 ", with: ":1 2 ")])
        let empty = #expect(throws: MediaError.self) {
            try a.agent.setRemote(credentials: .init(ufrag: "", password: "x"), candidates: [good])
        }
        #expect(empty?.code == .invalidArgument)
        let address = #expect(throws: MediaError.self) {
            _ = try ICEAgent(
                controlling: false, localAddresses: ["300.1.2.3"], onStateChange: { _ in }, onReceive: { _ in })
        }
        #expect(address?.code == .invalidArgument && address?.message.contains("'300.1.2.3'") == true)
    }

    @Test("Close joins the loop thread, frees the socket and drops pending work; send fails and no callback runs after")
    func closeReleasesEverything() throws {
        let a = try Peer(controlling: true)
        let b = try Peer(controlling: false)
        let (candidatesA, _) = try connect(a, b)
        let portA = try #require(port(of: candidatesA[0]))
        let threadA = a.agent.loopThreadID
        #expect(FileManager.default.fileExists(atPath: "/proc/self/task/\(threadA)"))
        #expect(!udpPortIsFree(portA), "the agent holds its port")

        // Work still pending at close is released (never run).
        final class Token: Sendable {}
        weak var weakToken: Token?
        let ran = LockedValue(false)
        do {
            let token = Token()
            weakToken = token
            #expect(
                a.agent.schedule(afterMilliseconds: 60_000) {
                    _ = token
                    ran.withLock { $0 = true }
                } != nil)
        }
        #expect(weakToken != nil)

        a.close()
        #expect(a.agent.state == .closed)
        #expect(weakToken == nil, "pending work's closure released by close")
        #expect(!ran.withLock { $0 })
        #expect(!datagram(10, seed: 0).withUnsafeBytes { a.agent.send($0) })
        #expect(a.agent.selectedPair == nil)
        #expect(a.agent.schedule(afterMilliseconds: 0) {} == nil)
        #expect(throws: MediaError.self) { try a.agent.restart() }
        #expect(eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(threadA)") })
        #expect(udpPortIsFree(portA), "the agent's socket is closed")
        a.close()  // idempotent

        // The peer keeps sending towards the closed agent: nothing reaches a callback.
        for index in 0..<20 { _ = datagram(50, seed: index).withUnsafeBytes { b.agent.send($0) } }
        b.close()
        #expect(b.agent.state == .closed)
        #expect(a.observer.afterClose == 0 && b.observer.afterClose == 0)
    }

    @Test("Close from the loop thread itself (in scheduled work) stops the agent without waiting for itself")
    func closeFromLoopThread() throws {
        let a = try Peer(controlling: true)
        let thread = a.agent.loopThreadID
        let agent = a.agent
        #expect(agent.perform { agent.close() })
        #expect(
            eventually {
                agent.state == .closed && !FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)")
            })
        #expect(!datagram(10, seed: 0).withUnsafeBytes { agent.send($0) })
        a.close()
    }

    @Test("Scheduled work runs on the loop thread after its delay and in order; cancelled work never runs")
    func scheduling() throws {
        let a = try Peer(controlling: true)
        defer { a.close() }
        let agent = a.agent
        let order = LockedValue([Int]())
        let start = ContinuousClock.now
        let delayed = LockedValue<(elapsed: Duration, onLoop: Bool)?>(nil)
        agent.schedule(afterMilliseconds: 40) {
            delayed.withLock { $0 = (ContinuousClock.now - start, agent.isOnLoopThread) }
        }
        for index in 0..<50 { agent.perform { order.withLock { $0.append(index) } } }
        let cancelled = LockedValue(false)
        let work = try #require(agent.schedule(afterMilliseconds: 200) { cancelled.withLock { $0 = true } })
        #expect(agent.cancel(work))
        #expect(!agent.cancel(work), "already cancelled")
        #expect(eventually { delayed.withLock { $0 } != nil && order.withLock { $0.count } == 50 })
        let run = try #require(delayed.withLock { $0 })
        #expect(run.elapsed >= .milliseconds(40) && run.onLoop)
        #expect(order.withLock { $0 } == Array(0..<50))
        #expect(!agent.isOnLoopThread)
        #expect(!cancelled.withLock { $0 })
    }

    @Test("ICE restart gives new credentials; the pair connects again once both sides exchanged them")
    func restart() throws {
        let a = try Peer(controlling: true)
        let b = try Peer(controlling: false)
        defer {
            a.close()
            b.close()
        }
        let (candidatesA, candidatesB) = try connect(a, b)
        let oldA = a.agent.localCredentials
        let oldB = b.agent.localCredentials

        let newA = try a.agent.restart()
        let newB = try b.agent.restart()
        #expect(newA != oldA && newB != oldB)
        #expect(newA.ufrag != oldA.ufrag && newA.password != oldA.password)
        #expect(a.agent.localCredentials == newA)
        #expect(a.agent.state == .gathering && b.agent.state == .gathering)
        #expect(try a.agent.gatherCandidates() == candidatesA, "local candidates stay")
        let statesBefore = a.observer.states.count

        try a.agent.setRemote(credentials: newB, candidates: candidatesB)
        try b.agent.setRemote(credentials: newA, candidates: candidatesA)
        #expect(eventually { a.agent.state == .connected && b.agent.state == .connected })
        #expect(a.observer.states.dropFirst(statesBefore).contains(.connected))
        #expect(datagram(500, seed: 5).withUnsafeBytes { a.agent.send($0) })
        #expect(datagram(500, seed: 6).withUnsafeBytes { b.agent.send($0) })
        #expect(eventually { b.observer.datagrams.contains(datagram(500, seed: 5)) })
        #expect(eventually { a.observer.datagrams.contains(datagram(500, seed: 6)) })
    }
}
