/// A running recording of one remote stream (see ``MediaEngine/startRecording(channelId:uid:path:media:)``).
public struct StreamRecording: Sendable, Hashable {
    /// The recorded stream.
    public let stream: StreamKey
    /// The file written.
    public let path: String
    /// The media it holds.
    public let media: RecordedMedia
}

/// Where a recording is attached: one stream's media of one kind.
struct RecordingSlot: Hashable {
    let stream: StreamKey
    let kind: MediaKind

    init(_ stream: StreamKey, _ kind: MediaKind) {
        self.stream = stream
        self.kind = kind
    }

    /// The slots of `media`.
    static func of(_ stream: StreamKey, _ media: RecordedMedia) -> [RecordingSlot] {
        (media.contains(.audio) ? [RecordingSlot(stream, .audio)] : [])
            + (media.contains(.video) ? [RecordingSlot(stream, .video)] : [])
    }
}

extension MediaEngine {
    /// Records user `uid`'s `media` in `channelId` to `path` without re-encoding (track egress):
    /// the compressed frames the stream's receivers decode go into the file as they decode them,
    /// so the recording holds exactly what was played. `.webm` (video, audio or both) is written
    /// in live mode: a Cluster a second, so a process that dies leaves every complete Cluster;
    /// `.opus`/`.ogg` holds audio alone and `.ivf` video alone (the audio and the video of one
    /// user may go to two files, each a recording of its own). The file begins at the first video keyframe (or audio
    /// frame) decoded; a stream not subscribed yet is recorded once it is. Emits
    /// ``ChannelEvent/recordingStarted(uid:path:)``, and ``ChannelEvent/recordingFailed(uid:path:message:)``
    /// if writing fails.
    /// - Throws: ``EngineError`` for a channel not joined, media of the user already recorded,
    ///   or a bad path (its ``MediaError`` message).
    public func startRecording(
        channelId: String, uid: UInt32, path: String, media: RecordedMedia = [.audio, .video]
    ) throws -> StreamRecording {
        let key = StreamKey(channelId: channelId, uid: uid)
        try withControl { plane in
            guard !plane.destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            guard let c = plane.joinedIndex(channelId) else {
                throw EngineError(.notReady, "channel '\(channelId)' is not joined")
            }
            let slots = RecordingSlot.of(key, media)
            if let taken = recordings.firstTaken(slots) {
                throw EngineError(
                    .invalidArgument, "user \(uid)'s \(taken.kind.rawValue) in '\(channelId)' is already being recorded"
                )
            }
            let recorder: StreamRecorder
            do {
                recorder = try StreamRecorder(path: path, key: key, media: media, now: plane.now)
            } catch let error as MediaError {
                throw EngineError(.invalidArgument, error.description)
            }
            recordings.start(recorder, at: slots)
            let receivers = routes.withLock { $0.receivers(channelId: channelId, uid: uid) }
            if media.contains(.audio) { receivers.audio?.recorder.set(recorder) }
            if media.contains(.video) { receivers.video?.recorder.set(recorder) }
            plane.emit(c, .recordingStarted(uid: uid, path: path))
        }
        flushActions()
        return StreamRecording(stream: key, path: path, media: media)
    }

    /// Stops `recording` and finishes its file (Cues, Duration, sizes), which is then whole.
    /// Emits ``ChannelEvent/recordingStopped(uid:path:audioFrames:videoFrames:)``. Returns the
    /// audio packets and video frames written.
    /// - Throws: ``EngineError`` for a recording not running; the file's ``MediaError`` when it
    ///   could not be finished, or failed before (it then holds its Clusters up to the failure).
    @discardableResult
    public func stopRecording(_ recording: StreamRecording) throws -> (audio: Int64, video: Int64) {
        let key = recording.stream
        let recorder: StreamRecorder = try withControl { plane in
            let slots = RecordingSlot.of(key, recording.media)
            guard let recorder = recordings.stop(slots, path: recording.path) else {
                throw EngineError(
                    .invalidArgument, "no recording of user \(key.uid) in '\(key.channelId)' to \(recording.path) runs")
            }
            let receivers = routes.withLock { $0.receivers(channelId: key.channelId, uid: key.uid) }
            if recording.media.contains(.audio) { receivers.audio?.recorder.set(nil) }
            if recording.media.contains(.video) { receivers.video?.recorder.set(nil) }
            return recorder
        }
        // Finished outside the control lock: the last Cluster and the Cues are written here.
        let frames = try recorder.finish()
        withControl { plane in
            if let c = plane.joinedIndex(key.channelId) {
                plane.emit(
                    c,
                    .recordingStopped(
                        uid: key.uid, path: recording.path, audioFrames: frames.audio, videoFrames: frames.video))
            }
        }
        flushActions()
        return frames
    }
}

/// A running composite recording of a channel (see
/// ``MediaEngine/startChannelRecording(channelId:path:width:height:framesPerSecond:labels:videoSettings:audioSettings:)``).
public struct ChannelRecording: Sendable, Hashable {
    /// The recorded channel.
    public let channelId: String
    /// The file written.
    public let path: String
}

