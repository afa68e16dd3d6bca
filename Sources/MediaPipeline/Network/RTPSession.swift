/// An exchange of media with one plain RTP peer (ffmpeg, GStreamer, a SIP phone's media) over
/// UDP, without an SFU: an engine whose transport is an ``RTPPeerTransport``, joined to its
/// channel ``channelId``.
///
/// - The peer's streams arrive in the engine's receive pipelines as user ``peerUid``: its video
///   into a canvas (``MediaEngine/setupRemoteVideo(_:)`` with ``channelId`` and ``peerUid``),
///   its audio into the playout mix (``MediaEngine/pullPlayout(into:)-(UnsafeMutableBufferPointer<Int16>)``),
///   with the jitter buffers, NACK, PLI and receiver reports of any remote user.
/// - Local media pushed into ``engine`` (``MediaEngine/pushAudio(_:)``, ``MediaEngine/pushVideo(_:timestampMicroseconds:)``,
///   or already encoded, ``MediaEngine/pushEncodedFrame(_:)``) is encoded once and sent to the
///   peer; the peer's NACKs are answered from the engine's packet history and its PLI/FIR with
///   a keyframe.
///
/// ```swift
/// let sdp = try SessionDescription(parsing: peerSDPText)      // where the peer sends
/// let session = try RTPSession(receiving: sdp, sendingTo: nil)
/// let canvas = try session.engine.setupRemoteVideo(
///     VideoCanvas(channelId: RTPSession.channelId, uid: RTPSession.peerUid, width: 640, height: 360))
/// // every 10 ms: session.engine.pullPlayout(into: …); at the frame rate: session.engine.renderVideo()
/// ```
public final class RTPSession: Sendable {
    /// The channel the session's engine joins.
    public static let channelId = "rtp-peer"
    /// The peer's uid in that channel.
    public static let peerUid = RTPPeerTransport.peerUid

    /// The engine: push local media into it, pull the peer's audio and render its video from it.
    public let engine: MediaEngine
    /// The engine's channel with the peer.
    public let channel: MediaChannel
    /// The UDP transport, for its ports and statistics.
    public let transport: RTPPeerTransport

    /// Opens a session over `streams`, publishing the kinds that have a remote (when `publish`
    /// allows). Audio redundancy (RFC 2198) is turned off: a plain peer expects plain Opus.
    /// With `pacesVideo`, video is paced at 2.5 × the configured video bitrate (or twice what is
    /// sent, if more).
    /// - Throws: ``MediaError`` for a socket that cannot be bound, ``EngineError`` from the
    ///   engine.
    public init(
        streams: [RTPPeerStream], publish: PublishedMedia = [.audio, .video],
        configuration: EngineConfiguration = .init(),
        clock: MediaClock = WallClock(), pacesVideo: Bool = true
    ) throws {
        var configuration = configuration
        configuration.audioRedundancy = false
        let transport = try RTPPeerTransport(
            streams: streams, pacingBitsPerSecond: pacesVideo ? configuration.videoBitrateBitsPerSecond * 5 / 2 : nil)
        self.transport = transport
        engine = try MediaEngine(transport: transport, clock: clock, configuration: configuration)
        channel = try engine.createChannel(Self.channelId)
        var options = ChannelMediaOptions()
        options.publishLocalAudio = publish.contains(.audio) && streams.contains { $0.kind == .audio && $0.sends }
        options.publishLocalVideo = publish.contains(.video) && streams.contains { $0.kind == .video && $0.sends }
        try channel.join(uid: 0, options: options)
    }

    /// Opens a session with a peer described by SDP: `receiving` says where its streams arrive
    /// (this side's address and ports), `sendingTo` where this side's go (the peer's); see
    /// ``RTPPeerStream/streams(receiving:sendingTo:localAddress:localPort:)``.
    public convenience init(
        receiving: SessionDescription?, sendingTo: SessionDescription?, localPort: Int = 0,
        configuration: EngineConfiguration = .init(), clock: MediaClock = WallClock()
    ) throws {
        try self.init(
            streams: RTPPeerStream.streams(receiving: receiving, sendingTo: sendingTo, localPort: localPort),
            configuration: configuration, clock: clock)
    }

    /// Whether the peer said goodbye (RTCP BYE) on every stream it sends.
    public var peerSaidGoodbye: Bool { transport.peerSaidGoodbye }

    /// Leaves the channel (sending RTCP BYE for this side's streams), stops receiving and
    /// destroys the engine.
    public func close() {
        try? channel.leave()
        transport.close()
        engine.destroy()
    }
}
