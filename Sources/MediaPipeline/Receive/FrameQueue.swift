/// A fixed-capacity FIFO of encoded frames; never allocates after creation.
struct FrameQueue {
    private var slots: [EncodedFrame?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }

    var isEmpty: Bool { count == 0 }
    /// The oldest frame, left in place.
    var first: EncodedFrame? { count == 0 ? nil : slots[head] }
    var isFull: Bool { count == slots.count }

    /// Appends `frame`; when full, the oldest frame is dropped and returned.
    @discardableResult
    mutating func push(_ frame: EncodedFrame) -> EncodedFrame? {
        var dropped: EncodedFrame?
        if isFull { dropped = pop() }
        slots[(head + count) % slots.count] = frame
        count += 1
        return dropped
    }

    /// Inserts `frame` in timestamp order (a packet that overtook an earlier one), dropping a
    /// duplicate timestamp; when full, the oldest frame is dropped. Returns false for a duplicate.
    @discardableResult
    mutating func insertOrdered(_ frame: EncodedFrame) -> Bool {
        var position = count
        while position > 0 {
            let previous = slots[(head + position - 1) % slots.count]!
            if previous.timestampMicroseconds == frame.timestampMicroseconds { return false }
            if previous.timestampMicroseconds < frame.timestampMicroseconds { break }
            position -= 1
        }
        if isFull {
            guard position > 0 else { return false }  // older than everything in a full queue
            _ = pop()
            position -= 1
        }
        var index = count
        while index > position {
            slots[(head + index) % slots.count] = slots[(head + index - 1) % slots.count]
            index -= 1
        }
        slots[(head + position) % slots.count] = frame
        count += 1
        return true
    }

    @discardableResult
    mutating func pop() -> EncodedFrame? {
        guard count > 0 else { return nil }
        let frame = slots[head]
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return frame
    }

    mutating func removeAll() { while pop() != nil {} }
}
