import MediaPipeline

/// The subscriber's side of a session and nothing else: `users` remote broadcasters in one
/// channel replay pre-encoded sample media (their Opus packets and VP8 frames restamped with
/// session time, packetized as RTP) straight into a ``LocalHub``; one local engine
/// subscribes to all of them, decodes and mixes their audio every 10 ms and decodes and renders
/// their video into a canvas each. Each tick's packets are made by the broadcasters
/// (``stageSenders()``, the work of remote machines) and then sent, received, decoded, mixed
/// and rendered (``runSubscriber()``): what that costs is what one subscriber costs, with the
/// hub's forwarding standing for its network's delivery. The session capacity of
/// `pipebench bench` times ``runSubscriber()`` alone; the benchmarks' subscriber tick times
/// both (``advance()``).
///
/// With `dualStream`, each broadcaster sends as a publisher in dual stream mode does: its
/// high video as the high layer and the sample's low layer (``SampleMedia/lowVP8Frames()``)
/// as the low one, its own SSRC on the same RTP time base; the hub then forwards one layer
/// per user, and the subscriber's canvases (a quarter of the high area or less, by default)
/// ask for the low one.
public final class SubscriberLoad {
    /// The subscribing engine.
    public let engine: MediaEngine
    /// Remote broadcasters replaying media.
    public let users: Int
    /// The channel everyone is in.
    public static let channelId = "load"
    /// The subscriber's uid.
    private static let subscriberUid: UInt32 = 1
    private let hub = LocalHub()
    private let clock = VirtualClock()
    private let media: SampleMedia
    /// Whether the broadcasters send a low layer too.
    public let dualStream: Bool
    /// The low layer's frames (empty without `dualStream`).
    private let lowFrames: [EncodedFrame]
    private let senders: [ReplaySender]
    /// The subscriber's canvas per broadcaster, in ``senders``' order.
    private let canvases: [CanvasBuffer]
    /// The subscribing engine's channel.
    public let channel: MediaChannel
    private var playout: [Int16]
    /// The packets the broadcasters send in this tick, in order, with their streams: staged by
    /// ``stageSenders()``, sent through the hub by ``runSubscriber()``. Reused every tick.
    private var outbox: [(RTPPacket, MediaStreamID)] = []
    /// Whether the staged tick has video (set by ``stageSenders()``).
    private var stagedVideo: Bool?
    private var tick = 0
    private var nextVideoMicroseconds: Int64 = 0
    private var videoIndex = 0

    /// A sender that only sends, packetizing its replayed frames as a remote engine would: the
    /// hub needs an endpoint for each member. Used by the thread that advances the load.
    private final class ReplaySender: TransportEndpoint, @unchecked Sendable {
        let uid: UInt32
        var audio: RTPPacketizer
        var video: RTPPacketizer
        /// The low layer's packetizer, with dual stream: its own SSRC, the high one's time base.
        var lowVideo: RTPPacketizer?
        let audioStream: MediaStreamID, videoStream: MediaStreamID, lowVideoStream: MediaStreamID
        init(uid: UInt32, dualStream: Bool) throws {
            self.uid = uid
            audioStream = .audio(channelId: SubscriberLoad.channelId, uid: uid)
            videoStream = .video(channelId: SubscriberLoad.channelId, uid: uid)
            lowVideoStream = videoStream.withLayer(.low)
            audio = try RTPPacketizer(codec: .opus, ssrc: uid * 2, payloadType: RTPPayloadType.opus)
            video = try RTPPacketizer(codec: .vp8, ssrc: uid * 2 + 1, payloadType: RTPPayloadType.vp8)
            if dualStream {
                // The high video's SSRC with the top bit set; the timestamp offset is the high
                // packetizer's (0), so both layers' frames of one picture carry one timestamp.
                lowVideo = try RTPPacketizer(
                    codec: .vp8, ssrc: 0x8000_0000 | (uid * 2 + 1), payloadType: RTPPayloadType.vp8)
            }
        }
        /// Packetizes an Opus packet, or a video frame as the high layer, into `outbox`.
        func stage(_ frame: EncodedFrame, into outbox: inout [(RTPPacket, MediaStreamID)]) {
            if frame.codec == .opus {
                try? audio.packetize(frame) { outbox.append(($0, audioStream)) }
            } else {
                try? video.packetize(frame) { outbox.append(($0, videoStream)) }
            }
        }
        /// Packetizes a video frame as the low layer into `outbox`.
        func stageLow(_ frame: EncodedFrame, into outbox: inout [(RTPPacket, MediaStreamID)]) {
            try? lowVideo?.packetize(frame) { outbox.append(($0, lowVideoStream)) }
        }
        func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {}
        func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportReceive(_ packet: RTPPacket, stream: MediaStreamID) {}
        func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {}
        func transportConnectionStateChanged(
            channelId: String, state: ConnectionState, reason: ConnectionChangedReason
        ) {}
    }

