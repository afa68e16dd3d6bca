import Foundation
import MediaPipeline
import MediaPipelineTesting

/// One trial of a capacity search, as a child process reports it.
struct CapacityTrialResult: Codable {
    /// Remote users in the trial.
    var users: Int
    /// Session seconds per wall-clock second.
    var realtimeFactor: Double
    /// In an interleaved trial, the C reference's session seconds per wall-clock second, its
    /// slices taken by turns with the engine's (``realtimeFactor``) in the same process.
    var referenceRealtimeFactor: Double?
    /// In an interleaved trial, the share of the engine's wall time outside its decode rounds
    /// (``BenchCapacity/InterleavedTrial/engineSerialShare``), and of the C reference's.
    var serialShare: Double?, referenceSerialShare: Double?
}

/// One capacity search's result: what a child `pipebench bench --capacity-target` prints.
struct CapacitySearchResult: Codable {
    /// What was searched: `engine`, `engine-low`, `c-reference` or `c-reference-low`.
    var target: String
    /// Decode threads.
    var threads: Int
    /// Most users kept up with in real time.
    var users: Int
    /// The trials made, in order.
    var trials: [CapacityTrialResult]
    /// The child process's peak resident memory after the search, in megabytes.
    var peakMemoryMB: Double
    /// Its peak before the search began (the sample media loaded and encoded): the part both
    /// targets share, in megabytes.
    var peakMemoryMBBeforeSearch: Double
    /// For the low layer's search: heap allocations per 10 ms tick in steady state, measured
    /// after it (``BenchCapacity/lowLayerAllocationsPerTick(users:threads:)``, 8 users).
    var allocationsPerTick: Double?
}

/// The session capacity of the engine against its C reference: each search runs in a child
/// process of pipebench (`bench --only capacity --capacity-target
/// engine|engine-low|c-reference|c-reference-low`), so that each has a peak resident memory of its
/// own. Per thread count the engine's search runs, then the C reference's; 1 thread first, then
/// all threads, where the engine's search on the low layer (every user a dual stream publisher,
/// its low layer shown) runs between the two, starting from three times the engine's
/// high-layer capacity just found, and the C reference's search on the low layer runs last,
/// starting from the engine's low-layer capacity: the low layer's ceiling with every user's
/// audio decoded, which says how much of low/high the media allow at all. Then, as a
/// search's peak follows the largest trial it made, both run one trial at the engine's capacity
/// on all threads, each in a fresh child, for their peak memory at the same load.
///
/// The searches run one after the other for about a minute each, so a machine whose speed
/// drifts (other work on its host) moves their ratio by more than the engine's own overhead.
/// Last, interleaved trials at the C reference's capacity on all threads, each in a fresh
/// child that runs both sessions by turns in slices of 200 ms
/// (``BenchCapacity/interleavedRealtimeFactors(users:threads:layer:sliceTicks:)``), give the engine's
/// speed against C's at the same load and the same moments: the median of their ratios.
struct CapacityComparison {
    /// Decode threads of the full figure (1 runs one pair of searches, then the interleaved trials,
    /// on one thread).
    let threads: Int
    /// The engine's searches by thread count.
    private(set) var engine: [Int: CapacitySearchResult] = [:]
    /// The C reference's searches by thread count.
    private(set) var reference: [Int: CapacitySearchResult] = [:]
    /// The engine's search on the low layer, on all threads.
    private(set) var lowLayer: CapacitySearchResult?
    /// The C reference's search on the low layer, on all threads.
    private(set) var referenceLowLayer: CapacitySearchResult?
    /// One trial of each target at the engine's capacity on all threads, by target (none when
    /// the engine kept up with no user count).
    private(set) var sameLoad: [CapacityTarget: CapacitySearchResult] = [:]
    /// The interleaved trials' real-time factors and serial shares (engine, C reference) at
    /// ``interleavedUsers`` users on all threads.
    private(set) var interleaved: [BenchCapacity.InterleavedTrial] = []
    /// The users of the interleaved trials: the C reference's capacity on all threads.
    private(set) var interleavedUsers = 0

