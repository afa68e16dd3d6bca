/// How a remote sender's payload types map to the engine's (``RTPPayloadType``): its numbers
/// come from the SDP it offered or answered, and may differ from ours.
struct PayloadTypeMap: Sendable, Equatable {
    /// Marks a payload type with no meaning here.
    static let none: UInt8 = 0xFF
    /// Remote payload type → the engine's (``none``: not received).
    private(set) var remoteToEngine = [UInt8](repeating: none, count: 128)
    /// Remote retransmission payload type (RFC 4588 rtx) → the remote payload type it resends.
    private(set) var retransmitted = [UInt8](repeating: none, count: 128)

    /// An empty map: nothing is received.
    init() {}

    /// Receives `remote` as the engine's `engine`.
    mutating func map(remote: Int, to engine: UInt8) {
        guard (0..<128).contains(remote) else { return }
        remoteToEngine[remote] = engine
    }

    /// Receives `remote` as retransmissions (RFC 4588) of `original`.
    mutating func mapRetransmission(remote: Int, resending original: Int) {
        guard (0..<128).contains(remote), (0..<128).contains(original) else { return }
        retransmitted[remote] = UInt8(original)
    }

    /// The engine's payload type for the remote `payloadType` (``none`` when not received).
    func engine(_ payloadType: UInt8) -> UInt8 { remoteToEngine[Int(payloadType & 0x7F)] }
}

/// Turns one remote sender's unprotected RTP and RTCP into the engine's packets: copied once
/// into recycled storage with the payload type mapped to the engine's (and the blocks of
/// redundant audio likewise), retransmissions in their own SSRC and payload type (RFC 4588)
/// made the original packet again, and handed to the endpoint as a stream of user `uid` in
/// `channelId` (its video named with the layer the server last said it forwards).
///
/// `@unchecked Sendable`: the packet state is confined to the thread that delivers the packets
/// (a connection's ICE loop thread); ``payloadTypes`` is set before the connection starts, and
/// what other threads touch (``counters``, the subscribed kinds, the video layer forwarded) is
/// behind locks.
final class ReceivedPacketMapper: @unchecked Sendable {
    /// What was received and what was dropped.
    struct Counters: Sendable, Equatable {
        /// RTP packets handed on (retransmissions included) and their bytes.
        var packets: Int64 = 0, bytes: Int64 = 0
        /// Retransmissions made original packets again.
        var retransmissions: Int64 = 0
        /// RTCP compound packets handed on.
        var rtcp: Int64 = 0
        /// Packets that were not RTP of a payload type received, or a retransmission before its
        /// stream's first packet: dropped.
        var ignored: Int64 = 0
        /// Packets of a kind the endpoint is not subscribed to: dropped.
        var unsubscribed: Int64 = 0
        /// When the last RTP packet was handed on, in microseconds of the mapper's clock.
        var lastPacketAt: Int64 = 0
        /// When the last video packet was handed on (0: none yet).
        var lastVideoPacketAt: Int64 = 0
    }

    let channelId: String
    let uid: UInt32
    private weak var endpoint: TransportEndpoint?
    /// How the sender's payload types map to the engine's: set before its connection starts
    /// (nothing is received until then).
    var payloadTypes = PayloadTypeMap()
    private var packets = ByteRecycler(slotCount: 2048, capacity: 1300)
    private var feedback = ByteRecycler(slotCount: 64, capacity: 1500)
    /// The media SSRC of each kind (audio 0, video 1), once its first packet came.
    private var mediaSSRC: [UInt32?] = [nil, nil]
    /// Which kinds are handed on, and which layer of the sender's video the server forwards;
    /// set from any thread.
    private struct Handing {
        var subscribed = [true, true]  // audio 0, video 1
        /// Nil until the server says (its video is named high until then).
        var videoLayer: VideoStreamType?

        /// The stream a packet of `kindIndex` is of, if it is handed on.
        func stream(_ kindIndex: Int, channelId: String, uid: UInt32) -> MediaStreamID? {
            guard subscribed[kindIndex] else { return nil }
            return kindIndex == 0
                ? .audio(channelId: channelId, uid: uid)
                : .video(channelId: channelId, uid: uid, layer: videoLayer ?? .high)
        }
    }
    private let handing = LockedValue(Handing())
    private let counted = LockedValue(Counters())