    /// Joins `users` replaying broadcasters and one subscriber that decodes on `decodeThreads`
    /// threads and renders each user into a `canvasWidth` × `canvasHeight` canvas. With
    /// `dualStream`, the broadcasters send the sample's low layer too (made now if it was not).
    public init(
        media: SampleMedia, users: Int, decodeThreads: Int, canvasWidth: Int = 320, canvasHeight: Int = 180,
        renderMode: RenderMode = .hidden, dualStream: Bool = false
    ) throws {
        guard (1...4096).contains(users) else {
            throw MediaError(.invalidArgument, "users \(users) is outside 1...4096")
        }
        guard (1...64).contains(decodeThreads) else {
            throw MediaError(.invalidArgument, "decode threads \(decodeThreads) is outside 1...64")
        }
        self.media = media
        self.users = users
        self.dualStream = dualStream
        lowFrames = dualStream ? try media.lowVP8Frames() : []
        var configuration = EngineConfiguration()
        configuration.decodeThreads = decodeThreads
        engine = try MediaEngine(transport: hub, clock: clock, configuration: configuration)
        channel = try engine.createChannel(Self.channelId)
        try channel.setClientRole(.audience)
        try channel.join(uid: Self.subscriberUid, options: .subscribeOnly)
        senders = try (0..<users).map { try ReplaySender(uid: UInt32(1000 + $0), dualStream: dualStream) }
        var canvases: [CanvasBuffer] = []
        for sender in senders {
            _ = try hub.join(
                channelId: Self.channelId, uid: sender.uid, role: .broadcaster, media: [.audio, .video],
                receivesMedia: false, endpoint: sender)
            // As a publisher in dual stream mode says before its first picture.
            if dualStream { hub.setSendsLowVideo(true, channelId: Self.channelId, uid: sender.uid) }
            canvases.append(
                try engine.setupRemoteVideo(
                    VideoCanvas(
                        channelId: Self.channelId, uid: sender.uid, width: canvasWidth, height: canvasHeight,
                        renderMode: renderMode)))
        }
        self.canvases = canvases
        playout = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
        outbox.reserveCapacity(users * 16)
    }

    deinit {
        for sender in senders { hub.leave(channelId: Self.channelId, uid: sender.uid) }
        engine.destroy()
    }

    /// Session time so far, in microseconds.
    public var elapsedMicroseconds: Int64 { clock.nowMicroseconds }

    /// Advances the session by 10 ms: each user's 20 ms Opus packet every other tick and its
    /// video frame when one is due (15 fps), delivered through the hub (with dual stream, also
    /// the low-layer frame of the same picture when it has one: every other video frame); then
    /// 10 ms of playout is decoded and mixed, and when video came, it is decoded and rendered.
    /// ``stageSenders()`` then ``runSubscriber()``. Returns whether video was rendered in this
    /// tick.
    /// - Complexity: allocates nothing in steady state.
    @discardableResult
    public func advance() -> Bool {
        stageSenders()
        return runSubscriber()
    }

    /// The broadcasters' part of the next tick: their packets of this tick made (packetized as
    /// remote engines would, on their own machines), not sent yet. What the subscriber costs is
    /// ``runSubscriber()`` alone.
    /// - Precondition: the last staged tick has been run.
    /// - Complexity: allocates nothing in steady state.
    public func stageSenders() {
        precondition(stagedVideo == nil, "a tick is staged and not run")
        outbox.removeAll(keepingCapacity: true)
        let now = clock.nowMicroseconds
        if tick % 2 == 0 {
            for (index, sender) in senders.enumerated() {
                // Users start at different points of the speech, so their packets differ.
                let packet = media.opusPackets[(tick / 2 + index * 37) % media.opusPackets.count]
                sender.stage(packet.restamped(now), into: &outbox)
            }
        }
        let videoDue = now >= nextVideoMicroseconds
        if videoDue {
            let picture = videoIndex % media.vp8Frames.count
            let frame = media.vp8Frames[picture].restamped(now)
            for sender in senders { sender.stage(frame, into: &outbox) }
            // The low frame of the same picture after the high one, as a dual stream publisher sends them.
            if dualStream, picture % media.lowLayerPictureStep == 0 {
                let low = lowFrames[(picture / media.lowLayerPictureStep) % lowFrames.count].restamped(now)
                for sender in senders { sender.stageLow(low, into: &outbox) }
            }
            videoIndex += 1
            nextVideoMicroseconds += Int64(1_000_000 / media.videoFrameRate)
        }
        stagedVideo = videoDue
    }

