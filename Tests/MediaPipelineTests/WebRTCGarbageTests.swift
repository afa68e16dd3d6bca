import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// What the receiving side of the pair was handed, in order.
private final class GarbageReceiver: Sendable {
    let rtp = LockedValue<[[UInt8]]>([])
    let states = LockedValue<[WebRTCConnection.State]>([])

    var handlers: WebRTCConnection.Handlers {
        .init(
            rtp: { bytes in self.rtp.withLock { $0.append(Array(bytes)) } },
            rtcp: { _ in },
            state: { state in self.states.withLock { $0.append(state) } })
    }

    var count: Int { rtp.withLock { $0.count } }
}

/// Polls `condition` every 2 ms until it holds or `seconds` pass; true when it held.
private func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}

/// The port of a candidate attribute value ("candidate:1 1 UDP prio addr port typ host").
private func candidatePort(_ candidate: String) -> UInt16? {
    let fields = candidate.split(separator: " ")
    return fields.count > 5 ? UInt16(fields[5]) : nil
}

/// A small deterministic generator (SplitMix64), so a failing run can be repeated.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// 127.0.0.1:`port` as a socket address.
private func loopback(_ port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A plain UDP socket on 127.0.0.1 (an ephemeral port): a source the receiver's ICE agent has
/// never heard of.
private final class StrangerSocket {
    let descriptor: Int32

    init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw MediaError(.io, "socket: errno \(errno)") }
        var address = loopback(0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            Glibc.close(descriptor)
            throw MediaError(.io, "bind 127.0.0.1:0: errno \(errno)")
        }
    }

    deinit { Glibc.close(descriptor) }

    func send(_ bytes: [UInt8], to port: UInt16) {
        var address = loopback(port)
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}

/// A raw IPv4 UDP socket (root only): it sees a copy of every UDP datagram arriving on this host,
/// and sends datagrams with any source port, so a datagram can come "from" the peer's address
/// (its candidate) as the receiver's ICE agent knows it.
private final class RawUDPSocket {
    let descriptor: Int32

    /// Nil when raw sockets are not allowed (not root, no CAP_NET_RAW).
    init?() {
        descriptor = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_UDP))
        if descriptor < 0 { return nil }
    }

    deinit { Glibc.close(descriptor) }

    /// Sends `payload` to 127.0.0.1:`port` as if from 127.0.0.1:`source` (UDP checksum 0: none).
    func send(_ payload: [UInt8], from source: UInt16, to port: UInt16) {
        let length = UInt16(8 + payload.count)
        let datagram =
            [UInt8(source >> 8), UInt8(source & 0xFF), UInt8(port >> 8), UInt8(port & 0xFF)]
            + [UInt8(length >> 8), UInt8(length & 0xFF), 0, 0] + payload
        var address = loopback(0)
        _ = datagram.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The payload of the first datagram from port `source` to port `port` that `accept` takes,
    /// or nil when none arrives within `seconds`.
    func capture(from source: UInt16, to port: UInt16, within seconds: Double, _ accept: ([UInt8]) -> Bool)
        -> [UInt8]?
    {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = max(1, Int32(deadline.timeIntervalSinceNow * 1000))
            guard poll(&poller, 1, remaining) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 20 else { continue }
            let headerLength = Int(buffer[0] & 0x0F) * 4
            guard count >= headerLength + 8 else { continue }
            let udp = headerLength
            let from = UInt16(buffer[udp]) << 8 | UInt16(buffer[udp + 1])
            let to = UInt16(buffer[udp + 2]) << 8 | UInt16(buffer[udp + 3])
            let payload = Array(buffer[(udp + 8)..<count])
            if from == source, to == port, accept(payload) { return payload }
        }
        return nil
    }
}

/// The kinds of garbage sent, each a batch of datagrams.
private enum Garbage: String, CaseIterable {
    /// Any bytes, any length.
    case random
    /// STUN-looking: first byte 0–3, the magic cookie, a length that lies, cut short.
    case truncatedSTUN
    /// DTLS-looking: first byte 20–63, a record header with junk or a lying length.
    case dtlsLooking
    /// SRTP-looking: first byte 0x80, any second byte, junk after (some shorter than a header).
    case srtpLooking

