/// How late one remote audio stream's packets arrive, and so how long its jitter buffer
/// should hold them (the role of NetEq's delay manager).
///
/// Each packet's transit (arrival time minus its media time) is compared with the smallest
/// transit of the last one to two seconds: the difference is the packet's relative delay, what
/// the network added over its fastest path. Relative delays go into a histogram of 5 ms buckets
/// that forgets geometrically (by default 0.983 per packet, as NetEq; faster while the first
/// packets come, so the start value is soon replaced). The target delay is the 0.99 quantile's
/// bucket top plus one bucket of margin, so a steady jitter leaves no packet late. Starts at
/// 60 ms; bounded by ``longestDelayMicroseconds`` (1 s for audio). The sliding minimum follows
/// a drifting sender clock, so the target does not grow under clock skew; a transit that moves
/// by more than that bound at once is a sender whose clock jumped (or that paused), and
/// everything is learnt again from it. (Video
/// frames use it too, with their completion times, the bottom of the quantile's bucket and a
/// slower forgetting: a steady stream is shown at once, and the render delay does not swing with
/// every retransmission.)
struct ArrivalDelayEstimator {
    static let bucketMicroseconds: Int64 = 5_000
    /// What each packet leaves of the histogram's past (audio: NetEq's 0.983 per packet).
    let forgetFactor: Double
    /// The share of arrivals the target covers.
    let quantile: Double
    /// Where the target starts, before arrivals tell.
    let startDelayMicroseconds: Int64
    /// Buckets added to the quantile's bucket index to make the target: 2 is its top plus one
    /// bucket of margin (audio: no packet late), 0 its bottom (video: a late frame is shown
    /// when it comes, and a steady stream is shown at once).
    let marginBuckets: Int
    /// How long each half of the sliding minimum's window lasts.
    static let windowMicroseconds: Int64 = 1_000_000
    /// The longest delay the target covers; a transit that moves further at once is a sender
    /// whose clock jumped.
    let longestDelayMicroseconds: Int64

    private var histogram: DecayingHistogram
    private var packets = 0
    private var windowStart: Int64 = .min
    private var currentMinimum: Int64?
    private var previousMinimum: Int64?
    /// The smallest transit of the last one to two seconds (microseconds), nil before a packet.
    private(set) var minimumTransitMicroseconds: Int64?
    /// How long packets should wait, counted from their arrival on the fastest path.
    private(set) var targetDelayMicroseconds: Int64

    /// An estimator covering `quantile` of arrivals, starting at `startDelayMicroseconds`.
    init(
        quantile: Double = 0.99, startDelayMicroseconds: Int64 = 60_000, marginBuckets: Int = 2,
        forgetFactor: Double = 0.983, longestDelayMicroseconds: Int64 = 1_000_000
    ) {
        self.longestDelayMicroseconds = longestDelayMicroseconds
        histogram = DecayingHistogram(bucketCount: Int(longestDelayMicroseconds / Self.bucketMicroseconds))
        self.quantile = quantile
        self.forgetFactor = forgetFactor
        self.startDelayMicroseconds = startDelayMicroseconds
        self.marginBuckets = marginBuckets
        targetDelayMicroseconds = startDelayMicroseconds
        reset()
    }

    /// Forgets everything but keeps the storage (a sender that starts again).
    mutating func reset() {
        histogram.reset(prior: Int(startDelayMicroseconds / Self.bucketMicroseconds) - marginBuckets)
        packets = 0
        windowStart = .min
        currentMinimum = nil
        previousMinimum = nil
        minimumTransitMicroseconds = nil
        targetDelayMicroseconds = startDelayMicroseconds
    }

    /// Counts one packet's `transit` (arrival minus media time) arrived at `now`. Returns true
    /// when the transit jumped by more than ``longestDelayMicroseconds`` from the minimum: the
    /// estimate started again from this packet (the caller restarts its playout).
    @discardableResult
    mutating func add(transitMicroseconds transit: Int64, now: Int64) -> Bool {
        add(transitMicroseconds: transit, fastestPathTransitMicroseconds: transit, now: now)
    }

    /// Counts one arrival whose `transit` (when it was taken, minus its media time) counts
    /// toward the target, while `fastestPathTransit` (when it was complete) feeds the sliding
    /// minimum: video frames held behind a missing one wait as long as it does, which the render
    /// delay must cover, but they came on the fastest path all the same.
    @discardableResult
    mutating func add(transitMicroseconds transit: Int64, fastestPathTransitMicroseconds fastest: Int64, now: Int64)
        -> Bool
    {
        var restarted = false
        if let minimum = minimumTransitMicroseconds, abs(transit - minimum) > longestDelayMicroseconds {
            reset()
            restarted = true
        }
        if windowStart == .min || now - windowStart >= Self.windowMicroseconds {
            previousMinimum = currentMinimum
            currentMinimum = fastest
            windowStart = now
        } else {
            currentMinimum = min(currentMinimum ?? fastest, fastest)
        }
        let minimum = min(currentMinimum!, previousMinimum ?? .max)
        minimumTransitMicroseconds = minimum
        let relative = transit - minimum
        // Faster forgetting while the first packets come, so the start value is soon replaced.
        histogram.add(
            bucket: Int(relative / Self.bucketMicroseconds), weight: max(1 - forgetFactor, 1 / Double(packets + 2))
        )
        packets += 1
        targetDelayMicroseconds =
            Int64(histogram.bucket(atQuantile: quantile) + marginBuckets) * Self.bucketMicroseconds
        return restarted
    }
}
