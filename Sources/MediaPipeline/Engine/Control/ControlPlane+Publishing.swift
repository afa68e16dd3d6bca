/// The role, local mutes, the publish state machine and where local media goes.
extension ControlPlane {
    mutating func setRole(_ ref: ChannelRef, _ role: ClientRole) throws {
        let c = try usable(ref)
        let old = channels[c].role
        guard old != role else { return }
        guard channels[c].joined && !channels[c].joining else {
            // While joining, kept and applied at the join's answer; a second publishing channel
            // is refused now, as it would be then.
            if channels[c].joining && role == .broadcaster {
                try checkSinglePublisher(c, wouldPublish: [.audio, .video])
            }
            channels[c].role = role
            return
        }
        if role == .broadcaster {
            // A new broadcaster publishes its local media (as the SDK does), so this is a
            // publishing action whatever the join options were.
            try checkSinglePublisher(c, wouldPublish: [.audio, .video])
            channels[c].options.publishLocalAudio = true
            channels[c].options.publishLocalVideo = true
        }
        if role == .audience { relayTeardown(c) }
        channels[c].role = role
        emit(c, .clientRoleChanged(old: old, new: role))
        refreshPublishState(c)
        let (channelId, uid, media) = (ref.id, channels[c].uid, channels[c].publishedMedia)
        channels[c].roleAnnounced = role
        channels[c].mediaAnnounced = media
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

    mutating func muteLocal(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) throws {
        let c = try usable(ref)
        var options = channels[c].options
        if !mute {
            if channels[c].joined && channels[c].role == .audience {
                throw EngineError(
                    .refused,
                    "an audience member cannot publish \(kind) in channel '\(ref.id)': become broadcaster first")
            }
            options.setPublishes(kind)
            if channels[c].joined {
                var media = channels[c].wouldPublish(options: options, role: channels[c].role)
                media.insert(PublishedMedia(kind))
                try checkSinglePublisher(c, wouldPublish: media)
            }
        }
        channels[c].options = options
        channels[c].localMuted[kind] = mute
        guard channels[c].joined && !channels[c].joining else { return }
        refreshPublishState(c)
        announceMedia(c)
    }

    /// Announces channel `c`'s media in it and in its relay destinations.
    mutating func announceMedia(_ c: Int) {
        let media = channels[c].publishedMedia
        channels[c].mediaAnnounced = media
        signal(.setMedia(channelId: channels[c].id, uid: channels[c].uid, media: media))
        if channels[c].relayState == .running {
            for (destination, relayUid) in zip(channels[c].relayDestinations, channels[c].relayUids) {
                signal(.setMedia(channelId: destination.channelId, uid: relayUid, media: media))
            }
        }
    }

    /// Reports publish-state changes after channel `c`'s media changed.
    mutating func refreshPublishState(_ c: Int) {
        let media = channels[c].publishedMedia
        for kind in MediaKind.allCases {
            let current = channels[c].publish[kind]
            let target: PublishState
            if media.contains(kind) {
                target = current == .published || current == .publishing ? current : .publishing
            } else {
                target = channels[c].joined ? .noPublish : .idle
            }
            guard target != current else { continue }
            channels[c].publish[kind] = target
            emit(
                c,
                .localPublishStateChanged(kind: kind, old: current, new: target, elapsedMs: channels[c].elapsedMs(now)))
        }
    }

    // MARK: - Local media going out

    /// Fills `targets` with where local `kind` goes now: the publishing channel first, then its
    /// running, unpaused relay destinations; returns the publishing channel's ref.
    func collectTargets(_ kind: MediaKind, into targets: inout [MediaStreamID]) -> ChannelRef? {
        targets.removeAll(keepingCapacity: true)
        guard let c = publishingChannel(), !channels[c].joining, channels[c].publishedMedia.contains(kind) else {
            return nil
        }
        let state = channels[c]
        targets.append(MediaStreamID(channelId: state.id, uid: state.uid, kind: kind))
        if state.relayState == .running && !state.relayPaused {
            for (destination, uid) in zip(state.relayDestinations, state.relayUids) {
                targets.append(MediaStreamID(channelId: destination.channelId, uid: uid, kind: kind))
            }
        }
        return state.ref
    }

    /// Whether the next local picture must be a keyframe (a subscriber asked, and the request
    /// interval has passed); counts it as forced.
    mutating func takeKeyframeRequest() -> Bool {
        let taken = Self.takeRequest(
            &keyframePending, lastForced: &lastForcedKeyframe, now: now, interval: keyframeRequestIntervalMicroseconds)
        if taken { stats.keyframesForced += 1 }
        return taken
    }

    /// Whether the next low-layer picture must be a keyframe (dual stream mode), on the same
    /// rule as the high layer's, its requests and interval apart.
    mutating func takeLowKeyframeRequest() -> Bool {
        let taken = Self.takeRequest(
            &lowKeyframePending, lastForced: &lastForcedLowKeyframe, now: now,
            interval: keyframeRequestIntervalMicroseconds)
        if taken { stats.keyframesForced += 1 }
        return taken
    }

    /// Takes a pending keyframe request once `interval` has passed since `lastForced`.
    private static func takeRequest(_ pending: inout Bool, lastForced: inout Int64?, now: Int64, interval: Int64)
        -> Bool
    {
        guard pending else { return false }
        if let last = lastForced, now - last < interval { return false }
        pending = false
        lastForced = now
        return true
    }

    /// A local audio frame was encoded and not sent: the encoder is in DTX
    /// (``DiscontinuousTransmission``).
    mutating func audioFrameWithheld() { stats.audioFramesEncoded += 1 }

    /// A local frame of `kind` went out in `packets` packets to `targetCount` targets of the
    /// publishing channel `ref`: counts it, reports PUBLISHED on the first, and the relay's
    /// first sending.
    mutating func frameSent(
        _ ref: ChannelRef, _ kind: MediaKind, byteCount: Int, packets: Int64, targetCount: Int, encodedHere: Bool
    ) {
        if kind == .audio {
            if encodedHere { stats.audioFramesEncoded += 1 }
            stats.audioFramesSent += Int64(targetCount)
        } else {
            if encodedHere { stats.videoFramesEncoded += 1 }
            stats.videoFramesSent += Int64(targetCount)
        }
        guard let c = index(ref) else { return }
        channels[c].stats.txPackets += packets
        if kind == .audio {
            channels[c].stats.txAudioFrames += 1
            channels[c].stats.txAudioBytes += Int64(byteCount)
        } else {
            channels[c].stats.txVideoFrames += 1
            channels[c].stats.txVideoBytes += Int64(byteCount)
        }
        if channels[c].publish[kind] == .publishing {
            channels[c].publish[kind] = .published
            emit(
                c,
                .localPublishStateChanged(
                    kind: kind, old: .publishing, new: .published, elapsedMs: channels[c].elapsedMs(now)))
        }
        if targetCount > 1 && !channels[c].relaySentReported {
            channels[c].relaySentReported = true
            emit(c, .channelMediaRelayEvent(.sentToDestinationChannel))
        }
    }
}
