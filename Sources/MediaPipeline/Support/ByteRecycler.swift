/// Recycles byte arrays (encoded frames, RTP packets), so that a sender or receiver in steady
/// state allocates nothing per frame or packet.
///
/// A ring of arrays: each new array is written into the next slot's storage and handed out
/// sharing that storage by reference. When the slot comes round again, its storage is reused in
/// place if every holder of the previous array is gone; if one is still held somewhere (a deep
/// receive queue, a recording, a packet history), copy-on-write leaves it untouched and the slot
/// gets fresh storage: one allocation, never a changed array.
///
/// The ring grows with what its owner holds at once: it starts with a few slots, and each time a
/// slot comes round still held, the ring doubles (up to the most it was made for), so that it
/// settles wider than the arrays in use at once (at most twice as wide) and no longer allocates.
/// A frame queue a few frames deep keeps a few slots, not the 68 its deepest queue would need.
///
/// When an array larger than the slots hold comes, every slot grows at once (by half again, at
/// least to the new size): sizes settle after the largest frame, not after it has landed in
/// every slot in turn.
struct ByteRecycler: Sendable {
    private var slots: [[UInt8]]
    private var next = 0
    private var capacity: Int
    /// The most slots the ring grows to.
    let maximumSlotCount: Int

    /// Slots a ring starts with (fewer when it may have fewer).
    static let initialSlotCount = 4

    /// A recycler of one empty slot, shared, to hold an owner's place while its own recycler is
    /// moved out (`swap`) for a fill that reads the owner: moving costs no allocation, where a
    /// copy would share the slots and make the next write copy them.
    static let vacant = ByteRecycler(slotCount: 1, capacity: 0)

    /// A ring of at most `slotCount` arrays (at least one), each reserving `capacity` bytes up
    /// front; it starts with ``initialSlotCount`` of them.
    init(slotCount: Int, capacity: Int) {
        self.capacity = capacity
        maximumSlotCount = max(1, slotCount)
        slots = (0..<min(maximumSlotCount, Self.initialSlotCount)).map { _ in Self.emptySlot(capacity) }
    }

    /// Slots in the ring now.
    var slotCount: Int { slots.count }

    private static func emptySlot(_ capacity: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        return bytes
    }

    /// Empties the next slot for `count` bytes and returns its index.
    private mutating func takeSlot(for count: Int) -> Int {
        if count > capacity {
            capacity = max(count, capacity + capacity / 2)
            for index in slots.indices { slots[index].reserveCapacity(capacity) }
        }
        let index = next
        next = next + 1 == slots.count ? 0 : next + 1
        let storage = slots[index].withUnsafeBufferPointer { $0.baseAddress }
        // In place when the slot's storage is not shared; new storage when it is.
        slots[index].removeAll(keepingCapacity: true)
        if slots.count < maximumSlotCount, slots[index].withUnsafeBufferPointer({ $0.baseAddress }) != storage {
            // Still held when it came round: twice the slots (up to the most), the new ones used
            // next, so a ring settles in a few rounds however many arrays are held.
            let added = min(slots.count, maximumSlotCount - slots.count)
            slots.insert(contentsOf: (0..<added).map { _ in Self.emptySlot(capacity) }, at: index + 1)
            next = index + 1
        }
        return index
    }

    /// An array holding a copy of `bytes`, then changed in place by `patch` (a packet's header
    /// fields rewritten), in recycled storage when the next slot is free: the bytes are written
    /// once, where ``bytes(count:fill:)`` would zero them first.
    mutating func bytes(
        copying bytes: UnsafeRawBufferPointer, patch: (UnsafeMutableRawBufferPointer) -> Void = { _ in }
    ) -> [UInt8] {
        let index = takeSlot(for: bytes.count)
        slots[index].append(contentsOf: bytes)
        slots[index].withUnsafeMutableBytes(patch)
        return slots[index]
    }

    /// An array of `count` bytes written by `fill`, in recycled storage when the next slot is free.
    mutating func bytes(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) -> [UInt8] {
        let index = takeSlot(for: count)
        Self.appendZeros(count, to: &slots[index])
        slots[index].withUnsafeMutableBytes(fill)
        return slots[index]
    }

    /// An array of `count` bytes made of the pieces `pieces` passes, in order, to the append
    /// function it is given: copied once, with no zero fill first (``bytes(count:fill:)`` writes
    /// every byte twice). In recycled storage when the next slot is free.
    /// - Precondition: the pieces add up to `count` bytes.
    mutating func bytes(
        count: Int, concatenating pieces: (_ append: (UnsafeRawBufferPointer) -> Void) -> Void
    ) -> [UInt8] {
        let index = takeSlot(for: count)
        pieces { piece in slots[index].append(contentsOf: piece) }
        precondition(slots[index].count == count, "pieces of \(slots[index].count) bytes, not \(count)")
        return slots[index]
    }

    /// An array of a head of `headCount` bytes, written by `writeHead` (on the stack: every one
    /// of its bytes), followed by a copy of `body`: a packet's header and payload descriptor,
    /// then its data, each byte written once. In recycled storage when the next slot is free.
    mutating func bytes(
        headCount: Int, writeHead: (UnsafeMutableRawBufferPointer) -> Void, body: UnsafeRawBufferPointer
    ) -> [UInt8] {
        withUnsafeTemporaryAllocation(byteCount: headCount, alignment: 1) { head in
            writeHead(head)
            return bytes(
                count: headCount + body.count,
                concatenating: { append in
                    append(UnsafeRawBufferPointer(head))
                    append(body)
                })
        }
    }

    /// Zeros copied from, a chunk at a time.
    private static let zeros = [UInt8](repeating: 0, count: 4096)

    /// Appends `count` zero bytes to `bytes` with block copies: an append of
    /// `repeatElement(0, count:)` goes element by element (about a nanosecond a byte).
    private static func appendZeros(_ count: Int, to bytes: inout [UInt8]) {
        zeros.withUnsafeBufferPointer { zeros in
            var remaining = count
            while remaining > 0 {
                let chunk = min(remaining, zeros.count)
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: zeros[0..<chunk]))
                remaining -= chunk
            }
        }
    }
}
