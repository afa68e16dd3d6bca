import Testing

@testable import MediaPipeline

@Suite("Decaying histogram")
struct DecayingHistogramTests {
    /// The histogram as its definition reads: every bucket scaled at every value.
    private struct Direct {
        var weights: [Double]
        init(bucketCount: Int, prior: Int) {
            weights = [Double](repeating: 0, count: bucketCount)
            weights[prior] = 1
        }
        mutating func add(bucket: Int, weight: Double) {
            for index in weights.indices { weights[index] *= 1 - weight }
            weights[min(bucket, weights.count - 1)] += weight
        }
        func bucket(atQuantile quantile: Double) -> Int {
            let total = weights.reduce(0, +)
            var sum = 0.0
            for index in weights.indices {
                sum += weights[index]
                if sum >= quantile * total { return index }
            }
            return weights.count - 1
        }
    }

    @Test(
        "70,000 values (three rescalings at 0.983): every weight within 1e-9 of scaling every bucket each time, and the same quantile buckets"
    )
    func matchesDirectScaling() {
        var histogram = DecayingHistogram(bucketCount: 200)
        histogram.reset(prior: 10)
        var direct = Direct(bucketCount: 200, prior: 10)
        var random = SplitMix64(seed: 23)
        var quantileMismatches = 0
        for step in 0..<70_000 {
            // Mostly small delays, now and then a late one (the shape of arrival delays).
            let bucket =
                Int.random(in: 0..<100, using: &random) < 97
                ? Int.random(in: 0..<12, using: &random) : Int.random(in: 12..<260, using: &random)
            let weight = step < 50 ? 1 / Double(step + 2) : 1 - 0.983
            histogram.add(bucket: bucket, weight: weight)
            direct.add(bucket: bucket, weight: weight)
            if step % 97 == 0 {
                for quantile in [0.5, 0.95, 0.99]
                where histogram.bucket(atQuantile: quantile) != direct.bucket(atQuantile: quantile) {
                    quantileMismatches += 1
                }
            }
        }
        for index in 0..<200 {
            #expect(abs(histogram.weight(inBucket: index) - direct.weights[index]) <= 1e-9, "bucket \(index)")
        }
        #expect(quantileMismatches == 0)
    }

    @Test("a weight of 1 forgets everything before; a weight of 0 changes nothing")
    func extremeWeights() {
        var histogram = DecayingHistogram(bucketCount: 10)
        histogram.reset(prior: 2)
        histogram.add(bucket: 7, weight: 0)
        #expect(histogram.bucket(atQuantile: 1) == 2)
        histogram.add(bucket: 7, weight: 1)
        #expect(histogram.weight(inBucket: 2) == 0)
        #expect(histogram.weight(inBucket: 7) == 1)
        #expect(histogram.bucket(atQuantile: 0.01) == 7)
        histogram.add(bucket: 50, weight: 0.5)  // clamped to the last bucket
        #expect(histogram.weight(inBucket: 9) == 0.5)
    }
}
