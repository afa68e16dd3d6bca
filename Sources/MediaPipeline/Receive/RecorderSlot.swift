import Synchronization

/// A receiver's stream recording, if one runs: set by the engine's recording control, read on
/// the receive paths for every packet or frame. Nearly always none runs, and finding that out
/// takes one atomic load, no lock.
final class RecorderSlot: Sendable {
    private let recorder = LockedValue<StreamRecorder?>(nil)
    /// Whether `recorder` holds one; written with its lock held, so it changes in the same
    /// order as the recorder does.
    private let holdsRecorder = Atomic<Bool>(false)

    init() {}

    /// Hands the stream to `recorder` from now on; nil stops handing it over.
    func set(_ recorder: StreamRecorder?) {
        self.recorder.withLock { current in
            current = recorder
            holdsRecorder.store(recorder != nil, ordering: .releasing)
        }
    }

    /// The recording running, if any.
    var current: StreamRecorder? {
        guard holdsRecorder.load(ordering: .acquiring) else { return nil }
        return recorder.withLock { $0 }
    }
}
