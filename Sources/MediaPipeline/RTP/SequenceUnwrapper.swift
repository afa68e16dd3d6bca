/// Turns wrapping RTP counters (16-bit sequence numbers, 32-bit timestamps) into counts that
/// never wrap: each value is taken as the nearest one to the highest seen (RFC 3550 A.1's rule,
/// as libwebrtc's `SeqNumUnwrapper`), so a packet from before a wrap-around is recognised as
/// old, not as a whole cycle ahead.
struct Unwrapper<Value: FixedWidthInteger & UnsignedInteger> {
    private var last: Int64?
    /// One whole cycle of `Value`: 65,536 for sequence numbers, 2^32 for timestamps.
    private static var cycle: Int64 { Int64(Value.max) + 1 }

    /// The unwrapped value of `value`. The first value is placed one cycle up, leaving room
    /// below for values that overtook it.
    mutating func unwrap(_ value: Value) -> Int64 {
        guard let previous = last else {
            let first = Int64(value) + Self.cycle
            last = first
            return first
        }
        let step = Int64(value &- Value(truncatingIfNeeded: previous))
        let delta = step > Int64(Value.max / 2) ? step - Self.cycle : step  // signed, in one cycle
        let unwrapped = previous + delta
        if delta > 0 { last = unwrapped }
        return unwrapped
    }
}

/// 16-bit RTP sequence numbers.
typealias SequenceUnwrapper = Unwrapper<UInt16>
/// 32-bit RTP timestamps.
typealias TimestampUnwrapper = Unwrapper<UInt32>