    /// The subscriber's part of the staged tick: the broadcasters' packets sent through the hub
    /// (which forwards them to the subscribing engine), 10 ms of playout decoded and mixed, and
    /// when video came, video decoded and rendered; then the clock moves on by 10 ms. Returns
    /// whether video was rendered.
    /// - Precondition: a tick has been staged (``stageSenders()``).
    /// - Complexity: allocates nothing in steady state.
    @discardableResult
    public func runSubscriber() -> Bool {
        guard let videoDue = stagedVideo else { preconditionFailure("no tick is staged") }
        stagedVideo = nil
        for (packet, stream) in outbox { hub.send(packet, stream: stream) }
        playout.withUnsafeMutableBufferPointer { engine.pullPlayout(into: $0) }
        if videoDue { engine.renderVideo() }
        clock.advance(byMicroseconds: 10_000)
        tick += 1
        return videoDue
    }

    /// Advances the session (``advance()``) until every user is shown from `layer`
    /// (``usersShowing(_:)``), at most `maximumTicks` ticks; returns the ticks advanced.
    ///
    /// With dual stream, the low layer is shown once the subscriber has decoded one of its
    /// keyframes after asking for it. A replay does not answer keyframe requests: when the
    /// first low keyframe is not shown (the hub forwarded the first picture's high keyframe
    /// before it switched, and the low keyframe of that same picture, the same RTP timestamp,
    /// was not decoded after it), the next one comes with the sample's next keyframe, up to
    /// ``SampleMedia/keyframeIntervalFrames`` later (2 s).
    @discardableResult
    public func advance(untilEveryUserShows layer: VideoStreamType, maximumTicks: Int) -> Int {
        var ticks = 0
        while ticks < maximumTicks && usersShowing(layer) < users {
            advance()
            ticks += 1
        }
        return ticks
    }

    /// Remote users whose audio and video are both DECODING now.
    public var usersDecoding: Int {
        channel.remoteUsers.filter {
            channel.remoteState($0, .audio) == .decoding && channel.remoteState($0, .video) == .decoding
        }
        .count
    }

    /// Remote users whose video the hub forwards as `layer` now and whose canvas last showed a
    /// picture of that layer's size (the sample's, or its ``SampleMedia/lowLayerSize``).
    public func usersShowing(_ layer: VideoStreamType) -> Int {
        senders.indices.filter { isShown($0, from: layer) }.count
    }

    /// Whether user `index`'s video is forwarded as `layer` and its canvas last showed a picture
    /// of that layer's size.
    private func isShown(_ index: Int, from layer: VideoStreamType) -> Bool {
        let (forwarded, size) = shown(index)
        return forwarded == layer && size == self.size(of: layer)
    }

    /// The picture size of `layer`: the sample's, or its low layer's.
    private func size(of layer: VideoStreamType) -> (width: Int, height: Int) {
        layer == .low ? media.lowLayerSize : (media.pictures[0].width, media.pictures[0].height)
    }

    /// The layer the hub forwards of user `index`'s video, and the size of the last picture its
    /// canvas showed.
    private func shown(_ index: Int) -> (layer: VideoStreamType, size: (width: Int, height: Int)) {
        // A publisher that never sent a low layer has one stream: the high one.
        let layer =
            hub.forwardedVideoStreamType(
                channelId: Self.channelId, subscriber: Self.subscriberUid, publisher: senders[index].uid)
            ?? .high
        return (layer, canvases[index].sourceSize)
    }

    /// Throws unless every user is DECODING and shown from `layer` (``usersShowing(_:)``): a
    /// trial meant for one layer that got the other measured something else.
    /// - Throws: ``LayerMismatch``.
    public func checkEveryUserShows(_ layer: VideoStreamType) throws {
        let (decoding, showing) = (usersDecoding, usersShowing(layer))
        guard decoding == users, showing == users else {
            let wrong = senders.indices.first { !isShown($0, from: layer) }.map { index in
                let (forwarded, size) = shown(index)
                return "user \(senders[index].uid): \(forwarded) layer forwarded, \(size.width)x\(size.height) shown"
            }
            throw LayerMismatch(layer: layer, users: users, decoding: decoding, showing: showing, example: wrong)
        }
    }

    /// What ``checkEveryUserShows(_:)`` found wrong.
    public struct LayerMismatch: Error, CustomStringConvertible {
        /// The layer every user should have shown.
        public let layer: VideoStreamType
        /// Users in the load, users DECODING, and users shown from ``layer``.
        public let users: Int, decoding: Int, showing: Int
        /// One user not shown from ``layer``, as it was: its layer forwarded and picture size.
        public let example: String?

        public var description: String {
            "\(decoding) of \(users) users are decoding and \(showing) are shown from the \(layer) layer"
                + (example.map { " (\($0))" } ?? "")
        }
    }
}
