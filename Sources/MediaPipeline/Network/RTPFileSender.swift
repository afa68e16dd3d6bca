#if canImport(Glibc)
    import Glibc
#endif

/// What an RTP send did.
public struct RTPSendSummary: Sendable, Equatable {
    /// One stream sent.
    public struct Stream: Sendable, Equatable {
        /// The codec, and the peer's port its RTP went to.
        public var codec: MediaCodec, port: Int
        /// Frames pushed, and RTP packets (retransmissions included) and their bytes sent.
        public var frames: Int64, packets: Int64, bytes: Int64
    }
    /// The streams, in the SDP's order.
    public var streams: [Stream]
    /// The session description a peer receives them with.
    public var sdp: SessionDescription
    /// Packets sent again because the peer asked (NACK), keyframe requests (PLI, FIR) that
    /// came, and keyframes encoded for them (only a stream encoded here can have them).
    public var packetsRetransmitted: Int64, keyframeRequestsReceived: Int64, keyframesForced: Int64
}

/// Sends media files to a plain RTP peer through an ``RTPSession``, paced by the media's times:
/// IVF, Ogg Opus and WebM frames as they are (no re-encoding), Y4M pictures encoded here (VP8,
/// or the configuration's codec) and WAV encoded to Opus. At most one audio and one video stream.
///
/// Stream `i` of the SDP goes to `port + 2i` of `host` (its RTCP to the next port), as ffmpeg lays
/// out its RTP outputs; this side binds `localPort + 2i` (0: any free port) and listens there for
/// the peer's RTCP. NACKs are answered from the engine's packet history; PLI and FIR give a
/// keyframe on a stream encoded here. A BYE ends each stream.
public enum RTPFileSender {
    /// Sends `inputs` to `host` from `port` on. `realtime` paces frames at their media times
    /// (otherwise they go as fast as they are read). `describe` gets the SDP before anything is
    /// sent, `startDelaySeconds` before the first frame; `lingerSeconds` after the last one the
    /// session stays open to answer the peer's last NACKs. `progress` is called once a second.
    /// - Throws: ``MediaError`` naming the file for inputs that are not IVF, Ogg Opus, WebM, Y4M or
    ///   WAV, or a second stream of a kind; the address for a socket error.
    @discardableResult
    public static func send(
        inputs: [String], host: String, port: Int, localPort: Int = 0, realtime: Bool = true,
        startDelaySeconds: Double = 0, lingerSeconds: Double = 0.5, configuration: EngineConfiguration = .init(),
        clock: MediaClock = WallClock(), shouldStop: () -> Bool = { false },
        progress: ((_ seconds: Double, _ summary: RTPSendSummary) -> Void)? = nil,
        describe: ((SessionDescription) throws -> Void)? = nil
    ) throws -> RTPSendSummary {
        var inputs = try inputs.map(SendInput.init(path:))
        var configuration = configuration
        var media: [SessionDescription.Media] = []
        var codecs: [MediaCodec] = []
        for input in inputs {
            for codec in input.codecs {
                guard !codecs.contains(where: { $0.kind == codec.kind }) else {
                    throw MediaError.invalidArgument(
                        "\(input.path): a second \(codec.kind.rawValue) stream; an RTP session sends one of each")
                }
                let streamPort = port + 2 * media.count
                guard streamPort + 1 <= 65535 else {
                    throw MediaError.invalidArgument("ports from \(port) run past 65535")
                }
                codecs.append(codec)
                media.append(section(codec, port: streamPort, channels: input.audioChannels))
            }
            if let rate = input.videoFrameRate { configuration.videoFrameRate = rate }
        }
        guard !media.isEmpty else { throw MediaError.invalidArgument("no VP8, VP9 or Opus stream in the inputs") }
        if let video = codecs.first(where: { $0.kind == .video }), video != .opus {
            configuration.videoCodec = video == .vp9 ? .vp9 : .vp8
        }
        let sdp = SessionDescription(connectionAddress: host, media: media)
        let session = try RTPSession(
            streams: RTPPeerStream.streams(receiving: nil, sendingTo: sdp, localPort: localPort),
            configuration: configuration, clock: clock)
        defer { session.close() }
        try describe?(sdp)
        if startDelaySeconds > 0 { usleep(useconds_t(startDelaySeconds * 1_000_000)) }

        var frames = [Int64](repeating: 0, count: codecs.count)
        func summary() -> RTPSendSummary {
            let statistics = session.transport.statistics
            let engine = session.engine.statistics
            return RTPSendSummary(
                streams: codecs.indices.map { s in
                    let sent = statistics.first { $0.kind == codecs[s].kind }
                    return RTPSendSummary.Stream(
                        codec: codecs[s], port: media[s].port, frames: frames[s], packets: sent?.packetsSent ?? 0,
                        bytes: sent?.bytesSent ?? 0)
                }, sdp: sdp, packetsRetransmitted: engine.packetsRetransmitted,
                keyframeRequestsReceived: engine.keyframeRequestsReceived, keyframesForced: engine.keyframesForced)
        }

        var pending = try inputs.indices.map { try inputs[$0].next() }
        let start = clock.nowMicroseconds
        var lastProgress = start
        var firstTime: Int64?
        while !shouldStop(),
            let pick = pending.indices.filter({ pending[$0] != nil }).min(by: {
                pending[$0]!.timeMicroseconds < pending[$1]!.timeMicroseconds
            })
        {
            let item = pending[pick]!
            pending[pick] = try inputs[pick].next()
            if firstTime == nil { firstTime = item.timeMicroseconds }
            if realtime {
                // In steps of at most half a second: a file may hold a gap of hours (more than
                // usleep takes at once), and an interruption is seen while it is waited out.
                while !shouldStop() {
                    let wait = start + item.timeMicroseconds - firstTime! - clock.nowMicroseconds
                    guard wait > 0 else { break }
                    usleep(useconds_t(min(wait, 500_000)))
                }
            }
            let kind: MediaKind
            switch item.content {
            case .encoded(let frame):
                kind = frame.codec.kind
                try session.engine.pushEncodedFrame(frame)
            case .picture(let picture):
                kind = .video
                try session.engine.pushVideo(picture, timestampMicroseconds: item.timeMicroseconds)
            }
            if let s = codecs.firstIndex(where: { $0.kind == kind }) { frames[s] += 1 }
            if let progress, clock.nowMicroseconds - lastProgress >= 1_000_000 {
                lastProgress = clock.nowMicroseconds
                progress(Double(lastProgress - start) / 1e6, summary())
            }
        }
        // The end of each stream again, so a receiver that lost it finds out; its last NACKs
        // and PLIs are answered on the receive thread meanwhile.
        session.transport.sendTailProbe()
        if lingerSeconds >= 0.2 && !shouldStop() {
            usleep(100_000)
            session.transport.sendTailProbe()  // in case the first probe was lost too
        }
        if lingerSeconds > 0 && !shouldStop() { usleep(useconds_t(lingerSeconds * 1_000_000)) }
        return summary()
    }

