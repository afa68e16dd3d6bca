/// Turns 16-bit RTP sequence numbers into a count that never wraps: each number is taken as
/// the nearest one to the last (RFC 3550 A.1's rule, as libwebrtc's `SeqNumUnwrapper`), so a
/// packet from before a wrap-around is recognised as old, not as 65,535 packets ahead.
struct SequenceUnwrapper {
    private var last: Int64?

    /// The unwrapped value of `sequenceNumber`.
    mutating func unwrap(_ sequenceNumber: UInt16) -> Int64 {
        guard let previous = last else {
            let first = Int64(sequenceNumber) + 65_536  // room below for packets that overtook the first
            last = first
            return first
        }
        let delta = Int64(Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: previous)))
        let value = previous + delta
        if delta > 0 { last = value }
        return value
    }
}

/// Turns 32-bit RTP timestamps into a count that never wraps, the same way.
struct TimestampUnwrapper {
    private var last: Int64?

    /// The unwrapped value of `timestamp`.
    mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let previous = last else {
            let first = Int64(timestamp) + (1 << 32)
            last = first
            return first
        }
        let delta = Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: previous)))
        let value = previous + delta
        if delta > 0 { last = value }
        return value
    }
}
