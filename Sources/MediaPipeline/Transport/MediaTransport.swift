/// What a transport tells an engine. Calls arrive on the thread of whoever caused them (the
/// sender of a frame, the user who joined); implementations must not block for long.
public protocol TransportEndpoint: AnyObject, Sendable {
    /// A broadcaster is present in `channelId` (joined, became broadcaster, or was there when
    /// this endpoint joined), publishing `media`.
    func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia)
    /// A broadcaster left `channelId`.
    func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason)
    /// A broadcaster in `channelId` started or stopped sending audio or video.
    func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia)
    /// An RTP packet of `stream` (its codec is told by the payload type, ``RTPPayloadType``).
    /// The packet's bytes are shared, never copied. A transport that forwards one layer of a
    /// publisher's video at a time names the layer the packet came from; the packets of every
    /// layer reach the endpoint as one continuous stream.
    func transportReceive(_ packet: RTPPacket, stream: MediaStreamID)
    /// An RTCP compound packet that `uid` in `channelId` sent to this endpoint: feedback on the
    /// streams this endpoint publishes there (PLI, FIR, NACK, reports).
    func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32)
    /// The connection of this endpoint's membership in `channelId` changed on the transport's
    /// side (interrupted, restored, lost for good).
    func transportConnectionStateChanged(channelId: String, state: ConnectionState, reason: ConnectionChangedReason)
    /// The streams this endpoint publishes with, for a transport that announces them before the
    /// first packet (a WebRTC offer names each SSRC and codec). Nil when the endpoint does not say.
    func transportLocalStreams() -> LocalStreamDescription?
    /// The transport now forwards `type` of `uid`'s video in `channelId` to this endpoint (a
    /// forwarder that switches layers says so when it switches).
    func transportVideoStreamTypeChanged(channelId: String, uid: UInt32, type: VideoStreamType)
}

extension MediaTransport {
    /// Peers that answer every request and report every loss.
    public var feedbackProfile: TransportFeedbackProfile { TransportFeedbackProfile() }

    /// Transports that admit without tokens: the token is not used.
    public func join(
        channelId: String, uid: UInt32, token: String?, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        join(
            channelId: channelId, uid: uid, role: role, media: media, receivesMedia: receivesMedia, endpoint: endpoint,
            answer: answer)
    }
}

extension TransportEndpoint {
    /// Endpoints that do not describe their streams.
    public func transportLocalStreams() -> LocalStreamDescription? { nil }

    /// Endpoints that do not follow layers.
    public func transportVideoStreamTypeChanged(channelId: String, uid: UInt32, type: VideoStreamType) {}
}

extension MediaTransport {
    /// Transports that carry one video layer: nothing to choose.
    public func setRemoteVideoStreamType(
        _ type: VideoStreamType, channelId: String, subscriber: UInt32, publisher: UInt32?
    ) {}

    /// Transports that carry one video layer, or learn the layers from the streams: nothing to say.
    public func setSendsLowVideo(_ sending: Bool, channelId: String, uid: UInt32) {}
}

/// The streams an endpoint publishes, as a signalling transport announces them: their SSRCs
/// (RFC 3550), the video codec, and whether audio goes out as RFC 2198 redundancy.
public struct LocalStreamDescription: Sendable, Equatable {
    /// The SSRC of the audio stream.
    public var audioSSRC: UInt32
    /// The SSRC of the video stream.
    public var videoSSRC: UInt32
    /// The SSRC that receiver reports and feedback come from.
    public var feedbackSSRC: UInt32
    /// The video codec.
    public var videoCodec: MediaCodec
    /// Whether audio is sent as redundant audio (RFC 2198, payload type ``RTPPayloadType/red``).
    public var audioRedundancy: Bool
    /// The SSRC of the low video stream (dual stream mode), when the endpoint can send one: a
    /// transport that carries layers announces it (a WebRTC offer as simulcast) whether or not
    /// dual stream mode is on yet.
    public var lowVideoSSRC: UInt32?

    /// A description.
    public init(
        audioSSRC: UInt32, videoSSRC: UInt32, feedbackSSRC: UInt32, videoCodec: MediaCodec, audioRedundancy: Bool,
        lowVideoSSRC: UInt32? = nil
    ) {
        self.audioSSRC = audioSSRC
        self.videoSSRC = videoSSRC
        self.feedbackSSRC = feedbackSSRC
        self.videoCodec = videoCodec
        self.audioRedundancy = audioRedundancy
        self.lowVideoSSRC = lowVideoSSRC
    }
}

