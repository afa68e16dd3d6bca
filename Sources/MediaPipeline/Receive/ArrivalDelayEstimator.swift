/// How late one remote audio stream's packets arrive, and so how long its jitter buffer
/// should hold them (the role of NetEq's delay manager).
///
/// Each packet's transit (arrival time minus its media time) is compared with the smallest
/// transit of the last one to two seconds: the difference is the packet's relative delay, what
/// the network added over its fastest path. Relative delays go into a histogram of 5 ms buckets
/// that forgets geometrically (factor 0.983 per packet, as NetEq; faster while the first
/// packets come, so the start value is soon replaced). The target delay is the 0.99 quantile's
/// bucket top plus one bucket of margin, so a steady jitter leaves no packet late. Starts at
/// 60 ms; bounded by 1 s. The sliding minimum follows a drifting sender clock, so the target
/// does not grow under clock skew. (Video frames use it too, with their completion times and
/// a lower quantile: a frame waiting for a retransmission may come late rather than hold every
/// frame back.)
struct ArrivalDelayEstimator {
    static let bucketMicroseconds: Int64 = 5_000
    static let bucketCount = 200
    static let forgetFactor = 0.983
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

    private var histogram: [Double]
    private var packets = 0
    private var windowStart: Int64 = .min
    private var currentMinimum: Int64?
    private var previousMinimum: Int64?
    /// The smallest transit of the last one to two seconds (microseconds), nil before a packet.
    private(set) var minimumTransitMicroseconds: Int64?
    /// How long packets should wait, counted from their arrival on the fastest path.
    private(set) var targetDelayMicroseconds: Int64

    /// An estimator covering `quantile` of arrivals, starting at `startDelayMicroseconds`.
    init(quantile: Double = 0.99, startDelayMicroseconds: Int64 = 60_000, marginBuckets: Int = 2) {
        self.quantile = quantile
        self.startDelayMicroseconds = startDelayMicroseconds
        self.marginBuckets = marginBuckets
        targetDelayMicroseconds = startDelayMicroseconds
        histogram = [Double](repeating: 0, count: Self.bucketCount)
        reset()
    }

    /// Forgets everything but keeps the storage (a sender that starts again).
    mutating func reset() {
        for index in histogram.indices { histogram[index] = 0 }
        histogram[max(0, Int(startDelayMicroseconds / Self.bucketMicroseconds) - marginBuckets)] = 1
        packets = 0
        windowStart = .min
        currentMinimum = nil
        previousMinimum = nil
        minimumTransitMicroseconds = nil
        targetDelayMicroseconds = startDelayMicroseconds
    }

    /// Counts one packet's `transit` (arrival minus media time) arrived at `now`; returns its
    /// relative delay.
    @discardableResult
    mutating func add(transitMicroseconds transit: Int64, now: Int64) -> Int64 {
        if windowStart == .min || now - windowStart >= Self.windowMicroseconds {
            previousMinimum = currentMinimum
            currentMinimum = transit
            windowStart = now
        } else {
            currentMinimum = min(currentMinimum ?? transit, transit)
        }
        let minimum = min(currentMinimum!, previousMinimum ?? .max)
        minimumTransitMicroseconds = minimum
        let relative = transit - minimum
        let bucket = min(Self.bucketCount - 1, Int(relative / Self.bucketMicroseconds))
        let weight = max(1 - Self.forgetFactor, 1 / Double(packets + 2))
        var total = 0.0
        for index in histogram.indices {
            histogram[index] *= 1 - weight
            total += histogram[index]
        }
        histogram[bucket] += weight
        total += weight
        packets += 1
        // The quantile's bucket.
        var sum = 0.0
        var index = 0
        while index < Self.bucketCount - 1 {
            sum += histogram[index]
            if sum >= quantile * total { break }
            index += 1
        }
        targetDelayMicroseconds = Int64(index + marginBuckets) * Self.bucketMicroseconds
        return relative
    }
}
