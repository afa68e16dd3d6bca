import MediaPipeline

/// The subscriber's side of a session and nothing else: `users` remote broadcasters in one
/// channel replay pre-encoded sample media (their Opus packets and VP8 frames restamped with
/// session time, packetized as RTP) straight into a ``LocalHub``; one local engine
/// subscribes to all of them, decodes and mixes their audio every 10 ms and decodes and renders
/// their video into a canvas each. What it costs to run is what one subscriber costs: the
/// session capacity of `pipebench bench` and the benchmarks' subscriber tick are measured on it.
public final class SubscriberLoad {
    /// The subscribing engine.
    public let engine: MediaEngine
    /// Remote broadcasters replaying media.
    public let users: Int
    /// The channel everyone is in.
    public static let channelId = "load"
    private let hub = LocalHub()
    private let clock = VirtualClock()
    private let media: SampleMedia
    private let senders: [ReplaySender]
    /// The subscribing engine's channel.
    public let channel: MediaChannel
    private var playout: [Int16]
    private var tick = 0
    private var nextVideoMicroseconds: Int64 = 0
    private var videoIndex = 0

    /// A sender that only sends, packetizing its replayed frames as a remote engine would: the
    /// hub needs an endpoint for each member. Used by the thread that advances the load.
    private final class ReplaySender: TransportEndpoint, @unchecked Sendable {
        let uid: UInt32
        var audio: RTPPacketizer
        var video: RTPPacketizer
        init(uid: UInt32) throws {
            self.uid = uid
            audio = try RTPPacketizer(codec: .opus, ssrc: uid * 2, payloadType: RTPPayloadType.opus)
            video = try RTPPacketizer(codec: .vp8, ssrc: uid * 2 + 1, payloadType: RTPPayloadType.vp8)
        }
        func send(_ frame: EncodedFrame, through hub: LocalHub) {
            let channelId = SubscriberLoad.channelId
            if frame.codec == .opus {
                try? audio.packetize(frame) { hub.send($0, channelId: channelId, from: uid) }
            } else {
                try? video.packetize(frame) { hub.send($0, channelId: channelId, from: uid) }
            }
        }
        func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {}
        func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportReceive(_ packet: RTPPacket, channelId: String, from uid: UInt32) {}
        func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {}
        func transportConnectionStateChanged(
            channelId: String, state: ConnectionState, reason: ConnectionChangedReason
        ) {}
    }

    /// Joins `users` replaying broadcasters and one subscriber that decodes on `decodeThreads`
    /// threads and renders each user into a `canvasWidth` × `canvasHeight` canvas.
    public init(
        media: SampleMedia, users: Int, decodeThreads: Int, canvasWidth: Int = 320, canvasHeight: Int = 180,
        renderMode: RenderMode = .hidden
    ) throws {
        guard (1...4096).contains(users) else {
            throw MediaError(.invalidArgument, "users \(users) is outside 1...4096")
        }
        guard (1...64).contains(decodeThreads) else {
            throw MediaError(.invalidArgument, "decode threads \(decodeThreads) is outside 1...64")
        }
        self.media = media
        self.users = users
        var configuration = EngineConfiguration()
        configuration.decodeThreads = decodeThreads
        engine = try MediaEngine(transport: hub, clock: clock, configuration: configuration)
        channel = try engine.createChannel(Self.channelId)
        try channel.setClientRole(.audience)
        try channel.join(uid: 1, options: .subscribeOnly)
        senders = try (0..<users).map { try ReplaySender(uid: UInt32(1000 + $0)) }
        for sender in senders {
            _ = try hub.join(
                channelId: Self.channelId, uid: sender.uid, role: .broadcaster, media: [.audio, .video],
                receivesMedia: false, endpoint: sender)
            _ = try engine.setupRemoteVideo(
                VideoCanvas(
                    channelId: Self.channelId, uid: sender.uid, width: canvasWidth, height: canvasHeight,
                    renderMode: renderMode))
        }
        playout = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
    }

    deinit {
        for sender in senders { hub.leave(channelId: Self.channelId, uid: sender.uid) }
        engine.destroy()
    }

    /// Session time so far, in microseconds.
    public var elapsedMicroseconds: Int64 { clock.nowMicroseconds }

    /// Advances the session by 10 ms: each user's 20 ms Opus packet every other tick and its
    /// video frame when one is due (15 fps), delivered through the hub; then 10 ms of playout is
    /// decoded and mixed, and when video came, it is decoded and rendered. Returns whether
    /// video was rendered in this tick.
    /// - Complexity: allocates nothing in steady state.
    @discardableResult
    public func advance() -> Bool {
        let now = clock.nowMicroseconds
        if tick % 2 == 0 {
            for (index, sender) in senders.enumerated() {
                // Users start at different points of the speech, so their packets differ.
                let packet = media.opusPackets[(tick / 2 + index * 37) % media.opusPackets.count]
                sender.send(packet.restamped(now), through: hub)
            }
        }
        let videoDue = now >= nextVideoMicroseconds
        if videoDue {
            let frame = media.vp8Frames[videoIndex % media.vp8Frames.count].restamped(now)
            for sender in senders { sender.send(frame, through: hub) }
            videoIndex += 1
            nextVideoMicroseconds += Int64(1_000_000 / media.videoFrameRate)
        }
        playout.withUnsafeMutableBufferPointer { engine.pullPlayout(into: $0) }
        if videoDue { engine.renderVideo() }
        clock.advance(byMicroseconds: 10_000)
        tick += 1
        return videoDue
    }

    /// Remote users whose audio and video are both DECODING now.
    public var usersDecoding: Int {
        channel.remoteUsers.filter {
            channel.remoteState($0, .audio) == .decoding && channel.remoteState($0, .video) == .decoding
        }
        .count
    }
}
