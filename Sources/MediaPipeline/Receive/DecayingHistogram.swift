/// Counts in equal buckets that forget geometrically: each new value scales what came before by
/// `1 - weight` and adds `weight` to its bucket. Its quantiles follow the recent values, which is
/// how the jitter buffers and the NACK list learn delays (NetEq's histogram, in our words).
/// Storage is allocated once.
struct DecayingHistogram {
    private var weights: [Double]
    private var total = 0.0

    init(bucketCount: Int) { weights = [Double](repeating: 0, count: bucketCount) }

    var bucketCount: Int { weights.count }

    /// Forgets everything; with `prior`, that bucket holds the whole weight to begin with.
    mutating func reset(prior: Int? = nil) {
        for index in weights.indices { weights[index] = 0 }
        total = 0
        if let prior {
            weights[min(max(0, prior), weights.count - 1)] = 1
            total = 1
        }
    }

    /// Counts one value in `bucket` (clamped to the last) with `weight` (0...1).
    mutating func add(bucket: Int, weight: Double) {
        total = 0
        for index in weights.indices {
            weights[index] *= 1 - weight
            total += weights[index]
        }
        weights[min(max(0, bucket), weights.count - 1)] += weight
        total += weight
    }

    /// The first bucket at which the counts reach `quantile` (0...1) of the whole.
    func bucket(atQuantile quantile: Double) -> Int {
        var sum = 0.0
        for index in weights.indices {
            sum += weights[index]
            if sum >= quantile * total { return index }
        }
        return weights.count - 1
    }
}
