import Foundation
import MediaPipeline
import MediaPipelineTesting

extension BenchEngine {
    /// How long control calls and statistics reads take while `users` remote streams decode,
    /// mix and render on `threads` decode threads in another thread: the 99th percentile and
    /// the worst of each, in microseconds. The subscriber runs its ticks as fast as it can (a
    /// thread always decoding); the calls come from this thread, about every 100 µs.
    func controlLatencyRows(users: Int, media: SampleMedia, threads: Int) throws -> [BenchRow] {
        progress("control latency, \(users) users decoding", 0)
        let load = try SubscriberLoad(media: media, users: users, decodeThreads: threads)
        for _ in 0..<100 { load.advance() }  // past the first keyframes: every stream decoding
        let ticks = 150 * repeats
        let running = Guarded(true)
        let (engine, channel) = (load.engine, load.channel)
        // From here on the load is the worker's alone.
        let handOver = HandOver(load)
        let worker = Thread {
            for _ in 0..<ticks { handOver.value.advance() }
            running.withLock { $0 = false }
        }
        worker.start()
        var statistics: [Double] = []
        var control: [Double] = []
        let clock = ContinuousClock()
        let uid = channel.remoteUsers.first ?? 0
        var volume = 100
        while running.withLock({ $0 }) {
            let read = clock.measure { _ = engine.statistics }
            statistics.append(read.microseconds)
            volume = volume == 100 ? 90 : 100
            let call = clock.measure { try? channel.adjustUserPlaybackSignalVolume(uid, volume: volume) }
            control.append(call.microseconds)
            usleep(100)
        }
        func row(_ name: String, _ samples: [Double]) -> BenchRow {
            let sorted = samples.sorted()
            let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            return BenchRow(
                section: "control", path: "\(name) p99, \(users) users decoding", unit: "call",
                microsecondsPerUnit: p99, speed: sorted.last ?? 0, speedUnit: "µs worst",
                allocationsPerUnit: 0)
        }
        return [row("statistics read", statistics), row("control call", control)]
    }
}

/// A value handed to another thread, which alone uses it from then on.
private final class HandOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension Duration {
    /// The duration in microseconds.
    var microseconds: Double {
        Double(components.seconds) * 1e6 + Double(components.attoseconds) / 1e12
    }
}
