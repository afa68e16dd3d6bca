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

    /// Asks to join `destinations` as relay members sending `media`. `done` gets, once every
    /// answer is in, the uids in order, or the first refusal (the memberships granted are given
    /// back first). It runs on the thread of the last answer, without the lock.
    private func joinRelayDestinations(
        _ destinations: [ChannelMediaRelayDestination], media: PublishedMedia,
        done: @escaping @Sendable (Result<[UInt32], EngineError>) -> Void
    ) {
        guard !destinations.isEmpty else { return done(.success([])) }
        let answers = LockedValue(
            (
                uids: [UInt32?](repeating: nil, count: destinations.count), refusal: EngineError?.none,
                waiting: destinations.count
            ))
        let transport = transport
        for (index, destination) in destinations.enumerated() {
            // uid 0: the destination assigns a free uid (the source's may be taken there).
            transport.join(
                channelId: destination.channelId, uid: destination.uid, role: .broadcaster, media: media,
                receivesMedia: false, endpoint: endpoint
            ) { result in
                let finished: (uids: [UInt32?], refusal: EngineError?)? = answers.withLock { answers in
                    switch result {
                    case .success(let uid): answers.uids[index] = uid
                    case .failure(let error): answers.refusal = answers.refusal ?? error
                    }
                    answers.waiting -= 1
                    return answers.waiting == 0 ? (answers.uids, answers.refusal) : nil
                }
                guard let finished else { return }
                if let refusal = finished.refusal {
                    for (destination, uid) in zip(destinations, finished.uids) {
                        if let uid { transport.leave(channelId: destination.channelId, uid: uid) }
                    }
                    done(.failure(refusal))
                } else {
                    done(.success(finished.uids.compactMap { $0 }))
                }
            }
        }
    }

    /// Starts relaying: returns once the request is made; the relay reports CONNECTING, then
    /// RUNNING or FAILURE when the destinations have answered.
    func startRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(state, destinations)
        let (media, attempt): (PublishedMedia, Int) = try lock.withLock {
            guard !destroyed, !state.destroyed, state.joined, !state.joining else {
                throw EngineError(.notReady, "join channel '\(state.id)' before relaying it")
            }
            guard state.role == .broadcaster else {
                throw EngineError(.refused, "an audience member cannot relay channel '\(state.id)'")
            }
            relayTeardown(state)
            state.relayState = .connecting
            state.relayAttempt += 1
            emit(state, .channelMediaRelayStateChanged(state: .connecting))
            return (state.publishedMedia, state.relayAttempt)
        }
        flushActions()
        let (channelId, identity) = (state.id, ObjectIdentifier(state))
        joinRelayDestinations(destinations, media: media) { [weak self] result in
            self?.relayStarted(channelId, identity, destinations, attempt: attempt, result: result)
        }
    }

    private func relayStarted(
        _ channelId: String, _ identity: ObjectIdentifier, _ destinations: [ChannelMediaRelayDestination],
        attempt: Int, result: Result<[UInt32], EngineError>
    ) {
        lock.withLock {
            guard let state = channel(channelId, identity), state.relayAttempt == attempt,
                state.relayState == .connecting
            else {
                // Stopped or restarted meanwhile: give the memberships back.
                if case .success(let uids) = result {
                    for (destination, uid) in zip(destinations, uids) {
                        signal(.leave(channelId: destination.channelId, uid: uid))
                    }
                }
                return
            }
            switch result {
            case .success(let uids):
                state.relayDestinations = destinations
                state.relayUids = uids
                state.relayState = .running
                state.relayPaused = false
                state.relaySentReported = false
                for _ in destinations { emit(state, .channelMediaRelayEvent(.joinedDestinationChannel)) }
                keyframePending = true  // the destinations' subscribers need a picture to start from
                emit(state, .channelMediaRelayStateChanged(state: .running))
            case .failure(let error):
                state.relayState = .failure
                emit(state, .channelMediaRelayStateChanged(state: .failure))
                emit(state, .error(code: error.code, message: error.message))
            }
        }
        flushActions()
    }

    /// Replaces the destinations: returns once the request is made; reports
    /// ``ChannelMediaRelayEvent/updateDestinationChannel`` or
    /// ``ChannelMediaRelayEvent/updateDestinationChannelRefused`` when the new ones have answered.
    func updateRelay(_ state: ChannelState, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(state, destinations)
        let (media, added, attempt): (PublishedMedia, [ChannelMediaRelayDestination], Int) = try lock.withLock {
            guard state.relayState == .running else {
                throw EngineError(.notReady, "channel '\(state.id)' has no running media relay to update")
            }
            state.relayAttempt += 1
            let added = destinations.filter { !state.relayDestinations.contains($0) }
            return (state.publishedMedia, added, state.relayAttempt)
        }
        let (channelId, identity) = (state.id, ObjectIdentifier(state))
        joinRelayDestinations(added, media: media) { [weak self] result in
            self?.relayUpdated(channelId, identity, destinations, added: added, attempt: attempt, result: result)
        }
    }

    private func relayUpdated(
        _ channelId: String, _ identity: ObjectIdentifier, _ destinations: [ChannelMediaRelayDestination],
        added: [ChannelMediaRelayDestination], attempt: Int, result: Result<[UInt32], EngineError>
    ) {
        lock.withLock {
            guard let state = channel(channelId, identity), state.relayAttempt == attempt,
                state.relayState == .running
            else {
                if case .success(let uids) = result {
                    for (destination, uid) in zip(added, uids) {
                        signal(.leave(channelId: destination.channelId, uid: uid))
                    }
                }
                return
            }
            guard case .success(let addedUids) = result else {
                emit(state, .channelMediaRelayEvent(.updateDestinationChannelRefused))
                return
            }
            // Destinations no longer listed are left; the new list keeps the order given, and
            // kept destinations their uid.
            for (destination, uid) in zip(state.relayDestinations, state.relayUids)
            where !destinations.contains(destination) {
                signal(.leave(channelId: destination.channelId, uid: uid))
            }
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
        state.relayAttempt += 1  // answers still on their way are given back
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
