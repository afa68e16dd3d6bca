/// What a ``FrameQueue`` orders by: a media time in microseconds.
protocol Timestamped {
    var timestampMicroseconds: Int64 { get }
}

extension EncodedFrame: Timestamped {}

/// A fixed-capacity queue of frames (video frames in arrival order, audio packets in media-time
/// order); never allocates after creation.
struct FrameQueue<Element: Timestamped> {
    private var slots: [Element?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }

    var isEmpty: Bool { count == 0 }
    /// The oldest element, left in place.
    var first: Element? { count == 0 ? nil : slots[head] }
    var isFull: Bool { count == slots.count }

    /// Appends `element`; when full, the oldest is dropped and returned.
    @discardableResult
    mutating func push(_ element: Element) -> Element? {
        var dropped: Element?
        if isFull { dropped = pop() }
        slots[(head + count) % slots.count] = element
        count += 1
        return dropped
    }

    /// Inserts `element` in timestamp order (a packet that overtook an earlier one), refusing a
    /// duplicate timestamp; when full, the oldest is dropped to make room (or `element`, when it
    /// is the oldest), and handed back in `evicted`. Returns false when `element` was refused.
    @discardableResult
    mutating func insertOrdered(_ element: Element, evicted: inout Element?) -> Bool {
        var position = count
        while position > 0 {
            let previous = slots[(head + position - 1) % slots.count]!
            if previous.timestampMicroseconds == element.timestampMicroseconds { return false }
            if previous.timestampMicroseconds < element.timestampMicroseconds { break }
            position -= 1
        }
        if isFull {
            guard position > 0 else { return false }  // older than everything in a full queue
            evicted = pop()
            position -= 1
        }
        var index = count
        while index > position {
            slots[(head + index) % slots.count] = slots[(head + index - 1) % slots.count]
            index -= 1
        }
        slots[(head + position) % slots.count] = element
        count += 1
        return true
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head]
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return element
    }

    mutating func removeAll() { while pop() != nil {} }
}

extension FrameQueue: Sendable where Element: Sendable {}
