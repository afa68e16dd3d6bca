/// Remote users: who is present and what they send, local decisions to receive, the receive
/// pipelines, and the remote stream and subscribe state machines.
extension ControlPlane {
    // MARK: - Membership the transport reports

    mutating func userJoined(_ channelId: String, _ uid: UInt32, _ media: PublishedMedia) {
        guard let c = joinedIndex(channelId) else { return }
        if userIndex(c, uid) != nil {
            applyRemoteMedia(c, uid, media)
            return
        }
        var muted = PerMedia(false)
        for kind in MediaKind.allCases { muted[kind] = channels[c].startsMuted(uid, kind) }
        channels[c].users.append(RemoteUser(uid: uid, channelId: channelId, media: media, muted: muted))
        routingChanged()
        let u = channels[c].users.count - 1
        emit(c, .userJoined(uid: uid, elapsedMs: channels[c].elapsedMs(now)))
        refreshVideoType(c, u)  // a canvas bound before the user came
        for kind in MediaKind.allCases { subscriptionChanged(c, publisher: uid, kind, subscribed: !muted[kind]) }
        for kind in MediaKind.allCases where media.contains(kind) {
            if muted[kind] {
                setSubscribe(c, u, kind, .noSubscribe)
            } else {
                startReceiving(c, u, kind)
            }
        }
    }

    mutating func userOffline(_ channelId: String, _ uid: UInt32, _ reason: UserOfflineReason) {
        guard let c = joinedIndex(channelId), let u = userIndex(c, uid) else { return }
        channels[c].users[u].media = []
        stopReceiving(c, u, .audio, reason: .remoteOffline)
        stopReceiving(c, u, .video, reason: .remoteOffline)
        // The engine took the arrived audio into the receiver before this input.
        takeTally(c, u)
        channels[c].users.remove(at: u)
        routingChanged()
        emit(c, .userOffline(uid: uid, reason: reason))
    }

    mutating func mediaChanged(_ channelId: String, _ uid: UInt32, _ media: PublishedMedia) {
        guard let c = joinedIndex(channelId) else { return }
        applyRemoteMedia(c, uid, media)
    }

    /// A remote user started or stopped sending audio or video.
    private mutating func applyRemoteMedia(_ c: Int, _ uid: UInt32, _ media: PublishedMedia) {
        guard let u = userIndex(c, uid) else { return }
        let old = channels[c].users[u].media
        channels[c].users[u].media = media
        for kind in MediaKind.allCases where old.contains(kind) != media.contains(kind) {
            if media.contains(kind) {
                channels[c].users[u].trackers[kind].resumeReason = .remoteUnmuted
                startReceiving(c, u, kind)
            } else {
                stopReceiving(c, u, kind, reason: .remoteMuted)
            }
        }
    }

    // MARK: - Local decisions to receive

    mutating func muteRemote(_ ref: ChannelRef, _ uid: UInt32, _ kind: MediaKind, _ mute: Bool) throws {
        let c = try usable(ref)
        channels[c].explicitMute[kind][uid] = mute
        if let u = userIndex(c, uid) { applyLocalMute(c, u, kind, mute) }
    }

    mutating func muteAll(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) throws {
        let c = try usable(ref)
        channels[c].allMuted[kind] = mute
        channels[c].explicitMute[kind].removeAll()
        for u in channels[c].users.indices { applyLocalMute(c, u, kind, mute) }
    }

    mutating func setDefaultMute(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) {
        guard let c = index(ref) else { return }
        channels[c].defaultMuted[kind] = mute
    }

    mutating func setVolume(_ ref: ChannelRef, _ uid: UInt32, _ volume: Int) throws {
        let c = try usable(ref)
        guard let u = userIndex(c, uid) else {
            throw EngineError(.invalidArgument, "uid \(uid) is not a broadcaster in channel '\(ref.id)'")
        }
        channels[c].users[u].volume = Float(volume) / 100
    }

    /// Asks for `type` of `uid`'s video in channel `ref` (Agora's `setRemoteVideoStreamType`);
    /// kept for a user not present yet.
    mutating func setRemoteVideoStreamType(_ ref: ChannelRef, _ uid: UInt32, _ type: VideoStreamType) throws {
        let c = try usable(ref)
        channels[c].remoteVideoTypes[uid] = type
        guard channels[c].joined && !channels[c].joining else { return }
        if let u = userIndex(c, uid) {
            refreshVideoType(c, u)  // low while fallen back
        } else {
            signal(.setRemoteVideoStreamType(type, channelId: ref.id, subscriber: channels[c].uid, publisher: uid))
        }
    }

