/// Recycles byte arrays (encoded frames, RTP packets), so that a sender or receiver in steady
/// state allocates nothing per frame or packet.
///
/// A ring of arrays: each new array is written into the next slot's storage and handed out
/// sharing that storage by reference. When the slot comes round again, its storage is reused in
/// place if every holder of the previous array is gone; if one is still held somewhere (a deep
/// receive queue, a recording, a packet history), copy-on-write leaves it untouched and the slot
/// gets fresh storage: one allocation, never a changed array.
///
/// When an array larger than the slots hold comes, every slot grows at once (by half again, at
/// least to the new size): sizes settle after the largest frame, not after it has landed in
/// every slot in turn.
final class ByteRecycler {
    private var slots: [[UInt8]]
    private var next = 0
    private var capacity: Int

    /// A ring of `slotCount` arrays (at least one), each reserving `capacity` bytes up front.
    init(slotCount: Int, capacity: Int) {
        self.capacity = capacity
        slots = (0..<max(1, slotCount)).map { _ in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(capacity)
            return bytes
        }
    }

    private func advance(for count: Int) -> Int {
        if count > capacity {
            capacity = max(count, capacity + capacity / 2)
            for index in slots.indices { slots[index].reserveCapacity(capacity) }
        }
        let index = next
        next = next + 1 == slots.count ? 0 : next + 1
        return index
    }

    /// An array holding a copy of `bytes`, in recycled storage when the next slot is free.
    func bytes(copying bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let index = advance(for: bytes.count)
        // Mutated through the subscript: in place when the slot's storage is not shared.
        slots[index].removeAll(keepingCapacity: true)
        slots[index].append(contentsOf: bytes)
        return slots[index]
    }

    /// An array of `count` bytes written by `fill`, in recycled storage when the next slot is free.
    func bytes(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) -> [UInt8] {
        let index = advance(for: count)
        slots[index].removeAll(keepingCapacity: true)
        slots[index].append(contentsOf: repeatElement(0, count: count))
        slots[index].withUnsafeMutableBytes(fill)
        return slots[index]
    }
}
