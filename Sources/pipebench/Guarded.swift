import Foundation

/// A value shared between threads behind a lock that ThreadSanitizer sees (`NSLock`, a pthread
/// mutex). Synchronization's `Mutex` is not one on Linux: a contended lock is handed over by the
/// kernel (a priority-inheritance futex, in the uninstrumented library), so a sanitized run
/// reports the accesses on either side of such a hand-over as a race.
final class Guarded<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    /// Read and written only with `lock` held.
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` on the value with the lock held.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
