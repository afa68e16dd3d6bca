import Foundation
import Testing

@Suite("pipebench bench: the capacity's C reference", .timeLimit(.minutes(2)))
struct CReferenceTests {
    /// A bounded capacity run of the release pipebench (two trials per search, from 2 users, half a
    /// second each: about 10 s on 2 cores): the engine's and the C reference's searches run in
    /// child processes and report users, ours/C and peak memory, then one trial each at the
    /// engine's capacity; and the low layer's search.
    @Test("the capacity section reports the C reference's users, ours/C, both peak memories and the low layer's users")
    func capacityAgainstCReference() throws {
        let releasePipebench = try Fixtures.releasePipebench()
        let result = try runTool(
            releasePipebench,
            [
                "bench", "--samples", Fixtures.samples, "--only", "capacity", "--capacity-seconds", "0.5",
                "--capacity-max-trials", "2", "--capacity-first-users", "2", "--threads", "2", "--json",
            ], timeLimitSeconds: 200)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // The first trial, 2 users, keeps up on any machine that runs the tests: both counts are positive.
        for (engineKey, referenceKey, ratioKey) in [
            ("sessionCapacityUsers", "capacityUsersCReference", "capacityRatioToCReference"),
            (
                "sessionCapacityUsersOneThread", "capacityUsersCReferenceOneThread",
                "capacityRatioToCReferenceOneThread"
            ),
        ] {
            let engineUsers = try #require(object[engineKey] as? Int, "\(engineKey)")
            let referenceUsers = try #require(object[referenceKey] as? Int, "\(referenceKey)")
            let ratio = try #require(object[ratioKey] as? Double, "\(ratioKey)")
            #expect(
                engineUsers >= 2 && referenceUsers >= 2,
                "\(engineKey) \(engineUsers), \(referenceKey) \(referenceUsers)")
            #expect(abs(ratio - Double(engineUsers) / Double(referenceUsers)) < 1e-9, "\(ratioKey) \(ratio)")
        }
        let trials = try #require(object["capacityTrialsCReference"] as? [String: [[String: Any]]])
        #expect(trials.keys.sorted() == ["1", "2"])
        #expect(trials.values.allSatisfy { !$0.isEmpty && $0.count <= 2 })
        let engineMemory = try #require(object["peakMemoryMBEngine"] as? Double)
        let referenceMemory = try #require(object["peakMemoryMBCReference"] as? Double)
        let memoryRatio = try #require(object["peakMemoryRatioToCReference"] as? Double)
        #expect(engineMemory > 0 && referenceMemory > 0)
        #expect(abs(memoryRatio - engineMemory / referenceMemory) < 1e-9)
        // Both again at the engine's capacity on all threads, one trial each, for memory at the same load.
        #expect(object["peakMemoryUsersSameLoad"] as? Int == object["sessionCapacityUsers"] as? Int)
        #expect((object["peakMemoryMBEngineSameLoad"] as? Double ?? 0) > 0)
        #expect((object["peakMemoryMBCReferenceSameLoad"] as? Double ?? 0) > 0)
        // The low layer's search, on all threads after the high one, from three times its
        // capacity: its users, low/high, its trials, peak memory and the low path's allocations.
        let high = try #require(object["sessionCapacityUsers"] as? Int)
        let low = try #require(object["capacityUsersLowLayer"] as? Int)
        let ratio = try #require(object["capacityRatioLowToHigh"] as? Double)
        #expect(high >= 2 && low > 0, "high \(high), low \(low)")
        #expect(abs(ratio - Double(low) / Double(high)) < 1e-9, "capacityRatioLowToHigh \(ratio)")
        let lowTrials = try #require(object["capacityTrialsLowLayer"] as? [[String: Any]])
        #expect(!lowTrials.isEmpty && lowTrials.count <= 2)
        #expect(
            lowTrials.first?["users"] as? Int == min(4096, 3 * high),
            "the first low trial: 3 × the high layer's capacity")
        #expect((object["peakMemoryMBEngineLowLayer"] as? Double ?? 0) > 0)
        let allocations = try #require(object["capacityLowLayerAllocationsPerTick"] as? Double)
        #expect(allocations == 0, "\(allocations) allocations per tick on the low layer")
    }
}
