/// A running recording of one remote stream (see ``MediaEngine/startRecording(channelId:uid:path:media:)``).
public struct StreamRecording: Sendable, Hashable {
    /// The recorded stream.
    public let stream: StreamKey
    /// The file written.
    public let path: String
}

extension MediaEngine {
    /// Records user `uid`'s `media` in `channelId` to `path` without re-encoding (track egress):
    /// the compressed frames the stream's receivers decode go into the file as they decode them,
    /// so the recording holds exactly what was played. `.webm` (video, audio or both) is written
    /// in live mode: a Cluster a second, so a process that dies leaves every complete Cluster;
    /// `.opus`/`.ogg` holds audio alone. The file begins at the first video keyframe (or audio
    /// frame) decoded; a stream not subscribed yet is recorded once it is. Emits
    /// ``ChannelEvent/recordingStarted(uid:path:)``, and ``ChannelEvent/recordingFailed(uid:path:message:)``
    /// if writing fails.
    /// - Throws: ``EngineError`` for a channel not joined, a stream already recorded, or a bad
    ///   path (its ``MediaError`` message).
    public func startRecording(
        channelId: String, uid: UInt32, path: String, media: RecordedMedia = [.audio, .video]
    ) throws -> StreamRecording {
        let key = StreamKey(channelId: channelId, uid: uid)
        try withControl { plane in
            guard !plane.destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
            guard let c = plane.joinedIndex(channelId) else {
                throw EngineError(.notReady, "channel '\(channelId)' is not joined")
            }
            guard plane.recordings[key] == nil else {
                throw EngineError(.invalidArgument, "user \(uid) in '\(channelId)' is already being recorded")
            }
            let recorder: StreamRecorder
            do {
                recorder = try StreamRecorder(path: path, key: key, media: media, now: plane.now)
            } catch let error as MediaError {
                throw EngineError(.invalidArgument, error.description)
            }
            plane.recordings[key] = recorder
            if let u = plane.userIndex(c, uid) {
                plane.channels[c].users[u].audio?.recorder.withLock { $0 = recorder }
                plane.channels[c].users[u].video?.recorder.withLock { $0 = recorder }
            }
            plane.emit(c, .recordingStarted(uid: uid, path: path))
        }
        flushActions()
        return StreamRecording(stream: key, path: path)
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
            guard let recorder = plane.recordings.removeValue(forKey: key) else {
                throw EngineError(.invalidArgument, "no recording of user \(key.uid) in '\(key.channelId)' runs")
            }
            if let c = plane.joinedIndex(key.channelId), let u = plane.userIndex(c, key.uid) {
                plane.channels[c].users[u].audio?.recorder.withLock { $0 = nil }
                plane.channels[c].users[u].video?.recorder.withLock { $0 = nil }
            }
            return recorder
        }
        // Finished outside the control lock: the last Cluster and the Cues are written here.
        let frames = try recorder.finish()
        withControl { plane in
            if let c = plane.joinedIndex(key.channelId) {
                plane.emit(
                    c,
                    .recordingStopped(uid: key.uid, path: recording.path, audioFrames: frames.audio, videoFrames: frames.video))
            }
        }
        flushActions()
        return frames
    }
}
