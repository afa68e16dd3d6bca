#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A mutual-exclusion lock over a pthread mutex, for state that `@unchecked Sendable` classes
/// guard by hand (the shape of swift-nio's `NIOLock`). Not recursive.
final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value reached only while holding its lock (the shape of swift-nio's `NIOLockedValueBox`):
/// who owns the state is visible in its type. A pthread mutex underneath, so ThreadSanitizer
/// sees every hand-over (the standard library's `Mutex` is invisible to it on Linux). The value
/// and its mutex share one allocation, so taking the lock and reaching the value touch one object.
///
/// The value must be `Sendable`, as `NIOLockedValueBox` requires: a box shared between threads
/// hands its value to each of them in turn, so the compiler checks everything an engine shares
/// this way. A part that is not `Sendable` by itself is declared ``LockOwned`` where it is kept.
/// (`@unchecked` only because the storage is a `ManagedBuffer`, which cannot be `Sendable`.)
struct LockedValue<Value: Sendable>: @unchecked Sendable {
    private let storage: LockedStorage<Value>

    /// A box holding `value`.
    init(_ value: Value) { storage = LockedStorage.make(value) }

    /// Runs `body` on the value, holding the lock.
    @inline(__always)
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R { try storage.withLock(body) }
}

/// The value (header) and its mutex (the one element) of a ``LockedValue``, in one allocation.
final class LockedStorage<Value: Sendable>: ManagedBuffer<Value, pthread_mutex_t> {
    static func make(_ value: Value) -> LockedStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockedStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
        return storage
    }

    deinit {
        withUnsafeMutablePointerToElements { mutex in
            pthread_mutex_destroy(mutex)
            _ = mutex.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try withUnsafeMutablePointers { value, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
