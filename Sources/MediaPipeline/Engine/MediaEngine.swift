/// The media core of one local user: local audio and video encoded once, published in one
/// channel (and relayed to up to four more), and remote users subscribed in any number of
/// channels, their audio decoded and mixed, their video decoded and rendered into canvases
/// keyed by (channel, uid). Modelled on the Agora RTC SDK 3.x multi-channel API.
///
/// ## Driving it
/// The app (or a simulation) pushes local media (``pushAudio(_:)`` every 10 ms,
/// ``pushVideo(_:timestampMicroseconds:)`` per frame), pulls playout every 10 ms
/// (``pullPlayout(into:)``) and renders video when it wants fresh canvases (``renderVideo()``).
/// Time comes from the injected ``MediaClock``; nothing reads the system clock.
///
/// ## Threads
/// Control calls may come from any thread. The per-frame calls allocate nothing in steady state,
/// create no tasks and hop no actors. ``pullPlayout(into:)`` decodes the streams' audio and
/// ``renderVideo()`` their video on up to ``EngineConfiguration/decodeThreads`` threads,
/// independent streams in parallel. Transport signalling and events are carried out after the
/// call that caused them releases its locks, in the order they were decided, by one thread at
/// a time (the calling thread, or one already doing it).
public final class MediaEngine: @unchecked Sendable {
    /// The engine's settings.
    public let configuration: EngineConfiguration
    let transport: MediaTransport
    let clock: MediaClock
    /// SSRCs and RTP starting points, fixed for the engine's life.
    let rtp: RTPIdentity
    /// What the transport calls back.
    let endpoint = EngineEndpoint()
    /// The control lock: channels, users, their stream state machines, canvases bound, counters
    /// and the action queue. Held briefly, never across a decode, a transport call or an app
    /// callback. Lock order: `publishLock`, `playoutLock` or `renderLock` before `lock`, and
    /// `lock` before a receiver's inbox.
    let lock = Lock()
    /// Serialises the local-media calls (push*) so their scratch state needs no other lock.
    let publishLock = Lock()
    /// Serialises playout rounds: the audio decoders, mixer inputs and fading streams are theirs.
    let playoutLock = Lock()
    /// Serialises render rounds: the video decoders and their job lists are theirs.
    let renderLock = Lock()

    // Guarded by `lock`.
    var channels: [String: ChannelState] = [:]
    var channelOrder: [String] = []
    var canvases: [StreamKey: CanvasBuffer] = [:]
    var destroyed = false
    /// Transport calls and events decided but not yet carried out, in decision order.
    var actions: [EngineAction] = []
    /// True while a thread carries out ``actions``.
    var delivering = false
    var stats = EngineStatistics()
    var observer: AudioFrameObserver?
    /// Receivers playing one last frame at gain 0 before release.
    var fadingOut: [(StreamKey, AudioReceiver)] = []
    /// A subscriber asked for a keyframe; the next local picture is forced to one.
    var keyframePending = false
    var lastForcedKeyframe: Int64?
    /// Subscription decisions not yet told to the transport: (channel, publisher, kind, subscribed).
    var subscriptionChanges: [(state: ChannelState, publisher: UInt32, kind: MediaKind, subscribed: Bool)] = []
    /// Channel mixes are gathered here (with the lock held: channels' mixers are guarded by it).
    var channelMixInputs: [MixerInput] = []

    // Owned by the playout round (`playoutLock`).
    let playoutMixer: AudioMixer
    var mixInputs: [MixerInput] = []
    let audioRound = AudioDecodeRound()
    var audioReports: [(state: ChannelState, user: RemoteUser, receiver: AudioReceiver)] = []
    var fadingRound: [(StreamKey, AudioReceiver)] = []
    var observedFrames: [(StreamKey, UnsafeBufferPointer<Int16>)] = []
    /// Receiver reports written in a playout round, sent after the control lock is released.
    var reportOutbox: [(bytes: [UInt8], channelId: String, from: UInt32, to: UInt32)] = []
    let reportRecycler = ByteRecycler(slotCount: 256, capacity: 56)

    // Owned by the render round (`renderLock`).
    let videoRound = VideoDecodeRound()
    var videoReports: [(state: ChannelState, user: RemoteUser, receiver: VideoReceiver)] = []

    /// Threads that decode independent streams together: one pool for playout rounds and one for
    /// render rounds, so audio never waits for a video round.
    let audioWorkers: ParallelWorkers
    let videoWorkers: ParallelWorkers

