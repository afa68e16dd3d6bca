/// What crossed one stream of an ``RTPPeerTransport``.
public struct RTPPeerStreamStatistics: Sendable, Equatable {
    /// Audio or video.
    public var kind: MediaKind
    /// The local ports bound (RTP, and RTCP: the same with rtcp-mux).
    public var localPort = 0, localRTCPPort = 0
    /// The peer's RTP packets received and their bytes.
    public var packetsReceived: Int64 = 0, bytesReceived: Int64 = 0
    /// The peer's retransmissions in their own payload type and SSRC (RFC 4588), counted in
    /// ``packetsReceived`` too.
    public var retransmissionsReceived: Int64 = 0
    /// The peer's RTCP datagrams received.
    public var rtcpReceived: Int64 = 0
    /// Datagrams on the stream's ports that were not the peer's RTP or RTCP of this stream
    /// (garbage, another payload type, another sender's SSRC, RTCP that breaks its lengths).
    public var ignored: Int64 = 0
    /// Datagrams larger than a receive slot (2,048 bytes), dropped.
    public var oversized: Int64 = 0
    /// This side's RTP packets (retransmissions included) and RTCP datagrams sent.
    public var packetsSent: Int64 = 0, bytesSent: Int64 = 0, rtcpSent: Int64 = 0
    /// Datagrams the system refused to send (UDP may lose any).
    public var sendFailures: Int64 = 0
    /// The peer's SSRC for this stream, once known.
    public var remoteSSRC: UInt32?
    /// Whether the peer said goodbye (RTCP BYE naming its SSRC).
    public var byeReceived = false
}

/// A ``MediaTransport`` to one plain RTP peer over UDP — ffmpeg, GStreamer, a SIP phone's media
/// — with no SFU and no signalling: the peer's streams and where to send are described by
/// ``RTPPeerStream``s (usually from SDP, ``RTPPeerStream/streams(receiving:sendingTo:localAddress:localPort:)``).
///
/// The transport carries one channel. In it the peer is the broadcaster ``peerUid``, publishing
/// the kinds it sends; the engine's published packets go to the peer, and its RTCP (receiver
/// reports, NACK, PLI) goes to where the peer's RTCP comes from (or its SDP's RTCP port). Once
/// the peer has said goodbye (RTCP BYE) on every stream it sends, it goes offline a second
/// later, so what the jitter buffers hold is played out first.
///
/// Packets are received on a dedicated thread: every socket is polled, datagrams are read in
/// batches (`recvmmsg`) into a preallocated slab, parsed in place, and handed to the engine in
/// recycled storage with the peer's payload types mapped to the engine's (``RTPPayloadType``).
/// Sending maps them back and goes straight out of the caller's thread. The peer's SSRC is the
/// SDP's or the first packet's; another SSRC is taken only after the current one has been
/// silent for a second (a restarted sender).
public final class RTPPeerTransport: MediaTransport, @unchecked Sendable {
    /// The uid the peer has in the channel.
    public static let peerUid: UInt32 = 1

    /// The streams, with the ports actually bound.
    public let streams: [RTPPeerStream]
    /// Receives on its own thread; sending uses its sockets from any thread (the system call
    /// is thread-safe; nothing else is shared but `shared`, under its lock).
    private let worker: RTPPeerWorker

    /// Binds every stream's sockets; the receive thread starts when the engine joins (until
    /// then the peer's datagrams wait in the sockets' buffers). Video packets are paced at
    /// `pacingBitsPerSecond` at least (or twice the rate sent lately, when that is more), so a
    /// keyframe leaves spread out; nil sends each packet as it comes.
    /// - Throws: ``MediaError`` naming the address and port that cannot be bound, or a remote
    ///   that is not a numeric address.
    public init(streams: [RTPPeerStream], pacingBitsPerSecond: Int? = nil) throws {
        guard !streams.isEmpty else { throw MediaError.invalidArgument("an RTP peer transport needs a stream") }
        var bound: [RTPPeerStream] = []
        var routes: [RTPPeerRoute] = []
        for var stream in streams {
            let route = try RTPPeerRoute(stream)
            stream.localPort = route.rtp.port
            if let rtcp = route.rtcp { stream.localRTCPPort = rtcp.port }
            bound.append(stream)
            routes.append(route)
        }
        self.streams = bound
        worker = RTPPeerWorker(routes: routes, pacingBitsPerSecond: pacingBitsPerSecond)
    }

    deinit { worker.stop() }

    /// Stops receiving and closes the sockets once the last packet in hand is delivered.
    /// Later sends are dropped.
    public func close() { worker.stop() }

    /// What crossed each stream so far, in ``streams``' order.
    public var statistics: [RTPPeerStreamStatistics] { worker.statistics }