    /// Asks for `type` of the video of every user not named by ``setRemoteVideoStreamType(_:_:_:)``
    /// (Agora's `setRemoteDefaultVideoStreamType`).
    mutating func setRemoteDefaultVideoStreamType(_ ref: ChannelRef, _ type: VideoStreamType) throws {
        let c = try usable(ref)
        channels[c].defaultRemoteVideoType = type
        guard channels[c].joined && !channels[c].joining else { return }
        signal(.setRemoteVideoStreamType(type, channelId: ref.id, subscriber: channels[c].uid, publisher: nil))
        for u in channels[c].users.indices { refreshVideoType(c, u) }
    }

    /// Tells the transport the video layers asked for in channel `c` (at its join's answer).
    mutating func announceVideoStreamTypes(_ c: Int) {
        let (id, uid) = (channels[c].id, channels[c].uid)
        if channels[c].defaultRemoteVideoType != .high {
            signal(
                .setRemoteVideoStreamType(
                    channels[c].defaultRemoteVideoType, channelId: id, subscriber: uid, publisher: nil))
        }
        for (publisher, type) in channels[c].remoteVideoTypes.sorted(by: { $0.key < $1.key }) {
            signal(.setRemoteVideoStreamType(type, channelId: id, subscriber: uid, publisher: publisher))
        }
    }

    /// The transport now forwards `type` of `uid`'s video in `channelId`.
    mutating func videoStreamTypeChanged(_ channelId: String, _ uid: UInt32, _ type: VideoStreamType) {
        guard let c = joinedIndex(channelId), let u = userIndex(c, uid) else { return }
        channels[c].users[u].rxStreamType = type
    }

    /// Starts or stops receiving `kind` from user `u` on the local user's decision.
    private mutating func applyLocalMute(_ c: Int, _ u: Int, _ kind: MediaKind, _ mute: Bool) {
        guard channels[c].users[u].muted[kind] != mute else { return }
        channels[c].users[u].muted[kind] = mute
        // Not while the video is off for the audio-only fallback: it comes back with it.
        let fallenBack = kind == .video && channels[c].users[u].fallback.level == .audioOnly
        subscriptionChanged(c, publisher: channels[c].users[u].uid, kind, subscribed: !mute && !fallenBack)
        if mute {
            stopReceiving(c, u, kind, reason: .localMuted)
        } else {
            channels[c].users[u].trackers[kind].resumeReason = .localUnmuted
            startReceiving(c, u, kind)
        }
    }

    // MARK: - Receive pipelines

    /// Starts the receiver for `kind` if the user sends it and is not muted locally.
    mutating func startReceiving(_ c: Int, _ u: Int, _ kind: MediaKind) {
        guard channels[c].users[u].wants(kind), channels[c].users[u].receiving[kind] == nil else { return }
        if kind == .audio {
            channels[c].users[u].reception.audioRestarted()
        } else {
            channels[c].users[u].reception.videoRestarted()
            channels[c].users[u].lastKeyframeRequest = nil
            channels[c].users[u].lastDecodedAt = nil
        }
        channels[c].users[u].receiving[kind] = newReceiverID()
        receiverChanges.append(.start(channels[c].users[u].key, kind, tally: channels[c].users[u].tally))
        routingChanged()  // a new receiver
        channels[c].users[u].awaitingFirstFrameSince[kind] = now
        setSubscribe(c, u, kind, .subscribing)
    }

    /// Releases the receiver for `kind` (audio fades out over one frame) and reports STOPPED.
    mutating func stopReceiving(_ c: Int, _ u: Int, _ kind: MediaKind, reason: RemoteStreamStateReason) {
        routingChanged()
        if channels[c].users[u].receiving[kind] != nil {
            channels[c].users[u].receiving[kind] = nil
            receiverChanges.append(.stop(channels[c].users[u].key, kind, fadeOut: true))
        }
        report(c, u, kind, .stopped, reason)
        // Stopping means the local user muted it, or the remote one stopped sending or left.
        setSubscribe(c, u, kind, .noSubscribe)
    }

    /// Drops the receivers of channel `c`'s users at once, without events (the local user
    /// leaves, or its join did not happen).
    mutating func releaseReceivers(_ c: Int) {
        for u in channels[c].users.indices {
            for kind in MediaKind.allCases where channels[c].users[u].receiving[kind] != nil {
                channels[c].users[u].receiving[kind] = nil
                receiverChanges.append(.stop(channels[c].users[u].key, kind, fadeOut: false))
            }
        }
        routingChanged()
    }

