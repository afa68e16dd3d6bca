/// Scratch for sending a run of RTP packets in one `sendmmsg`: each packet's byte pointer and
/// length, and a slot per packet for the ones whose payload type is rewritten for the peer (the
/// others go out of their own storage, uncopied). Allocated once; owned by the one thread that
/// sends with it.
final class UDPSendBatch {
    /// The most packets one batch carries.
    static let capacity = 64
    /// The largest packet a rewrite slot holds (RTP packets here are at most about 1,300 bytes).
    static let slotBytes = 2048

    let pointers: UnsafeMutableBufferPointer<UnsafePointer<UInt8>?>
    let lengths: UnsafeMutableBufferPointer<Int32>
    private let slots: UnsafeMutableRawBufferPointer

    init() {
        pointers = .allocate(capacity: Self.capacity)
        pointers.initialize(repeating: nil)
        lengths = .allocate(capacity: Self.capacity)
        lengths.initialize(repeating: 0)
        slots = .allocate(byteCount: Self.capacity * Self.slotBytes, alignment: 16)
    }

    deinit {
        pointers.deallocate()
        lengths.deallocate()
        slots.deallocate()
    }

    /// Rewrite slot `index`, `byteCount` bytes of it.
    func slot(_ index: Int, byteCount: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: slots[(index * Self.slotBytes)..<(index * Self.slotBytes + byteCount)])
    }
}
