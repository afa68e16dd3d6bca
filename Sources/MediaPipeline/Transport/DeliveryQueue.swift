/// Packets a simulated link holds back, ordered by when they arrive (then by when they were
/// sent): a binary heap whose storage is kept, so steady state allocates nothing. Guarded by
/// the hub's lock.
struct DeliveryQueue {
    /// What a held-back packet is, with what its recipient is told about it.
    enum Payload {
        /// A media packet of `stream`.
        case rtp(RTPPacket, MediaStreamID)
        /// An RTCP compound packet that `from` sent in `channelId`.
        case rtcp([UInt8], channelId: String, from: UInt32)
    }

    /// One packet on its way to one endpoint.
    struct Delivery {
        var dueMicroseconds: Int64
        var order: Int64
        weak var endpoint: TransportEndpoint?
        var payload: Payload

        func precedes(_ other: Delivery) -> Bool {
            dueMicroseconds != other.dueMicroseconds
                ? dueMicroseconds < other.dueMicroseconds : order < other.order
        }
    }

    private var heap: [Delivery] = []
    private var nextOrder: Int64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// Holds `payload` for `endpoint` until `dueMicroseconds`.
    mutating func push(
        _ payload: Payload, to endpoint: TransportEndpoint, dueMicroseconds: Int64
    ) {
        heap.append(
            Delivery(
                dueMicroseconds: dueMicroseconds, order: nextOrder,
                endpoint: endpoint, payload: payload))
        nextOrder += 1
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The earliest delivery due at `now`, removed.
    mutating func popDue(now: Int64) -> Delivery? {
        guard let first = heap.first, first.dueMicroseconds <= now else { return nil }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}
