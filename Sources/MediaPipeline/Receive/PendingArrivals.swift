/// Packets a transport delivered to one receiver that the receiver has not taken into its jitter
/// buffer yet, each with its arrival time: what the packet path does per delivery is one append
/// here under a short lock of its own, and the receiver takes the whole list in on its next
/// access (the playout's tick, a statistics read), where the buffering work runs on the
/// receiver's side instead of the sending thread's. The list has a fixed capacity, reserved
/// once; a receiver keeps a second, empty one to swap with, so taking the list in moves no
/// packet and allocates nothing.
struct PendingArrivals: Sendable {
    /// One delivered packet's bytes (shared with every other holder) and its arrival time on
    /// the engine's clock, in microseconds: 16 bytes, so a fan-out to many receivers writes
    /// few cache lines. The header, parsed once already, is read again when the packet is
    /// taken in (``packet``).
    struct Arrival: Sendable {
        let bytes: [UInt8]
        let arrivalMicroseconds: Int64

        /// The packet again; nil only if its bytes no longer parse (they cannot change).
        var packet: RTPPacket? { try? RTPPacket(bytes) }
    }

    private(set) var arrivals: [Arrival] = []

    /// Packets one list holds before the packet path takes them in itself: 32 packets are 640 ms
    /// of 20 ms audio, or 320 ms of 10 ms audio, against a playout tick every 10 ms.
    static let capacity = 32

    /// An empty list with its storage reserved.
    init() { arrivals.reserveCapacity(Self.capacity) }

    var isEmpty: Bool { arrivals.isEmpty }

    /// Appends `packet`, arrived at `now`; false when the list is full (the caller takes the
    /// list in, then the packet).
    mutating func append(_ packet: RTPPacket, now: Int64) -> Bool {
        guard arrivals.count < Self.capacity else { return false }
        arrivals.append(Arrival(bytes: packet.bytes, arrivalMicroseconds: now))
        return true
    }

    /// Empties the list, keeping its storage.
    mutating func removeAll() { arrivals.removeAll(keepingCapacity: true) }
}
