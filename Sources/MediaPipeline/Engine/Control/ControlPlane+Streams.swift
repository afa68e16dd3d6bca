/// What the media paths tell the control plane: packets arrived, what a playout or render round
/// decoded, feedback on the local streams. Each returns what the engine must do outside the
/// lock (a keyframe request to send), and queues events like any other input.
extension ControlPlane {
    /// Feedback for one publisher, to send outside the lock: from `localUid` to `publisher` in
    /// `channelId`, a keyframe request (PLI) for `pictureLossSSRC`, a NACK, or both.
    struct FeedbackRequest {
        let channelId: String
        let localUid: UInt32
        let publisher: UInt32
        var pictureLossSSRC: UInt32?
        /// A NACK, written by the video or audio receiver.
        var nack: [UInt8]?
    }

    /// An RTP packet of `kind` from `uid` in `channelId` arrived at ``now`` whose route is not
    /// settled (a decision is due on arrival), and the engine delivered it through that route
    /// (`feedback` is what its receiver asked for): STARTING and SUBSCRIBED are decided.
    /// Returns the feedback to send (a NACK for packets found missing, a keyframe request).
    mutating func packetArrived(
        _ kind: MediaKind, channelId: String, from uid: UInt32, _ feedback: ReceiveRoute.Feedback
    ) -> FeedbackRequest? {
        guard let c = joinedIndex(channelId), let u = userIndex(c, uid) else { return nil }
        if !channels[c].users[u].routeSettled[kind] { mediaArrived(c, u, kind) }
        return arrivalFeedback(c, u, kind, feedback)
    }

    /// The feedback user `u`'s receiver of `kind` asks for on a packet's arrival, counted: its
    /// NACK, and for video a keyframe request when one is due.
    mutating func arrivalFeedback(_ c: Int, _ u: Int, _ kind: MediaKind, _ feedback: ReceiveRoute.Feedback)
        -> FeedbackRequest?
    {
        kind == .video
            ? feedbackDue(c, u, nack: feedback.nack, keyframeWanted: feedback.keyframeWanted)
            : audioFeedback(c, u, nack: feedback.nack)
    }

    /// An audio NACK of user `u`'s receiver to send its publisher, counted.
    mutating func audioFeedback(_ c: Int, _ u: Int, nack: [UInt8]?) -> FeedbackRequest? {
        guard let nack else { return nil }
        channels[c].stats.nacksSent += 1
        return FeedbackRequest(
            channelId: channels[c].id, localUid: channels[c].uid, publisher: channels[c].users[u].uid,
            pictureLossSSRC: nil, nack: nack)
    }

    /// What a playout round's decoding of user `u`'s audio gave: reports DECODING, FAILED or
    /// FROZEN. Returns true when the stream has a frame to mix.
    mutating func audioDecoded(_ c: Int, _ u: Int, _ receiver: AudioReceiver, freezeMicroseconds: Int64) -> Bool {
        switch receiver.lastOutput {
        case .audio:
            channels[c].stats.audioFramesDecoded += 1
            reportDecoding(c, u, .audio)
            if let since = channels[c].users[u].awaitingFirstFrameSince.audio {
                channels[c].users[u].awaitingFirstFrameSince.audio = nil
                emit(
                    c,
                    .firstRemoteAudioFrame(
                        uid: channels[c].users[u].uid, elapsedMs: channels[c].elapsedMs(now),
                        sinceSubscribeMs: (now - since) / 1000))
            }
            return true
        case .concealed, .comfortNoise:
            return true
        case .none:
            let state = channels[c].users[u].trackers.audio.state
            if receiver.failed {
                if state != .failed, let failure = receiver.failure {
                    // Once per failure, with its cause: the event only says INTERNAL.
                    warn("user \(channels[c].users[u].uid) audio: \(failure)", channelId: channels[c].id)
                }
                report(c, u, .audio, .failed, .internal)
            } else if receiver.starvedMicroseconds > freezeMicroseconds && state == .decoding {
                report(c, u, .audio, .frozen, .networkCongestion)
            }
            return false
        }
    }