    /// Interleaved trials run after the searches.
    static let interleavedTrialCount = 3

    /// How many times the high layer's capacity the low layer's search tries first.
    static let lowLayerFirstTrialFactor = 3

    /// Runs the searches: for 1 thread and then `threads`, the engine's, (on `threads`) the
    /// engine's on the low layer, the C reference's, and (on `threads`) the C reference's on the
    /// low layer, each in a child process given `options` (samples, seconds, trial bounds) and
    /// its first trial's users (`firstTrialUsers`; the engine's low layer's:
    /// ``lowLayerFirstTrialFactor`` × the engine's capacity on `threads`; the C reference's low
    /// layer's: the engine's low-layer capacity).
    /// - Throws: ``MediaError/Code/io`` when a child fails or prints no result.
    init(threads: Int, options: [String], firstTrialUsers: Int, progress: (String, Double) -> Void) throws {
        self.threads = threads
        let counts = threads == 1 ? [1] : [1, threads]
        let searches = counts.count * 2 + 2
        var done = 0
        for count in counts {
            let targets: [CapacityTarget] =
                count == threads
                ? [.engine, .engineLowLayer, .cReference, .cReferenceLowLayer] : [.engine, .cReference]
            for target in targets {
                progress("capacity, \(target.label), \(Self.threadsLabel(count))", Double(done) / Double(searches))
                var first = firstTrialUsers
                if target == .engineLowLayer, let high = engine[count]?.users, high > 0 {
                    first = min(4096, high * Self.lowLayerFirstTrialFactor)
                }
                if target == .cReferenceLowLayer, let low = lowLayer?.users, low > 0 { first = low }
                let result = try Self.runChild(
                    target, threads: count, options: options + ["--capacity-first-users", "\(first)"])
                switch target {
                case .engine: engine[count] = result
                case .engineLowLayer: lowLayer = result
                case .cReference: reference[count] = result
                case .cReferenceLowLayer: referenceLowLayer = result
                }
                done += 1
            }
        }
        let users = engine[threads]?.users ?? 0
        guard users > 0 else { return }
        for target in [CapacityTarget.engine, .cReference] {
            progress("peak memory, \(target.label), \(users) users", 1)
            sameLoad[target] = try Self.runChild(
                target, threads: threads, options: options + ["--capacity-users", "\(users)"])
        }
        interleavedUsers = reference[threads]?.users ?? 0
        guard interleavedUsers > 0 else { return }
        for trial in 0..<Self.interleavedTrialCount {
            progress("interleaved trial \(trial + 1) of \(Self.interleavedTrialCount), \(interleavedUsers) users", 1)
            let result = try Self.runChild(
                .engine, threads: threads,
                options: options + ["--capacity-users", "\(interleavedUsers)", "--capacity-interleaved"])
            guard let trial = result.trials.first, let reference = trial.referenceRealtimeFactor,
                let serial = trial.serialShare, let referenceSerial = trial.referenceSerialShare
            else {
                throw MediaError(
                    .io, "the interleaved trial of \(interleavedUsers) users (a child pipebench) gave no trial")
            }
            interleaved.append(
                .init(
                    engine: trial.realtimeFactor, reference: reference, engineSerialShare: serial,
                    referenceSerialShare: referenceSerial))
        }
    }

    /// The median of the interleaved trials' ours/C real-time factor ratios, with the lowest and
    /// highest; nil without them.
    var interleavedRatio: (median: Double, lowest: Double, highest: Double)? {
        let ratios = interleaved.map { Self.ratio($0.engine, $0.reference) }.sorted()
        guard let lowest = ratios.first, let highest = ratios.last else { return nil }
        return (Self.median(ratios), lowest, highest)
    }

