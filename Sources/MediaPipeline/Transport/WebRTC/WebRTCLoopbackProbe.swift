import Foundation
import Synchronization

/// Two WebRTC connections back to back on 127.0.0.1 (full ICE, DTLS, SRTP), for `pipebench
/// bench`: what sending and receiving one RTP packet costs in time and heap allocations, the
/// whole path included (protecting in the connection's buffer, libnice's send, the kernel's
/// loopback, libnice's receive on the loop thread, RFC 7983 demultiplexing, unprotecting in
/// place, the handler). Package access: a measuring tool, not an API.
package enum WebRTCLoopbackProbe {
    /// What a run measured: packets sent and received in the measured window, nanoseconds per
    /// packet (wall clock, both sides), and heap allocations per packet (every thread).
    package struct Result: Sendable {
        package var packets: Int
        package var nanosecondsPerPacket: Double
        package var allocationsPerPacket: Double
    }

    /// Sends `warmup` then `count` RTP packets of `payloadBytes` bytes from one connection to
    /// the other, in bursts of `burst` (each waited for, so the socket buffers never drop),
    /// and counts `allocations()` (the process's heap allocations so far) around the `count`.
    ///
    /// Nothing on the path allocates. libnice reads a socket until it would block, and GLib's
    /// `g_socket_receive_message` makes a `GError` for that last read (two allocations); the
    /// ICE agent's loop ends that read loop before it (`ice.c`), which took the count from
    /// 0.2–0.6 per packet to none: 0–6 allocations in a window of 2,000 packets, 0 in 20,000.
    /// - Throws: ``MediaError`` when the pair does not connect within 10 s, or packets stop
    ///   arriving for 5 s.
    package static func run(
        count: Int, warmup: Int = 300, payloadBytes: Int = 1_200, burst: Int = 40, allocations: () -> Int
    ) throws -> Result {
        let received = Atomic<Int>(0)
        let handlers = WebRTCConnection.Handlers(
            rtp: { _ in received.wrappingAdd(1, ordering: .relaxed) }, rtcp: { _ in }, state: { _ in })
        let silent = WebRTCConnection.Handlers(rtp: { _ in }, rtcp: { _ in }, state: { _ in })
        let pair = try WebRTCConnection.LoopbackPair(a: silent, b: handlers)
        let (sender, receiver) = (pair.a, pair.b)
        defer { pair.close() }
        let connectBy = Date().addingTimeInterval(10)
        while !(sender.isConnected && receiver.isConnected) {
            guard Date() < connectBy else {
                throw MediaError(.io, "the WebRTC loopback pair did not connect within 10 s")
            }
            usleep(2_000)
        }
        // Every packet made before measuring (a packet is sent unchanged: each needs its own
        // sequence number, or the receiver's replay check drops it).
        let packets = try (0..<(warmup + count)).map { index in
            var bytes = [UInt8](
                repeating: UInt8(truncatingIfNeeded: index), count: RTPHeader.fixedByteCount + payloadBytes)
            bytes.withUnsafeMutableBytes { buffer in
                RTPHeader(
                    marker: false, payloadType: 96, sequenceNumber: UInt16(truncatingIfNeeded: index),
                    timestamp: UInt32(truncatingIfNeeded: index / 10 * 3000), ssrc: 0x5EED_0001
                ).write(into: buffer)
            }
            return try RTPPacket(bytes)
        }
        func send(_ range: Range<Int>) throws {
            var next = range.lowerBound
            while next < range.upperBound {
                let end = min(range.upperBound, next + burst)
                let target = received.load(ordering: .relaxed) + (end - next)
                for index in next..<end { _ = sender.sendRTP(packets[index], payloadType: 96) }
                var lastProgress = Date()
                var seen = received.load(ordering: .relaxed)
                while seen < target {
                    usleep(50)
                    let now = received.load(ordering: .relaxed)
                    if now != seen {
                        seen = now
                        lastProgress = Date()
                    } else if Date().timeIntervalSince(lastProgress) > 5 {
                        throw MediaError(
                            .io, "packets stopped arriving over the WebRTC loopback pair (\(seen) of \(target))")
                    }
                }
                next = end
            }
        }
        try send(0..<warmup)
        let before = allocations()
        let start = DispatchTime.now().uptimeNanoseconds
        try send(warmup..<(warmup + count))
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        let after = allocations()
        return Result(
            packets: count, nanosecondsPerPacket: Double(elapsed) / Double(count),
            allocationsPerPacket: Double(after - before) / Double(count))
    }
}