    /// The peer's RTP packets received so far, over every stream (allocates nothing: for
    /// polling loops).
    public var packetsReceived: Int64 { worker.shared.withLock { $0.packetsReceived } }

    /// This side's RTP packets sent so far, over every stream (allocates nothing).
    public var packetsSent: Int64 { worker.shared.withLock { $0.packetsSent } }

    /// Whether the peer said goodbye on every stream it sends.
    public var peerSaidGoodbye: Bool {
        let received = statistics.filter { s in streams.contains { $0.kind == s.kind && $0.receives } }
        return !received.isEmpty && received.allSatisfy(\.byeReceived)
    }

    /// A description of this side for the peer: where it sends to reach this side (this side's
    /// addresses and bound ports), with the formats this side receives (or sends, for a stream
    /// it only sends), feedback (nack, nack pli, ccm fir) offered for video.
    public func localDescription(address: String) -> SessionDescription {
        let media = streams.map { stream -> SessionDescription.Media in
            var formats = stream.receives ? stream.receiveFormats : stream.sendFormats
            if formats.isEmpty {
                formats = [
                    stream.kind == .audio
                        ? .init(payloadType: Int(RTPPayloadType.opus), codec: .opus)
                        : .init(payloadType: Int(RTPPayloadType.vp8), codec: .vp8)
                ]
            }
            if stream.kind == .video {
                for index in formats.indices { formats[index].feedback = ["nack", "nack pli", "ccm fir"] }
            }
            var section = SessionDescription.Media(
                kind: stream.kind.rawValue, port: stream.localPort,
                transport: stream.kind == .video ? "RTP/AVPF" : "RTP/AVP", formats: formats)
            section.rtcpMux = stream.rtcpMux
            if !stream.rtcpMux, stream.localRTCPPort != stream.localPort + 1 { section.rtcpPort = stream.localRTCPPort }
            return section
        }
        return SessionDescription(connectionAddress: address, media: media)
    }

    /// Sends the last RTP packet of each video stream again (a tail-loss probe): when a stream
    /// ends, a receiver that lost its last packets has no later one to notice the gap by and
    /// ask for them. Call after the last frame; a receiver drops the duplicate (audio, which is
    /// not asked for again, is not repeated).
    public func sendTailProbe() {
        guard let channelId = worker.shared.withLock({ $0.channelId }) else { return }
        worker.sendTailProbe(channelId: channelId)
    }

    // MARK: MediaTransport

    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        let chosen = uid == 0 ? 1000 : uid
        let refusal: EngineError? = worker.shared.withLock { shared in
            if let joined = shared.channelId {
                return EngineError(
                    .joinChannelRejected, "an RTP peer transport carries one channel; '\(joined)' is joined")
            }
            if chosen == Self.peerUid {
                return EngineError(.joinChannelRejected, "uid \(chosen) is the RTP peer's")
            }
            shared.channelId = channelId
            shared.localUid = chosen
            shared.endpoint = receivesMedia ? endpoint : nil
            return nil
        }
        if let refusal { return answer(.failure(refusal)) }
        var peerMedia: PublishedMedia = []
        for stream in streams where stream.receives { peerMedia.insert(stream.kind == .audio ? .audio : .video) }
        if receivesMedia && !peerMedia.isEmpty {
            endpoint.transportUserJoined(channelId: channelId, uid: Self.peerUid, media: peerMedia)
        }
        answer(.success(chosen))
        // Receiving starts now that the engine knows the channel and the peer: what came since
        // the sockets were bound waited in their buffers, and is not lost.
        worker.start()
    }

    public func leave(channelId: String, uid: UInt32) {
        guard worker.shared.withLock({ $0.channelId == channelId && $0.localUid == uid }) else { return }
        worker.sendGoodbye()
        worker.shared.withLock { shared in
            shared.channelId = nil
            shared.endpoint = nil
        }
    }

    public func setRole(channelId: String, uid: UInt32, role: ClientRole) {}

    public func setMedia(channelId: String, uid: UInt32, media: PublishedMedia) {}

    /// The peer takes one video stream: the low layer of a publisher in dual stream mode is
    /// not sent.
    public func send(_ packet: RTPPacket, stream: MediaStreamID) {
        guard stream.layer == .high else { return }
        worker.send(packet, channelId: stream.channelId)
    }

    public func resend(_ packet: RTPPacket, stream: MediaStreamID, to recipient: UInt32) {
        guard stream.layer == .high else { return }
        worker.send(packet, channelId: stream.channelId, paced: false)
    }

    public func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32) {
        worker.sendRTCP(bytes, channelId: channelId)
    }

    public func setSubscribed(_ subscribed: Bool, to stream: MediaStreamID, subscriber: UInt32) {
        worker.shared.withLock { $0.unsubscribed[stream.kind == .audio ? 0 : 1] = !subscribed }
    }
}
