extension MediaEngine {
    // MARK: - Canvases

    /// Binds a canvas to (channel, uid) (Agora's `setupRemoteVideo`); binding again changes its
    /// size, render mode or mirroring. Returns the buffer the user's video is rendered into.
    /// The same uid in two channels has two independent canvases.
    public func setupRemoteVideo(_ canvas: VideoCanvas) throws -> CanvasBuffer {
        try ChannelID.validate(canvas.channelId)
        guard (1...I420Buffer.maximumDimension).contains(canvas.width),
            (1...I420Buffer.maximumDimension).contains(canvas.height)
        else {
            throw EngineError(.invalidArgument, "canvas size \(canvas.width)x\(canvas.height) is outside 1...16384")
        }
        let key = StreamKey(channelId: canvas.channelId, uid: canvas.uid)
        return try lock.withLock {
            guard !destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            if let existing = canvases[key] {
                try existing.reconfigure(canvas)
                return existing
            }
            let buffer = try CanvasBuffer(canvas)
            canvases[key] = buffer
            return buffer
        }
    }

    /// Unbinds the canvas of (channel, uid); its buffer is no longer rendered into.
    public func removeRemoteVideo(channelId: String, uid: UInt32) {
        _ = lock.withLock { canvases.removeValue(forKey: StreamKey(channelId: channelId, uid: uid)) }
    }

    /// The canvas bound to (channel, uid), if any.
    public func canvas(channelId: String, uid: UInt32) -> CanvasBuffer? {
        lock.withLock { canvases[StreamKey(channelId: channelId, uid: uid)] }
    }

    /// The canvases bound in `channelId`, ordered by uid.
    public func canvases(inChannel channelId: String) -> [CanvasBuffer] {
        lock.withLock {
            canvases.filter { $0.key.channelId == channelId }.sorted { $0.key.uid < $1.key.uid }.map(\.value)
        }
    }

    /// Renders the canvases of the remote broadcasters present in `channelId` now, in the order
    /// they appeared, into `target` as an N×N grid (hidden mode per cell), as AgoraUIKit lays out
    /// remote users. Users who left drop out of the grid; users without a canvas are skipped.
    public func renderGrid(channelId: String, into target: I420Buffer) {
        let present: [CanvasBuffer] = lock.withLock {
            guard let state = channels[channelId], state.joined else { return [] }
            return state.userOrder.compactMap { canvases[StreamKey(channelId: channelId, uid: $0)] }
        }
        GridRenderer.render(present, into: target)
    }

    // MARK: - Decoding

    /// Decodes the video received since the last call for every subscribed stream, independent
    /// streams in parallel, and renders each stream's newest picture into its canvas. Reports
    /// DECODING, FROZEN and size changes, and asks publishers for keyframes where decoding needs
    /// one. Decoding runs without the engine's control lock: control calls, statistics and
    /// packet arrival go on meanwhile. Concurrent calls render one after the other.
    public func renderVideo() {
        var requests: [(channelId: String, localUid: UInt32, publisher: UInt32, ssrc: UInt32)] = []
        let hadEvents: Bool = renderLock.withLock {
            // Under the control lock: give up on overdue packets and take the streams to decode.
            lock.withLock {
                let now = self.now
                videoRound.jobs.removeAll(keepingCapacity: true)
                videoReports.removeAll(keepingCapacity: true)
                for id in channelOrder {
                    guard let state = channels[id], state.joined else { continue }
                    for uid in state.userOrder {
                        guard let user = state.users[uid], let receiver = user.video else { continue }
                        let progress = receiver.poll(now: now)
                        state.stats.rxVideoFrames += Int64(progress.frames)
                        state.stats.rxPacketsLost += progress.packetsLost
                        state.stats.videoFramesDroppedBeforeDecode += progress.framesDropped
                        videoReports.append((state, user, receiver))
                        if progress.hasQueuedFrames { videoRound.jobs.append((receiver, canvases[user.key])) }
                    }
                }
            }
            // Independent streams decode in parallel; a stream's decoder is touched by one thread.
            videoWorkers.run(videoRound.jobs.count, on: videoRound)
            videoRound.jobs.removeAll(keepingCapacity: true)
            // Under the control lock again: report what the decoders did.
            return lock.withLock {
                let before = actions.count
                let freeze = Int64(configuration.videoFreezeMs) * 1000
                let now = self.now
                for (state, user, receiver) in videoReports {
                    // A stream released or a channel left meanwhile reports nothing more.
                    guard state.joined, user.video === receiver, state.users[user.uid] === user else { continue }
                    let decodedNow = receiver.takeBatchCount()
                    let awaitingKeyframe = receiver.awaitingKeyframe
                    if decodedNow > 0 {
                        state.stats.videoFramesDecoded += Int64(decodedNow)
                        state.stats.videoFramesRendered += canvases[user.key] == nil ? 0 : 1
                        receiver.lastDecodedAt = now
                        if !awaitingKeyframe { reportDecoding(state, user, .video) }
                        if receiver.width != user.reportedWidth || receiver.height != user.reportedHeight {
                            user.reportedWidth = receiver.width
                            user.reportedHeight = receiver.height
                            emit(
                                state,
                                .videoSizeChanged(uid: user.uid, width: receiver.width, height: receiver.height))
                        }
                    }
                    if awaitingKeyframe {
                        // Packets were lost: the canvas keeps the last correct picture until a keyframe.
                        if user.trackers.video.state == .decoding {
                            report(state, user, .video, .frozen, .networkCongestion)
                        }
                    } else if decodedNow == 0 {
                        if receiver.failed {
                            if user.trackers.video.state != .failed, let failure = receiver.failure {
                                // Once per failure, with its cause: the event only says INTERNAL.
                                actions.append(.warning("user \(user.uid) video: \(failure)", channelId: state.id))
                            }
                            report(state, user, .video, .failed, .internal)
                        } else if user.trackers.video.state == .decoding, let last = receiver.lastDecodedAt,
                            now - last > freeze
                        {
                            report(state, user, .video, .frozen, .networkCongestion)
                        }
                    }
                    if let ssrc = keyframeRequestDue(state, receiver) {
                        requests.append((state.id, state.uid, user.uid, ssrc))
                    }
                }
                videoReports.removeAll(keepingCapacity: true)
                return actions.count != before
            }
        }
        for request in requests {
            sendPictureLoss(
                channelId: request.channelId, from: request.localUid, to: request.publisher, mediaSSRC: request.ssrc)
        }
        if hadEvents { flushActions() }
    }

    /// The sender's SSRC when `receiver` should ask its publisher for a keyframe now: it is
    /// waiting for one, has dropped frames since its last request, and the request interval has
    /// passed. Marks the request as made. Call with the control lock held.
    func keyframeRequestDue(_ state: ChannelState, _ receiver: VideoReceiver) -> UInt32? {
        guard let ssrc = receiver.keyframeWanted else { return nil }
        let interval = Int64(configuration.keyframeRequestIntervalMs) * 1000
        if let last = receiver.lastKeyframeRequest, now - last < interval { return nil }
        receiver.lastKeyframeRequest = now
        receiver.keyframeRequested()
        stats.keyframeRequestsSent += 1
        state.stats.keyframeRequestsSent += 1
        return ssrc
    }
}
