import Testing

@testable import MediaPipeline

@Suite("Byte recycler")
struct ByteRecyclerTests {
    /// The start address of `bytes`' storage.
    private func address(_ bytes: [UInt8]) -> UInt {
        bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    @Test(
        "the ring doubles until it is wider than the arrays held at once (at most twice), then reuses the same storage"
    )
    func growsToWhatIsHeld() {
        var recycler = ByteRecycler(slotCount: 68, capacity: 256)
        #expect(recycler.slotCount == ByteRecycler.initialSlotCount)
        var held: [[UInt8]] = []  // a queue five deep, as a receiver's frame queue
        var seen: Set<UInt> = []
        for index in 0..<300 {
            let bytes = recycler.bytes(count: 200) { $0.storeBytes(of: UInt8(index & 0xFF), as: UInt8.self) }
            held.append(bytes)
            if held.count > 5 { held.removeFirst() }
            if index >= 200 { seen.insert(address(bytes)) }
        }
        #expect(recycler.slotCount == 8, "\(recycler.slotCount) slots")  // 4, then 8 > 5 held
        // Settled: the last 100 arrays came from the ring's slots and nowhere else.
        #expect(seen.count == recycler.slotCount)
        // Each array held is the one written (nothing recycled under a holder).
        for (offset, bytes) in held.enumerated() { #expect(bytes[0] == UInt8((295 + offset) & 0xFF)) }
    }

    @Test("arrays held for ever: the ring stops at its most slots, and every array keeps what was written")
    func boundedWhenEverythingIsHeld() {
        var recycler = ByteRecycler(slotCount: 8, capacity: 16)
        var held: [[UInt8]] = []
        for index in 0..<100 {
            held.append(recycler.bytes(count: 3) { $0.copyBytes(from: [UInt8(index), 1, 2]) })
        }
        #expect(recycler.slotCount == 8)
        for (index, bytes) in held.enumerated() { #expect(bytes == [UInt8(index), 1, 2]) }
    }

    @Test("a larger array grows every slot at once; what was handed out before is unchanged")
    func growsForLargerArrays() {
        var recycler = ByteRecycler(slotCount: 4, capacity: 8)
        let small = recycler.bytes(count: 4) { $0.copyBytes(from: [1, 2, 3, 4]) }
        let large = recycler.bytes(count: 100) { out in for index in 0..<100 { out[index] = UInt8(index) } }
        #expect(small == [1, 2, 3, 4])
        #expect(large == (0..<100).map { UInt8($0) })
    }

    @Test("concatenated pieces: the bytes in order, in the slot's own storage once it is free again")
    func concatenatesPieces() {
        var recycler = ByteRecycler(slotCount: 1, capacity: 64)
        let pieces: [[UInt8]] = [[1, 2, 3], [], [4, 5], Array(6...40)]
        func concatenated() -> [UInt8] {
            recycler.bytes(
                count: 40,
                concatenating: { append in
                    for piece in pieces { piece.withUnsafeBytes { append($0) } }
                })
        }
        let first = concatenated()
        #expect(first == Array(1...40))
        let firstAddress = address(first)
        // Still held: the one slot cannot be reused, and the held array keeps its bytes.
        let second = concatenated()
        #expect(second == Array(1...40) && first == Array(1...40))
        #expect(address(second) != firstAddress)
        // Released: the slot's storage is reused in place.
        let secondAddress = address(second)
        _ = consume second
        _ = consume first
        #expect(address(concatenated()) == secondAddress)
    }

    @Test("a copy patched in place: the patch is in the new array only, and a larger copy grows the slots")
    func copiesAndPatches() {
        var recycler = ByteRecycler(slotCount: 1, capacity: 8)
        let first = [UInt8]([1, 2, 3, 4]).withUnsafeBytes { recycler.bytes(copying: $0) { $0[0] = 9 } }
        #expect(first == [9, 2, 3, 4])
        let second = [UInt8]([5, 6, 7, 8]).withUnsafeBytes { recycler.bytes(copying: $0) { $0[1] = 0 } }
        #expect(second == [5, 0, 7, 8] && first == [9, 2, 3, 4])
        let large = [UInt8](0..<40).withUnsafeBytes { recycler.bytes(copying: $0) { $0[39] = 255 } }
        #expect(large == Array(0..<39) + [255] && second == [5, 0, 7, 8])
    }
}
