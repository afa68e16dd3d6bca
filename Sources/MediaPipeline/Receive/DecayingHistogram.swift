/// Counts in equal buckets that forget geometrically: each new value scales what came before by
/// `1 - weight` and adds `weight` to its bucket. Its quantiles follow the recent values, which is
/// how the jitter buffers and the NACK list learn delays (NetEq's histogram, in our words).
/// Storage is allocated once.
///
/// Adding costs the same whatever the bucket count: rather than scale every bucket, the
/// histogram keeps one common scale (a bucket's weight is its stored value times ``scale``) and
/// divides the new weight by it. Stored values grow as the scale shrinks; once the scale falls
/// below 2^-500 every bucket is multiplied out and the scale is 1 again, a pass every few
/// thousand values (0.983 per packet: about 20,000 packets).
struct DecayingHistogram {
    private var stored: [Double]
    /// The sum of ``stored``.
    private var storedTotal = 0.0
    /// What a stored value is multiplied by to give its weight.
    private var scale = 1.0
    /// Below this the stored values are multiplied out (far above the smallest normal double).
    private static let smallestScale = 0x1p-500

    init(bucketCount: Int) { stored = [Double](repeating: 0, count: bucketCount) }

    var bucketCount: Int { stored.count }

    /// Forgets everything; with `prior`, that bucket holds the whole weight to begin with.
    mutating func reset(prior: Int? = nil) {
        for index in stored.indices { stored[index] = 0 }
        storedTotal = 0
        scale = 1
        if let prior {
            stored[min(max(0, prior), stored.count - 1)] = 1
            storedTotal = 1
        }
    }

    /// Counts one value in `bucket` (clamped to the last) with `weight` (0...1).
    mutating func add(bucket: Int, weight: Double) {
        let index = min(max(0, bucket), stored.count - 1)
        guard weight < 1 else {
            // Everything before is forgotten.
            reset(prior: index)
            return
        }
        scale *= 1 - weight
        if scale < Self.smallestScale { multiplyOut() }
        let added = weight / scale
        stored[index] += added
        storedTotal += added
    }

    /// The first bucket at which the counts reach `quantile` (0...1) of the whole.
    func bucket(atQuantile quantile: Double) -> Int {
        let target = quantile * storedTotal
        var sum = 0.0
        for index in stored.indices {
            sum += stored[index]
            if sum >= target { return index }
        }
        return stored.count - 1
    }

    /// The weight in `bucket`.
    func weight(inBucket bucket: Int) -> Double { stored[bucket] * scale }

    /// Makes the stored values the weights again (scale 1).
    private mutating func multiplyOut() {
        storedTotal = 0
        for index in stored.indices {
            stored[index] *= scale
            storedTotal += stored[index]
        }
        scale = 1
    }
}
