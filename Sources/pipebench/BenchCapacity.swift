import ArgumentParser
import Foundation
import MediaPipeline
import MediaPipelineTesting

/// Session capacity: the most remote users (Opus 32 kbit/s 20 ms + VP8 360p 15 fps 500 kbit/s,
/// pre-encoded and replayed) one engine subscribes to, decodes, mixes and renders into 320x180
/// canvases in real time, on a given number of decode threads; or the same with every user a
/// dual stream publisher whose low layer (VP8 320x180 7.5 fps 100 kbit/s) the canvases take
/// (``CapacityTarget/engineLowLayer``); or the most users the same media work written directly
/// in C keeps up with, on either layer (``CapacityTarget/cReference``,
/// ``CapacityTarget/cReferenceLowLayer``).
struct BenchCapacity {
    let media: SampleMedia
    /// Session seconds timed per trial (after ``warmUpTicks`` of warm-up; on the engine's low
    /// layer, up to two more seconds, until its first keyframe is shown).
    let seconds: Double
    /// Ticks every trial's session runs untimed first, the engine's and the C reference's alike
    /// (2.5 s): decoders made, canvases sized, first keyframes decoded, and the engine's audio
    /// playout settled. Each stream's playout starts at the jitter buffer's 60 ms start delay and
    /// learns the stream's own delay over about 90 packets (the start value's weight falls
    /// below the 0.99 quantile's 1 % near 1.8 s), then shortens its audio to it by a few pitch
    /// periods. With one second of warm-up that start fell inside the timed seconds: at 60
    /// users, 1.4 % of the timed instructions were the stretcher's period search, and the
    /// shortened audio had the timed window decode 2 % more Opus than the C reference's,
    /// which a real session pays once per user joining, not every second.
    static let warmUpTicks = 250
    /// Most trials in one search (14 unless bounded for a quick run).
    var maximumTrials = 14
    /// Users in a search's first trial.
    var firstTrialUsers = 16
    let progress: (String, Double) -> Void

    /// One trial of `target`: session seconds per wall-clock second with `users` on `threads`.
    func realtimeFactor(users: Int, threads: Int, target: CapacityTarget) throws -> Double {
        switch target {
        case .engine: return try realtimeFactor(users: users, threads: threads)
        case .engineLowLayer: return try realtimeFactor(users: users, threads: threads, layer: .low)
        case .cReference: return try referenceRealtimeFactor(users: users, threads: threads)
        case .cReferenceLowLayer: return try referenceRealtimeFactor(users: users, threads: threads, layer: .low)
        }
    }

    /// One trial of the engine: session seconds per wall-clock second of the subscriber's work
    /// (``subscriberSeconds(_:ticks:)``) with `users` on `threads`, every user's canvas fed from
    /// `layer` (`.low`: the users send both layers and the hub forwards the low one).
    /// - Throws: ``SubscriberLoad/LayerMismatch`` when a user was not decoding, or was shown
    ///   from the other layer, at the end.
    func realtimeFactor(users: Int, threads: Int, layer: VideoStreamType = .high) throws -> Double {
        let load = try warmedUpLoad(users: users, threads: threads, layer: layer)
        let ticks = Int((seconds * 100).rounded())
        let elapsed = Self.subscriberSeconds(load, ticks: ticks)
        try load.checkEveryUserShows(layer)
        return Double(ticks) / 100 / elapsed
    }

    /// Advances `load` by `ticks` ticks; returns the wall seconds of the subscriber's part
    /// alone (``SubscriberLoad/runSubscriber()``): the broadcasters' packetizing, which remote
    /// machines do and the C reference has no counterpart of, is left out of the time.
    private static func subscriberSeconds(_ load: SubscriberLoad, ticks: Int) -> Double {
        var elapsed = 0.0
        for _ in 0..<ticks {
            load.stageSenders()
            elapsed += measure { load.runSubscriber() }.1
        }
        return elapsed
    }

    /// Heap allocations per 10 ms tick of the engine on the low layer in steady state, as the
    /// subscriber tick rows count them: `users` dual stream users on `threads`, shown from the
    /// low layer, past a statistics report; the fewest per tick over three runs of 2.5 s.
    /// - Throws: ``SubscriberLoad/LayerMismatch`` when a user is not shown from the low layer.
    func lowLayerAllocationsPerTick(users: Int, threads: Int) throws -> Double {
        let load = try warmedUpLoad(users: users, threads: threads, layer: .low)
        try load.checkEveryUserShows(.low)
        return BenchMeasure.perIteration(repeats: 3, iterations: 250) { _ in load.advance() }.allocations
    }

    /// A ``SubscriberLoad`` of `users` on `threads` (dual stream for the low `layer`), advanced
    /// ``warmUpTicks`` (decoders made, canvases sized, first keyframes decoded, audio playout
    /// settled) and then until every
    /// user is shown from `layer`: the low layer comes with its first keyframe after the
    /// subscriber asked for it, up to the sample's keyframe interval (2 s) later.
    private func warmedUpLoad(users: Int, threads: Int, layer: VideoStreamType) throws -> SubscriberLoad {
        let load = try SubscriberLoad(media: media, users: users, decodeThreads: threads, dualStream: layer == .low)
        for _ in 0..<Self.warmUpTicks { load.advance() }
        let keyframeTicks = media.keyframeIntervalFrames * 100 / media.videoFrameRate
        load.advance(untilEveryUserShows: layer, maximumTicks: keyframeTicks + 10)
        return load
    }