    // Guarded by `publishLock`.
    var publisher: Publisher

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
        playoutMixer = try AudioMixer(
            sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount)
        rtp = RTPIdentity(seed: configuration.randomSeed)
        publisher = Publisher(configuration: configuration, identity: rtp)
        audioWorkers = ParallelWorkers(threads: configuration.decodeThreads)
        videoWorkers = ParallelWorkers(threads: configuration.decodeThreads)
        endpoint.engine = self
    }

    /// An engine dropped without ``destroy()`` still leaves its channels and relays, so the other
    /// users see it go (the transport holds engines weakly).
    deinit {
        for state in channels.values where state.joined {
            transport.leave(channelId: state.id, uid: state.uid)
            for (destination, uid) in zip(state.relayDestinations, state.relayUids) {
                transport.leave(channelId: destination.channelId, uid: uid)
            }
        }
    }

    // MARK: - Channels

    /// Creates a channel object for `channelId` (Agora's `createRtcChannel`).
    /// - Throws: ``EngineError/Code/invalidChannelName`` for a bad id, ``EngineError/Code/invalidArgument``
    ///   for an id already created, ``EngineError/Code/notReady`` after ``destroy()``.
    public func createChannel(_ channelId: String) throws -> MediaChannel {
        try ChannelID.validate(channelId)
        return try lock.withLock {
            guard !destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            guard channels[channelId] == nil else {
                throw EngineError(.invalidArgument, "channel '\(channelId)' already exists in this engine")
            }
            let state = ChannelState(id: channelId)
            let handle = MediaChannel(engine: self, state: state)
            state.handle = handle
            channels[channelId] = state
            channelOrder.append(channelId)
            return handle
        }
    }

    /// Leaves and destroys every channel and releases all codecs. Later calls are refused.
    public func destroy() {
        let all = lock.withLock { channelOrder.compactMap { channels[$0]?.handle } }
        for channel in all { channel.destroy() }
        lock.withLock {
            destroyed = true
            canvases.removeAll()
        }
        publishLock.withLock { publisher = Publisher(configuration: configuration, identity: rtp) }
    }

    /// The engine's counters.
    public var statistics: EngineStatistics {
        lock.withLock {
            var copy = stats
            copy.liveAudioDecoders = 0
            copy.liveVideoDecoders = 0
            for state in channels.values {
                for user in state.users.values {
                    if user.audio?.isLive == true { copy.liveAudioDecoders += 1 }
                    if user.video?.isLive == true { copy.liveVideoDecoders += 1 }
                }
            }
            return copy
        }
    }

    /// Receives decoded audio before and after mixing (nil to stop).
    public func setAudioFrameObserver(_ observer: AudioFrameObserver?) { lock.withLock { self.observer = observer } }

    // MARK: - Events

    /// Queues `event` for `channel`; call with the lock held. Events of a channel that is still
    /// joining wait until its join success has been reported.
    func emit(_ channel: ChannelState, _ event: ChannelEvent) {
        if channel.joining { channel.deferred.append(event) } else { actions.append(.event(channel, event)) }
    }

    /// Reports a connection state change of `state` at once (not held back while joining);
    /// call with the lock held.
    func setConnection(_ state: ChannelState, _ connection: ConnectionState, _ reason: ConnectionChangedReason) {
        guard state.connection != connection else { return }
        state.connection = connection
        actions.append(.event(state, .connectionStateChanged(state: connection, reason: reason)))
    }

    /// Queues a transport call; call with the lock held.
    func signal(_ command: TransportCommand) { actions.append(.transport(command)) }

    /// Carries out the queued actions in order, outside the lock. Only one thread does so at a
    /// time; actions queued meanwhile (by any thread, or by callbacks the transport makes) are
    /// carried out by it, after the ones before them.
    func flushActions() {
        var batch: [EngineAction]? = lock.withLock {
            queueSubscriptionChanges()
            guard !delivering, !actions.isEmpty else { return nil }
            delivering = true
            defer { actions.removeAll(keepingCapacity: true) }
            return actions
        }
        while let current = batch {
            for action in current {
                switch action {
                case .transport(let command): command.run(on: transport)
                case .event(let state, let event):
                    log(event, channelId: state.id)
                    state.handle?.deliver(event)
                case .warning(let message, let channelId):
                    configuration.logger.warning("\(message)", metadata: ["channel": "\(channelId)"])
                }
            }
            batch = lock.withLock {
                queueSubscriptionChanges()
                guard !actions.isEmpty else {
                    delivering = false
                    return nil
                }
                defer { actions.removeAll(keepingCapacity: true) }
                return actions
            }
        }
    }

    /// Queues the subscription decisions of joined channels for the transport, so unsubscribed
    /// streams are not even forwarded; those of a channel still joining wait for its uid. Call
    /// with the lock held.
    private func queueSubscriptionChanges() {
        guard !subscriptionChanges.isEmpty else { return }
        var waiting: [(state: ChannelState, publisher: UInt32, kind: MediaKind, subscribed: Bool)] = []
        for change in subscriptionChanges {
            if change.state.joining {
                waiting.append(change)
            } else if change.state.joined {
                signal(
                    .setSubscribed(
                        change.subscribed, channelId: change.state.id, subscriber: change.state.uid,
                        publisher: change.publisher, kind: change.kind))
            }
        }
        subscriptionChanges = waiting
    }

    var now: Int64 { clock.nowMicroseconds }

    /// The channel that publishes now, if any (at most one does).
    func publishingChannel() -> ChannelState? {
        for id in channelOrder { if let state = channels[id], !state.publishedMedia.isEmpty { return state } }
        return nil
    }

    /// Refuses (ERR_REFUSED) a change that would make `state` publish `media` while another channel publishes.
    func checkSinglePublisher(_ state: ChannelState, wouldPublish media: PublishedMedia) throws {
        guard !media.isEmpty, let other = publishingChannel(), other !== state else { return }
        throw EngineError(
            .refused,
            "channel '\(state.id)' cannot publish while channel '\(other.id)' publishes: one publishing channel at a time"
        )
    }
}
