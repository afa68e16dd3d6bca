extension MediaEngine {
    /// The most destinations one relay serves (Agora's limit).
    public static let maximumRelayDestinations = 4

    /// Throws ``EngineError/Code/invalidArgument`` for a destination list a relay of `state` cannot take.
    private func validateRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
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
    }

    /// Joins `destinations` as relay members sending `media`; on a refusal, leaves the ones
    /// joined and rethrows. Call without the lock.
    private func joinRelayDestinations(_ destinations: [ChannelMediaRelayDestination], media: PublishedMedia) throws
        -> [UInt32]
    {
        var joined: [(String, UInt32)] = []
        do {
            for destination in destinations {
                // uid 0: the destination assigns a free uid (the source's may be taken there).
                let uid = try transport.join(
                    channelId: destination.channelId, uid: destination.uid, role: .broadcaster, media: media,
                    receivesMedia: false, endpoint: self)
                joined.append((destination.channelId, uid))
            }
        } catch {
            for (channelId, uid) in joined { transport.leave(channelId: channelId, uid: uid) }
            throw error
        }
        return joined.map(\.1)
    }

    func startRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(state, destinations)
        let media: PublishedMedia = try lock.withLock {
            guard !destroyed, !state.destroyed, state.joined, !state.joining else {
                throw EngineError(.notReady, "join channel '\(state.id)' before relaying it")
            }
            guard state.role == .broadcaster else {
                throw EngineError(.refused, "an audience member cannot relay channel '\(state.id)'")
            }
            relayTeardown(state)
            state.relayState = .connecting
            emit(state, .channelMediaRelayStateChanged(state: .connecting))
            return state.publishedMedia
        }
        flushActions()
        let uids: [UInt32]
        do {
            uids = try joinRelayDestinations(destinations, media: media)
        } catch {
            lock.withLock {
                state.relayState = .failure
                emit(state, .channelMediaRelayStateChanged(state: .failure))
            }
            flushActions()
            throw error
        }
        lock.withLock {
            state.relayDestinations = destinations
            state.relayUids = uids
            state.relayState = .running
            state.relayPaused = false
            state.relaySentReported = false
            for _ in destinations { emit(state, .channelMediaRelayEvent(.joinedDestinationChannel)) }
            keyframePending = true  // the destinations' subscribers need a picture to start from
            emit(state, .channelMediaRelayStateChanged(state: .running))
        }
        flushActions()
    }

    func updateRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(state, destinations)
        let (media, added, removed): (PublishedMedia, [ChannelMediaRelayDestination], [(String, UInt32)]) =
            try lock.withLock {
                guard state.relayState == .running else {
                    throw EngineError(.notReady, "channel '\(state.id)' has no running media relay to update")
                }
                let current = zip(state.relayDestinations, state.relayUids)
                let removed = current.filter { !destinations.contains($0.0) }.map { ($0.0.channelId, $0.1) }
                let added = destinations.filter { !state.relayDestinations.contains($0) }
                return (state.publishedMedia, added, removed)
            }
        let addedUids: [UInt32]
        do {
            addedUids = try joinRelayDestinations(added, media: media)
        } catch {
            lock.withLock { emit(state, .channelMediaRelayEvent(.updateDestinationChannelRefused)) }
            flushActions()
            throw error
        }
        lock.withLock {
            for (channelId, uid) in removed { signal(.leave(channelId: channelId, uid: uid)) }
            // The new list, in the order given: kept destinations keep their uid.
            var uids: [UInt32] = []
            for destination in destinations {
                if let index = state.relayDestinations.firstIndex(of: destination) {
                    uids.append(state.relayUids[index])
                } else if let index = added.firstIndex(of: destination) {
                    uids.append(addedUids[index])
                }
            }
            state.relayDestinations = destinations
            state.relayUids = uids
            for _ in added { emit(state, .channelMediaRelayEvent(.joinedDestinationChannel)) }
            if !added.isEmpty { keyframePending = true }
            emit(state, .channelMediaRelayEvent(.updateDestinationChannel))
        }
        flushActions()
    }

    func pauseRelay(_ state: ChannelState) throws {
        let paused: Bool = lock.withLock {
            guard state.relayState == .running, !state.relayPaused else {
                emit(state, .channelMediaRelayEvent(.pauseSendPacketToDestinationChannelFailed))
                return false
            }
            state.relayPaused = true
            emit(state, .channelMediaRelayEvent(.pauseSendPacketToDestinationChannelSuccess))
            return true
        }
        flushActions()
        guard paused else { throw EngineError(.notReady, "channel '\(state.id)' has no running media relay to pause") }
    }

    func resumeRelay(_ state: ChannelState) throws {
        let resumed: Bool = lock.withLock {
            guard state.relayState == .running, state.relayPaused else {
                emit(state, .channelMediaRelayEvent(.resumeSendPacketToDestinationChannelFailed))
                return false
            }
            state.relayPaused = false
            state.relaySentReported = false
            keyframePending = true  // the destinations' decoders restart from a keyframe
            emit(state, .channelMediaRelayEvent(.resumeSendPacketToDestinationChannelSuccess))
            return true
        }
        flushActions()
        guard resumed else {
            throw EngineError(.notReady, "channel '\(state.id)' has no paused media relay to resume")
        }
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
        state.relayPaused = false
        state.relayState = .idle
        emit(state, .channelMediaRelayStateChanged(state: .idle))
    }
}
