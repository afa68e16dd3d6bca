import Foundation
import MediaPipeline
import MediaPipelineTesting

/// Session capacity: the most remote users (Opus 32 kbit/s 20 ms + VP8 360p 15 fps 500 kbit/s,
/// pre-encoded and replayed) one engine subscribes to, decodes, mixes and renders into 320x180
/// canvases in real time, on a given number of decode threads.
struct BenchCapacity {
    let media: SampleMedia
    /// Session seconds timed per trial (after one second of warm-up).
    let seconds: Double
    let progress: (String, Double) -> Void

    /// One trial: session seconds per wall-clock second with `users` on `threads`.
    func realtimeFactor(users: Int, threads: Int) throws -> Double {
        let load = try SubscriberLoad(media: media, users: users, decodeThreads: threads)
        for _ in 0..<100 { load.advance() }  // decoders made, canvases sized, first keyframes decoded
        let ticks = Int((seconds * 100).rounded())
        let (_, elapsed) = measure { for _ in 0..<ticks { load.advance() } }
        guard load.usersDecoding == users else {
            throw MediaError(.codecFailure, "only \(load.usersDecoding) of \(users) users are decoding")
        }
        return Double(ticks) / 100 / elapsed
    }

    /// The largest user count that runs at least in real time on `threads`, found by trials:
    /// a linear estimate from each trial's speed, then bisection between the last count that
    /// kept up and the first that did not. Returns the count and the trials made.
    func capacity(threads: Int, label: String) throws -> (users: Int, trials: [(users: Int, realtime: Double)]) {
        var trials: [(users: Int, realtime: Double)] = []
        var fits = 0  // most users seen keeping up
        var fails = Int.max  // fewest users seen falling behind
        var users = 16
        for trial in 0..<14 {
            progress("capacity, \(label): \(users) users", Double(trial) / 14)
            let factor = try realtimeFactor(users: users, threads: threads)
            trials.append((users, factor))
            if factor >= 1 { fits = max(fits, users) } else { fails = min(fails, users) }
            if fails - fits <= max(1, fits / 50) { break }
            let estimate = Int((Double(users) * factor).rounded(.down))
            var next = estimate
            if next <= fits || next >= fails { next = fails == .max ? fits * 2 : (fits + fails) / 2 }
            if next == users { next = factor >= 1 ? users + 1 : users - 1 }
            guard next > fits, next < fails, next >= 1 else { break }
            users = next
        }
        return (fits, trials)
    }
}
