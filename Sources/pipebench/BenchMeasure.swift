import CAllocationCounter
import Foundation
import MediaPipeline

/// One line of `pipebench bench`: a path's cost per frame (or per tick, per mix), with what it
/// compares against.
struct BenchRow {
    /// The table the row belongs to.
    var section: String
    var path: String
    /// What one unit of work is: "20 ms", "frame", "mix", "10 ms tick".
    var unit: String
    var microsecondsPerUnit: Double
    /// The same work through direct C calls, when there is a twin.
    var cMicrosecondsPerUnit: Double?
    /// Throughput in ``speedUnit``.
    var speed: Double
    var speedUnit: String
    /// The cost of one stream (source, subscriber, user) inside the unit, when the row has many.
    var perStreamMicroseconds: Double?
    /// Heap allocations per unit in steady state.
    var allocationsPerUnit: Double
    /// For codec rows: whether our output matched the C twin's.
    var identicalOutput: Bool?
    /// Heap allocations per unit of the C twin, when it is counted (SRTP: libsrtp2's own).
    var cAllocationsPerUnit: Double?

    var ratio: Double? { cMicrosecondsPerUnit.map { microsecondsPerUnit / $0 } }

    var jsonObject: [String: Any] {
        var object: [String: Any] = [
            "section": section, "path": path, "unit": unit, "microsecondsPerUnit": microsecondsPerUnit,
            "speed": speed, "speedUnit": speedUnit, "allocationsPerUnit": allocationsPerUnit,
        ]
        if let cMicrosecondsPerUnit { object["cMicrosecondsPerUnit"] = cMicrosecondsPerUnit }
        if let ratio { object["ratio"] = ratio }
        if let perStreamMicroseconds { object["perStreamMicroseconds"] = perStreamMicroseconds }
        if let identicalOutput { object["identicalOutput"] = identicalOutput }
        if let cAllocationsPerUnit { object["cAllocationsPerUnit"] = cAllocationsPerUnit }
        return object
    }
}

/// Timing and allocation counting for `pipebench bench`.
enum BenchMeasure {
    /// Heap allocations made by the process so far (every thread).
    static var allocations: Int { mp_allocation_count() }

    /// Throws unless the counter really sees allocations, so a "0 allocations" row cannot come
    /// from a counter that counts nothing.
    static func checkCounter() throws {
        guard mp_allocation_counter_active() == 1 else {
            throw MediaError(.unsupported, "the allocation counter sees no allocations in this process")
        }
    }

    /// Runs `body` `iterations` times per repeat (with an index counting every call), `repeats`
    /// times after one warm-up repeat; returns the median seconds per iteration and the fewest allocations per iteration seen
    /// in a repeat (steady state: a repeat that happened to start a thread is not it).
    static func perIteration(repeats: Int, iterations: Int, _ body: (Int) throws -> Void) rethrows -> (
        seconds: Double, allocations: Double
    ) {
        try perIteration(repeats: repeats, iterations: iterations, batch: iterations, between: {}, body)
    }

    /// As ``perIteration(repeats:iterations:_:)``, with `between` run untimed (and its
    /// allocations uncounted) after every `batch` iterations: the work of another thread that
    /// the timed path hands over to (subscribers' playout ticks taking in what a fan-out
    /// delivered).
    static func perIteration(
        repeats: Int, iterations: Int, batch: Int, between: () throws -> Void, _ body: (Int) throws -> Void
    ) rethrows -> (seconds: Double, allocations: Double) {
        var index = 0
        var times: [Double] = []
        var fewest = Int.max
        for repeatIndex in 0...repeats {  // the first is the warm-up
            var (seconds, allocated) = (0.0, 0)
            var done = 0
            while done < iterations {
                let count = min(batch, iterations - done)
                let before = allocations
                let (_, batchSeconds) = try measure {
                    for _ in 0..<count {
                        try body(index)
                        index += 1
                    }
                }
                allocated += allocations - before
                seconds += batchSeconds
                done += count
                try between()
            }
            guard repeatIndex > 0 else { continue }
            fewest = min(fewest, allocated)
            times.append(seconds / Double(iterations))
        }
        return (times.sorted()[times.count / 2], Double(fewest) / Double(iterations))
    }
}
