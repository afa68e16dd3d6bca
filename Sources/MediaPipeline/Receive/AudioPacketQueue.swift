/// One Opus packet waiting in a jitter buffer.
struct QueuedAudio {
    let frame: EncodedFrame
    /// Media time covered, from the packet's TOC (microseconds).
    let durationMicroseconds: Int64
    /// Clock time it arrived.
    let arrivalMicroseconds: Int64
    /// Its unwrapped RTP sequence number (nil for a frame queued without one).
    var sequence: Int64? = nil
    var timestampMicroseconds: Int64 { frame.timestampMicroseconds }
    var endMicroseconds: Int64 { frame.timestampMicroseconds + durationMicroseconds }
}

/// A fixed-capacity queue of audio packets in media-time order; never allocates after creation.
struct AudioPacketQueue {
    private var slots: [QueuedAudio?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: capacity) }

    var isEmpty: Bool { count == 0 }
    var first: QueuedAudio? { count == 0 ? nil : slots[head] }

    /// The newest media time queued (the end of the last packet).
    var endMicroseconds: Int64? { count == 0 ? nil : slots[(head + count - 1) % slots.count]!.endMicroseconds }

    /// Inserts `packet` in media-time order. A duplicate timestamp is refused (false); when full,
    /// the oldest packet is dropped to make room (or `packet`, when it is the oldest).
    @discardableResult
    mutating func insert(_ packet: QueuedAudio) -> Bool {
        var position = count
        while position > 0 {
            let previous = slots[(head + position - 1) % slots.count]!
            if previous.timestampMicroseconds == packet.timestampMicroseconds { return false }
            if previous.timestampMicroseconds < packet.timestampMicroseconds { break }
            position -= 1
        }
        if count == slots.count {
            guard position > 0 else { return false }
            _ = pop()
            position -= 1
        }
        var index = count
        while index > position {
            slots[(head + index) % slots.count] = slots[(head + index - 1) % slots.count]
            index -= 1
        }
        slots[(head + position) % slots.count] = packet
        count += 1
        return true
    }

    @discardableResult
    mutating func pop() -> QueuedAudio? {
        guard count > 0 else { return nil }
        let packet = slots[head]
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return packet
    }

    mutating func removeAll() { while pop() != nil {} }
}