    /// What a render round's decoding of user `u`'s video gave (`decodedNow` frames, and the
    /// receiver's ``VideoReceiver/keyframeState`` afterwards): reports DECODING, FROZEN, FAILED
    /// and size changes. Returns a keyframe request to send, if due.
    mutating func videoDecoded(
        _ c: Int, _ u: Int, _ receiver: VideoReceiver, decodedNow: Int,
        keyframe: (awaiting: Bool, wanted: UInt32?), freezeMicroseconds: Int64
    ) -> FeedbackRequest? {
        let awaitingKeyframe = keyframe.awaiting
        let uid = channels[c].users[u].uid
        channels[c].users[u].reception.videoDecoded(
            decodedNow, rendered: canvasSizes[channels[c].users[u].key] != nil, now: now)
        if decodedNow > 0 {
            channels[c].stats.videoFramesDecoded += Int64(decodedNow)
            channels[c].stats.videoFramesRendered += canvasSizes[channels[c].users[u].key] == nil ? 0 : 1
            channels[c].users[u].lastDecodedAt = now
            if !awaitingKeyframe { reportDecoding(c, u, .video) }
            let (width, height) = (receiver.width, receiver.height)
            if let since = channels[c].users[u].awaitingFirstFrameSince.video {
                channels[c].users[u].awaitingFirstFrameSince.video = nil
                emit(
                    c,
                    .firstRemoteVideoFrame(
                        uid: uid, width: width, height: height, elapsedMs: channels[c].elapsedMs(now),
                        sinceSubscribeMs: (now - since) / 1000))
            }
            if width != channels[c].users[u].reportedWidth || height != channels[c].users[u].reportedHeight {
                channels[c].users[u].reportedWidth = width
                channels[c].users[u].reportedHeight = height
                emit(c, .videoSizeChanged(uid: uid, width: width, height: height))
                // The pictures' area under the stream said to arrive; the canvas may now fit
                // the low stream, or no longer.
                let before = channels[c].users[u].highPictureArea
                channels[c].users[u].pictureAreas[channels[c].users[u].rxStreamType] = width * height
                if channels[c].users[u].highPictureArea != before { refreshVideoType(c, u) }
            }
        }
        let state = channels[c].users[u].trackers.video.state
        if awaitingKeyframe {
            // Packets were lost: the canvas keeps the last correct picture until a keyframe.
            if state == .decoding { report(c, u, .video, .frozen, .networkCongestion) }
        } else if decodedNow == 0 {
            if receiver.failed {
                if state != .failed, let failure = receiver.failure {
                    // Once per failure, with its cause: the event only says INTERNAL.
                    warn("user \(uid) video: \(failure)", channelId: channels[c].id)
                }
                report(c, u, .video, .failed, .internal)
            } else if state == .decoding, let last = channels[c].users[u].lastDecodedAt, now - last > freezeMicroseconds
            {
                report(c, u, .video, .frozen, .networkCongestion)
            }
        }
        return feedbackDue(c, u, nack: nil, keyframeWanted: keyframe.wanted)
    }

    /// RTCP from `uid` in `channelId`, read by `reader`: the round trip to the remote user is
    /// kept for its statistics; reports on the local streams update the round trip and loss;
    /// keyframe requests for the local video are honoured on the next picture. The engine hands
    /// the remote user's receivers its sender reports and the round trip
    /// (``RemoteReceivers/take(_:now:)``) itself.
    mutating func feedbackArrived(_ reader: FeedbackReader, channelId: String, from uid: UInt32) {
        if let c = joinedIndex(channelId), let u = userIndex(c, uid) {
            if let roundTrip = reader.roundTripToPublisherMicroseconds {
                channels[c].users[u].roundTripMicroseconds = roundTrip
            }
        }
        // Reports on our own streams: in our channel, or in one we relay to.
        if reader.roundTripMicroseconds != nil || reader.fractionLost != nil,
            let c = channels.firstIndex(where: { $0.id == channelId }) ?? publishingChannel()
        {
            if let roundTrip = reader.roundTripMicroseconds { channels[c].stats.roundTripTimeMs = roundTrip / 1000 }
            if let fraction = reader.fractionLost { channels[c].stats.txPacketLossPercent = Int(fraction) * 100 / 256 }
        }
        if reader.lowKeyframeWanted {
            stats.keyframeRequestsReceived += 1
            if relays(to: channelId) { lowKeyframePending = true }
        }
        if reader.keyframeWanted {
            stats.keyframeRequestsReceived += 1
            if relays(to: channelId) { keyframePending = true }
        }
    }

    /// The local user's uid in `channelId`: its own membership, or the relay's there.
    func localUid(in channelId: String) -> UInt32? {
        if let c = joinedIndex(channelId) { return channels[c].uid }
        for c in channels.indices {
            guard let d = channels[c].relayDestinations.firstIndex(where: { $0.channelId == channelId }),
                d < channels[c].relayUids.count
            else { continue }
            return channels[c].relayUids[d]
        }
        return nil
    }

    /// The recording of user `u`'s stream to `path` failed writing with `message` (the engine
    /// reports each failure once).
    mutating func recordingFailed(_ c: Int, _ u: Int, path: String, message: String) {
        emit(c, .recordingFailed(uid: channels[c].users[u].uid, path: path, message: message))
    }
}
