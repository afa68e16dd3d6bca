extension MediaEngine: TransportEndpoint {
    public func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {
        lock.withLock {
            guard let state = channels[channelId], state.joined else { return }
            if state.users[uid] != nil {
                applyRemoteMedia(state, uid, media)
                return
            }
            var muted = PerMedia(false)
            for kind in MediaKind.allCases { muted[kind] = state.startsMuted(uid, kind) }
            let user = RemoteUser(uid: uid, channelId: channelId, media: media, muted: muted)
            state.users[uid] = user
            state.userOrder.append(uid)
            emit(state, .userJoined(uid: uid, elapsedMs: state.elapsedMs(now)))
            for kind in MediaKind.allCases { subscriptionChanges.append((state, uid, kind, !muted[kind])) }
            for kind in MediaKind.allCases where media.contains(kind) {
                if muted[kind] {
                    setSubscribe(state, user, kind, .noSubscribe)
                } else {
                    startReceiving(state, user, kind)
                }
            }
        }
        flushEvents()
    }

    public func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        lock.withLock {
            guard let state = channels[channelId], state.joined, let user = state.users[uid] else { return }
            user.media = []
            stopReceiving(state, user, .audio, reason: .remoteOffline)
            stopReceiving(state, user, .video, reason: .remoteOffline)
            state.users[uid] = nil
            state.userOrder.removeAll { $0 == uid }
            emit(state, .userOffline(uid: uid, reason: reason))
        }
        flushEvents()
    }

    public func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {
        lock.withLock {
            guard let state = channels[channelId], state.joined else { return }
            applyRemoteMedia(state, uid, media)
        }
        flushEvents()
    }

    /// A remote user started or stopped sending audio or video.
    private func applyRemoteMedia(_ state: ChannelState, _ uid: UInt32, _ media: PublishedMedia) {
        guard let user = state.users[uid] else { return }
        let old = user.media
        user.media = media
        for kind in MediaKind.allCases where old.contains(kind) != media.contains(kind) {
            if media.contains(kind) {
                user.trackers[kind].resumeReason = .remoteUnmuted
                startReceiving(state, user, kind)
            } else {
                stopReceiving(state, user, kind, reason: .remoteMuted)
            }
        }
    }

    public func transportReceive(_ frame: EncodedFrame, channelId: String, from uid: UInt32) {
        var keyframeRequest = false
        let hadEvents: Bool = lock.withLock {
            guard let state = channels[channelId], state.joined, let user = state.users[uid] else { return false }
            let before = pendingEvents.count + state.deferred.count
            if frame.codec.kind == .audio {
                state.stats.rxAudioFrames += 1
                state.stats.rxAudioBytes += Int64(frame.byteCount)
                guard let receiver = user.audio else { return false }
                receiver.enqueue(frame)
                if user.trackers.audio.state == .stopped {
                    report(state, user, .audio, .starting, user.trackers.audio.resumeReason)
                }
                setSubscribe(state, user, .audio, .subscribed)
            } else {
                state.stats.rxVideoFrames += 1
                state.stats.rxVideoBytes += Int64(frame.byteCount)
                guard let receiver = user.video else { return false }
                receiver.enqueue(frame)
                keyframeRequest = keyframeRequestDue(receiver)
                if user.trackers.video.state == .stopped {
                    report(state, user, .video, .starting, user.trackers.video.resumeReason)
                }
                setSubscribe(state, user, .video, .subscribed)
            }
            return pendingEvents.count + state.deferred.count != before
        }
        if keyframeRequest { transport.requestKeyframe(channelId: channelId, publisher: uid) }
        if hadEvents { flushEvents() }
    }

    public func transportKeyframeRequested(channelId: String) {
        lock.withLock {
            stats.keyframeRequestsReceived += 1
            guard let state = publishingChannel() else { return }
            if state.id == channelId || state.relayDestinations.contains(where: { $0.channelId == channelId }) {
                keyframePending = true
            }
        }
    }
}