    func batch(_ generator: inout SplitMix, count: Int = 40) -> [[UInt8]] {
        (0..<count).map { _ in
            switch self {
            case .random:
                return (0..<Int.random(in: 1...300, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            case .truncatedSTUN:
                var bytes: [UInt8] = [
                    UInt8.random(in: 0...3, using: &generator), UInt8.random(in: 0...255, using: &generator),
                    UInt8.random(in: 0...255, using: &generator), UInt8.random(in: 0...255, using: &generator),
                    0x21, 0x12, 0xA4, 0x42,
                ]
                bytes += (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                return Array(bytes.prefix(Int.random(in: 1...bytes.count, using: &generator)))
            case .dtlsLooking:
                var bytes: [UInt8] = [
                    UInt8.random(in: 20...63, using: &generator), 0xFE, 0xFD, 0,
                    UInt8.random(in: 0...2, using: &generator),
                ]
                bytes += (0..<6).map { _ in UInt8.random(in: 0...255, using: &generator) }
                bytes += [UInt8.random(in: 0...255, using: &generator), UInt8.random(in: 0...255, using: &generator)]
                bytes += (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                return bytes
            case .srtpLooking:
                return [0x80]
                    + (0..<Int.random(in: 1...300, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
            }
        }
    }
}

/// Sends RTP from `a` to `b` every millisecond until stopped, keeping what it sent (as it must
/// arrive: payload type 100).
private final class SteadySender: Sendable {
    let sent = LockedValue<[[UInt8]]>([])
    let failures = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let done = Atomic<Bool>(false)

    func run(_ connection: WebRTCConnection, limit: Int = 30_000) {
        let thread = Thread { [self] in
            var sequence = 0
            while !stop.load(ordering: .acquiring), sequence < limit {
                var bytes = [UInt8](repeating: 0, count: RTPHeader.fixedByteCount + 160)
                bytes.withUnsafeMutableBytes { buffer in
                    RTPHeader(
                        marker: false, payloadType: 96, sequenceNumber: UInt16(truncatingIfNeeded: sequence),
                        timestamp: UInt32(sequence) &* 960, ssrc: 0x5EED_0001
                    ).write(into: buffer)
                }
                for index in RTPHeader.fixedByteCount..<bytes.count {
                    bytes[index] = UInt8(truncatingIfNeeded: index &* 3 &+ sequence)
                }
                if let packet = try? RTPPacket(bytes), connection.sendRTP(packet, payloadType: 100) {
                    bytes[1] = bytes[1] & 0x80 | 100
                    sent.withLock { $0.append(bytes) }
                } else {
                    failures.add(1, ordering: .relaxed)
                }
                sequence += 1
                usleep(1_000)  // pacing, not a wait for a condition
            }
            done.store(true, ordering: .releasing)
        }
        thread.start()
    }

    var count: Int { sent.withLock { $0.count } }
}

@Suite("WebRTC connection: garbage on the media socket while media flows")
struct WebRTCGarbageTests {
    @Test(
        "garbage from a stranger and spoofed from the peer's address is counted and dropped; every RTP packet arrives intact, in order"
    )
    func garbageWhileMediaFlows() throws {
        let receiver = GarbageReceiver()
        let sender = GarbageReceiver()
        let pair = try WebRTCConnection.LoopbackPair(a: sender.handlers, b: receiver.handlers)
        let (a, b) = (pair.a, pair.b)
        defer { pair.close() }
        let portA = try #require(pair.candidatesA.first.flatMap(candidatePort))
        let portB = try #require(pair.candidatesB.first.flatMap(candidatePort))
        try #require(within(10) { a.isConnected && b.isConnected })

        let steady = SteadySender()
        steady.run(a)
        defer { steady.stop.store(true, ordering: .releasing) }
        let raw = RawUDPSocket()
        // A real SRTP packet from a to b, captured on its way, to replay later from a's address.
        let captured = raw?.capture(from: portA, to: portB, within: 5) { payload in
            payload.count > 12 && (128...191).contains(payload[0]) && !(192...223).contains(payload[1])
        }
        let stranger = try StrangerSocket()
        var generator = SplitMix(state: 0x5EED)

        /// Sends a batch, then waits until two more legitimate packets than were sent by then
        /// have arrived (loopback keeps one socket's queue in order, so the batch was handled),
        /// and returns the change in b's counters.
        func deliver(_ batch: [[UInt8]], _ send: ([UInt8]) -> Void) -> (ignored: Int64, unprotect: Int64) {
            let before = b.statistics
            for datagram in batch { send(datagram) }
            let mark = steady.count + 2
            #expect(within(10) { receiver.count >= mark }, "legitimate RTP stopped arriving after garbage")
            let after = b.statistics
            return (after.ignored - before.ignored, after.unprotectFailures - before.unprotectFailures)
        }

        var report: [String] = []
        for kind in Garbage.allCases {
            let batch = kind.batch(&generator)
            let fromStranger = deliver(batch) { stranger.send($0, to: portB) }
            report.append(
                "stranger \(kind.rawValue): \(batch.count) sent, ignored +\(fromStranger.ignored), unprotect failures +\(fromStranger.unprotect)"
            )
            #expect(fromStranger.ignored + fromStranger.unprotect <= Int64(batch.count))
            guard let raw else { continue }
            let fromPeer = deliver(batch) { raw.send($0, from: portA, to: portB) }
            report.append(
                "peer's address \(kind.rawValue): \(batch.count) sent, ignored +\(fromPeer.ignored), unprotect failures +\(fromPeer.unprotect)"
            )
            #expect(fromPeer.ignored + fromPeer.unprotect <= Int64(batch.count))
            switch kind {
            case .srtpLooking:
                // Every one reaches SRTP and fails there (short ones before it).
                #expect(fromPeer.unprotect == Int64(batch.count))
                #expect(fromPeer.ignored == 0)
            case .dtlsLooking, .truncatedSTUN:
                #expect(fromPeer.unprotect == 0)
            case .random:
                let expected = batch.filter { !(0...3).contains($0[0]) && !(20...63).contains($0[0]) }
                let srtp = batch.filter { (128...191).contains($0[0]) }.count
                #expect(fromPeer.unprotect == Int64(srtp))
                #expect(fromPeer.ignored >= Int64(expected.count - srtp))
            }
        }
        if let raw, let captured {
            let replays = [[UInt8]](repeating: captured, count: 5)
            let replayed = deliver(replays) { raw.send($0, from: portA, to: portB) }
            report.append(
                "peer's address replay of a captured SRTP packet ×5: unprotect failures +\(replayed.unprotect)")
            #expect(replayed.unprotect == 5)
            #expect(replayed.ignored == 0)
        } else {
            report.append(
                "no raw socket (not root) or no packet captured: replays are covered by the srtp fuzz case only")
        }

        // A few hundred packets in all, so the order check covers a stream, not a handful.
        #expect(within(10) { steady.count >= 300 })
        steady.stop.store(true, ordering: .releasing)
        #expect(within(10) { steady.done.load(ordering: .acquiring) })
        let sentCount = steady.count
        #expect(within(10) { receiver.count >= sentCount })
        let sent = steady.sent.withLock { $0 }
        let received = receiver.rtp.withLock { $0 }
        #expect(steady.failures.load(ordering: .relaxed) == 0)
        #expect(received.count == sent.count)
        #expect(received == sent, "the legitimate packets arrived changed, out of order, lost or twice")
        #expect(b.statistics.rtpReceived == Int64(sent.count))
        #expect(receiver.states.withLock { $0.last } == .connected)
        #expect(!receiver.states.withLock { $0.contains { if case .failed = $0 { true } else { false } } })
        print("WebRTC garbage: \(sent.count) RTP packets crossed; " + report.joined(separator: "; "))
    }
}
