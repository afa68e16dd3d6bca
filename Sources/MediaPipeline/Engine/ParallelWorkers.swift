import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Work that can be split into independent numbered jobs.
protocol ParallelJobSource: AnyObject {
    /// Runs job `index`. Jobs run concurrently; each index runs exactly once per round.
    func runJob(_ index: Int)
}

/// A fixed set of threads that run the jobs of one round together with the calling thread.
///
/// Unlike `DispatchQueue.concurrentPerform`, which boxes its closure on every call, a round
/// allocates nothing: the per-frame decode path stays allocation-free. Threads start on the
/// first round with more than one job and stop when the pool is released.
final class ParallelWorkers: @unchecked Sendable {
    /// Threads besides the caller.
    let extraThreads: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let startCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let doneCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let nextJob = Atomic<Int>(0)
    /// Held through a round: one round at a time uses the threads.
    private let roundLock = Lock()
    /// Wall time the rounds took so far on their calling threads, in nanoseconds.
    private let roundNanoseconds = Atomic<Int64>(0)
    // Guarded by `mutex`.
    private var threads: [pthread_t] = []
    private var generation = 0
    private var finished = 0
    private var stopping = false
    private var jobCount = 0
    private var source: ParallelJobSource?

    /// A pool that uses `threads` threads in all (the caller included).
    init(threads: Int) {
        extraThreads = max(0, threads - 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(startCondition, nil)
        pthread_cond_init(doneCondition, nil)
    }

    deinit {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(startCondition)
        let running = threads
        pthread_mutex_unlock(mutex)
        for thread in running { pthread_join(thread, nil) }
        pthread_cond_destroy(startCondition)
        pthread_cond_destroy(doneCondition)
        pthread_mutex_destroy(mutex)
        startCondition.deallocate()
        doneCondition.deallocate()
        mutex.deallocate()
    }

    /// Runs jobs `0..<count` of `source` on the pool and the calling thread; returns when all are
    /// done. Rounds from several threads run one after the other (a pool serves one at a time).
    func run(_ count: Int, on source: ParallelJobSource) {
        let start = ContinuousClock.now
        defer { roundNanoseconds.wrappingAdd(Self.nanoseconds(since: start), ordering: .relaxed) }
        guard extraThreads > 0, count > 1 else {
            for index in 0..<count { source.runJob(index) }
            return
        }
        roundLock.withLock { runRound(count, on: source) }
    }

    /// The wall time ``run(_:on:)`` has taken so far, summed over its calls (from the call to
    /// the round's last job done), in nanoseconds: what tells a caller's own work, outside the
    /// rounds, from the work the pool shares out.
    var busyNanoseconds: Int64 { roundNanoseconds.load(ordering: .relaxed) }

    private static func nanoseconds(since start: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    private func runRound(_ count: Int, on source: ParallelJobSource) {
        pthread_mutex_lock(mutex)
        if threads.isEmpty { startThreads() }
        self.source = source
        jobCount = count
        finished = 0
        nextJob.store(0, ordering: .sequentiallyConsistent)
        generation += 1
        pthread_cond_broadcast(startCondition)
        pthread_mutex_unlock(mutex)
        work(source, count)
        pthread_mutex_lock(mutex)
        while finished < threads.count { pthread_cond_wait(doneCondition, mutex) }
        self.source = nil
        pthread_mutex_unlock(mutex)
    }

    private func work(_ source: ParallelJobSource, _ count: Int) {
        while true {
            let index = nextJob.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < count else { return }
            source.runJob(index)
        }
    }

    /// Starts the threads; call with the mutex held.
    private func startThreads() {
        for _ in 0..<extraThreads {
            var thread = pthread_t()
            let context = Unmanaged.passUnretained(self).toOpaque()
            let status = pthread_create(
                &thread, nil,
                { context in
                    Unmanaged<ParallelWorkers>.fromOpaque(context!).takeUnretainedValue().workerLoop()
                    return nil
                }, context)
            if status == 0 { threads.append(thread) }
        }
    }

    private func workerLoop() {
        // Threads start during the first round, before its generation is published: 0 means
        // "no round seen yet", so that first round is taken too.
        var seen = 0
        pthread_mutex_lock(mutex)
        while true {
            while generation == seen && !stopping { pthread_cond_wait(startCondition, mutex) }
            if stopping { break }
            seen = generation
            let (source, count) = (self.source, jobCount)
            pthread_mutex_unlock(mutex)
            if let source { work(source, count) }
            pthread_mutex_lock(mutex)
            finished += 1
            if finished == threads.count { pthread_cond_signal(doneCondition) }
        }
        pthread_mutex_unlock(mutex)
    }
}

/// One result per job of a round, which each job writes at its own index from whichever thread
/// runs it. The slots are filled (and the storage grown) by one thread before the jobs run, and
/// read after they ran; a job writes through the storage's pointer, not through a Swift array
/// held in a shared class, whose every element write would be an access to the array as a whole.
final class JobSlots<Value>: @unchecked Sendable {
    private var storage: UnsafeMutablePointer<Value>
    private var capacity: Int
    /// Slots in use.
    private(set) var count = 0

    init() {
        capacity = 16
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    /// Adds a slot holding `value` (before the jobs run). Grows the storage when full, so a
    /// round allocates nothing once it has held as many jobs.
    func append(_ value: Value) {
        if count == capacity {
            let grown = UnsafeMutablePointer<Value>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: storage, count: count)
            storage.deallocate()
            (storage, capacity) = (grown, capacity * 2)
        }
        (storage + count).initialize(to: value)
        count += 1
    }

    /// Empties the slots, keeping the storage.
    func removeAll() {
        storage.deinitialize(count: count)
        count = 0
    }

    /// Slot `index`: read after the jobs ran, written by job `index` alone while they run.
    subscript(index: Int) -> Value {
        get {
            precondition(index < count, "job slot \(index) of \(count)")
            return storage[index]
        }
        set {
            precondition(index < count, "job slot \(index) of \(count)")
            storage[index] = newValue
        }
    }
}
