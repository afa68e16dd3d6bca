/// Spreads bursts of video packets over time, so that a keyframe (a dozen packets or more) does
/// not leave as one burst that a router queue or the receiver's socket buffer drops (the role of
/// libwebrtc's pacer, which sends at 2.5 × the target bitrate).
///
/// A leaky bucket: the budget fills at the pacing rate up to 5 ms of it (at least two full
/// packets) and each packet sent spends its bytes, going into debt if need be; a packet that
/// finds packets queued, or the budget spent, waits in the queue. The rate is the configured
/// one, or twice what was offered over the last second when that is more (a stream above its
/// configured bitrate, a file sent as it is, is never held back for good). The queue holds up to
/// ``capacity`` packets (shared, not copied); a packet beyond it goes at once.
struct RTPPacer {
    /// Packets held at most.
    static let capacity = 512

    /// The configured pacing rate.
    let floorBitsPerSecond: Int
    private var slots: [(route: Int, packet: RTPPacket)?] = Array(repeating: nil, count: Self.capacity)
    private var head = 0
    private(set) var count = 0
    private var budgetBytes: Int64 = 0
    private var refilledAt: Int64?
    /// Bytes offered in the current and the previous half second, and when the current began.
    private var windowBytes: Int64 = 0, previousWindowBytes: Int64 = 0
    private var windowStart: Int64 = 0

    init(bitsPerSecond: Int) { floorBitsPerSecond = max(64_000, bitsPerSecond) }

    /// The pacing rate now: the configured rate or twice the rate offered lately.
    var bitsPerSecond: Int64 { max(Int64(floorBitsPerSecond), 2 * (windowBytes + previousWindowBytes) * 8) }

    /// Offers `packet` of `route` at clock time `now`: true when it may go now (its bytes are
    /// spent), false when it was queued.
    mutating func admit(_ packet: RTPPacket, route: Int, now: Int64) -> Bool {
        count(packet.bytes.count, now: now)
        refill(now: now)
        if count == 0 && budgetBytes > 0 || count == Self.capacity {
            budgetBytes -= Int64(packet.bytes.count)
            return true
        }
        slots[(head + count) % Self.capacity] = (route, packet)
        count += 1
        return false
    }

    /// Moves the queued packets that may go by clock time `now` into `due`, oldest first.
    mutating func takeDue(now: Int64, into due: inout [(route: Int, packet: RTPPacket)]) {
        refill(now: now)
        while count > 0 && budgetBytes > 0, let next = slots[head] {
            slots[head] = nil
            head = (head + 1) % Self.capacity
            count -= 1
            budgetBytes -= Int64(next.packet.bytes.count)
            due.append(next)
        }
    }

    /// Moves every queued packet into `due` (the stream ends: nothing is held back).
    mutating func takeAll(into due: inout [(route: Int, packet: RTPPacket)]) {
        while count > 0, let next = slots[head] {
            slots[head] = nil
            head = (head + 1) % Self.capacity
            count -= 1
            due.append(next)
        }
    }

    /// Microseconds from `now` until a queued packet may go; nil when none is queued.
    func wait(now: Int64) -> Int64? {
        guard count > 0 else { return nil }
        let elapsed = now - (refilledAt ?? now)
        let budget = budgetBytes + elapsed * bitsPerSecond / 8_000_000
        return budget > 0 ? 0 : (-budget + 1) * 8_000_000 / bitsPerSecond
    }

    private mutating func refill(now: Int64) {
        let rate = bitsPerSecond
        let burst = max(2 * 1_200, rate * 5_000 / 8_000_000)
        if let refilledAt {
            budgetBytes = min(burst, budgetBytes + (now - refilledAt) * rate / 8_000_000)
        } else {
            budgetBytes = burst
        }
        refilledAt = now
    }

    private mutating func count(_ bytes: Int, now: Int64) {
        if now - windowStart >= 500_000 {
            previousWindowBytes = now - windowStart >= 1_000_000 ? 0 : windowBytes
            windowBytes = 0
            windowStart = now
        }
        windowBytes += Int64(bytes)
    }
}
