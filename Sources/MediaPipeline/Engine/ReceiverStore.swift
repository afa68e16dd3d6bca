import Logging

/// The remote users' receivers, keyed by (channel, uid): the receive pipelines (jitter buffers,
/// decoders, their recordings' taps), media objects owned by the media side. The control plane
/// decides when a user's receiver of a kind runs (``ReceiverChange``) and names it
/// (``ReceiverID``); the engine carries the changes out here, inside the control input that made
/// them, and then publishes the receive router (``ReceiveRoutes``) built from these receivers.
/// Rounds, reports and the packet path find the receivers through that router.
///
/// A leaf lock: nothing is called while it is held, so it may be taken under any engine lock.
/// Changes are serialised by the caller (the engine makes them under its control lock, in
/// decision order).
final class ReceiverStore: Sendable {
    private struct State: Sendable {
        var receivers: [StreamKey: RemoteReceivers] = [:]
        /// Audio receivers stopped, playing one last frame at gain 0 (taken by the next playout
        /// round).
        var fadingOut: [(StreamKey, AudioReceiver)] = []
    }
    private let state = LockedValue(State())

    // What every receiver is made with.
    private let configuration: EngineConfiguration
    private let feedbackSSRC: UInt32
    private let feedbackProfile: TransportFeedbackProfile
    private let recordings: RecordingStore

    /// A store whose receivers play out as `configuration` says, send feedback as
    /// `feedbackSSRC` to a far end that answers as `feedbackProfile` says, and record into
    /// `recordings` when a recording of their stream runs.
    init(
        configuration: EngineConfiguration, feedbackSSRC: UInt32, feedbackProfile: TransportFeedbackProfile,
        recordings: RecordingStore
    ) {
        self.configuration = configuration
        self.feedbackSSRC = feedbackSSRC
        self.feedbackProfile = feedbackProfile
        self.recordings = recordings
    }

    /// Carries out `changes` in order, and empties the list (keeping its storage). Receivers are
    /// made and released outside the store's lock. An audio receiver whose decoder cannot be
    /// made is logged and stays absent: its packets are counted as not received.
    func apply(_ changes: inout [ReceiverChange]) {
        for change in changes {
            switch change {
            case .start(let key, .audio, let tally):
                var receiver: AudioReceiver?
                do {
                    receiver = try AudioReceiver(
                        sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount,
                        retransmission: feedbackProfile.audioRetransmission, feedbackSSRC: feedbackSSRC,
                        codecs: configuration.codecs, tally: tally)
                } catch {
                    configuration.logger.error(
                        "user \(key.uid) audio: no decoder: \(error)", metadata: ["channel": "\(key.channelId)"])
                }
                let recording = recordings.recorder(RecordingSlot(key, .audio))
                receiver?.recorder.set(recording)
                // A new receiver for each start (the control plane stops the last one first).
                let replaced = state.withLock { state in
                    defer { state.receivers[key, default: RemoteReceivers()].audio = receiver }
                    return state.receivers[key]?.audio
                }
                replaced?.release()
            case .start(let key, .video, _):
                let receiver = VideoReceiver(
                    threads: 1, reorderWaitMicroseconds: Int64(configuration.videoReorderWaitMs) * 1000,
                    retransmission: configuration.videoRetransmission, feedbackSSRC: feedbackSSRC,
                    repeatedNackIgnoredMicroseconds: feedbackProfile.repeatedNackIgnoredMicroseconds,
                    codecs: configuration.codecs)
                let recording = recordings.recorder(RecordingSlot(key, .video))
                receiver.recorder.set(recording)
                let replaced = state.withLock { state in
                    defer { state.receivers[key, default: RemoteReceivers()].video = receiver }
                    return state.receivers[key]?.video
                }
                replaced?.release()
            case .stop(let key, let kind, let fadeOut):
                stop(key, kind, fadeOut: fadeOut)
            case .keyframeRequested(let key):
                receivers(key).video?.keyframeRequested()
            }
        }
        changes.removeAll(keepingCapacity: true)
    }

    /// The receivers of `key`'s user (none when it receives nothing).
    func receivers(_ key: StreamKey) -> RemoteReceivers {
        state.withLock { $0.receivers[key] } ?? RemoteReceivers()
    }

    /// Calls `body` with a lookup of every user's receivers, under the store's lock: for
    /// building the receive router.
    func withReceivers<R>(_ body: ((StreamKey) -> RemoteReceivers) -> R) -> R {
        state.withLock { state in body { state.receivers[$0] ?? RemoteReceivers() } }
    }

    /// Moves the audio receivers stopped since the last call to `fading` (for their last
    /// frame at gain 0). Allocates nothing once `fading` has grown.
    func takeFadingOut(into fading: inout [(StreamKey, AudioReceiver)]) {
        state.withLock { state in
            guard !state.fadingOut.isEmpty else { return }
            fading.append(contentsOf: state.fadingOut)
            state.fadingOut.removeAll(keepingCapacity: true)
        }
    }

    /// Removes `key`'s receiver of `kind`: a video one, or an audio one without `fadeOut`, is
    /// released at once; an audio one with `fadeOut` waits for the playout round's last frame.
    private func stop(_ key: StreamKey, _ kind: MediaKind, fadeOut: Bool) {
        let released: RemoteReceivers = state.withLock { state in
            guard var receivers = state.receivers[key] else { return RemoteReceivers() }
            var released = RemoteReceivers()
            if kind == .audio {
                if fadeOut, let audio = receivers.audio {
                    state.fadingOut.append((key, audio))
                } else {
                    released.audio = receivers.audio
                }
                receivers.audio = nil
            } else {
                released.video = receivers.video
                receivers.video = nil
            }
            state.receivers[key] = receivers.isEmpty ? nil : receivers
            return released
        }
        released.audio?.release()
        released.video?.release()
    }
}
