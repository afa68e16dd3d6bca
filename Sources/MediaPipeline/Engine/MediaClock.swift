import Glibc
import Synchronization

/// The time source a session runs on. Nothing in the engine reads the system clock: tests and
/// simulations inject a ``VirtualClock`` (deterministic, as fast as the CPU allows), live use a
/// ``WallClock``.
public protocol MediaClock: Sendable {
    /// Microseconds since an arbitrary origin; never decreases.
    var nowMicroseconds: Int64 { get }

    /// The wall-clock time of the clock's origin (its 0), in microseconds since 1970-01-01 UTC.
    /// Sender reports carry the origin plus ``nowMicroseconds`` as their NTP time (RFC 3550
    /// 6.4.1), so a receiver can place streams of senders in different processes, whose clocks
    /// are set by NTP, on one time line (a recording of several users).
    var originUnixMicroseconds: Int64 { get }
}

extension MediaClock {
    /// 1970-01-01 UTC, for clocks that do not say.
    public var originUnixMicroseconds: Int64 { 0 }
}

/// A clock that moves only when told to.
public final class VirtualClock: MediaClock {
    private let now: Atomic<Int64>

    public let originUnixMicroseconds: Int64

    /// A clock reading `startMicroseconds`, whose origin is the wall-clock time
    /// `originUnixMicroseconds` (default 2026-01-01 00:00 UTC, the same for every virtual clock,
    /// so runs repeat byte for byte).
    public init(startMicroseconds: Int64 = 0, originUnixMicroseconds: Int64 = 1_767_225_600_000_000) {
        now = Atomic(startMicroseconds)
        self.originUnixMicroseconds = originUnixMicroseconds
    }

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
    public let originUnixMicroseconds: Int64

    /// A clock starting at 0 now; its origin is the system's wall-clock time now.
    public init() {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        originUnixMicroseconds = Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1_000
    }

    public var nowMicroseconds: Int64 {
        let elapsed = ContinuousClock.now - origin
        return elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
    }
}
