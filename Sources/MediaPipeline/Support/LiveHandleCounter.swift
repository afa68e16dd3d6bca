import Synchronization

/// Counts the C codec handles that are alive, so tests and benchmarks can check that every
/// handle is destroyed exactly once (a count that returns to zero after thousands of lifetimes).
public enum LiveCodecHandles {
    private static let counter = Atomic<Int>(0)

    /// How many Opus and VPX handles exist right now, in this process.
    public static var count: Int { counter.load(ordering: .relaxed) }

    /// The tally that codecs created in the current task also report to (for counting one
    /// test's handles while others run in parallel).
    @TaskLocal static var tally: HandleTally?

    /// Records a creation; returns the tally to report the destruction to.
    static func opened() -> HandleTally? {
        counter.add(1, ordering: .relaxed)
        tally?.live.add(1, ordering: .relaxed)
        tally?.created.add(1, ordering: .relaxed)
        return tally
    }

    /// Records a destruction.
    static func closed(_ tally: HandleTally?) {
        counter.subtract(1, ordering: .relaxed)
        tally?.live.subtract(1, ordering: .relaxed)
    }
}

/// Handles created while a tally was bound with `LiveCodecHandles.$tally.withValue`.
final class HandleTally: Sendable {
    /// Created and not yet destroyed.
    let live = Atomic<Int>(0)
    /// Created in all.
    let created = Atomic<Int>(0)
}
