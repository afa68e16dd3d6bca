/// One channel of a ``MediaEngine`` (Agora's `AgoraRtcChannel`): join it with media options,
/// set the role, mute, subscribe, relay, and receive its events.
///
/// Keep the object while you want the channel's events; ``destroy()`` leaves and forgets it.
public final class MediaChannel: Sendable {
    /// The channel's id.
    public let channelId: String
    let engine: MediaEngine
    /// The channel object's name in the engine's control plane.
    let ref: ChannelRef
    /// Who hears the channel's events.
    private struct Listeners {
        var handler: (@Sendable (ChannelEvent) -> Void)?
        var continuations: [Int: AsyncStream<ChannelEvent>.Continuation] = [:]
        var nextContinuation = 0
        /// The channel is destroyed: sequences asked for from now on end at once.
        var finished = false
    }
    private let listeners = LockedValue(Listeners())

    init(engine: MediaEngine, ref: ChannelRef) {
        self.engine = engine
        self.ref = ref
        channelId = ref.id
    }

    // MARK: - Events

    /// Calls `handler` with every event of this channel, in order, on the thread whose call
    /// caused it. The handler may call back into the engine.
    public func setEventHandler(_ handler: (@Sendable (ChannelEvent) -> Void)?) {
        listeners.withLock { $0.handler = handler }
    }

