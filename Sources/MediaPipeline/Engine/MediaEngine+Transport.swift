import Logging

/// The engine as the transport sees it: a separate object, so the transport's callbacks are not
/// part of the engine's public API. Holds the engine weakly (the transport holds endpoints).
/// `@unchecked Sendable`: ``engine`` is set once, in the engine's initialiser, before the
/// endpoint is handed to any transport.
final class EngineEndpoint: TransportEndpoint, @unchecked Sendable {
    weak var engine: MediaEngine?

    init() {}

    func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {
        engine?.userJoined(channelId: channelId, uid: uid, media: media)
    }
    func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        engine?.userOffline(channelId: channelId, uid: uid, reason: reason)
    }
    func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {
        engine?.mediaChanged(channelId: channelId, uid: uid, media: media)
    }
    func transportReceive(_ packet: RTPPacket, channelId: String, from uid: UInt32) {
        engine?.receive(packet, channelId: channelId, from: uid)
    }
    func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        engine?.receiveRTCP(bytes, channelId: channelId, from: uid)
    }
    func transportConnectionStateChanged(channelId: String, state: ConnectionState, reason: ConnectionChangedReason) {
        engine?.connectionStateChanged(channelId: channelId, state: state, reason: reason)
    }
}

extension MediaEngine {
    func userJoined(channelId: String, uid: UInt32, media: PublishedMedia) {
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
        flushActions()
    }

    func userOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        lock.withLock {
            guard let state = channels[channelId], state.joined, let user = state.users[uid] else { return }
            user.media = []
            stopReceiving(state, user, .audio, reason: .remoteOffline)
            stopReceiving(state, user, .video, reason: .remoteOffline)
            state.users[uid] = nil
            state.userOrder.removeAll { $0 == uid }
            emit(state, .userOffline(uid: uid, reason: reason))
        }
        flushActions()
    }

    func mediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {
        lock.withLock {
            guard let state = channels[channelId], state.joined else { return }
            applyRemoteMedia(state, uid, media)
        }
        flushActions()
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

    func receive(_ packet: RTPPacket, channelId: String, from uid: UInt32) {
        guard let codec = RTPPayloadType.codec(packet.header.payloadType) else { return }
        var pictureLoss: (localUid: UInt32, mediaSSRC: UInt32)?
        let hadEvents: Bool = lock.withLock {
            guard let state = channels[channelId], state.joined, let user = state.users[uid] else { return false }
            let before = actions.count + state.deferred.count
            let now = self.now
            state.stats.rxPackets += 1
            if codec.kind == .audio {
                state.stats.rxAudioBytes += Int64(packet.payloadByteCount)
                guard let receiver = user.audio else { return false }
                let (frames, lost) = receiver.receive(packet, now: now)
                state.stats.rxAudioFrames += Int64(frames)
                state.stats.rxPacketsLost += lost
                if user.trackers.audio.state == .stopped {
                    report(state, user, .audio, .starting, user.trackers.audio.resumeReason)
                }
                setSubscribe(state, user, .audio, .subscribed)
            } else {
                state.stats.rxVideoBytes += Int64(packet.payloadByteCount)
                guard let receiver = user.video else { return false }
                let progress = receiver.receive(packet, now: now)
                state.stats.rxVideoFrames += Int64(progress.frames)
                state.stats.rxPacketsLost += progress.packetsLost
                state.stats.videoFramesDroppedBeforeDecode += progress.framesDropped
                if let ssrc = keyframeRequestDue(state, receiver) { pictureLoss = (state.uid, ssrc) }
                if user.trackers.video.state == .stopped {
                    report(state, user, .video, .starting, user.trackers.video.resumeReason)
                }
                setSubscribe(state, user, .video, .subscribed)
            }
            return actions.count + state.deferred.count != before
        }
        if let pictureLoss {
            sendPictureLoss(channelId: channelId, from: pictureLoss.localUid, to: uid, mediaSSRC: pictureLoss.mediaSSRC)
        }
        if hadEvents { flushActions() }
    }

    /// Asks `publisher` for a keyframe of its stream `mediaSSRC` with an RTCP PLI.
    func sendPictureLoss(channelId: String, from localUid: UInt32, to publisher: UInt32, mediaSSRC: UInt32) {
        configuration.logger.debug(
            "keyframe request (PLI) to user \(publisher)",
            metadata: ["channel": "\(channelId)", "ssrc": "\(mediaSSRC)"])
        let message = RTCPCompound.serialize([
            .pictureLossIndication(senderSSRC: rtp.feedbackSSRC, mediaSSRC: mediaSSRC)
        ])
        transport.sendRTCP(message, channelId: channelId, from: localUid, to: publisher)
    }

    func receiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        let now = self.now
        var reader = FeedbackReader(audioSSRC: rtp.audioSSRC, videoSSRC: rtp.videoSSRC, nowMicroseconds: now)
        // Feedback that cannot be read is dropped, as a network stack drops a corrupt datagram.
        guard (try? bytes.withUnsafeBytes({ try RTCPCompound.visit($0, &reader) })) != nil else { return }
        if reader.keyframeWanted {
            configuration.logger.debug("keyframe requested by user \(uid)", metadata: ["channel": "\(channelId)"])
        }
        lock.withLock {
            if let state = channels[channelId], state.joined, let user = state.users[uid] {
                // A remote user's clock, for the round trip our reports let it measure.
                func note(_ report: (UInt32, UInt64)?) {
                    guard let (ssrc, ntp) = report else { return }
                    user.audio?.senderReport(ssrc: ssrc, ntpTimestamp: ntp, arrivalMicroseconds: now)
                    user.video?.senderReport(ssrc: ssrc, ntpTimestamp: ntp, arrivalMicroseconds: now)
                }
                note(reader.senderReports.first)
                note(reader.senderReports.second)
            }
            // Reports on our own streams: in our channel, or in one we relay to.
            if reader.roundTripMicroseconds != nil || reader.fractionLost != nil,
                let state = channels[channelId] ?? publishingChannel()
            {
                if let roundTrip = reader.roundTripMicroseconds { state.stats.roundTripTimeMs = roundTrip / 1000 }
                if let fraction = reader.fractionLost { state.stats.txPacketLossPercent = Int(fraction) * 100 / 256 }
            }
            guard reader.keyframeWanted else { return }
            stats.keyframeRequestsReceived += 1
            guard let state = publishingChannel() else { return }
            if state.id == channelId || state.relayDestinations.contains(where: { $0.channelId == channelId }) {
                keyframePending = true
            }
        }
    }

    /// The transport says the connection of `channelId` changed: reported as Agora's
    /// connection state event.
    func connectionStateChanged(channelId: String, state connection: ConnectionState, reason: ConnectionChangedReason) {
        lock.withLock {
            guard let state = channels[channelId], state.joined, !state.joining else { return }
            setConnection(state, connection, reason)
        }
        flushActions()
    }
}
