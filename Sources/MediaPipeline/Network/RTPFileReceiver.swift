#if canImport(Glibc)
    import Glibc
#endif

/// What an RTP receive did.
public struct RTPReceiveSummary: Sendable, Equatable {
    /// One stream (audio or video) received.
    public struct Stream: Sendable, Equatable {
        /// Audio or video.
        public var kind: MediaKind
        /// RTP packets received, and sequence numbers never received (after retransmissions).
        public var packets: Int64, packetsLost: Int64
        /// Datagrams on the stream's ports that were not its packets (garbage, other senders).
        public var ignored: Int64
        /// Video: frames decoded, NACK messages and keyframe requests sent. Audio: 10 ms frames
        /// played and those of them concealed, up to the last frame that was not (the silence
        /// concealed after the sender stopped is not loss).
        public var frames: Int64, nacksSent: Int64, keyframeRequestsSent: Int64, framesConcealed: Int64
        /// Audio: the concealed frames that are silent (under about -50 dBFS: not heard), counted
        /// in ``framesConcealed`` too.
        public var framesConcealedSilent: Int64 = 0
        /// Whether the sender said goodbye (RTCP BYE).
        public var sawBye: Bool
        /// Video: how long frames waited, on average, beyond their fastest path before being
        /// decoded (what the jitter buffer added), in milliseconds.
        public var meanAddedDelayMs: Double = 0
        /// Audio: lost packets rebuilt from a later packet: its in-band FEC, or its redundant copy
        /// (RED, RFC 2198).
        public var packetsRecovered: Int64 = 0
        /// Retransmissions that came in their own payload type and SSRC (RFC 4588).
        public var retransmissionsReceived: Int64 = 0
    }
    /// One output file.
    public struct Output: Sendable, Equatable {
        /// The file written.
        public var path: String
        /// Audio packets and video frames in it (a WAV file: 10 ms frames of the mix).
        public var audioFrames: Int64, videoFrames: Int64
    }
    /// The streams received, audio first.
    public var streams: [Stream]
    /// The files written, in the order named.
    public var outputs: [Output]
    /// Why receiving ended: "bye", "timeout", "duration" or "interrupted".
    public var endedBy: String
    /// Seconds from the start to the end.
    public var seconds: Double
    /// With `computeMD5`: each decoded picture's MD5 over its packed planes, in decoding order,
    /// as `vpxdec --md5 --i420` prints them per frame.
    public var frameMD5s: [String] = []
}

/// Receives the RTP streams an SDP describes (as a peer such as ffmpeg or GStreamer sends them)
/// through an ``RTPSession``: the engine's jitter buffers, NACK and PLI to the sender, receiver
/// reports, decoding and mixing. What was decoded is written to files by extension:
/// - `.ivf`: the video frames decoded, as received (no re-encoding);
/// - `.opus`/`.ogg`: the audio packets decoded, as received;
/// - `.webm`: both, as received, in one file;
/// - `.wav`: the audio as played (the playout mix, 48 kHz stereo, concealment and silences
///   within the stream included), from its first 10 ms played to its last;
/// - `.y4m`: every picture decoded, at its own size (one size throughout), at the frame rate of
///   the first two pictures' timestamps.
///
/// Receiving ends when the sender has said BYE on every stream (after the jitter buffers have
/// played out what they hold), when no packet came for `idleTimeoutSeconds` (after the first;
/// `startTimeoutSeconds` before it), after `maximumSeconds`, or when `shouldStop` says so.
/// The files are written whole or not at all.
public enum RTPFileReceiver {
    /// How long after the sender's goodbye the jitter buffers are played out.
    static let drainMicroseconds: Int64 = 600_000

