extension MediaEngine {
    /// The most destinations one relay serves (Agora's limit).
    public static let maximumRelayDestinations = 4

    /// Throws ``EngineError/Code/invalidArgument`` for a destination list a relay of channel `ref` cannot take.
    private func validateRelay(_ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination]) throws {
        guard (1...MediaEngine.maximumRelayDestinations).contains(destinations.count) else {
            throw EngineError(
                .invalidArgument,
                "a media relay takes 1 to \(MediaEngine.maximumRelayDestinations) destinations, not \(destinations.count)"
            )
        }
        for destination in destinations {
            try ChannelID.validate(destination.channelId)
            guard destination.channelId != ref.id else {
                throw EngineError(.invalidArgument, "channel '\(ref.id)' cannot relay to itself")
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
    func startRelay(_ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(ref, destinations)
        let request = try input { try $0.startRelay(ref, destinations) }
        joinRelayDestinations(request.joining, media: request.media) { [weak self] result in
            self?.input { $0.relayStarted(ref, destinations, attempt: request.attempt, result: result) }
        }
    }

    /// Replaces the destinations: returns once the request is made; reports
    /// ``ChannelMediaRelayEvent/updateDestinationChannel`` or
    /// ``ChannelMediaRelayEvent/updateDestinationChannelRefused`` when the new ones have answered.
    func updateRelay(_ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination]) throws {
        try validateRelay(ref, destinations)
        let request = try input { try $0.updateRelay(ref, destinations) }
        joinRelayDestinations(request.joining, media: request.media) { [weak self] result in
            self?.input {
                $0.relayUpdated(ref, destinations, added: request.joining, attempt: request.attempt, result: result)
            }
        }
    }

    func pauseRelay(_ ref: ChannelRef) throws {
        guard input({ $0.pauseRelay(ref) }) else {
            throw EngineError(.notReady, "channel '\(ref.id)' has no running media relay to pause")
        }
    }

    func resumeRelay(_ ref: ChannelRef) throws {
        guard input({ $0.resumeRelay(ref) }) else {
            throw EngineError(.notReady, "channel '\(ref.id)' has no paused media relay to resume")
        }
    }

    func stopRelay(_ ref: ChannelRef) throws { try input { try $0.stopRelay(ref) } }
}
