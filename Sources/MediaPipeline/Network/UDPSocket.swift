import CNetShim

#if canImport(Glibc)
    import Glibc
#endif

/// A bound UDP socket receiving datagrams in batches into a preallocated slab of fixed-size
/// slots (`recvmmsg` through a small C shim): a batch is read in place, with no allocation.
/// Owned by one thread at a time.
final class UDPSocket {
    /// The address and port bound.
    let address: String
    let port: Int
    private let descriptor: Int32
    /// The slab: `batch` slots of `slotBytes` bytes, and each slot's datagram length.
    private let slab: UnsafeMutableRawBufferPointer
    private let lengths: UnsafeMutableBufferPointer<Int32>
    /// Each slot's sender.
    private let senders: UnsafeMutableBufferPointer<cnet_peer>
    let slotBytes: Int
    let batch: Int

    /// Binds `address` (numeric IPv4 or IPv6) and `port` (0: any free port).
    /// - Throws: ``MediaError/Code/io`` naming the address and the system's reason.
    init(address: String, port: Int, slotBytes: Int = 2048, batch: Int = 32) throws {
        var bound: Int32 = 0
        let fd = cnet_udp_bind(address, Int32(port), &bound)
        guard fd >= 0 else {
            throw MediaError(.io, "cannot bind UDP \(address):\(port): \(String(cString: strerror(-fd)))")
        }
        descriptor = fd
        self.address = address
        self.port = Int(bound)
        self.slotBytes = slotBytes
        self.batch = batch
        slab = .allocate(byteCount: slotBytes * batch, alignment: 16)
        lengths = .allocate(capacity: batch)
        lengths.initialize(repeating: 0)
        senders = .allocate(capacity: batch)
        senders.initialize(repeating: cnet_peer())
    }

    deinit {
        cnet_close(descriptor)
        slab.deallocate()
        lengths.deallocate()
        senders.deallocate()
    }

    /// Receives the datagrams waiting now, without waiting, and calls `body` with each one and
    /// its sender (the bytes are valid during the call only). Datagrams larger than a slot are
    /// counted in ``oversized`` and skipped. Returns how many were read from the socket.
    @discardableResult
    func receiveWaiting(_ body: (UnsafeRawBufferPointer, UDPPeer) throws -> Void) throws -> Int {
        let count = cnet_udp_receive_peers(
            descriptor, slab.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(slotBytes), Int32(batch),
            lengths.baseAddress!, senders.baseAddress!)
        guard count >= 0 else {
            throw MediaError(.io, "UDP receive on \(address):\(port) failed: \(String(cString: strerror(-count)))")
        }
        for index in 0..<Int(count) {
            let length = Int(lengths[index])
            guard length <= slotBytes else {
                oversized += 1
                continue
            }
            try body(
                UnsafeRawBufferPointer(rebasing: slab[index * slotBytes..<index * slotBytes + length]),
                UDPPeer(senders[index]))
        }
        return Int(count)
    }

    /// Sends one datagram to `peer`; returns false when the system refused it (a full send
    /// buffer, an unreachable port reported by an earlier ICMP message), as UDP may lose any
    /// datagram.
    @discardableResult
    func send(_ bytes: UnsafeRawBufferPointer, to peer: UDPPeer) -> Bool {
        var address = peer.address
        return cnet_udp_send_to(
            descriptor, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), &address) >= 0
    }

    /// Sends the `count` datagrams `data[i]` of `lengths[i]` bytes to `peer` with as few system
    /// calls as the kernel allows (`sendmmsg`); returns how many the system took (a refused one
    /// is lost, as UDP may lose any datagram).
    @discardableResult
    func send(
        batch data: UnsafePointer<UnsafePointer<UInt8>?>, lengths: UnsafePointer<Int32>, count: Int, to peer: UDPPeer
    ) -> Int {
        var address = peer.address
        return max(0, Int(cnet_udp_send_batch(descriptor, data, lengths, Int32(count), &address)))
    }

    /// The descriptor, for waiting on several sockets.
    var fileDescriptor: Int32 { descriptor }

    /// Datagrams skipped for being larger than a slot.
    private(set) var oversized = 0
}

/// A resolved UDP address (IPv4 or IPv6 and a port): sending to it needs no lookup.
struct UDPPeer: Sendable, Equatable, CustomStringConvertible {
    fileprivate var address: cnet_peer

    fileprivate init(_ address: cnet_peer) { self.address = address }

    /// The numeric `host` (IPv4 or IPv6) and `port`.
    /// - Throws: ``MediaError/Code/invalidArgument`` naming the host when it is not numeric.
    init(host: String, port: Int) throws {
        var address = cnet_peer()
        guard (0...65535).contains(port), cnet_peer_make(host, Int32(port), &address) == 0 else {
            throw MediaError.invalidArgument("\(host):\(port) is not a numeric IPv4 or IPv6 address and port")
        }
        self.address = address
    }

    /// The numeric host and the port.
    private var hostAndPort: (host: String, port: Int) {
        var copy = address
        var text = [CChar](repeating: 0, count: 64)
        let port = cnet_peer_describe(&copy, &text, Int32(text.count))
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (host, Int(port))
    }

    /// The port.
    var port: Int { hostAndPort.port }

    /// The same host at another port.
    func with(port newPort: Int) -> UDPPeer { (try? UDPPeer(host: hostAndPort.host, port: newPort)) ?? self }

    var description: String {
        let (host, port) = hostAndPort
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func == (a: UDPPeer, b: UDPPeer) -> Bool {
        guard a.address.length == b.address.length else { return false }
        return withUnsafeBytes(of: a.address.storage) { x in
            withUnsafeBytes(of: b.address.storage) { y in
                memcmp(x.baseAddress!, y.baseAddress!, Int(a.address.length)) == 0
            }
        }
    }
}
