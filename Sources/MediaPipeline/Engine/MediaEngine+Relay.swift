extension MediaEngine {
    /// The most destinations one relay serves (Agora's limit).
    public static let maximumRelayDestinations = 4

    func startRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
        guard (1...MediaEngine.maximumRelayDestinations).contains(destinations.count) else {
            throw EngineError(
                .invalidArgument,
                "a media relay takes 1 to \(MediaEngine.maximumRelayDestinations) destinations, not \(destinations.count)"
            )
        }
        for destination in destinations {
            try ChannelID.validate(destination.channelId)
            guard destination.channelId != state.id else {
                throw EngineError(.invalidArgument, "channel '\(state.id)' cannot relay to itself")
            }
        }
        guard Set(destinations.map(\.channelId)).count == destinations.count else {
            throw EngineError(.invalidArgument, "relay destinations repeat a channel")
        }
        let (sourceUid, media): (UInt32, PublishedMedia) = try lock.withLock {
            guard !destroyed, !state.destroyed, state.joined, !state.joining else {
                throw EngineError(.notReady, "join channel '\(state.id)' before relaying it")
            }
            guard state.role == .broadcaster else {
                throw EngineError(.refused, "an audience member cannot relay channel '\(state.id)'")
            }
            relayTeardown(state)
            state.relayState = .connecting
            emit(state, .channelMediaRelayStateChanged(state: .connecting))
            return (state.uid, state.publishedMedia)
        }
        flushActions()
        var joined: [(String, UInt32)] = []
        do {
            for destination in destinations {
                let uid = try transport.join(
                    channelId: destination.channelId, uid: destination.uid == 0 ? sourceUid : destination.uid,
                    role: .broadcaster, media: media, receivesMedia: false, endpoint: self)
                joined.append((destination.channelId, uid))
            }
        } catch {
            for (channelId, uid) in joined { transport.leave(channelId: channelId, uid: uid) }
            lock.withLock {
                state.relayState = .failure
                emit(state, .channelMediaRelayStateChanged(state: .failure))
            }
            flushActions()
            throw error
        }
        lock.withLock {
            state.relayDestinations = destinations
            state.relayUids = joined.map(\.1)
            state.relayState = .running
            keyframePending = true  // the destinations' subscribers need a picture to start from
            emit(state, .channelMediaRelayStateChanged(state: .running))
        }
        flushActions()
    }

    func stopRelay(_ state: ChannelState) throws {
        try lock.withLock {
            guard state.relayState == .running else {
                throw EngineError(.notReady, "channel '\(state.id)' has no running media relay")
            }
            relayTeardown(state)
        }
        flushActions()
    }

    /// Ends a running relay: the destinations see the relayed user leave. Call with the lock held.
    func relayTeardown(_ state: ChannelState) {
        guard state.relayState == .running || state.relayState == .connecting else { return }
        for (destination, uid) in zip(state.relayDestinations, state.relayUids) {
            signal(.leave(channelId: destination.channelId, uid: uid))
        }
        state.relayDestinations = []
        state.relayUids = []
        state.relayState = .idle
        emit(state, .channelMediaRelayStateChanged(state: .idle))
    }
}