/// What the far end of a transport does with the engine's feedback, which the engine plans
/// around. The defaults describe peers that answer every request and report every loss
/// (``LocalHub``, plain RTP).
public struct TransportFeedbackProfile: Sendable, Equatable {
    /// How long the far end ignores a repeated NACK for a packet it retransmitted (an SFU that
    /// de-duplicates requests: Janus ignores one for 200 ms). A receiver waiting for a missing
    /// packet allows rounds of at least this length, since a retransmission lost sooner cannot
    /// be asked for again before it.
    public var repeatedNackIgnoredMicroseconds: Int64
    /// The loss the audio encoder protects against (Opus in-band FEC) whatever the reports say,
    /// in percent: behind an SFU the publisher hears of its own leg's loss only, never of its
    /// subscribers', so their repair has to be in the stream from the start.
    public var audioExpectedLossFloorPercent: Int
    /// Whether the far end resends audio packets a NACK asks for (Janus does once the answer
    /// asks for it). The audio receivers then ask for a missing packet at once, while it can
    /// still come before its time to play; otherwise they rely on FEC and redundancy alone.
    public var audioRetransmission: Bool

    /// A profile; the defaults ask for nothing.
    public init(
        repeatedNackIgnoredMicroseconds: Int64 = 0, audioExpectedLossFloorPercent: Int = 0,
        audioRetransmission: Bool = false
    ) {
        self.repeatedNackIgnoredMicroseconds = repeatedNackIgnoredMicroseconds
        self.audioExpectedLossFloorPercent = audioExpectedLossFloorPercent
        self.audioRetransmission = audioRetransmission
    }
}

/// How engines reach each other, in two surfaces: asynchronous signalling (a join is answered
/// later, membership and connection changes arrive as they happen) and media (RTP packets one
/// way, RTCP feedback the other), per channel.
///
/// The embedded implementation is ``LocalHub`` (in-process); a network transport implements the
/// same surface.
public protocol MediaTransport: AnyObject, Sendable {
    /// Asks to enter `channelId` as `uid` (0: the transport assigns one). `receivesMedia` is false
    /// for relay members, which only send. `answer` is called once, at once or later, on any
    /// thread: with the uid in use, or with the refusal (``EngineError/Code/joinChannelRejected``
    /// when the uid is taken there). The broadcasters present are announced to `endpoint` before
    /// a successful answer.
    func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    )
    /// Asks to enter `channelId` with `token` (Agora's `joinChannelByToken`: what a server that
    /// admits by token checks; a server refusing it answers ``EngineError/Code/invalidToken``).
    /// Transports without tokens join as ``join(channelId:uid:role:media:receivesMedia:endpoint:answer:)``.
    func join(
        channelId: String, uid: UInt32, token: String?, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    )
    /// Leaves `channelId`.
    func leave(channelId: String, uid: UInt32)
    /// Changes the role of `uid` in `channelId`.
    func setRole(channelId: String, uid: UInt32, role: ClientRole)
    /// Announces which media `uid` sends in `channelId`.
    func setMedia(channelId: String, uid: UInt32, media: PublishedMedia)
    /// Sends the RTP `packet` of `stream`, which the sender publishes: forwarded to every other
    /// media-receiving member of the stream's channel subscribed to it, except members behind
    /// the same endpoint as the sender. A publisher in dual stream mode sends both layers of its
    /// video, each with its own SSRC on one RTP time base. A transport that forwards layers
    /// gives each subscriber one of them (``setRemoteVideoStreamType(_:channelId:subscriber:publisher:)``);
    /// one that does not carries the high layer alone and drops the low one.
    func send(_ packet: RTPPacket, stream: MediaStreamID)
    /// Carries the RTP `packet` of `stream` to `recipient` alone in the stream's channel: a
    /// retransmission that `recipient` asked for with a NACK (the other subscribers have it).
    func resend(_ packet: RTPPacket, stream: MediaStreamID, to recipient: UInt32)
    /// Carries the RTCP compound packet `bytes` from `uid` to `recipient` in `channelId`;
    /// recipient 0 means every other member receiving media there (sender reports).
    func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32)
    /// Whether `subscriber` receives `stream` in the stream's channel (every stream is received
    /// until told otherwise). An unsubscribed stream is not forwarded at all. A subscription to
    /// video holds for every layer of it: which layer is forwarded is chosen with
    /// ``setRemoteVideoStreamType(_:channelId:subscriber:publisher:)``, so `stream`'s layer is
    /// not read.
    func setSubscribed(_ subscribed: Bool, to stream: MediaStreamID, subscriber: UInt32)
    /// Which layer of `publisher`'s video `subscriber` wants in `channelId`; `publisher` nil sets
    /// the default for publishers not named (Agora's `setRemoteDefaultVideoStreamType`). A
    /// publisher that sends no low layer is forwarded high whatever is asked.
    func setRemoteVideoStreamType(_ type: VideoStreamType, channelId: String, subscriber: UInt32, publisher: UInt32?)
    /// `uid` starts (dual stream mode, before its first picture in `channelId`) or stopped
    /// sending a low layer in `channelId`. From the start, each subscriber gets the layer it
    /// wants from its first picture on; when it stops, they go back to the high layer.
    func setSendsLowVideo(_ sending: Bool, channelId: String, uid: UInt32)
    /// What the far end does with feedback (``TransportFeedbackProfile``), read once when an
    /// engine is made.
    var feedbackProfile: TransportFeedbackProfile { get }
}
