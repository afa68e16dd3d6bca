/// The media core of one local user: local audio and video encoded once, published in one
/// channel (and relayed to up to four more), and remote users subscribed in any number of
/// channels, their audio decoded and mixed, their video decoded and rendered into canvases
/// keyed by (channel, uid). Modelled on the Agora RTC SDK 3.x multi-channel API.
///
/// ## Driving it
/// The app (or a simulation) pushes local media (``pushAudio(_:)`` every 10 ms,
/// ``pushVideo(_:timestampMicroseconds:)`` per frame), pulls playout every 10 ms
/// (``pullPlayout(into:)-(UnsafeMutableBufferPointer<Int16>)``) and renders video when it wants fresh canvases (``renderVideo()``).
/// Time comes from the injected ``MediaClock``; nothing reads the system clock.
///
/// ## Threads
/// Control calls may come from any thread. The per-frame calls allocate nothing in steady state,
/// create no tasks and hop no actors. ``pullPlayout(into:)-(UnsafeMutableBufferPointer<Int16>)`` decodes the streams' audio and
/// ``renderVideo()`` their video on up to ``EngineConfiguration/decodeThreads`` threads,
/// independent streams in parallel.
///
/// Every piece of state has one owner the type system sees: the control plane (channels,
/// roles, mutes, relays, stream state machines) is one value in a lock; the local encoders, the
/// playout round's and the render round's state are each a value in their own lock; each remote
/// stream's receiver has its own inbox lock, so packets never wait for a decode, and decoding
/// never holds the control lock. Transport signalling and events are carried out after the
/// call that caused them releases its locks, in the order they were decided, by one thread at
/// a time (the calling thread, or one already doing it).
public final class MediaEngine: Sendable {
    /// The engine's settings.
    public let configuration: EngineConfiguration
    let transport: MediaTransport
    let clock: MediaClock
    /// The clock's origin in NTP time (microseconds since 1900).
    let ntpOriginMicroseconds: Int64
    /// SSRCs and RTP starting points, fixed for the engine's life.
    let rtp: RTPIdentity
    /// What the transport calls back.
    let endpoint: EngineEndpoint
    /// The control plane, a value in its lock: the engine is its one serial owner. Held briefly,
    /// never across a decode, a transport call or an app callback. Lock order: `local`,
    /// `playout` or `render` before `control`, and `control` before `routes`, the
    /// ``receiverStore`` and a receiver's inbox.
    let control: LockedValue<ControlPlane>
    /// The receive router: where each remote user's packets go, as the control plane last
    /// published it. Held to replace the snapshot and to find the receivers a control input
    /// names (after `control`), and by the packet path while it hands a packet to its receiver
    /// (before the receiver's own locks).
    let routes = LockedValue(ReceiveRoutes.empty)
    /// The app's channel objects by serial, for delivering events (held weakly: events of a
    /// channel the app dropped are dropped).
    let handles = LockedValue<[Int: WeakChannel]>([:])
    /// The local media's encoders and packetizers: the push calls take turns on it.
    let local: LockedValue<Publisher>
    /// The playout round's state: playout rounds take turns on it.
    let playout: LockedValue<PlayoutRound>
    /// The render round's state: render rounds take turns on it.
    let render: LockedValue<RenderRound>
    /// The canvases the app bound, which render rounds draw into. A leaf lock.
    let canvasStore = CanvasStore()
    /// The remote users' receivers, which the control plane's decisions start and stop and the
    /// receive router reaches. A leaf lock.
    let receiverStore: ReceiverStore
    /// The channels' own mixes, which playout rounds write and the app copies. A leaf lock.
    let channelMixFrames = ChannelMixFrames()
    /// The recordings running, which the rounds feed. A leaf lock.
    let recordings = RecordingStore()
    /// The local video's packet history and what answering NACKs needs. A leaf lock: nothing
    /// is called while it is held.
    let retransmitter = LockedValue(Retransmitter())
    /// What the subscribers' loss reports decided for the encoders. A leaf lock.
    let rateControl: LockedValue<LossBasedRateController>
    /// Samples in one playout frame, per channel.
    let playoutSamplesPerChannel: Int

    /// Threads that decode independent streams together: one pool for playout rounds and one for
    /// render rounds, so audio never waits for a video round.
    let audioWorkers: ParallelWorkers
    let videoWorkers: ParallelWorkers

    /// The wall time the engine's decode rounds (playout's and render's, each from its start to
    /// its last stream done, on the decode threads and the calling thread together) have taken so
    /// far on the threads that called them, in nanoseconds. What a call of ``pullPlayout(into:)``
    /// or ``renderVideo()`` takes besides is the engine's serial work: the control plane's
    /// decisions before and after the round, and the mix. For the benchmarks.
    package var decodeRoundNanoseconds: Int64 { audioWorkers.busyNanoseconds + videoWorkers.busyNanoseconds }

