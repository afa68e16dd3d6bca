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
        return try input { plane in
            guard !plane.destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            // Bound under the control lock, so the size the decisions see is the bound one's.
            let buffer = try canvasStore.bind(canvas, to: key)
            plane.canvasChanged(key, size: (canvas.width, canvas.height))
            return buffer
        }
    }

    /// Unbinds the canvas of (channel, uid); its buffer is no longer rendered into.
    public func removeRemoteVideo(channelId: String, uid: UInt32) {
        input { plane in
            let key = StreamKey(channelId: channelId, uid: uid)
            canvasStore.unbind(key)
            plane.canvasChanged(key, size: nil)
        }
    }

    /// The canvas bound to (channel, uid), if any.
    public func canvas(channelId: String, uid: UInt32) -> CanvasBuffer? {
        canvasStore.canvas(StreamKey(channelId: channelId, uid: uid))
    }

    /// The canvases bound in `channelId`, ordered by uid.
    public func canvases(inChannel channelId: String) -> [CanvasBuffer] {
        canvasStore.canvases(inChannel: channelId)
    }

    /// Renders the canvases of the remote broadcasters present in `channelId` now, in the order
    /// they appeared, into `target` as an N×N grid (hidden mode per cell), as AgoraUIKit lays out
    /// remote users. Users who left drop out of the grid; users without a canvas are skipped.
    /// With `labels`, each cell carries its user's uid.
    public func renderGrid(channelId: String, into target: I420Buffer, labels: Bool = false) {
        let keys: [StreamKey] = control.withLock { plane in
            guard let c = plane.joinedIndex(channelId) else { return [] }
            return plane.channels[c].users.map(\.key)
        }
        GridRenderer.render(canvasStore.canvases(keys), into: target, labels: labels)
    }

    // MARK: - Decoding

    /// Decodes the video received since the last call for every subscribed stream, independent
    /// streams in parallel, and renders each stream's newest picture into its canvas. Reports
    /// DECODING, FROZEN and size changes, and asks publishers for keyframes where decoding needs
    /// one. Decoding runs without the engine's control lock: control calls, statistics and
    /// packet arrival go on meanwhile. Concurrent calls render one after the other.
    public func renderVideo() {
        var requests: [ControlPlane.FeedbackRequest] = []
        // Channel composites learn of new pictures, and take one of their grid when due.
        let recorders = recordings.channelRecorders
        let decided: Bool = render.withLock { round in
            // Under the control lock: only take the streams.
            withControl { plane in
                round.decode.reset()
                round.streams.removeAll(keepingCapacity: true)
                round.decode.now = plane.now
                round.decode.observer = plane.videoObserver
                let table = routeSnapshot
                for c in plane.channels.indices where plane.channels[c].joined {
                    let ref = plane.channels[c].ref
                    for u in plane.channels[c].users.indices {
                        guard let id = plane.channels[c].users[u].receiving.video else { continue }
                        let key = plane.channels[c].users[u].key
                        guard let receiver = table.route(channelId: ref.id, uid: key.uid)?.video else { continue }
                        round.streams.append(
                            StreamSlot(ref: ref, uid: key.uid, hint: (c, u), id: id, receiver: receiver))
                        round.decode.append(receiver, key: key)
                    }
                }
            }
            // Without it, independent streams in parallel (a stream's receiver is touched by one
            // thread): overdue packets given up on, NACKs written, frames decoded and rendered.
            videoWorkers.run(round.decode.jobs.count, on: round.decode)
            // As one input again: count, ask for what is missing and report what the decoders did.
            return withControl { plane in
                let before = plane.decisions
                let freeze = Int64(configuration.videoFreezeMs) * 1000
                let recordsStreams = recordings.recordsStreams
                for (index, slot) in round.streams.enumerated() {
                    let (progress, keyframe) = round.decode.results[index]
                    let decodedNow = slot.receiver.takeBatchCount()
                    if decodedNow > 0 {
                        for recorder in recorders where recorder.channelId == slot.ref.id {
                            recorder.canvasChanged(now: plane.now)
                        }
                    }
                    // A channel left meanwhile counts nothing more; a stream released meanwhile
                    // counts in its channel and reports nothing more.
                    guard let c = plane.index(slot.ref, hint: slot.hint.channel), plane.channels[c].joined else {
                        continue
                    }
                    plane.channels[c].stats.add(progress)
                    guard let u = plane.userIndex(c, slot.uid, hint: slot.hint.user),
                        plane.channels[c].users[u].receiving.video == slot.id
                    else { continue }
                    plane.channels[c].users[u].reception.videoFramesDropped += progress.framesDropped
                    if let nack = progress.nack,
                        let request = plane.feedbackDue(c, u, nack: nack, keyframeWanted: progress.keyframeWanted)
                    {
                        requests.append(request)
                    }
                    if recordsStreams { reportStreamRecordingFailure(&plane, c, u, .video) }
                    if let request = plane.videoDecoded(
                        c, u, slot.receiver, decodedNow: decodedNow, keyframe: keyframe,
                        freezeMicroseconds: freeze)
                    {
                        requests.append(request)
                    }
                }
                round.streams.removeAll(keepingCapacity: true)
                round.decode.reset()
                return plane.decisions != before
            }
        }
        for request in requests { sendFeedback(request) }
        let now = self.now
        for recorder in recorders {
            recorder.addPictureIfDue(now: now) {
                renderGrid(channelId: recorder.channelId, into: $0, labels: recorder.labels)
            }
        }
        let failedRecording = reportRecordingFailures(recorders)
        if decided || failedRecording { flushActions() }
    }
}
