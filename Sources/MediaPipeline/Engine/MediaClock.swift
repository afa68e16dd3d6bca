import Synchronization

/// The time source a session runs on. Nothing in the engine reads the system clock: tests and
/// simulations inject a ``VirtualClock`` (deterministic, as fast as the CPU allows), live use a
/// ``WallClock``.
public protocol MediaClock: Sendable {
    /// Microseconds since an arbitrary origin; never decreases.
    var nowMicroseconds: Int64 { get }
}

/// A clock that moves only when told to.
public final class VirtualClock: MediaClock {
    private let now: Atomic<Int64>

    /// A clock reading `startMicroseconds`.
    public init(startMicroseconds: Int64 = 0) { now = Atomic(startMicroseconds) }

    public var nowMicroseconds: Int64 { now.load(ordering: .acquiring) }

    /// Moves the clock forward.
    /// - Precondition: `microseconds` ≥ 0.
    public func advance(byMicroseconds microseconds: Int64) {
        precondition(microseconds >= 0, "a clock never goes back")
        now.add(microseconds, ordering: .releasing)
    }
}

/// The monotonic system clock, for live sessions.
public struct WallClock: MediaClock {
    private let origin = ContinuousClock.now

    /// A clock starting at 0 now.
    public init() {}

    public var nowMicroseconds: Int64 {
        let elapsed = ContinuousClock.now - origin
        return elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
    }
}