    /// Creates an engine attached to `transport`, running on `clock`.
    public init(transport: MediaTransport, clock: MediaClock, configuration: EngineConfiguration = .init()) throws {
        try configuration.audio.validate()
        guard configuration.audio.sampleRate == configuration.playoutSampleRate else {
            throw MediaError.invalidArgument(
                "local audio rate \(configuration.audio.sampleRate) Hz differs from the playout rate \(configuration.playoutSampleRate) Hz"
            )
        }
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        endpoint = EngineEndpoint(routes: routes, clock: clock)
        ntpOriginMicroseconds = clock.originUnixMicroseconds + NTPTime.unixEpochMicroseconds
        let mixer = try AudioMixer(
            sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount)
        let channelMixes = ChannelMixRound(
            sampleRate: mixer.sampleRate, channelCount: mixer.channelCount,
            samples: mixer.samplesPerChannel * mixer.channelCount)
        playout = LockedValue(
            PlayoutRound(
                mixer: LockOwned(mixer),
                decode: AudioDecodeRound(takesNacks: transport.feedbackProfile.audioRetransmission),
                channelMixes: channelMixes))
        playoutSamplesPerChannel = mixer.samplesPerChannel
        render = LockedValue(RenderRound(decode: VideoDecodeRound(canvases: canvasStore)))
        rtp = RTPIdentity(seed: configuration.randomSeed)
        receiverStore = ReceiverStore(
            configuration: configuration, feedbackSSRC: rtp.feedbackSSRC, feedbackProfile: transport.feedbackProfile,
            recordings: recordings)
        control = LockedValue(
            ControlPlane(configuration: configuration))
        local = LockedValue(Publisher(configuration: configuration, identity: rtp))
        rateControl = LockedValue(
            LossBasedRateController(
                startBitsPerSecond: configuration.videoBitrateBitsPerSecond,
                minimumBitsPerSecond: configuration.videoMinimumBitrateBitsPerSecond,
                maximumBitsPerSecond: configuration.videoBitrateBitsPerSecond,
                audioExpectedLossFloorPercent: transport.feedbackProfile.audioExpectedLossFloorPercent))
        audioWorkers = ParallelWorkers(threads: configuration.decodeThreads)
        videoWorkers = ParallelWorkers(threads: configuration.decodeThreads)
        endpoint.engine = self
    }

    /// An engine dropped without ``destroy()`` still leaves its channels and relays, so the other
    /// users see it go (the transport holds engines weakly).
    deinit {
        routes.withLock { $0 = .empty }  // the endpoint, which the transport may still hold, delivers nothing more
        let joined = control.withLock { $0.channels.filter(\.joined) }
        for state in joined {
            transport.leave(channelId: state.id, uid: state.uid)
            for (destination, uid) in zip(state.relayDestinations, state.relayUids) {
                transport.leave(channelId: destination.channelId, uid: uid)
            }
        }
    }

    /// Runs input `body` on the control plane at the clock's time, holding its lock.
    @inline(__always)
    func withControl<R>(_ body: (inout ControlPlane) throws -> R) rethrows -> R {
        let now = clock.nowMicroseconds
        return try control.withLock { plane in
            plane.now = max(plane.now, now)  // threads read the clock in one order, lock in another
            defer {
                if !plane.receiverChanges.isEmpty { receiverStore.apply(&plane.receiverChanges) }
                if plane.routesChanged { publishRoutes(&plane) }
            }
            return try body(&plane)
        }
    }

    /// Takes the audio that arrived for the users of `channelId` (only `uid`'s when given) into
    /// their receivers, so the arrival counts the control plane takes next are whole: inside
    /// the input that takes the counts and forgets the users (a leave, a user gone).
    func takeAudioArrivals(channelId: String, uid: UInt32? = nil) {
        let receivers = routes.withLock { table in
            uid.map { [table.receivers(channelId: channelId, uid: $0)] } ?? table.receivers(inChannel: channelId)
        }
        for receiver in receivers { receiver.audio?.takeArrivals() }
    }

    /// The receive router's snapshot now: inside a control input, the one that input's
    /// decisions so far were published as. Walked without the routes lock, which the packet
    /// path takes per packet.
    var routeSnapshot: ReceiveRoutes { routes.withLock { $0 } }

    /// Finds the receivers `jobs` name (``LipSyncJob``, ``StatisticsJob``) in the receive
    /// router. Inside the control input that named them, so they are the receivers named.
    func findReceivers(_ lipSync: inout [LipSyncJob], _ statistics: inout [StatisticsJob]) {
        guard !lipSync.isEmpty || !statistics.isEmpty else { return }
        let table = routeSnapshot
        for j in lipSync.indices {
            lipSync[j].receivers = table.receivers(channelId: lipSync[j].ref.id, uid: lipSync[j].uid)
        }
        for j in statistics.indices {
            statistics[j].receivers = table.receivers(channelId: statistics[j].ref.id, uid: statistics[j].uid)
        }
    }

    /// Replaces the receive router's snapshot with the control plane's routes now. Under the
    /// control lock, so snapshots are published in the order the decisions were made.
    private func publishRoutes(_ plane: inout ControlPlane) {
        plane.routesChanged = false
        let table = receiverStore.withReceivers { plane.makeRoutes($0) }
        routes.withLock { $0 = table }
    }

    // MARK: - Channels