extension MediaEngine {
    /// Records channel `channelId` as one picture and one sound (room composite): its remote
    /// users' canvases laid into a grid (``renderGrid(channelId:into:labels:)``, with each uid
    /// when `labels`) and its channel mix, encoded once into a WebM file in live mode (a Cluster
    /// a second: a process that dies leaves every complete Cluster). The channel mix is turned
    /// on. ``pullPlayout(into:)-(UnsafeMutableBufferPointer<Int16>)`` feeds the audio, 10 ms per call; ``renderVideo()`` the
    /// pictures, at most `framesPerSecond` (the canvases' state at each due render). While it
    /// runs, the channel's users are aligned with each other on their senders' NTP clocks, in
    /// the playout and on the canvases too: every user's audio and video play at the latency of
    /// the slowest stream (up to 1.5 s added), so two users who clap at once show both claps in
    /// one picture. The delays move 40 ms per 100 ms: users half a second apart are together
    /// about 1.5 s after the recording starts. Emits
    /// ``ChannelEvent/recordingStarted(uid:path:)`` with uid 0 (the channel, not a user), and
    /// ``ChannelEvent/recordingFailed(uid:path:message:)`` with uid 0 if writing fails.
    /// - Throws: ``EngineError`` for a channel not joined or already recorded, or bad settings
    ///   (the message names the file).
    public func startChannelRecording(
        channelId: String, path: String, width: Int = 1280, height: Int = 720, framesPerSecond: Int = 15,
        labels: Bool = true, videoSettings: VPXEncoderConfiguration = VPXEncoderConfiguration(width: 1, height: 1),
        audioSettings: OpusEncoderConfiguration = .init()
    ) throws -> ChannelRecording {
        try withControl { plane in
            guard !plane.destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            guard let c = plane.joinedIndex(channelId) else {
                throw EngineError(.notReady, "channel '\(channelId)' is not joined")
            }
            guard !recordings.recordsChannel(channelId) else {
                throw EngineError(.invalidArgument, "channel '\(channelId)' is already being recorded")
            }
            let recorder: ChannelRecorder
            do {
                recorder = try ChannelRecorder(
                    channelId: channelId, path: path, width: width, height: height, framesPerSecond: framesPerSecond,
                    labels: labels, videoSettings: videoSettings, audioSettings: audioSettings,
                    mixSamples: playoutFrameSampleCount, now: plane.now)
            } catch let error as MediaError {
                throw EngineError(.invalidArgument, error.description)
            }
            try plane.enableChannelMix(plane.channels[c].ref, true)
            recordings.start(recorder)
            plane.compositeRecordedChannels.insert(channelId)
            plane.emit(c, .recordingStarted(uid: 0, path: path))
        }
        flushActions()
        return ChannelRecording(channelId: channelId, path: path)
    }

    /// Stops a channel's composite recording and finishes its file. Emits
    /// ``ChannelEvent/recordingStopped(uid:path:audioFrames:videoFrames:)`` with uid 0.
    /// Returns the pictures and audio packets written.
    /// - Throws: ``EngineError`` for a recording not running; the file's ``MediaError`` when it
    ///   could not be finished, or failed before.
    @discardableResult
    public func stopChannelRecording(_ recording: ChannelRecording) throws -> (pictures: Int64, audioPackets: Int64) {
        let recorder: ChannelRecorder = try withControl { plane in
            guard let recorder = recordings.stopChannel(recording.channelId) else {
                throw EngineError(.invalidArgument, "no recording of channel '\(recording.channelId)' runs")
            }
            plane.compositeRecordedChannels.remove(recording.channelId)
            return recorder
        }
        // Finished outside the control lock: the last Cluster and the Cues are written here.
        let written = try recorder.finish()
        withControl { plane in
            if let c = plane.joinedIndex(recording.channelId) {
                plane.emit(
                    c,
                    .recordingStopped(
                        uid: 0, path: recording.path, audioFrames: written.audioPackets, videoFrames: written.pictures))
            }
        }
        flushActions()
        return written
    }

    /// Reports, once, that the recording of user `u`'s `kind` in channel `c` failed writing.
    /// Call from a round's control section, for a user whose receiver the round worked on.
    func reportStreamRecordingFailure(_ plane: inout ControlPlane, _ c: Int, _ u: Int, _ kind: MediaKind) {
        guard let recording = recordings.recorder(RecordingSlot(plane.channels[c].users[u].key, kind)),
            let failure = recording.takeFailureToReport()
        else { return }
        plane.recordingFailed(c, u, path: recording.path, message: failure)
    }

    /// Reports, once each, the channel recordings whose writing failed. True when one did.
    func reportRecordingFailures(_ recorders: [ChannelRecorder]) -> Bool {
        var reported = false
        for recorder in recorders {
            guard let failure = recorder.takeFailureToReport() else { continue }
            withControl { plane in
                if let c = plane.joinedIndex(recorder.channelId) {
                    plane.emit(c, .recordingFailed(uid: 0, path: recorder.path, message: failure))
                }
            }
            reported = true
        }
        return reported
    }
}
