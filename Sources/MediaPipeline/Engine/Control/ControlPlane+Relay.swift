/// The channel media relay's state machine: IDLE → CONNECTING → RUNNING (or FAILURE), updates,
/// pause and resume. Joining the destinations is the engine's part; their answers come back in
/// as inputs.
extension ControlPlane {
    /// What a relay start or update asks the transport: the attempt its answers belong to, and
    /// the media to announce in the destinations.
    struct RelayRequest {
        let attempt: Int
        let media: PublishedMedia
        /// The destinations to join (all of them for a start, the new ones for an update).
        let joining: [ChannelMediaRelayDestination]
    }

    mutating func startRelay(_ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination]) throws -> RelayRequest {
        guard !destroyed, let c = index(ref), channels[c].joined, !channels[c].joining else {
            throw EngineError(.notReady, "join channel '\(ref.id)' before relaying it")
        }
        guard channels[c].role == .broadcaster else {
            throw EngineError(.refused, "an audience member cannot relay channel '\(ref.id)'")
        }
        relayTeardown(c)
        channels[c].relayState = .connecting
        channels[c].relayAttempt += 1
        emit(c, .channelMediaRelayStateChanged(state: .connecting))
        return RelayRequest(
            attempt: channels[c].relayAttempt, media: channels[c].publishedMedia, joining: destinations)
    }

    /// Every destination of relay attempt `attempt` answered: `uids` in order, or a refusal
    /// (the memberships granted were given back already).
    mutating func relayStarted(
        _ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination], attempt: Int,
        result: Result<[UInt32], EngineError>
    ) {
        guard let c = index(ref), channels[c].relayAttempt == attempt, channels[c].relayState == .connecting else {
            // Stopped or restarted meanwhile: give the memberships back.
            if case .success(let uids) = result { leaveRelayMemberships(zip(destinations, uids)) }
            return
        }
        switch result {
        case .success(let uids):
            channels[c].relayDestinations = destinations
            channels[c].relayUids = uids
            channels[c].relayState = .running
            channels[c].relayPaused = false
            channels[c].relaySentReported = false
            for _ in destinations { emit(c, .channelMediaRelayEvent(.joinedDestinationChannel)) }
            keyframePending = true  // the destinations' subscribers need a picture to start from
            emit(c, .channelMediaRelayStateChanged(state: .running))
        case .failure(let error):
            channels[c].relayState = .failure
            emit(c, .channelMediaRelayStateChanged(state: .failure))
            emit(c, .error(code: error.code, message: error.message))
        }
    }

    mutating func updateRelay(_ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination]) throws -> RelayRequest
    {
        guard let c = index(ref), channels[c].relayState == .running else {
            throw EngineError(.notReady, "channel '\(ref.id)' has no running media relay to update")
        }
        channels[c].relayAttempt += 1
        let added = destinations.filter { !channels[c].relayDestinations.contains($0) }
        return RelayRequest(attempt: channels[c].relayAttempt, media: channels[c].publishedMedia, joining: added)
    }

    /// The destinations `added` by update `attempt` answered.
    mutating func relayUpdated(
        _ ref: ChannelRef, _ destinations: [ChannelMediaRelayDestination], added: [ChannelMediaRelayDestination],
        attempt: Int, result: Result<[UInt32], EngineError>
    ) {
        guard let c = index(ref), channels[c].relayAttempt == attempt, channels[c].relayState == .running else {
            if case .success(let uids) = result { leaveRelayMemberships(zip(added, uids)) }
            return
        }
        guard case .success(let addedUids) = result else {
            emit(c, .channelMediaRelayEvent(.updateDestinationChannelRefused))
            return
        }
        // Destinations no longer listed are left; the new list keeps the order given, and
        // kept destinations their uid.
        let (old, oldUids) = (channels[c].relayDestinations, channels[c].relayUids)
        leaveRelayMemberships(zip(old, oldUids).filter { !destinations.contains($0.0) })
        var uids: [UInt32] = []
        for destination in destinations {
            if let index = old.firstIndex(of: destination) {
                uids.append(oldUids[index])
            } else if let index = added.firstIndex(of: destination) {
                uids.append(addedUids[index])
            }
        }
        channels[c].relayDestinations = destinations
        channels[c].relayUids = uids
        for _ in added { emit(c, .channelMediaRelayEvent(.joinedDestinationChannel)) }
        if !added.isEmpty { keyframePending = true }
        emit(c, .channelMediaRelayEvent(.updateDestinationChannel))
    }

    /// Pauses the relay; false (with the failure event) when none runs unpaused.
    mutating func pauseRelay(_ ref: ChannelRef) -> Bool {
        guard let c = index(ref) else { return false }
        guard channels[c].relayState == .running, !channels[c].relayPaused else {
            emit(c, .channelMediaRelayEvent(.pauseSendPacketToDestinationChannelFailed))
            return false
        }
        channels[c].relayPaused = true
        emit(c, .channelMediaRelayEvent(.pauseSendPacketToDestinationChannelSuccess))
        return true
    }

    /// Resumes a paused relay; false (with the failure event) when none is paused.
    mutating func resumeRelay(_ ref: ChannelRef) -> Bool {
        guard let c = index(ref) else { return false }
        guard channels[c].relayState == .running, channels[c].relayPaused else {
            emit(c, .channelMediaRelayEvent(.resumeSendPacketToDestinationChannelFailed))
            return false
        }
        channels[c].relayPaused = false
        channels[c].relaySentReported = false
        keyframePending = true  // the destinations' decoders restart from a keyframe
        emit(c, .channelMediaRelayEvent(.resumeSendPacketToDestinationChannelSuccess))
        return true
    }

    mutating func stopRelay(_ ref: ChannelRef) throws {
        guard let c = index(ref), channels[c].relayState == .running else {
            throw EngineError(.notReady, "channel '\(ref.id)' has no running media relay")
        }
        relayTeardown(c)
    }

    /// Ends a running or starting relay: the destinations see the relayed user leave.
    mutating func relayTeardown(_ c: Int) {
        guard channels[c].relayState == .running || channels[c].relayState == .connecting else { return }
        channels[c].relayAttempt += 1  // answers still on their way are given back
        leaveRelayMemberships(zip(channels[c].relayDestinations, channels[c].relayUids))
        channels[c].relayDestinations = []
        channels[c].relayUids = []
        channels[c].relayPaused = false
        channels[c].relayState = .idle
        emit(c, .channelMediaRelayStateChanged(state: .idle))
    }

    private mutating func leaveRelayMemberships<S: Sequence>(_ memberships: S)
    where S.Element == (ChannelMediaRelayDestination, UInt32) {
        for (destination, uid) in memberships { signal(.leave(channelId: destination.channelId, uid: uid)) }
    }

    /// The publishing channel's relay reaches `channelId` (feedback from there concerns the local streams).
    func relays(to channelId: String) -> Bool {
        guard let c = publishingChannel() else { return false }
        return channels[c].id == channelId || channels[c].relayDestinations.contains { $0.channelId == channelId }
    }
}
