/// What one playout round owns: the final mixer and the channels' mixers, the round's decode,
/// lip-sync, statistics and receiver report jobs, the streams fading out and scratch lists.
/// Kept in a ``LockedValue``, so playout rounds run one at a time and nothing else touches these.
struct PlayoutRound: Sendable {
    /// Not thread-safe (one mixer per mixing thread): owned by the round's lock.
    let mixer: LockOwned<AudioMixer>
    let decode: AudioDecodeRound
    /// Inputs point into the receivers' frames, valid during the round only: owned by its lock.
    var mixInputs = LockOwned<[MixerInput]>([])
    /// The channels that keep a mix, mixed from `mixInputs` after the control lock is released.
    let channelMixes: ChannelMixRound
    /// The channel recordings running, taken with the round's streams.
    var channelRecorders: [ChannelRecorder] = []
    /// This round's streams: where they were (for finding them again) and their receivers.
    var streams: [StreamSlot<AudioReceiver>] = []
    /// The remote users whose lip sync the round decides.
    var lipSync: [LipSyncJob] = []
    /// The channels whose statistics the round reports.
    var statisticsChannels: [ChannelRef] = []
    /// Those channels' users with receivers, read during the round.
    var statistics: [StatisticsJob] = []
    /// Streams that stopped, playing one last frame at gain 0.
    var fading: [(StreamKey, AudioReceiver)] = []
    /// Batches of copies for the audio observer, reused (one per concurrent playout call).
    var spareObserved: [ObservedAudio] = []
    /// The remote users the round writes receiver reports to, after the control lock is released.
    var reportJobs: [ReceiverReportJob] = []
    var reportRecycler = ByteRecycler(slotCount: 256, capacity: 56)
}

/// One playout tick's decoded frames, copied for the app's audio observer so that it can run
/// after the playout round has released its lock. It belongs to the one pull that filled it,
/// and goes back to the round's spares afterwards, so steady state allocates nothing.
final class ObservedAudio: @unchecked Sendable {
    private(set) var samples: [Int16] = []
    private(set) var streams: [(key: StreamKey, range: Range<Int>, rtpTimestamp: UInt32?)] = []

    /// Empties the batch, keeping its storage.
    func reset() {
        samples.removeAll(keepingCapacity: true)
        streams.removeAll(keepingCapacity: true)
    }

    /// Adds a copy of one stream's frame.
    func append(_ frame: UnsafeBufferPointer<Int16>, stream key: StreamKey, rtpTimestamp: UInt32?) {
        let start = samples.count
        samples.append(contentsOf: frame)
        streams.append((key, start..<samples.count, rtpTimestamp))
    }

    /// Hands every stream's frame to `observer`.
    func deliver(to observer: AudioFrameObserver) {
        samples.withUnsafeBufferPointer { all in
            for (key, range, rtpTimestamp) in streams {
                observer.remoteAudioFrame(
                    UnsafeBufferPointer(rebasing: all[range]), stream: key, rtpTimestamp: rtpTimestamp)
            }
        }
    }
}

/// What one render round owns: its decode jobs and the streams it reports on. Kept in a
/// ``LockedValue``, so render rounds run one at a time.
struct RenderRound: Sendable {
    let decode: VideoDecodeRound
    var streams: [StreamSlot<VideoReceiver>] = []
}

/// Where a decode round found a stream (to find it again after decoding, when users may have
/// come and gone) and its receiver.
struct StreamSlot<Receiver: AnyObject & Sendable>: Sendable {
    let ref: ChannelRef
    let uid: UInt32
    /// The user's position in its channel when the round took it.
    let hint: (channel: Int, user: Int)
    /// The receiver as the control plane names it, and the receiver.
    let id: ReceiverID
    let receiver: Receiver
}

/// One playout tick's audio decoding: the NACK due and the next 10 ms of every subscribed
/// stream, one job per stream, run on the engine's decode threads, without the control lock
/// (the packets that arrived since the last tick are taken into the jitter buffer here too).
/// Each job touches only its own receiver and its own slot of ``nacks``; the results are read
/// afterwards from ``AudioReceiver/lastOutput`` and ``nacks``, in channel and join order.
final class AudioDecodeRound: ParallelJobSource, @unchecked Sendable {
    /// This round's receivers; reused between rounds so a tick allocates nothing.
    var receivers: [AudioReceiver] = []
    /// Per receiver, the NACK it wrote this round (when ``takesNacks``).
    let nacks = JobSlots<[UInt8]?>()
    /// Whether the receivers' NACKs are taken (the transport's far end resends audio).
    let takesNacks: Bool
    /// Gaps up to this long are concealed.
    var concealUpToMicroseconds: Int64 = 0
    /// The round's clock time.
    var now: Int64 = 0

    init(takesNacks: Bool) { self.takesNacks = takesNacks }

    /// Empties the round, keeping its storage.
    func reset() {
        receivers.removeAll(keepingCapacity: true)
        nacks.removeAll()
    }

    /// Adds a stream to decode.
    func append(_ receiver: AudioReceiver) {
        receivers.append(receiver)
        nacks.append(nil)
    }

    func runJob(_ index: Int) {
        let receiver = receivers[index]
        if takesNacks { nacks[index] = receiver.takeNack(now: now) }
        receiver.lastOutput = receiver.produce(now: now, concealUpToMicroseconds: concealUpToMicroseconds)
    }
}

/// One render call's video work, one job per stream, run on the engine's decode threads without
/// the control lock: the receiver gives up on packets whose wait is over and writes the NACK
/// due (``VideoReceiver/poll(now:)``), then decodes its queued frames and renders the newest
/// picture into its canvas. Each job touches only its own receiver and its own slot of
/// ``results``, read afterwards in channel and join order.
final class VideoDecodeRound: ParallelJobSource, @unchecked Sendable {
    /// This round's streams and their keys; reused between rounds.
    var jobs: [(receiver: VideoReceiver, key: StreamKey)] = []
    /// Per job, what its poll did and where its receiver stood on keyframes after decoding.
    let results = JobSlots<(progress: VideoReceiver.Progress, keyframe: (awaiting: Bool, wanted: UInt32?))>()
    /// The round's clock time.
    var now: Int64 = 0
    /// Who sees every picture decoded this round.
    var observer: VideoFrameObserver?
    /// Where the pictures go.
    let canvases: CanvasStore

    init(canvases: CanvasStore) { self.canvases = canvases }

    /// Empties the round, keeping its storage.
    func reset() {
        jobs.removeAll(keepingCapacity: true)
        results.removeAll()
    }

    /// Adds a stream.
    func append(_ receiver: VideoReceiver, key: StreamKey) {
        jobs.append((receiver, key))
        results.append((VideoReceiver.Progress(), (false, nil)))
    }

    func runJob(_ index: Int) {
        let job = jobs[index]
        let progress = job.receiver.poll(now: now)
        if progress.hasQueuedFrames {
            job.receiver.decodeBatch(canvases.canvas(job.key), now: now, observer: observer, key: job.key)
        }
        results[index] = (progress, job.receiver.keyframeState)
    }
}

/// One remote user a playout round writes a receiver report to: named by the control plane
/// (``MediaEngine/queueReceiverReports(_:_:)``), its receivers read afterwards without the control
/// lock.
struct ReceiverReportJob: Sendable {
    let channelId: String
    let localUid: UInt32
    let uid: UInt32
    let receivers: RemoteReceivers
}