    // MARK: - State machines

    /// Moves user `u`'s `kind` state machine and reports the transition if it is a real one.
    mutating func report(
        _ c: Int, _ u: Int, _ kind: MediaKind, _ new: RemoteStreamState, _ reason: RemoteStreamStateReason
    ) {
        let old = channels[c].users[u].trackers[kind].state
        guard let (reported, why) = channels[c].users[u].trackers[kind].move(to: new, reason) else { return }
        // Whether a packet needs a decision depends on STOPPED.
        if old == .stopped || reported == .stopped { routingChanged() }
        if kind == .video {
            // Time frozen is summed per channel when a freeze ends.
            if reported == .frozen { channels[c].users[u].videoFrozenSince = now }
            if old == .frozen, reported != .frozen, let since = channels[c].users[u].videoFrozenSince {
                channels[c].stats.videoFrozenMs += (now - since) / 1000
                channels[c].users[u].videoFrozenSince = nil
            }
        }
        let (uid, elapsed) = (channels[c].users[u].uid, channels[c].elapsedMs(now))
        emit(
            c,
            kind == .audio
                ? .remoteAudioStateChanged(uid: uid, state: reported, reason: why, elapsedMs: elapsed)
                : .remoteVideoStateChanged(uid: uid, state: reported, reason: why, elapsedMs: elapsed))
    }

    /// Reports DECODING: after a freeze for NETWORK_RECOVERY, otherwise for the reason the
    /// stream (re)started.
    mutating func reportDecoding(_ c: Int, _ u: Int, _ kind: MediaKind) {
        // Read in place: through the arrays' getters this read, made for every stream every
        // tick, copied the whole user (retaining all it holds).
        let tracker = Self.tracker(of: &channels[c].users[u], kind)
        guard tracker.state != .decoding else { return }
        report(c, u, kind, .decoding, tracker.state == .frozen ? .networkRecovery : tracker.resumeReason)
    }

    /// `user`'s tracker of `kind`, read through an in-place (inout) access.
    private static func tracker(of user: inout RemoteUser, _ kind: MediaKind) -> RemoteStreamTracker {
        user.trackers[kind]
    }

    /// Media of `kind` arrived from user `u`: STARTING if stopped, and SUBSCRIBED.
    mutating func mediaArrived(_ c: Int, _ u: Int, _ kind: MediaKind) {
        if channels[c].users[u].trackers[kind].state == .stopped {
            report(c, u, kind, .starting, channels[c].users[u].trackers[kind].resumeReason)
        }
        setSubscribe(c, u, kind, .subscribed)
    }

    private mutating func setSubscribe(_ c: Int, _ u: Int, _ kind: MediaKind, _ new: SubscribeState) {
        let old = channels[c].users[u].subscribe[kind]
        guard old != new else { return }
        channels[c].users[u].subscribe[kind] = new
        routingChanged()
        emit(
            c,
            .remoteSubscribeStateChanged(
                uid: channels[c].users[u].uid, kind: kind, old: old, new: new, elapsedMs: channels[c].elapsedMs(now)))
    }

    /// The feedback user `u`'s video receiver should send its publisher now, if any: `nack`,
    /// and a keyframe request when one is due (see
    /// ``RemoteUser/keyframeRequestDue(wanted:now:interval:)``). Counts what it sends.
    mutating func feedbackDue(_ c: Int, _ u: Int, nack: [UInt8]?, keyframeWanted: UInt32?) -> FeedbackRequest? {
        let ssrc = channels[c].users[u].keyframeRequestDue(
            wanted: keyframeWanted, now: now, interval: keyframeRequestIntervalMicroseconds)
        guard ssrc != nil || nack != nil else { return nil }
        if ssrc != nil {
            // Drops count afresh from the decision (rare: at most one per interval).
            receiverChanges.append(.keyframeRequested(channels[c].users[u].key))
            stats.keyframeRequestsSent += 1
            channels[c].stats.keyframeRequestsSent += 1
            channels[c].users[u].reception.keyframeRequestsSent += 1
        }
        if nack != nil {
            channels[c].stats.nacksSent += 1
            channels[c].users[u].reception.nacksSent += 1
        }
        return FeedbackRequest(
            channelId: channels[c].id, localUid: channels[c].uid, publisher: channels[c].users[u].uid,
            pictureLossSSRC: ssrc, nack: nack)
    }
}
