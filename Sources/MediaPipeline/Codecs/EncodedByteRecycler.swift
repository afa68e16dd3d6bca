/// Recycles the byte arrays of encoded frames, so that an encoder in steady state allocates
/// nothing per frame.
///
/// A ring of arrays: each frame's bytes are written into the next slot's storage and the
/// ``EncodedFrame`` shares that storage by reference. When the slot comes round again, its
/// storage is reused in place if every frame that held it is gone; if a frame is still held
/// somewhere (a deep receive queue, a recording), copy-on-write leaves that frame untouched and
/// the slot gets fresh storage: one allocation, never a changed frame.
struct EncodedByteRecycler {
    private var slots: [[UInt8]]
    private var next = 0

    /// A ring of `slotCount` arrays, each reserving `capacity` bytes up front.
    init(slotCount: Int, capacity: Int) {
        slots = (0..<max(1, slotCount)).map { _ in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(capacity)
            return bytes
        }
    }

    /// An array holding a copy of `bytes`, in recycled storage when the next slot is free.
    mutating func bytes(copying bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let index = next
        next = next + 1 == slots.count ? 0 : next + 1
        // Mutated through the subscript: in place when the slot's storage is not shared.
        slots[index].removeAll(keepingCapacity: true)
        slots[index].append(contentsOf: bytes)
        return slots[index]
    }
}