    /// Creates a channel object for `channelId` (Agora's `createRtcChannel`).
    /// - Throws: ``EngineError/Code/invalidChannelName`` for a bad id, ``EngineError/Code/invalidArgument``
    ///   for an id already created, ``EngineError/Code/notReady`` after ``destroy()``.
    public func createChannel(_ channelId: String) throws -> MediaChannel {
        try ChannelID.validate(channelId)
        let ref = try withControl { try $0.createChannel(channelId) }
        let handle = MediaChannel(engine: self, ref: ref)
        handles.withLock { $0[ref.serial] = WeakChannel(handle) }
        return handle
    }

    /// Leaves and forgets channel `ref` (its leave events are delivered first).
    func destroyChannel(_ ref: ChannelRef) {
        withControl { plane in
            takeAudioArrivals(channelId: ref.id)
            plane.destroyChannel(ref)
        }
        channelMixFrames.remove(ref.serial)  // its mixer goes at the next playout round
        flushActions()
        _ = handles.withLock { $0.removeValue(forKey: ref.serial) }
    }

    /// Leaves and destroys every channel, releases all codecs and drops the frame observers
    /// (a playout or render round that began before may still call them once). Recordings
    /// running take nothing more; stop them to finish their files. Later calls are refused.
    /// The memory freed goes back to the kernel (glibc's `malloc_trim`), so a process that runs
    /// engines one after the other does not keep the peak of each.
    public func destroy() {
        for ref in control.withLock({ $0.channels.map(\.ref) }) {
            // Through the app's object when it still has one, so its event sequences end too.
            if let channel = handles.withLock({ $0[ref.serial]?.channel }) {
                channel.destroy()
            } else {
                destroyChannel(ref)
            }
        }
        control.withLock {
            $0.destroyed = true
            canvasStore.removeAll()
            recordings.close()
            $0.canvasSizes.removeAll()
            $0.observer = nil
            $0.videoObserver = nil
        }
        local.withLock { $0 = Publisher(configuration: configuration, identity: rtp) }
        // After a playout round under way (it may still publish a mix): no channel is left to mix.
        playout.withLock { $0.channelMixes.forgetAll(publishedTo: channelMixFrames) }
        FreedMemory.release()
    }

    /// The engine's counters.
    public var statistics: EngineStatistics {
        var statistics = control.withLock { $0.stats }
        // The live decoders counted now.
        (statistics.liveAudioDecoders, statistics.liveVideoDecoders) = (0, 0)
        for receivers in routes.withLock({ $0.receivers() }) {
            if receivers.audio?.isLive == true { statistics.liveAudioDecoders += 1 }
            if receivers.video?.isLive == true { statistics.liveVideoDecoders += 1 }
        }
        statistics.packetsDroppedUnknownKind = endpoint.packetsDroppedUnknownKind.load(ordering: .relaxed)
        retransmitter.withLock {
            statistics.packetsRetransmitted = $0.history.packetsRetransmitted
            statistics.bytesRetransmitted = $0.history.bytesRetransmitted
        }
        return statistics
    }

    /// Receives decoded audio before and after mixing (nil to stop). The observer is called on
    /// the thread that pulls playout, after its playout round, with no lock held: the remote
    /// frames are copies, the mix is the caller's output. Two threads pulling at once call it
    /// at once. Ignored after ``destroy()``.
    public func setAudioFrameObserver(_ observer: AudioFrameObserver?) {
        control.withLock { if !$0.destroyed { $0.observer = observer } }
    }

    /// Receives every remote picture decoded, at its own size (nil to stop). Called during
    /// ``renderVideo()`` on the decode threads (see ``VideoFrameObserver``); takes effect from
    /// the next render round. Ignored after ``destroy()``.
    public func setVideoFrameObserver(_ observer: VideoFrameObserver?) {
        control.withLock { if !$0.destroyed { $0.videoObserver = observer } }
    }

    // MARK: - Actions

    /// Carries out the control plane's queued actions in order, outside its lock. Only one thread
    /// does so at a time; actions queued meanwhile (by any thread, or by callbacks the transport
    /// makes) are carried out by it, after the ones before them.
    func flushActions() {
        var batch: [EngineAction] = []
        var continuing = false
        while control.withLock({ $0.takeActions(into: &batch, continuing: continuing) }) {
            for action in batch {
                switch action {
                case .transport(let command): command.run(on: transport)
                case .event(let ref, let event):
                    log(event, channelId: ref.id)
                    handles.withLock { $0[ref.serial]?.channel }?.deliver(event)
                case .warning(let message, let channelId):
                    configuration.logger.warning("\(message)", metadata: ["channel": "\(channelId)"])
                }
            }
            continuing = true
        }
    }

    var now: Int64 { clock.nowMicroseconds }

    /// The NTP time (microseconds since 1900) of clock time `microseconds`: what sender reports
    /// and reference times carry.
    func ntpMicroseconds(_ microseconds: Int64) -> Int64 { ntpOriginMicroseconds + microseconds }
}

/// A channel object held weakly.
struct WeakChannel {
    weak var channel: MediaChannel?
    init(_ channel: MediaChannel) { self.channel = channel }
}
