/// What a simulated network link does to the packets crossing it: outage, loss (independent or
/// in bursts), delay and jitter, reordering, duplication and a bandwidth cap. Applied by
/// ``LocalHub`` per (channel, publisher, receiver), in both directions (media one way, the
/// receiver's RTCP feedback the other), driven by the hub's clock and seed.
public struct LinkConditions: Sendable, Equatable {
    /// Drop every packet (an outage).
    public var blocked = false
    /// Share of packets lost, 0...100 percent.
    public var lossPercent: Double = 0
    /// Mean length of a run of lost packets. 1: each packet is lost independently (uniform loss);
    /// above 1: a Gilbert-Elliott chain (a good state that loses nothing and a bad state that
    /// loses everything) with this mean burst and the same overall ``lossPercent``.
    public var meanBurstLength: Double = 1
    /// One-way delay in milliseconds.
    public var delayMs: Double = 0
    /// Each packet's delay varies uniformly within ±`jitterMs` around ``delayMs`` (never below
    /// zero), so packets further apart than the spread overtake each other.
    public var jitterMs: Double = 0
    /// Share of packets, 0...100 percent, held back by ``reorderDelayMs`` more so later packets
    /// overtake them.
    public var reorderPercent: Double = 0
    /// The extra delay of a reordered packet, in milliseconds.
    public var reorderDelayMs: Double = 20
    /// Share of packets, 0...100 percent, delivered twice.
    public var duplicatePercent: Double = 0
    /// The link's capacity in bits per second (nil: unlimited). Packets queue behind each other;
    /// a packet that would wait longer than ``queueLimitMs`` is dropped (tail drop).
    public var bandwidthBitsPerSecond: Int?
    /// The longest a packet waits in the bandwidth queue, in milliseconds.
    public var queueLimitMs: Double = 500

    /// A perfect link.
    public init() {}

    /// A link with the given impairments.
    public init(
        blocked: Bool = false, lossPercent: Double = 0, meanBurstLength: Double = 1, delayMs: Double = 0,
        jitterMs: Double = 0, reorderPercent: Double = 0, duplicatePercent: Double = 0,
        bandwidthBitsPerSecond: Int? = nil
    ) {
        self.blocked = blocked
        self.lossPercent = lossPercent
        self.meanBurstLength = meanBurstLength
        self.delayMs = delayMs
        self.jitterMs = jitterMs
        self.reorderPercent = reorderPercent
        self.duplicatePercent = duplicatePercent
        self.bandwidthBitsPerSecond = bandwidthBitsPerSecond
    }

    /// True when packets may be held back (delay, jitter, reordering or a bandwidth cap): such a
    /// link needs a clock.
    public var delays: Bool { delayMs > 0 || jitterMs > 0 || reorderPercent > 0 || bandwidthBitsPerSecond != nil }

    /// Throws ``MediaError/Code/invalidArgument`` naming the first value out of range.
    public func validate() throws {
        func check(_ value: Double, _ range: ClosedRange<Double>, _ name: String) throws {
            guard range.contains(value) else {
                throw MediaError.invalidArgument(
                    "link \(name) \(value) is outside \(range.lowerBound)...\(range.upperBound)")
            }
        }
        try check(lossPercent, 0...100, "loss percent")
        try check(meanBurstLength, 1...1000, "mean burst length")
        try check(delayMs, 0...10_000, "delay ms")
        try check(jitterMs, 0...10_000, "jitter ms")
        try check(reorderPercent, 0...100, "reorder percent")
        try check(reorderDelayMs, 0...10_000, "reorder delay ms")
        try check(duplicatePercent, 0...100, "duplicate percent")
        try check(queueLimitMs, 1...60_000, "queue limit ms")
        if let bandwidth = bandwidthBitsPerSecond, bandwidth < 8_000 {
            throw MediaError.invalidArgument("link bandwidth \(bandwidth) bit/s is below 8000")
        }
        if lossPercent == 100 && meanBurstLength > 1 {
            throw MediaError.invalidArgument("link loss 100 % leaves no good state for bursts: use blocked")
        }
    }
}

/// What happened on one simulated link so far.
public struct LinkStatistics: Sendable, Equatable {
    /// Packets offered to the link (media and feedback).
    public var packetsOffered: Int64 = 0
    /// Packets the link dropped (loss, outage, full bandwidth queue).
    public var packetsLost: Int64 = 0
    /// Extra copies the link delivered.
    public var packetsDuplicated: Int64 = 0

    /// Zero counts.
    public init() {}
}

/// One link's state: its random stream, its loss chain, its bandwidth queue and its counters.
/// Guarded by the hub's lock.
struct SimulatedLink {
    var conditions: LinkConditions
    var statistics = LinkStatistics()
    private var random: SplitMix64
    private var inBurst = false
    /// When the bandwidth queue is empty again, in clock microseconds.
    private var queueFreeAt: Int64 = 0

    init(conditions: LinkConditions, seed: UInt64) {
        self.conditions = conditions
        random = SplitMix64(seed: seed)
    }

    /// A uniform draw in 0..<1.
    private mutating func draw() -> Double { Double(random.next() >> 11) * 0x1.0p-53 }

    private mutating func chance(_ percent: Double) -> Bool { percent > 0 && draw() * 100 < percent }

    /// The fate of one packet of `byteCount` bytes sent at `now`: nil when it is lost, else the
    /// delays (microseconds from now) of its copies (two when duplicated).
    mutating func fate(byteCount: Int, now: Int64) -> (first: Int64, second: Int64?)? {
        statistics.packetsOffered += 1
        if conditions.blocked || lost() {
            statistics.packetsLost += 1
            return nil
        }
        var departure = now
        if let bandwidth = conditions.bandwidthBitsPerSecond {
            let start = max(now, queueFreeAt)
            guard Double(start - now) <= conditions.queueLimitMs * 1000 else {
                statistics.packetsLost += 1
                return nil
            }
            queueFreeAt = start + Int64(byteCount * 8) * 1_000_000 / Int64(bandwidth)
            departure = queueFreeAt
        }
        func delay() -> Int64 {
            var milliseconds = conditions.delayMs
            if conditions.jitterMs > 0 { milliseconds += (draw() * 2 - 1) * conditions.jitterMs }
            if chance(conditions.reorderPercent) { milliseconds += conditions.reorderDelayMs }
            return departure - now + Int64(max(0, milliseconds) * 1000)
        }
        let first = delay()
        guard chance(conditions.duplicatePercent) else { return (first, nil) }
        statistics.packetsDuplicated += 1
        return (first, delay())
    }

    /// Whether the loss model drops the next packet.
    private mutating func lost() -> Bool {
        let loss = conditions.lossPercent / 100
        guard loss > 0 else { return false }
        guard conditions.meanBurstLength > 1 else { return draw() < loss }
        // Gilbert-Elliott: leave the bad state with 1 / burst; enter it so that the share of
        // time spent there is the loss rate.
        let leaveBad = 1 / conditions.meanBurstLength
        let enterBad = loss / (1 - loss) * leaveBad
        inBurst = inBurst ? draw() >= leaveBad : draw() < enterBad
        return inBurst
    }
}