    /// The medians of the interleaved trials' serial shares (engine, C reference); nil without trials.
    var interleavedSerialShares: (engine: Double, reference: Double)? {
        guard !interleaved.isEmpty else { return nil }
        return (
            Self.median(interleaved.map(\.engineSerialShare).sorted()),
            Self.median(interleaved.map(\.referenceSerialShare).sorted())
        )
    }

    /// The median of `sorted` (not empty).
    private static func median(_ sorted: [Double]) -> Double {
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// "1 thread", "2 threads".
    static func threadsLabel(_ count: Int) -> String { count == 1 ? "1 thread" : "\(count) threads" }

    /// Runs one search in a child pipebench and reads its JSON result.
    private static func runChild(
        _ target: CapacityTarget, threads: Int, options: [String]
    ) throws -> CapacitySearchResult {
        guard let executable = Bundle.main.executablePath ?? CommandLine.arguments.first else {
            throw MediaError(.io, "pipebench's own path is unknown: cannot run the capacity search's child")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            ["bench", "--only", "capacity", "--capacity-target", target.rawValue, "--threads", "\(threads)"] + options
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError  // its error line, if any, is seen as is
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let search = "the \(target.label)'s capacity search on \(threadsLabel(threads))"
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw MediaError(
                .io, "\(search) (a child pipebench) ended with status \(process.terminationStatus)")
        }
        guard let result = try? JSONDecoder().decode(CapacitySearchResult.self, from: data) else {
            throw MediaError(.io, "\(search) printed no result: \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
        return result
    }

    /// The child's side: searches `target` on `threads` (or, given `users`, runs one trial of
    /// that many; `interleaved`, one interleaved trial of the engine and the C reference) and
    /// prints the result as JSON, with the process's peak resident memory before and after.
    static func searchAndPrint(
        _ target: CapacityTarget, threads: Int, users: Int?, interleaved: Bool = false, search: BenchCapacity
    ) throws {
        let before = Double(peakResidentKilobytes()) / 1024
        let found: (users: Int, trials: [CapacityTrialResult])
        if let users {
            var trial = CapacityTrialResult(users: users, realtimeFactor: 0)
            if interleaved {
                let both = try search.interleavedRealtimeFactors(users: users, threads: threads, layer: target.layer)
                (trial.realtimeFactor, trial.referenceRealtimeFactor) = (both.engine, both.reference)
                (trial.serialShare, trial.referenceSerialShare) = (both.engineSerialShare, both.referenceSerialShare)
            } else {
                trial.realtimeFactor = try search.realtimeFactor(users: users, threads: threads, target: target)
            }
            found = (users, [trial])
        } else {
            let searched = try search.capacity(
                threads: threads, label: "\(target.label), \(threadsLabel(threads))", target: target)
            found = (
                searched.users,
                searched.trials.map { CapacityTrialResult(users: $0.users, realtimeFactor: $0.realtime) }
            )
        }
        var result = CapacitySearchResult(
            target: target.rawValue, threads: threads, users: found.users, trials: found.trials,
            peakMemoryMB: Double(peakResidentKilobytes()) / 1024, peakMemoryMBBeforeSearch: before)
        if target == .engineLowLayer && users == nil {
            try BenchMeasure.checkCounter()
            result.allocationsPerTick = try search.lowLayerAllocationsPerTick(users: 8, threads: threads)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }

    /// `numerator / denominator`, 0 when the denominator is 0 (JSON has no infinity).
    private static func ratio(_ numerator: Double, _ denominator: Double) -> Double {
        denominator > 0 ? numerator / denominator : 0
    }

    /// Peak resident megabytes of the target's searches: the larger of its children's.
    private func peakMemoryMB(_ results: [Int: CapacitySearchResult]) -> Double {
        results.values.map(\.peakMemoryMB).max() ?? 0
    }

    /// Peak resident megabytes before the target's searches began: the larger of its children's.
    private func peakMemoryMBBeforeSearch(_ results: [Int: CapacitySearchResult]) -> Double {
        results.values.map(\.peakMemoryMBBeforeSearch).max() ?? 0
    }

    /// The figures for `--json`: the C reference's users and trials, ours/C per thread count,
    /// the low layer's users, trials and peak memory with low/high, the C reference's on the
    /// low layer with its low/high and ours/C there, and both peak memories with their ratio.
    var jsonFigures: [String: Any] {
        let (one, all) = (reference[1]?.users ?? 0, reference[threads]?.users ?? 0)
        let (engineOne, engineAll) = (engine[1]?.users ?? 0, engine[threads]?.users ?? 0)
        let memory = (engine: peakMemoryMB(engine), reference: peakMemoryMB(reference))
        var figures: [String: Any] = [
            "capacityUsersCReference": all,
            "capacityUsersCReferenceOneThread": one,
            "capacityRatioToCReference": Self.ratio(Double(engineAll), Double(all)),
            "capacityRatioToCReferenceOneThread": Self.ratio(Double(engineOne), Double(one)),
            "capacityTrialsCReference": reference.reduce(into: [String: Any]()) { trials, entry in
                trials["\(entry.key)"] = entry.value.trials.map {
                    ["users": $0.users, "realtimeFactor": $0.realtimeFactor] as [String: Any]
                }
            },
            "peakMemoryMBEngine": memory.engine,
            "peakMemoryMBCReference": memory.reference,
            "peakMemoryRatioToCReference": Self.ratio(memory.engine, memory.reference),
            "peakMemoryMBBeforeSearchEngine": peakMemoryMBBeforeSearch(engine),
            "peakMemoryMBBeforeSearchCReference": peakMemoryMBBeforeSearch(reference),
        ]
        if let lowLayer {
            figures["capacityUsersLowLayer"] = lowLayer.users
            figures["capacityRatioLowToHigh"] = Self.ratio(Double(lowLayer.users), Double(engineAll))
            figures["capacityTrialsLowLayer"] = lowLayer.trials.map {
                ["users": $0.users, "realtimeFactor": $0.realtimeFactor] as [String: Any]
            }
            figures["peakMemoryMBEngineLowLayer"] = lowLayer.peakMemoryMB
            if let allocations = lowLayer.allocationsPerTick {
                figures["capacityLowLayerAllocationsPerTick"] = allocations
            }
        }
        if let referenceLowLayer {
            figures["capacityUsersCReferenceLowLayer"] = referenceLowLayer.users
            figures["capacityRatioLowToHighCReference"] = Self.ratio(Double(referenceLowLayer.users), Double(all))
            figures["capacityTrialsCReferenceLowLayer"] = referenceLowLayer.trials.map {
                ["users": $0.users, "realtimeFactor": $0.realtimeFactor] as [String: Any]
            }
            if let lowLayer {
                figures["capacityRatioToCReferenceLowLayer"] = Self.ratio(
                    Double(lowLayer.users), Double(referenceLowLayer.users))
            }
        }
        if let ratio = interleavedRatio {
            figures["capacityInterleavedUsers"] = interleavedUsers
            figures["capacityInterleavedRatioToCReference"] = ratio.median
            figures["capacityInterleavedRealtimeFactors"] = interleaved.map {
                [
                    "engine": $0.engine, "cReference": $0.reference, "engineSerialShare": $0.engineSerialShare,
                    "cReferenceSerialShare": $0.referenceSerialShare,
                ] as [String: Any]
            }
            if let shares = interleavedSerialShares {
                figures["capacityInterleavedSerialShareEngine"] = shares.engine
                figures["capacityInterleavedSerialShareCReference"] = shares.reference
            }
        }
        if let ours = sameLoad[.engine], let c = sameLoad[.cReference] {
            figures["peakMemoryUsersSameLoad"] = ours.users
            figures["peakMemoryMBEngineSameLoad"] = ours.peakMemoryMB
            figures["peakMemoryMBCReferenceSameLoad"] = c.peakMemoryMB
            figures["peakMemoryRatioToCReferenceSameLoad"] = Self.ratio(ours.peakMemoryMB, c.peakMemoryMB)
        }
        return figures
    }

    /// The printed lines: users per thread count with ours/C, the low layer's users with
    /// low/high, the C reference's on the low layer with its low/high and ours/C there, then
    /// the peak memories.
    var lines: [String] {
        var lines: [String] = []
        for count in (threads == 1 ? [1] : [1, threads]) {
            let (ours, c) = (engine[count]?.users ?? 0, reference[count]?.users ?? 0)
            lines.append(
                "capacity, \(Self.threadsLabel(count)): engine \(ours) users, C reference \(c) users, ratio "
                    + "\(ours)/\(c) = " + String(format: "%.3f", Self.ratio(Double(ours), Double(c))))
        }
        if let ratio = interleavedRatio {
            lines.append(
                "capacity, \(Self.threadsLabel(threads)), \(interleaved.count) interleaved trials at the C "
                    + "reference's \(interleavedUsers) users (both sessions in one process, by turns): real-time "
                    + "factor ours/C median "
                    + String(format: "%.3f (%.3f to %.3f)", ratio.median, ratio.lowest, ratio.highest))
        }
        if let shares = interleavedSerialShares {
            lines.append(
                "capacity, interleaved trials: wall time outside the decode rounds, on the one thread that "
                    + "advances the session while the others wait (median): engine "
                    + String(format: "%.1f %%, C reference %.1f %%", shares.engine * 100, shares.reference * 100))
        }
        if let lowLayer {
            let high = engine[threads]?.users ?? 0
            lines.append(
                "capacity, low layer (320x180 canvases, \(Self.threadsLabel(threads))): \(lowLayer.users) users, "
                    + String(format: "%.2f", Self.ratio(Double(lowLayer.users), Double(high)))
                    + "× the high layer's \(high) users (each user also sending VP8 320x180 7.5 fps 100 kbit/s; "
                    + String(format: "peak memory %.1f MB", lowLayer.peakMemoryMB)
                    + (lowLayer.allocationsPerTick.map { String(format: "; %.2f allocations per tick", $0) } ?? "")
                    + ")")
        }
        if let referenceLowLayer {
            let (low, high) = (referenceLowLayer.users, reference[threads]?.users ?? 0)
            lines.append(
                "capacity, low layer, C reference (\(Self.threadsLabel(threads))): \(low) users, "
                    + String(format: "%.2f", Self.ratio(Double(low), Double(high)))
                    + "× its high layer's \(high) users; the engine's low layer against it: "
                    + "\(lowLayer?.users ?? 0)/\(low) = "
                    + String(format: "%.3f", Self.ratio(Double(lowLayer?.users ?? 0), Double(low))))
        }
        let memory = (engine: peakMemoryMB(engine), reference: peakMemoryMB(reference))
        lines.append(
            String(
                format: "peak memory, capacity search: engine %.1f MB, C reference %.1f MB, ratio %.3f "
                    + "(each process before its search, the sample media prepared: %.1f MB and %.1f MB)",
                memory.engine, memory.reference, Self.ratio(memory.engine, memory.reference),
                peakMemoryMBBeforeSearch(engine), peakMemoryMBBeforeSearch(reference)))
        if let ours = sameLoad[.engine], let c = sameLoad[.cReference] {
            lines.append(
                String(
                    format: "peak memory, one trial of %d users on %@ each in a fresh process: engine %.1f MB, "
                        + "C reference %.1f MB, ratio %.3f",
                    ours.users, Self.threadsLabel(threads), ours.peakMemoryMB, c.peakMemoryMB,
                    Self.ratio(ours.peakMemoryMB, c.peakMemoryMB)))
        }
        return lines
    }
}