    /// Receives `sdp`'s audio and video into `outputs`. RTCP (receiver reports, NACK, PLI) goes
    /// where the sender's RTCP comes from, or, with `rtcpHost`, to `rtcpHost`:`rtcpPort` + 2i for
    /// the SDP's stream `i` (a sender that reads RTCP on ports of its own, as a GStreamer
    /// pipeline with a separate `udpsrc` does). With `computeMD5`, the summary lists every decoded
    /// picture's MD5 (outputs may then be empty). `progress` is called once a second with the
    /// streams so far.
    /// - Throws: ``MediaError`` for an output of an unknown kind, a port that cannot be bound,
    ///   or a file that got nothing; ``EngineError`` from the engine.
    @discardableResult
    public static func receive(
        sdp: SessionDescription, outputs: [String], startTimeoutSeconds: Double = 10, idleTimeoutSeconds: Double = 2,
        maximumSeconds: Double? = nil, rtcpHost: String? = nil, rtcpPort: Int = 0, computeMD5: Bool = false,
        configuration: EngineConfiguration = .init(), clock: MediaClock = WallClock(),
        shouldStop: () -> Bool = { false },
        progress: ((_ seconds: Double, _ streams: [RTPReceiveSummary.Stream]) -> Void)? = nil
    ) throws -> RTPReceiveSummary {
        guard !outputs.isEmpty || computeMD5 else {
            throw MediaError.invalidArgument("name at least one output file (or ask for MD5s)")
        }
        var streams = try RTPPeerStream.streams(receiving: sdp, sendingTo: nil)
        if let rtcpHost {
            for index in streams.indices {
                let place = sdp.media.firstIndex { $0.port == streams[index].localPort } ?? index
                streams[index].remoteHost = rtcpHost
                streams[index].remoteRTCPPort = rtcpPort + 2 * place
            }
        }
        var received = RecordedMedia()
        for stream in streams where stream.receives { received.insert(stream.kind == .audio ? .audio : .video) }
        var recorded: [(path: String, media: RecordedMedia)] = []
        var wavPath: String?
        var y4mPath: String?
        for output in outputs {
            switch MediaFileKind.forOutput(path: output) {
            case .ivf: recorded.append((output, .video))
            case .oggOpus: recorded.append((output, .audio))
            case .webm: recorded.append((output, received))
            case .wav where wavPath == nil: wavPath = output
            case .y4m where y4mPath == nil: y4mPath = output
            default:
                throw MediaError.invalidArgument(
                    "\(output): receive writes .ivf (video), .opus/.ogg (audio), .webm (both), one .wav (the mix) "
                        + "or one .y4m (the pictures decoded)")
            }
        }
        for (index, later) in recorded.enumerated() {
            for earlier in recorded[..<index] where !earlier.media.intersection(later.media).isEmpty {
                let shared = earlier.media.intersection(later.media).contains(.audio) ? "audio" : "video"
                throw MediaError.invalidArgument(
                    "\(earlier.path) and \(later.path) would both hold the \(shared) as received: each stream goes "
                        + "into one file (a .webm holds audio and video; .wav and .y4m, the decoded media, may be added)"
                )
            }
        }
        for (path, media) in recorded where !received.isSuperset(of: media) {
            throw MediaError.invalidArgument(
                "\(path): the SDP has no \(media.contains(.video) ? "video" : "audio") stream in Opus, VP8 or VP9")
        }
        if wavPath != nil && !received.contains(.audio) {
            throw MediaError.invalidArgument("\(wavPath!): the SDP has no audio stream in Opus")
        }
        if (y4mPath != nil || computeMD5) && !received.contains(.video) {
            throw MediaError.invalidArgument(
                "\(y4mPath ?? "MD5s"): the SDP has no video stream in VP8 or VP9")
        }

        let session = try RTPSession(streams: streams, publish: [], configuration: configuration, clock: clock)
        defer { session.close() }
        let engine = session.engine
        let recordings = try recorded.map {
            try engine.startRecording(
                channelId: RTPSession.channelId, uid: RTPSession.peerUid, path: $0.path, media: $0.media)
        }
        let pictures =
            y4mPath != nil || computeMD5
            ? DecodedVideoWriter(
                path: y4mPath, computeMD5: computeMD5,
                stream: StreamKey(channelId: RTPSession.channelId, uid: RTPSession.peerUid)) : nil
        engine.setVideoFrameObserver(pictures)
        // Video decodes on a thread of its own: this one keeps the playout's 10 ms steps.
        let renderer = received.contains(.video) ? VideoRenderThread(engine: engine) : nil
        defer { renderer?.stop() }
        let wav = try wavPath.map {
            try WAVWriter(
                path: $0, sampleRate: engine.configuration.playoutSampleRate,
                channelCount: engine.configuration.playoutChannelCount)
        }
        var mix = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
        var mixFrames: Int64 = 0

        let start = clock.nowMicroseconds
        var next = start
        var lastProgress = start
        var lastPacketAt: Int64?
        var packetsSeen: Int64 = 0
        var drainUntil: Int64?
        var endedBy = "timeout"
        // The audio counts at the last tick that played received audio (none of it concealed).
        var lastHeard: (frames: Int64, concealed: Int64, silent: Int64)?
        var concealedBefore: Int64 = 0
        // The audio frames played so far, and the silent 10 ms written to the WAV only once
        // audio plays again after them (none before the first frame, none after the last).
        var framesBefore: Int64 = 0
        var silentPending = 0
        let silence = [Int16](repeating: 0, count: mix.count)
        while true {
            let now = clock.nowMicroseconds
            if next > now { usleep(useconds_t(next - now)) }
            next += 10_000
            mix.withUnsafeMutableBufferPointer { engine.pullPlayout(into: $0) }
            // The total alone, read without copying the per-stream statistics each 10 ms.
            let packets = session.transport.packetsReceived
            let time = clock.nowMicroseconds
            if packets != packetsSeen {
                packetsSeen = packets
                lastPacketAt = time
            }
            var played = false
            if received.contains(.audio), let totals = session.channel.remoteStreamTotals(RTPSession.peerUid),
                totals.audioFrames > 0
            {
                // A tick that played and concealed nothing: after the sender's last packet the
                // buffer conceals for 100 ms and then plays silence, which must not count.
                if totals.audioFrames > framesBefore && totals.audioFramesConcealed == concealedBefore {
                    lastHeard = (totals.audioFrames, totals.audioFramesConcealed, totals.audioFramesConcealedSilent)
                }
                concealedBefore = totals.audioFramesConcealed
                played = totals.audioFrames > framesBefore
                framesBefore = totals.audioFrames
            }
            if let wav {
                if played {
                    for _ in 0..<silentPending { try silence.withUnsafeBufferPointer { try wav.write($0) } }
                    mixFrames += Int64(silentPending)
                    silentPending = 0
                    try mix.withUnsafeBufferPointer { try wav.write($0) }
                    mixFrames += 1
                } else if mixFrames > 0 {
                    silentPending += 1
                }
            }
            if let progress, time - lastProgress >= 1_000_000 {
                lastProgress = time
                progress(Double(time - start) / 1e6, summarize(session, session.transport.statistics))
            }
            if shouldStop() {
                endedBy = "interrupted"
                break
            }
            if let maximumSeconds, Double(time - start) / 1e6 >= maximumSeconds {
                endedBy = "duration"
                break
            }
            if let drainUntil {
                if time >= drainUntil {
                    endedBy = "bye"
                    break
                }
            } else if session.peerSaidGoodbye {
                drainUntil = time + Self.drainMicroseconds
            }
            let idle =
                lastPacketAt.map { Double(time - $0) / 1e6 >= idleTimeoutSeconds }
                ?? (Double(time - start) / 1e6 >= startTimeoutSeconds)
            if idle && drainUntil == nil { break }
        }
        renderer?.stop()
        guard lastPacketAt != nil else {
            // Nothing came: no output is written, and the error says so rather than what the
            // empty outputs would lack.
            for recording in recordings { _ = try? engine.stopRecording(recording) }
            engine.setVideoFrameObserver(nil)
            let ports = session.transport.streams.filter(\.receives).map { "\($0.kind.rawValue) \($0.localPort)" }
            throw MediaError(
                .truncated,
                String(
                    format: "no RTP packet arrived in %.1f s (%@) on the SDP's ports (%@): is the sender running, "
                        + "and sending there?", Double(clock.nowMicroseconds - start) / 1e6, endedBy,
                    ports.joined(separator: ", ")))
        }
        var streamsReceived = summarize(session, session.transport.statistics)
        if let lastHeard, let a = streamsReceived.firstIndex(where: { $0.kind == .audio }) {
            (streamsReceived[a].frames, streamsReceived[a].framesConcealed, streamsReceived[a].framesConcealedSilent) =
                lastHeard
        }
        var written: [RTPReceiveSummary.Output] = []
        var failure: Error?
        for recording in recordings {
            do {
                let (audio, video) = try engine.stopRecording(recording)
                written.append(.init(path: recording.path, audioFrames: audio, videoFrames: video))
            } catch {
                failure = failure ?? error
            }
        }
        if let wav, let wavPath {
            if mixFrames == 0 {
                failure = failure ?? MediaError(.truncated, "no audio was received for it", file: wavPath)
            } else {
                try wav.finish()
                written.append(.init(path: wavPath, audioFrames: mixFrames, videoFrames: 0))
            }
        }
        engine.setVideoFrameObserver(nil)
        var frameMD5s: [String] = []
        if let pictures {
            do {
                let (frames, md5s) = try pictures.finish()
                frameMD5s = md5s
                if let y4mPath { written.append(.init(path: y4mPath, audioFrames: 0, videoFrames: Int64(frames))) }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure {
            if let engineError = failure as? EngineError { throw MediaError(.truncated, engineError.message) }
            throw failure
        }
        let ordered = outputs.compactMap { path in written.first { $0.path == path } }
        return RTPReceiveSummary(
            streams: streamsReceived, outputs: ordered, endedBy: endedBy,
            seconds: Double(clock.nowMicroseconds - start) / 1e6, frameMD5s: frameMD5s)
    }

    /// The streams received so far: the transport's counts with the engine's view of them.
    private static func summarize(
        _ session: RTPSession, _ statistics: [RTPPeerStreamStatistics]
    ) -> [RTPReceiveSummary.Stream] {
        let totals = session.channel.remoteStreamTotals(RTPSession.peerUid) ?? RemoteStreamTotals()
        return zip(session.transport.streams, statistics).filter { $0.0.receives }.map { stream, counts in
            let isVideo = stream.kind == .video
            return RTPReceiveSummary.Stream(
                kind: stream.kind, packets: counts.packetsReceived,
                packetsLost: isVideo ? totals.videoPacketsLost : totals.audioPacketsLost, ignored: counts.ignored,
                frames: isVideo ? totals.videoFramesDecoded : totals.audioFrames,
                nacksSent: isVideo ? totals.nacksSent : 0,
                keyframeRequestsSent: isVideo ? totals.keyframeRequestsSent : 0,
                framesConcealed: isVideo ? 0 : totals.audioFramesConcealed,
                framesConcealedSilent: isVideo ? 0 : totals.audioFramesConcealedSilent, sawBye: counts.byeReceived,
                meanAddedDelayMs: isVideo ? totals.videoMeanAddedDelayMs : 0,
                packetsRecovered: isVideo ? 0 : totals.audioPacketsRecovered,
                retransmissionsReceived: counts.retransmissionsReceived)
        }
    }
}
