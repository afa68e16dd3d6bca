/// The recordings running (``MediaEngine/startRecording(channelId:uid:path:media:)`` and
/// ``MediaEngine/startChannelRecording(channelId:path:width:height:framesPerSecond:labels:videoSettings:audioSettings:)``):
/// media objects, owned by the media side. Stream recorders are attached to their stream's
/// receivers as the engine makes them (``ReceiverStore`` looks them up here); channel recorders are fed
/// by the playout and render rounds, which take them from here without the control lock.
///
/// A leaf lock: nothing is called while it is held, so it may be taken under any engine lock.
/// Starting and stopping are serialised by the caller (the engine does them under its control
/// lock, so a receiver made meanwhile sees the recorder or not, never half of a change).
final class RecordingStore: Sendable {
    private struct Running: Sendable {
        /// By stream and kind (one recording of both kinds is under both).
        var streams: [RecordingSlot: StreamRecorder] = [:]
        var channels: [ChannelRecorder] = []
        /// The engine is destroyed: rounds feed no channel recorder any more (the app still
        /// stops them, which writes their files whole).
        var closed = false
    }
    private let running = LockedValue(Running())

    /// The recorder of `slot`, if one runs. Asked per stream on every playout and render
    /// round: with nothing recorded, no key is hashed.
    func recorder(_ slot: RecordingSlot) -> StreamRecorder? {
        running.withLock { $0.streams.isEmpty ? nil : $0.streams[slot] }
    }

    /// The first of `slots` already recorded, if any.
    func firstTaken(_ slots: [RecordingSlot]) -> RecordingSlot? {
        running.withLock { running in slots.first { running.streams[$0] != nil } }
    }

    /// Records `slots` with `recorder`.
    func start(_ recorder: StreamRecorder, at slots: [RecordingSlot]) {
        running.withLock { for slot in slots { $0.streams[slot] = recorder } }
    }

    /// Stops the recording of `slots` to `path`: its recorder, or nil when none runs there.
    func stop(_ slots: [RecordingSlot], path: String) -> StreamRecorder? {
        running.withLock { running in
            guard let recorder = slots.first.flatMap({ running.streams[$0] }), recorder.path == path else {
                return nil
            }
            for slot in slots { running.streams[slot] = nil }
            return recorder
        }
    }

    /// Whether a stream recording runs.
    var recordsStreams: Bool { running.withLock { !$0.streams.isEmpty } }

    /// Whether channel `channelId` is recorded as a composite.
    func recordsChannel(_ channelId: String) -> Bool {
        running.withLock { $0.channels.contains { $0.channelId == channelId } }
    }

    /// Records a channel with `recorder`.
    func start(_ recorder: ChannelRecorder) { running.withLock { $0.channels.append(recorder) } }

    /// Stops the composite recording of `channelId`: its recorder, or nil when none runs.
    func stopChannel(_ channelId: String) -> ChannelRecorder? {
        running.withLock { running in
            running.channels.firstIndex { $0.channelId == channelId }.map { running.channels.remove(at: $0) }
        }
    }

    /// The channel recorders the rounds feed: none once the engine is destroyed. Allocates
    /// nothing (the list is shared, not copied).
    var channelRecorders: [ChannelRecorder] { running.withLock { $0.closed ? [] : $0.channels } }

    /// The engine is destroyed: rounds feed nothing more.
    func close() { running.withLock { $0.closed = true } }
}
