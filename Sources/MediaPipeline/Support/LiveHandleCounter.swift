import Synchronization

/// Counts the C codec handles that are alive, so tests can check every handle is destroyed
/// exactly once (a count that returns to its start value after thousands of lifetimes).
public enum LiveCodecHandles {
    private static let counter = Atomic<Int>(0)

    /// How many Opus and VPX handles exist right now, in this process.
    public static var count: Int { counter.load(ordering: .relaxed) }

    static func opened() { counter.add(1, ordering: .relaxed) }
    static func closed() { counter.subtract(1, ordering: .relaxed) }
}
