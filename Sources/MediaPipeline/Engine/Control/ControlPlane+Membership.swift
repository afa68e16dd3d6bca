/// Joining, leaving and connection states.
extension ControlPlane {
    /// What a join asks the transport: the attempt it answers, and the role and media to announce.
    struct JoinRequest {
        let attempt: Int
        let role: ClientRole
        let media: PublishedMedia
    }

    /// Starts joining channel `ref`; the transport's answer comes in as
    /// ``joinAnswered(_:attempt:result:)``.
    mutating func join(_ ref: ChannelRef, options: ChannelMediaOptions) throws -> JoinRequest {
        let c = try usable(ref)
        guard !channels[c].joined && !channels[c].joining else {
            throw EngineError(.joinChannelRejected, "already in channel '\(ref.id)' as uid \(channels[c].uid)")
        }
        let role = channels[c].role
        if role == .audience && (options.publishLocalAudio || options.publishLocalVideo) {
            throw EngineError(
                .refused,
                "an audience member cannot publish: join channel '\(ref.id)' with publishLocalAudio and publishLocalVideo off, or as broadcaster"
            )
        }
        let media = channels[c].wouldPublish(options: options, role: role)
        try checkSinglePublisher(c, wouldPublish: media)
        channels[c].options = options
        channels[c].roleAnnounced = role
        channels[c].mediaAnnounced = media
        channels[c].joining = true
        channels[c].joined = true
        routingChanged()
        channels[c].joinedAt = now
        channels[c].stats = ChannelStats()
        channels[c].publish = PerMedia(.idle)
        channels[c].joinAttempt += 1
        setConnection(c, .connecting, .connecting)
        return JoinRequest(attempt: channels[c].joinAttempt, role: role, media: media)
    }

    /// The transport answered join attempt `attempt` of channel `ref`.
    mutating func joinAnswered(_ ref: ChannelRef, attempt: Int, result: Result<UInt32, EngineError>) {
        guard let c = index(ref), channels[c].joining, channels[c].joinAttempt == attempt else {
            // Left (or destroyed) before the answer: a membership granted meanwhile is given back.
            if case .success(let uid) = result { signal(.leave(channelId: ref.id, uid: uid)) }
            return
        }
        channels[c].joining = false
        switch result {
        case .success(let assigned):
            channels[c].uid = assigned
            setConnection(c, .connected, .joinSuccess)
            emitNow(c, .joinSuccess(uid: assigned, elapsedMs: channels[c].elapsedMs(now)))
            for event in channels[c].deferred { emitNow(c, event) }
            channels[c].deferred.removeAll()
            // The role change first, so its event comes before the publish states it settles.
            applyRoleSetWhileJoining(ref, c)
            // Likewise a local mute or unmute made while joining, and the video layers asked for.
            if channels[c].publishedMedia != channels[c].mediaAnnounced { announceMedia(c) }
            announceVideoStreamTypes(c)
            refreshPublishState(c)
        case .failure(let error):
            forgetJoin(c)
            setConnection(c, .failed, .joinFailed)
            emitNow(c, .error(code: error.code, message: error.message))
        }
    }

    /// A role set while the join was under way was kept for the channel but not told to the
    /// transport, which joined with the earlier one: it is applied now, as a change made at
    /// the join's answer (its event, the publish state, the transport told). A change the
    /// channel refuses now (a second publishing channel) is reported as an error event, and the
    /// channel keeps the role it joined with.
    private mutating func applyRoleSetWhileJoining(_ ref: ChannelRef, _ c: Int) {
        let wanted = channels[c].role
        guard wanted != channels[c].roleAnnounced else { return }
        channels[c].role = channels[c].roleAnnounced
        do {
            try setRole(ref, wanted)
        } catch let error as EngineError {
            emitNow(c, .error(code: error.code, message: error.message))
        } catch {
            emitNow(c, .error(code: .refused, message: "\(error)"))
        }
    }

    /// Undoes a join that did not happen (refused, or left before the answer): the users learnt
    /// meanwhile, their receivers and the events held back go.
    private mutating func forgetJoin(_ c: Int) {
        channels[c].joining = false
        channels[c].joined = false
        routingChanged()
        channels[c].deferred.removeAll()
        releaseReceivers(c)
        channels[c].users.removeAll()
        channels[c].publish = PerMedia(.idle)
    }

    /// Leaves channel `ref`.
    mutating func leave(_ ref: ChannelRef) throws {
        guard let c = index(ref), channels[c].joined else {
            throw EngineError(.leaveChannelRejected, "not in channel '\(ref.id)'")
        }
        if channels[c].joining {
            // Left before the transport answered: the answer will be ignored (a granted
            // membership given back), and nothing was reported but the connecting state.
            channels[c].joinAttempt += 1
            forgetJoin(c)
            setConnection(c, .disconnected, .leaveChannel)
            return
        }
        relayTeardown(c)
        // The engine took the arrived audio into the receivers before this input.
        for u in channels[c].users.indices { takeTally(c, u) }
        routingChanged()
        releaseReceivers(c)
        channels[c].stats.durationMs = channels[c].elapsedMs(now)
        channels[c].stats.videoFrozenMs = channels[c].videoFrozenMs(now: now)
        channels[c].stats.userCount = channels[c].users.count
        channels[c].users.removeAll()
        channels[c].joined = false
        channels[c].publish = PerMedia(.idle)
        emit(c, .leave(channels[c].stats))
        setConnection(c, .disconnected, .leaveChannel)
        signal(.leave(channelId: ref.id, uid: channels[c].uid))
        channels[c].uid = 0
    }

    /// Leaves channel `ref` if joined and forgets it.
    mutating func destroyChannel(_ ref: ChannelRef) {
        guard let c = index(ref) else { return }
        if channels[c].joined { try? leave(ref) }
        channels.remove(at: c)
        routingChanged()
    }

    /// The transport says the connection of `channelId` changed.
    mutating func connectionChanged(
        _ channelId: String, _ connection: ConnectionState, _ reason: ConnectionChangedReason
    ) {
        guard let c = joinedIndex(channelId), !channels[c].joining else { return }
        setConnection(c, connection, reason)
    }
}
