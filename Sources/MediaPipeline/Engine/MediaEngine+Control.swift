extension MediaEngine {
    private func checkUsable(_ state: ChannelState) throws {
        guard !destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
        guard !state.destroyed else { throw EngineError(.notReady, "channel '\(state.id)' is destroyed") }
    }

    // MARK: - Join and leave

    /// Starts joining: returns at once; the transport's answer arrives in
    /// ``joinAnswered(_:attempt:result:)``, at once or later.
    func join(_ state: ChannelState, uid: UInt32, options: ChannelMediaOptions) throws {
        let (role, media, attempt): (ClientRole, PublishedMedia, Int) = try lock.withLock {
            try checkUsable(state)
            guard !state.joined && !state.joining else {
                throw EngineError(.joinChannelRejected, "already in channel '\(state.id)' as uid \(state.uid)")
            }
            if state.role == .audience && (options.publishLocalAudio || options.publishLocalVideo) {
                throw EngineError(
                    .refused,
                    "an audience member cannot publish: join channel '\(state.id)' with publishLocalAudio and publishLocalVideo off, or as broadcaster"
                )
            }
            let media = state.wouldPublish(options: options, role: state.role)
            try checkSinglePublisher(state, wouldPublish: media)
            state.options = options
            state.joining = true
            state.joined = true
            state.joinedAt = now
            state.stats = ChannelStats()
            state.publish = PerMedia(.idle)
            state.joinAttempt += 1
            setConnection(state, .connecting, .connecting)
            return (state.role, media, state.joinAttempt)
        }
        flushActions()
        let (channelId, identity) = (state.id, ObjectIdentifier(state))
        transport.join(
            channelId: channelId, uid: uid, role: role, media: media, receivesMedia: true, endpoint: endpoint
        ) { [weak self] result in
            self?.joinAnswered(channelId, identity, attempt: attempt, result: result)
        }
    }

    /// The channel object `identity` under `channelId`, if it still exists. Call with the lock held.
    func channel(_ channelId: String, _ identity: ObjectIdentifier) -> ChannelState? {
        channels[channelId].flatMap { ObjectIdentifier($0) == identity ? $0 : nil }
    }

    /// The transport answered join attempt `attempt` of channel `identity`.
    private func joinAnswered(
        _ channelId: String, _ identity: ObjectIdentifier, attempt: Int, result: Result<UInt32, EngineError>
    ) {
        lock.withLock {
            guard let state = channel(channelId, identity), state.joining, state.joinAttempt == attempt,
                !state.destroyed
            else {
                // Left (or destroyed) before the answer: a membership granted meanwhile is given back.
                if case .success(let uid) = result { signal(.leave(channelId: channelId, uid: uid)) }
                return
            }
            state.joining = false
            switch result {
            case .success(let assigned):
                state.uid = assigned
                setConnection(state, .connected, .joinSuccess)
                actions.append(.event(state, .joinSuccess(uid: assigned, elapsedMs: state.elapsedMs(now))))
                for event in state.deferred { actions.append(.event(state, event)) }
                state.deferred.removeAll()
                refreshPublishState(state)
            case .failure(let error):
                forgetJoin(state)
                setConnection(state, .failed, .joinFailed)
                actions.append(.event(state, .error(code: error.code, message: error.message)))
            }
        }
        flushActions()
    }

    /// Undoes a join that did not happen (refused, or left before the answer): the users learnt
    /// meanwhile, their receivers and the events held back go. Call with the lock held.
    private func forgetJoin(_ state: ChannelState) {
        state.joining = false
        state.joined = false
        state.deferred.removeAll()
        for user in state.users.values { releaseReceivers(user) }
        state.users.removeAll()
        state.userOrder.removeAll()
        state.publish = PerMedia(.idle)
    }

    func leave(_ state: ChannelState) throws {
        try lock.withLock {
            guard !state.destroyed, state.joined else {
                throw EngineError(.leaveChannelRejected, "not in channel '\(state.id)'")
            }
            if state.joining {
                // Left before the transport answered: the answer will be ignored (a granted
                // membership given back), and nothing was reported but the connecting state.
                state.joinAttempt += 1
                forgetJoin(state)
                setConnection(state, .disconnected, .leaveChannel)
                return
            }
            relayTeardown(state)
            for uid in state.userOrder {
                if let user = state.users[uid] { releaseReceivers(user) }
            }
            state.stats.durationMs = state.elapsedMs(now)
            for user in state.users.values {
                if let since = user.videoFrozenSince { state.stats.videoFrozenMs += (now - since) / 1000 }
            }
            state.stats.userCount = state.users.count
            state.users.removeAll()
            state.userOrder.removeAll()
            state.joined = false
            state.publish = PerMedia(.idle)
            emit(state, .leave(state.stats))
            setConnection(state, .disconnected, .leaveChannel)
            signal(.leave(channelId: state.id, uid: state.uid))
            state.uid = 0
        }
        flushActions()
    }

    func destroyChannel(_ state: ChannelState) {
        if lock.withLock({ state.joined && !state.destroyed }) { try? leave(state) }
        lock.withLock {
            guard !state.destroyed else { return }
            state.destroyed = true
            channels[state.id] = nil
            channelOrder.removeAll { $0 == state.id }
        }
    }

    // MARK: - Role and local mutes

    func setRole(_ state: ChannelState, _ role: ClientRole) throws {
        try lock.withLock {
            try checkUsable(state)
            let old = state.role
            guard old != role else { return }
            guard state.joined && !state.joining else {
                state.role = role
                return
            }
            if role == .broadcaster {
                // A new broadcaster publishes its local media (as the SDK does), so this is a
                // publishing action whatever the join options were.
                try checkSinglePublisher(state, wouldPublish: [.audio, .video])
                state.options.publishLocalAudio = true
                state.options.publishLocalVideo = true
            }
            if role == .audience { relayTeardown(state) }
            state.role = role
            emit(state, .clientRoleChanged(old: old, new: role))
            refreshPublishState(state)
            let (channelId, uid, media) = (state.id, state.uid, state.publishedMedia)
            // A new broadcaster is announced with its media, so set the media first; an
            // audience member's media is nobody's business, so demote first.
            if role == .broadcaster {
                signal(.setMedia(channelId: channelId, uid: uid, media: media))
                signal(.setRole(channelId: channelId, uid: uid, role: role))
            } else {
                signal(.setRole(channelId: channelId, uid: uid, role: role))
                signal(.setMedia(channelId: channelId, uid: uid, media: media))
            }
        }
        flushActions()
    }

    func muteLocal(_ state: ChannelState, _ kind: MediaKind, _ mute: Bool) throws {
        try lock.withLock {
            try checkUsable(state)
            var options = state.options
            if !mute {
                if state.joined && state.role == .audience {
                    throw EngineError(
                        .refused,
                        "an audience member cannot publish \(kind) in channel '\(state.id)': become broadcaster first")
                }
                options.setPublishes(kind)
                if state.joined {
                    var media = state.wouldPublish(options: options, role: state.role)
                    media.insert(PublishedMedia(kind))
                    try checkSinglePublisher(state, wouldPublish: media)
                }
            }
            state.options = options
            state.localMuted[kind] = mute
            guard state.joined && !state.joining else { return }
            refreshPublishState(state)
            announceMedia(state)
        }
        flushActions()
    }

    /// Announces the channel's media in it and in its relay destinations; call with the lock held.
    func announceMedia(_ state: ChannelState) {
        let media = state.publishedMedia
        signal(.setMedia(channelId: state.id, uid: state.uid, media: media))
        if state.relayState == .running {
            for (destination, relayUid) in zip(state.relayDestinations, state.relayUids) {
                signal(.setMedia(channelId: destination.channelId, uid: relayUid, media: media))
            }
        }
    }

    /// Reports publish-state changes after the channel's media changed; call with the lock held.
    func refreshPublishState(_ state: ChannelState) {
        let media = state.publishedMedia
        for kind in MediaKind.allCases {
            let current = state.publish[kind]
            let target: PublishState
            if media.contains(kind) {
                target = current == .published || current == .publishing ? current : .publishing
            } else {
                target = state.joined ? .noPublish : .idle
            }
            guard target != current else { continue }
            state.publish[kind] = target
            emit(
                state, .localPublishStateChanged(kind: kind, old: current, new: target, elapsedMs: state.elapsedMs(now))
            )
        }
    }

    /// The first frame of `kind` left: PUBLISHING → PUBLISHED. Call with the lock held.
    func markPublished(_ state: ChannelState, _ kind: MediaKind) {
        guard state.publish[kind] == .publishing else { return }
        state.publish[kind] = .published
        emit(
            state,
            .localPublishStateChanged(kind: kind, old: .publishing, new: .published, elapsedMs: state.elapsedMs(now)))
    }

    // MARK: - Remote mutes and volume

    func muteRemote(_ state: ChannelState, _ uid: UInt32, _ kind: MediaKind, _ mute: Bool) throws {
        try lock.withLock {
            try checkUsable(state)
            state.explicitMute[kind][uid] = mute
            if let user = state.users[uid] { applyLocalMute(state, user, kind, mute) }
        }
        flushActions()
    }

    func muteAll(_ state: ChannelState, _ kind: MediaKind, _ mute: Bool) throws {
        try lock.withLock {
            try checkUsable(state)
            state.allMuted[kind] = mute
            state.explicitMute[kind].removeAll()
            for uid in state.userOrder {
                if let user = state.users[uid] { applyLocalMute(state, user, kind, mute) }
            }
        }
        flushActions()
    }

    func setDefaultMute(_ state: ChannelState, _ kind: MediaKind, _ mute: Bool) {
        lock.withLock {
            state.defaultMuted[kind] = mute
        }
    }

    func setVolume(_ state: ChannelState, _ uid: UInt32, _ volume: Int) throws {
        guard (0...400).contains(volume) else {
            throw EngineError(.invalidArgument, "playback volume \(volume) for uid \(uid) is outside 0...400")
        }
        try lock.withLock {
            try checkUsable(state)
            guard let user = state.users[uid] else {
                throw EngineError(.invalidArgument, "uid \(uid) is not a broadcaster in channel '\(state.id)'")
            }
            user.volume = Float(volume) / 100
        }
    }

    /// Starts or stops receiving `kind` from `user` on the local user's decision.
    func applyLocalMute(_ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind, _ mute: Bool) {
        guard user.muted[kind] != mute else { return }
        user.muted[kind] = mute
        subscriptionChanges.append((state, user.uid, kind, !mute))
        if mute {
            stopReceiving(state, user, kind, reason: .localMuted)
        } else {
            user.trackers[kind].resumeReason = .localUnmuted
            startReceiving(state, user, kind)
        }
    }

    /// Creates the receiver for `kind` if the user sends it and is not muted locally.
    func startReceiving(_ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind) {
        guard user.wants(kind) else { return }
        if kind == .audio {
            guard user.audio == nil else { return }
            user.audio = try? AudioReceiver(
                sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount,
                codecs: configuration.codecs)
        } else {
            guard user.video == nil else { return }
            user.video = VideoReceiver(
                threads: 1, reorderWaitMicroseconds: Int64(configuration.videoReorderWaitMs) * 1000,
                codecs: configuration.codecs)
        }
        setSubscribe(state, user, kind, .subscribing)
    }

    /// Releases the receiver for `kind` (audio fades out over one frame) and reports STOPPED.
    func stopReceiving(_ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind, reason: RemoteStreamStateReason) {
        if kind == .audio {
            if let receiver = user.audio {
                fadingOut.append((user.key, receiver))
                user.audio = nil
            }
        } else {
            user.video?.release()
            user.video = nil
        }
        report(state, user, kind, .stopped, reason)
        // Stopping means the local user muted it, or the remote one stopped sending or left.
        setSubscribe(state, user, kind, .noSubscribe)
    }

    /// Moves `user`'s `kind` state machine and reports the transition if it is a real one. Call
    /// with the lock held.
    func report(
        _ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind, _ new: RemoteStreamState,
        _ reason: RemoteStreamStateReason
    ) {
        let old = user.trackers[kind].state
        guard let (reported, why) = user.trackers[kind].move(to: new, reason) else { return }
        if kind == .video {
            // Time frozen is summed per channel when a freeze ends.
            if reported == .frozen { user.videoFrozenSince = now }
            if old == .frozen, reported != .frozen, let since = user.videoFrozenSince {
                state.stats.videoFrozenMs += (now - since) / 1000
                user.videoFrozenSince = nil
            }
        }
        let elapsed = state.elapsedMs(now)
        emit(
            state,
            kind == .audio
                ? .remoteAudioStateChanged(uid: user.uid, state: reported, reason: why, elapsedMs: elapsed)
                : .remoteVideoStateChanged(uid: user.uid, state: reported, reason: why, elapsedMs: elapsed))
    }

    /// Reports DECODING: after a freeze for NETWORK_RECOVERY, otherwise for the reason the
    /// stream (re)started. Call with the lock held.
    func reportDecoding(_ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind) {
        let tracker = user.trackers[kind]
        guard tracker.state != .decoding else { return }
        report(state, user, kind, .decoding, tracker.state == .frozen ? .networkRecovery : tracker.resumeReason)
    }

    func setSubscribe(_ state: ChannelState, _ user: RemoteUser, _ kind: MediaKind, _ new: SubscribeState) {
        let old = user.subscribe[kind]
        guard old != new else { return }
        user.subscribe[kind] = new
        emit(
            state,
            .remoteSubscribeStateChanged(uid: user.uid, kind: kind, old: old, new: new, elapsedMs: state.elapsedMs(now))
        )
    }

    /// Drops a user's receivers without events (the local user leaves).
    func releaseReceivers(_ user: RemoteUser) {
        user.audio?.release()
        user.audio = nil
        user.video?.release()
        user.video = nil
    }

    // MARK: - Audio reports

    func enableVolumeIndication(_ state: ChannelState, _ intervalMs: Int) throws {
        try lock.withLock {
            try checkUsable(state)
            if intervalMs <= 0 {
                state.volumeIntervalMs = 0
            } else {
                guard intervalMs >= 10 else {
                    throw EngineError(.invalidArgument, "volume indication interval \(intervalMs) ms is below 10 ms")
                }
                state.volumeIntervalMs = (intervalMs + 5) / 10 * 10
            }
            state.volumeElapsedMs = 0
            try prepareChannelMixer(state)
        }
    }

    func enableChannelMix(_ state: ChannelState, _ enabled: Bool) throws {
        try lock.withLock {
            try checkUsable(state)
            state.mixEnabled = enabled
            try prepareChannelMixer(state)
        }
    }

    private func prepareChannelMixer(_ state: ChannelState) throws {
        if state.mixEnabled || state.volumeIntervalMs > 0 {
            if state.mixer == nil {
                let mixer = try AudioMixer(
                    sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount)
                state.mixer = mixer
                state.mix = [Int16](repeating: 0, count: mixer.samplesPerChannel * mixer.channelCount)
            }
        } else {
            state.mixer = nil
        }
    }

    func copyChannelMix(_ state: ChannelState, into output: UnsafeMutableBufferPointer<Int16>) throws {
        try lock.withLock {
            try checkUsable(state)
            guard state.mixEnabled else {
                throw EngineError(.notReady, "channel '\(state.id)' keeps no mix: call enableChannelMix(true) first")
            }
            guard output.count == state.mix.count else {
                throw EngineError(
                    .invalidArgument, "channel mix output holds \(output.count) samples; \(state.mix.count) needed")
            }
            _ = output.update(fromContentsOf: state.mix)
        }
    }
}