    /// The SDP section of `codec` at `port` (VP8 96, VP9 98, Opus 111, as browsers number them),
    /// offering NACK and PLI feedback on video.
    private static func section(_ codec: MediaCodec, port: Int, channels: Int) -> SessionDescription.Media {
        var format = SessionDescription.Media.Format(payloadType: Int(RTPPayloadType.of(codec)), codec: codec)
        if codec == .opus {
            format.parameters = "sprop-stereo=\(channels == 2 ? 1 : 0)"
        } else {
            format.feedback = ["nack", "nack pli", "ccm fir"]
        }
        return SessionDescription.Media(
            kind: codec == .opus ? "audio" : "video", port: port, transport: codec == .opus ? "RTP/AVP" : "RTP/AVPF",
            formats: [format])
    }
}

/// One input of a send: its frames (encoded, or pictures to encode) in time order.
private struct SendInput {
    enum Content {
        case encoded(EncodedFrame)
        case picture(I420Buffer)
    }
    struct Item {
        var timeMicroseconds: Int64
        var content: Content
    }
    private enum Reader {
        case packets(PacketSource)
        case pictures(Y4MReader)
        case speech(WAVOpusStream)
    }

    let path: String
    let codecs: [MediaCodec]
    /// Opus channels, and the frame rate of pictures encoded here.
    let audioChannels: Int
    let videoFrameRate: Int?
    private let reader: Reader
    /// Pictures read, and audio samples (48 kHz) sent, so far.
    private var index: Int64 = 0
    private var position48k: Int64 = 0

    init(path: String) throws {
        self.path = path
        switch try MediaFileKind.detect(path: path) {
        case .ivf, .oggOpus, .webm:
            let source = try PacketSource(path: path)
            if let head = source.tracks.first(where: { $0.codec == .opus })?.opusHead, head.mappingFamily != 0 {
                // RTP carries one Opus stream (RFC 7587), mono or stereo.
                throw MediaError(
                    .unsupported,
                    "its Opus is \(head.channelCount) channels in \(head.streamCount) streams (family \(head.mappingFamily)); "
                        + "RTP carries one stream of 1 or 2 channels", file: path)
            }
            reader = .packets(source)
            codecs = source.tracks.map(\.codec)
            audioChannels = source.tracks.first { $0.codec == .opus }?.opusHead?.channelCount ?? 2
            videoFrameRate = nil
        case .y4m:
            let y4m = try Y4MReader(path: path)
            reader = .pictures(y4m)
            codecs = [.vp8]
            audioChannels = 2
            videoFrameRate = max(1, y4m.header.frameRateNumerator / max(1, y4m.header.frameRateDenominator))
        case .wav:
            let stream = try WAVOpusStream(input: path, settings: OpusEncoderConfiguration())
            reader = .speech(stream)
            codecs = [.opus]
            audioChannels = stream.head.channelCount
            videoFrameRate = nil
        default:
            throw MediaError(.unsupported, "send takes IVF, Ogg Opus, WebM, Y4M or WAV", file: path)
        }
    }

    /// The next frame, or nil at the end.
    mutating func next() throws -> Item? {
        defer { index += 1 }
        switch reader {
        case .packets(let source):
            guard let packet = try source.next() else { return nil }
            let frame = EncodedFrame(
                bytes: packet.bytes, codec: source.tracks[packet.track].codec, isKeyframe: packet.isKeyframe,
                timestampMicroseconds: packet.timeMicroseconds, durationMicroseconds: packet.durationMicroseconds)
            return Item(timeMicroseconds: packet.timeMicroseconds, content: .encoded(frame))
        case .pictures(let y4m):
            guard let picture = try y4m.readFrame() else { return nil }
            let header = y4m.header
            let time = index * 1_000_000 * Int64(header.frameRateDenominator) / Int64(max(1, header.frameRateNumerator))
            return Item(timeMicroseconds: time, content: .picture(picture))
        case .speech(let stream):
            guard let packet = try stream.nextPacket() else { return nil }
            let time = position48k * 1_000_000 / 48_000
            position48k += Int64(packet.samples48k)
            let frame = EncodedFrame(
                bytes: packet.bytes, codec: .opus, isKeyframe: true, timestampMicroseconds: time,
                durationMicroseconds: Int64(packet.samples48k) * 1_000_000 / 48_000)
            return Item(timeMicroseconds: time, content: .encoded(frame))
        }
    }
}