    /// The channel's events from now on, as an async sequence (buffered without limit). The
    /// sequence ends when the channel is destroyed (at once if it is already); dropping its
    /// iterator stops the buffering.
    public var events: AsyncStream<ChannelEvent> {
        let (stream, continuation) = AsyncStream<ChannelEvent>.makeStream()
        let id: Int? = listeners.withLock { listeners in
            guard !listeners.finished else { return nil }
            listeners.nextContinuation += 1
            listeners.continuations[listeners.nextContinuation] = continuation
            return listeners.nextContinuation
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every event sequence (the channel is destroyed).
    func finishEvents() {
        let all = listeners.withLock { listeners in
            listeners.finished = true
            return listeners.continuations.values
        }
        for continuation in all { continuation.finish() }
    }

    /// Hands `event` to the handler and the event sequences, without a lock held.
    func deliver(_ event: ChannelEvent) {
        let (handler, continuations) = listeners.withLock { ($0.handler, $0.continuations) }
        handler?(event)
        for continuation in continuations.values { continuation.yield(event) }
    }

    // MARK: - Membership

    /// Joins the channel (Agora's `joinChannelByToken`). `uid` 0 lets the transport choose;
    /// the uid in use is reported by ``ChannelEvent/joinSuccess(uid:elapsedMs:)`` and ``localUid``.
    /// - Throws: ``EngineError/Code/joinChannelRejected`` when already joined;
    ///   ``EngineError/Code/refused`` for an audience member with publish options, or when the
    ///   options would publish while another channel publishes.
    public func join(uid: UInt32 = 0, options: ChannelMediaOptions = .init()) throws {
        try engine.join(ref, uid: uid, token: nil, options: options)
    }

    /// Joins with `token` (Agora's `joinChannelByToken`), which the transport hands to a server
    /// that admits by token (``JanusTransport``: the room's pin). A refused token fails the join
    /// with ``EngineError/Code/invalidToken``; otherwise as ``join(uid:options:)``.
    public func join(token: String?, uid: UInt32 = 0, options: ChannelMediaOptions = .init()) throws {
        try engine.join(ref, uid: uid, token: token, options: options)
    }

    /// Leaves the channel; ``ChannelEvent/leave(_:)`` reports the session's statistics.
    /// - Throws: ``EngineError/Code/leaveChannelRejected`` when not joined.
    public func leave() throws { try engine.leave(ref) }

    /// Leaves if joined and removes the channel from the engine. Later calls are refused.
    public func destroy() {
        engine.destroyChannel(ref)
        finishEvents()
    }

    /// The local uid in this channel (0 before joining).
    public var localUid: UInt32 { engine.read(ref, \.uid, otherwise: 0) }
    /// Whether the local user is in the channel (false while the join awaits its answer).
    public var isJoined: Bool { engine.read(ref, { $0.joined && !$0.joining }, otherwise: false) }

    // MARK: - Role and publishing

    /// Sets the local role. A user who becomes broadcaster in a joined channel publishes its
    /// local audio and video there (unless muted), so this is refused while another channel
    /// publishes. Becoming audience stops publishing and any relay.
    public func setClientRole(_ role: ClientRole) throws { try engine.setRole(ref, role) }

    /// The local role.
    public var clientRole: ClientRole { engine.read(ref, \.role, otherwise: .broadcaster) }

    /// Stops (true) or resumes (false) publishing the local audio in this channel. Resuming is
    /// refused for an audience member, or while another channel publishes.
    public func muteLocalAudioStream(_ mute: Bool) throws { try engine.muteLocal(ref, .audio, mute) }

    /// Stops (true) or resumes (false) publishing the local video in this channel.
    public func muteLocalVideoStream(_ mute: Bool) throws { try engine.muteLocal(ref, .video, mute) }

    /// The media this channel publishes now.
    public var publishedMedia: PublishedMedia { engine.read(ref, \.publishedMedia, otherwise: []) }

    // MARK: - Subscribing

    /// Stops (true) or resumes (false) receiving `uid`'s audio. Applies to a user not present yet too.
    public func muteRemoteAudioStream(_ uid: UInt32, mute: Bool) throws {
        try engine.muteRemote(ref, uid, .audio, mute)
    }

    /// Stops (true) or resumes (false) receiving `uid`'s video.
    public func muteRemoteVideoStream(_ uid: UInt32, mute: Bool) throws {
        try engine.muteRemote(ref, uid, .video, mute)
    }

    /// Asks for `uid`'s high or low video stream (Agora's `setRemoteVideoStreamType`). A
    /// publisher without dual stream mode (``MediaEngine/enableDualStreamMode(_:low:)``) is
    /// received high whatever is asked; the switch takes effect at the asked stream's next
    /// keyframe, which the transport asks for. ``RemoteVideoStats/rxStreamType`` says which is
    /// received. Applies to a user not present yet too.
    /// - Throws: ``EngineError/Code/notReady`` once the channel is destroyed.
    public func setRemoteVideoStreamType(_ uid: UInt32, type: VideoStreamType) throws {
        try engine.input { try $0.setRemoteVideoStreamType(ref, uid, type) }
    }

    /// Asks for the high or low video stream of every user not named by
    /// ``setRemoteVideoStreamType(_:type:)`` (Agora's `setRemoteDefaultVideoStreamType`).
    /// - Throws: ``EngineError/Code/notReady`` once the channel is destroyed.
    public func setRemoteDefaultVideoStreamType(_ type: VideoStreamType) throws {
        try engine.input { try $0.setRemoteDefaultVideoStreamType(ref, type) }
    }

    /// Stops or resumes receiving all remote audio, including users who join later.
    public func muteAllRemoteAudioStreams(_ mute: Bool) throws { try engine.muteAll(ref, .audio, mute) }

    /// Stops or resumes receiving all remote video, including users who join later.
    public func muteAllRemoteVideoStreams(_ mute: Bool) throws { try engine.muteAll(ref, .video, mute) }

    /// Whether users who join from now on start with their audio muted (present users unchanged).
    public func setDefaultMuteAllRemoteAudioStreams(_ mute: Bool) { engine.setDefaultMute(ref, .audio, mute) }

    /// Whether users who join from now on start with their video muted.
    public func setDefaultMuteAllRemoteVideoStreams(_ mute: Bool) { engine.setDefaultMute(ref, .video, mute) }

    /// Sets `uid`'s playback volume, 0...400 (percent).
    public func adjustUserPlaybackSignalVolume(_ uid: UInt32, volume: Int) throws {
        try engine.setVolume(ref, uid, volume)
    }

    /// Remote broadcasters present, in the order they appeared.
    public var remoteUsers: [UInt32] { engine.read(ref, \.userOrder, otherwise: []) }

    /// The state of `uid`'s audio or video as last reported (STOPPED for unknown users).
    public func remoteState(_ uid: UInt32, _ kind: MediaKind) -> RemoteStreamState {
        engine.read(
            ref, { state in state.userIndex(uid).map { state.users[$0].trackers[kind].state } ?? .stopped },
            otherwise: .stopped)
    }

    /// `uid`'s audio statistics as last reported (every 2 s, also as
    /// ``ChannelEvent/remoteAudioStats(_:)``); nil before the first report.
    public func remoteAudioStats(_ uid: UInt32) -> RemoteAudioStats? {
        engine.read(ref, { state in state.userIndex(uid).flatMap { state.users[$0].lastAudioStats } }, otherwise: nil)
    }

    /// `uid`'s video statistics as last reported (every 2 s, also as
    /// ``ChannelEvent/remoteVideoStats(_:)``); nil before the first report.
    public func remoteVideoStats(_ uid: UInt32) -> RemoteVideoStats? {
        engine.read(ref, { state in state.userIndex(uid).flatMap { state.users[$0].lastVideoStats } }, otherwise: nil)
    }

    /// `uid`'s totals since its streams were subscribed (not per report interval); nil for a
    /// user not in the channel.
    public func remoteStreamTotals(_ uid: UInt32) -> RemoteStreamTotals? {
        // The control plane's counts, and the user's receivers as the router has them, under the
        // control lock (one user's, not a later one's); the receivers' own counts after it.
        let found: (RemoteStreamTotals, RemoteReceivers)? = engine.read(
            ref,
            { state in
                guard let u = state.userIndex(uid) else { return nil }
                let user = state.users[u]
                var totals = RemoteStreamTotals()
                totals.videoFramesDecoded = user.reception.videoFramesDecoded
                totals.videoFramesDropped = user.reception.videoFramesDropped
                totals.nacksSent = user.reception.nacksSent
                totals.keyframeRequestsSent = user.reception.keyframeRequestsSent
                return (totals, engine.routes.withLock { $0.receivers(channelId: ref.id, uid: uid) })
            }, otherwise: nil)
        guard let (counted, receivers) = found else { return nil }
        var totals = counted
        if let audio = receivers.audio {
            let counters = audio.counters
            totals.audioPacketsLost = audio.packetsLost
            totals.audioFrames = counters.ticks
            totals.audioFramesConcealed = counters.concealedTicks
            totals.audioFramesConcealedSilent = counters.silentConcealedTicks
            totals.audioPacketsDecoded = counters.packetsDecoded
            totals.audioPacketsRecovered = counters.packetsRecovered
        }
        receivers.video?.inbox.withLock { inbox in
            totals.videoPacketsLost = inbox.packetsLost
            if inbox.addedDelayFrames > 0 {
                totals.videoMeanAddedDelayMs =
                    Double(inbox.addedDelaySumMicroseconds) / Double(inbox.addedDelayFrames) / 1000
            }
        }
        return totals
    }

    // MARK: - Audio reports

    /// Reports the loudest speakers every `intervalMs` (≤ 0 stops; otherwise at least 10,
    /// rounded to 10 ms) through ``ChannelEvent/audioVolumeIndication(speakers:totalVolume:)``.
    public func enableAudioVolumeIndication(intervalMs: Int) throws {
        try engine.enableVolumeIndication(ref, intervalMs)
    }

    /// Keeps a mix of this channel's remote audio alone, next to the playout mix.
    public func enableChannelMix(_ enabled: Bool) throws { try engine.enableChannelMix(ref, enabled) }

    /// Copies the channel mix of the last playout tick (one 10 ms frame) into `output`: silence
    /// before the first tick since the mix was enabled, and while the channel is not joined.
    /// - Throws: ``EngineError/Code/notReady`` unless ``enableChannelMix(_:)`` is on.
    public func copyChannelMix(into output: UnsafeMutableBufferPointer<Int16>) throws {
        try engine.copyChannelMix(ref, into: output)
    }

    // MARK: - Relay

    /// Relays the stream this channel publishes to up to four other channels, where it appears as
    /// a broadcaster with each destination's uid (0: the destination assigns one). Reports the
    /// relay's states and events (``ChannelMediaRelayEvent/joinedDestinationChannel`` per
    /// destination, ``ChannelMediaRelayEvent/sentToDestinationChannel`` when media first goes).
    public func startChannelMediaRelay(_ destinations: [ChannelMediaRelayDestination]) throws {
        try engine.startRelay(ref, destinations)
    }

    /// Replaces the destinations of the running relay (Agora's `updateChannelMediaRelay`):
    /// destinations no longer listed are left, new ones joined, the others kept as they are.
    /// Reports ``ChannelMediaRelayEvent/updateDestinationChannel``, or
    /// ``ChannelMediaRelayEvent/updateDestinationChannelRefused`` (and throws) when a new
    /// destination refuses the join, keeping the old list.
    /// - Throws: ``EngineError/Code/invalidArgument`` for a bad list (as for starting),
    ///   ``EngineError/Code/notReady`` when no relay runs.
    public func updateChannelMediaRelay(_ destinations: [ChannelMediaRelayDestination]) throws {
        try engine.updateRelay(ref, destinations)
    }

    /// Stops sending media to every relay destination, staying in them (Agora 3.5.1's
    /// `pauseAllChannelMediaRelay`).
    /// - Throws: ``EngineError/Code/notReady`` when no relay runs, or it is paused already
    ///   (also reported as ``ChannelMediaRelayEvent/pauseSendPacketToDestinationChannelFailed``).
    public func pauseAllChannelMediaRelay() throws { try engine.pauseRelay(ref) }

    /// Sends media to the relay destinations again, starting with a keyframe (Agora 3.5.1's
    /// `resumeAllChannelMediaRelay`).
    /// - Throws: ``EngineError/Code/notReady`` when no paused relay runs (also reported as
    ///   ``ChannelMediaRelayEvent/resumeSendPacketToDestinationChannelFailed``).
    public func resumeAllChannelMediaRelay() throws { try engine.resumeRelay(ref) }

    /// Stops the relay.
    public func stopChannelMediaRelay() throws { try engine.stopRelay(ref) }

    /// Statistics of the session so far.
    /// Video frozen now counts up to now in ``ChannelStats/videoFrozenMs``.
    public var statistics: ChannelStats {
        let now = engine.now
        return engine.read(
            ref,
            { state in
                var stats = state.stats
                stats.videoFrozenMs = state.videoFrozenMs(now: now)
                return stats
            }, otherwise: ChannelStats())
    }
}