    /// A mapper for `uid`'s streams in `channelId`.
    init(channelId: String, uid: UInt32, endpoint: TransportEndpoint) {
        self.channelId = channelId
        self.uid = uid
        self.endpoint = endpoint
    }

    /// What was received and dropped so far (any thread).
    var counters: Counters { counted.withLock { $0 } }

    /// Microseconds since the last RTP packet came (since the mapper was made, before any),
    /// on the monotonic clock (any thread).
    var microsecondsSinceLastPacket: Int64 { clock.nowMicroseconds - counted.withLock { $0.lastPacketAt } }

    /// Microseconds since the last video packet came; nil before any (any thread).
    var microsecondsSinceLastVideoPacket: Int64? {
        let last = counted.withLock { $0.lastVideoPacketAt }
        return last == 0 ? nil : clock.nowMicroseconds - last
    }

    /// The monotonic clock packets are timed by (0 when the mapper was made).
    private let clock = WallClock()

    /// Whether packets of `kind` are handed on (any thread).
    func setSubscribed(_ value: Bool, _ kind: MediaKind) {
        handing.withLock { $0.subscribed[kind == .audio ? 0 : 1] = value }
    }

    /// The layer of the sender's video the server said it forwards (a Janus `substream`
    /// event); nil before it said. Set and read from any thread.
    var videoLayer: VideoStreamType? {
        get { handing.withLock { $0.videoLayer } }
        set { handing.withLock { $0.videoLayer = newValue } }
    }

    /// One unprotected RTP packet.
    func rtp(_ datagram: UnsafeRawBufferPointer) {
        guard let header = try? RTPHeader(parsing: datagram) else {
            counted.withLock { $0.ignored += 1 }
            return
        }
        let original = payloadTypes.retransmitted[Int(header.payloadType)]
        if original != PayloadTypeMap.none { return retransmission(datagram, header, original: original) }
        let enginePayloadType = payloadTypes.engine(header.payloadType)
        guard enginePayloadType != PayloadTypeMap.none, let codec = RTPPayloadType.codec(enginePayloadType) else {
            counted.withLock { $0.ignored += 1 }
            return
        }
        let kindIndex = codec.kind == .audio ? 0 : 1
        mediaSSRC[kindIndex] = header.ssrc
        guard let stream = handing.withLock({ $0.stream(kindIndex, channelId: channelId, uid: uid) }) else {
            counted.withLock { $0.unsubscribed += 1 }
            return
        }
        guard let endpoint else { return }
        let packet = ReceivedPacketCopy.mapped(
            datagram, header: header, enginePayloadType: enginePayloadType, map: payloadTypes.remoteToEngine,
            into: &packets)
        let now = clock.nowMicroseconds
        counted.withLock {
            $0.packets += 1
            $0.bytes += Int64(datagram.count)
            $0.lastPacketAt = now
            if kindIndex == 1 { $0.lastVideoPacketAt = now }
        }
        endpoint.transportReceive(packet, stream: stream)
    }

    /// A retransmission (RFC 4588 §4): the original sequence number leads its payload.
    private func retransmission(_ datagram: UnsafeRawBufferPointer, _ header: RTPHeader, original: UInt8) {
        let enginePayloadType = payloadTypes.engine(original)
        guard enginePayloadType != PayloadTypeMap.none, let codec = RTPPayloadType.codec(enginePayloadType),
            let ssrc = mediaSSRC[codec.kind == .audio ? 0 : 1]
        else {
            counted.withLock { $0.ignored += 1 }
            return
        }
        guard
            let stream = handing.withLock({
                $0.stream(codec.kind == .audio ? 0 : 1, channelId: channelId, uid: uid)
            })
        else {
            counted.withLock { $0.unsubscribed += 1 }
            return
        }
        guard let endpoint,
            let packet = ReceivedPacketCopy.restored(
                datagram, header: header, enginePayloadType: enginePayloadType, ssrc: ssrc, into: &packets)
        else { return }
        counted.withLock {
            $0.packets += 1
            $0.retransmissions += 1
            $0.bytes += Int64(datagram.count)
        }
        endpoint.transportReceive(packet, stream: stream)
    }

    /// One unprotected RTCP compound packet from the sender (its sender reports) or the server.
    func rtcp(_ datagram: UnsafeRawBufferPointer) {
        guard let endpoint else { return }
        counted.withLock { $0.rtcp += 1 }
        endpoint.transportReceiveRTCP(feedback.bytes(copying: datagram), channelId: channelId, from: uid)
    }
}