    /// The largest user count `target` runs at least in real time on `threads`, found by trials:
    /// a linear estimate from each trial's speed, then bisection between the last count that
    /// kept up and the first that did not. Returns the count and the trials made.
    func capacity(
        threads: Int, label: String, target: CapacityTarget = .engine
    ) throws -> (users: Int, trials: [(users: Int, realtime: Double)]) {
        var trials: [(users: Int, realtime: Double)] = []
        var fits = 0  // most users seen keeping up
        var fails = Int.max  // fewest users seen falling behind
        var users = firstTrialUsers
        for trial in 0..<maximumTrials {
            progress("capacity, \(label): \(users) users", Double(trial) / Double(maximumTrials))
            let factor = try realtimeFactor(users: users, threads: threads, target: target)
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

/// What a capacity search measures.
enum CapacityTarget: String, CaseIterable, ExpressibleByArgument {
    /// One MediaEngine subscribed to replaying users (``SubscriberLoad``).
    case engine
    /// The same engine and users, each user sending a low layer too (dual stream), which the
    /// 320x180 canvases take: ``SubscriberLoad`` with `dualStream`.
    case engineLowLayer = "engine-low"
    /// The same decoding, mixing and rendering in direct C (CCodecBaseline's capacity reference).
    case cReference = "c-reference"
    /// The C reference fed the low layer on its schedule, as the engine's low-layer target is:
    /// what any engine could reach on it, with every user's audio decoded.
    case cReferenceLowLayer = "c-reference-low"

    /// The name in printed lines.
    var label: String {
        switch self {
        case .engine: "engine"
        case .engineLowLayer: "engine, low layer"
        case .cReference: "C reference"
        case .cReferenceLowLayer: "C reference, low layer"
        }
    }

    /// The video layer the target's canvases show.
    var layer: VideoStreamType { self == .engineLowLayer || self == .cReferenceLowLayer ? .low : .high }
}

extension BenchCapacity {
    /// One interleaved trial: the engine's session and the C reference's, both of `users` on
    /// `threads` and warmed up in this process, advanced by turns in slices of `sliceTicks`
    /// ticks (engine, C, C, engine, engine, C, ...: an even number of slices each, so each goes
    /// first as often as second) until each has run at least ``seconds``; each one's real-time
    /// factor from its own slices' wall time (the engine's: ``subscriberSeconds(_:ticks:)``).
    /// A host whose speed drifts slows both alike, slice by slice, where trials a few seconds
    /// apart differ by ±10 % on a shared host.
    /// Both show `layer` (`.low`: every user a dual stream publisher, the C reference fed the
    /// low layer on the same schedule).
    /// - Throws: ``SubscriberLoad/LayerMismatch`` when a user of the engine was not decoding or
    ///   not shown from `layer` at the end; ``MediaError/Code/codecFailure`` when the C
    ///   reference failed a decode or missed a packet or picture it was due.
    func interleavedRealtimeFactors(
        users: Int, threads: Int, layer: VideoStreamType = .high, sliceTicks: Int = 20
    ) throws -> InterleavedTrial {
        let load = try warmedUpLoad(users: users, threads: threads, layer: layer)
        let session = try warmedUpReference(users: users, threads: threads, layer: layer)
        let before = session.decodedSoFar
        var slices = max(2, Int((seconds * 100 / Double(sliceTicks)).rounded(.up)))
        slices += slices % 2
        var (engineSeconds, referenceSeconds) = (0.0, 0.0)
        // The slices' time in decode rounds: the rest is each one's serial work.
        var (engineRoundSeconds, referenceRoundSeconds) = (0.0, 0.0)
        var referenceVideoTicks = 0
        for slice in 0..<(slices * 2) {
            if slice % 4 == 0 || slice % 4 == 3 {
                let roundsBefore = load.engine.decodeRoundNanoseconds
                engineSeconds += Self.subscriberSeconds(load, ticks: sliceTicks)
                engineRoundSeconds += Double(load.engine.decodeRoundNanoseconds - roundsBefore) / 1e9
            } else {
                let roundsBefore = session.roundSeconds
                let (seconds, videoTicks) = try session.advance(ticks: sliceTicks)
                referenceSeconds += seconds
                referenceRoundSeconds += session.roundSeconds - roundsBefore
                referenceVideoTicks += videoTicks
            }
        }
        try load.checkEveryUserShows(layer)
        try session.checkDecoded(ticks: slices * sliceTicks, videoTicks: referenceVideoTicks, since: before)
        let sessionSeconds = Double(slices * sliceTicks) / 100
        return InterleavedTrial(
            engine: sessionSeconds / engineSeconds, reference: sessionSeconds / referenceSeconds,
            engineSerialShare: max(0, 1 - engineRoundSeconds / engineSeconds),
            referenceSerialShare: max(0, 1 - referenceRoundSeconds / referenceSeconds))
    }

    /// One interleaved trial's figures.
    struct InterleavedTrial {
        /// Session seconds per wall second: the engine's, and the C reference's.
        var engine: Double, reference: Double
        /// The share of each one's wall time spent outside its decode rounds, on the one thread
        /// that advances it while the others wait: the engine's packet delivery through the hub,
        /// its control plane's work before and after each round and its mix; the C reference's
        /// mix. On `threads` threads a serial second costs `threads` seconds of capacity.
        var engineSerialShare: Double, referenceSerialShare: Double
    }
}
