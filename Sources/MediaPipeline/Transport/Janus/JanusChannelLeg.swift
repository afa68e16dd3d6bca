import Dispatch

/// One joined channel of a ``JanusTransport``: its publisher handle in the room, the publishing
/// connection (when this side publishes there) and a subscription per remote publisher.
///
/// Signalling runs in one task per channel, which takes the room's events and the engine's
/// commands in order (``JanusLegControl``, an actor). What packets need is reached without it:
/// the publication and the subscriptions sit behind their own locks.
final class JanusChannelLeg: Sendable {
    /// A change the engine asks for.
    enum Command: Sendable {
        case role(ClientRole)
        case media(PublishedMedia)
        case leave
        /// The engine changed which kinds of `publisher` it wants: Janus is told to send only
        /// those on the subscription.
        case wanted(publisher: UInt32)
        /// The engine changed which video layer it wants of `publisher` (nil: the default):
        /// Janus is told the substream.
        case layer(publisher: UInt32?)
        /// What happened to the session of `signalling`.
        case session(JanusSessionEvent, JanusSignalling)
    }

    let channelId: String
    let publication = LockedValue<JanusPublication?>(nil)
    let subscriptions = LockedValue<[UInt32: JanusSubscription]>([:])
    private let control: JanusLegControl
    private let commands: AsyncStream<Command>.Continuation
    private let commandStream: AsyncStream<Command>
    private let task = LockedValue<Task<Void, Never>?>(nil)

    init(
        transport: JanusTransport, channelId: String, room: JanusID, uid: UInt32, pin: String?, role: ClientRole,
        media: PublishedMedia, receivesMedia: Bool, endpoint: TransportEndpoint
    ) {
        self.channelId = channelId
        (commandStream, commands) = AsyncStream.makeStream(of: Command.self)
        control = JanusLegControl(
            transport: transport, channelId: channelId, room: room, uid: uid, pin: pin, role: role, media: media,
            receivesMedia: receivesMedia, endpoint: endpoint)
    }

    /// Joins the room and then serves it until ``leave()``; `answer` gets the uid or the refusal.
    func start(answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void) {
        let control = self.control
        let commandStream = self.commandStream
        let started = Task { [self] in
            do {
                let uid = try await control.join(leg: self)
                answer(.success(uid))
            } catch {
                answer(.failure(control.engineError(error)))
                await control.tearDown(leg: self)
                return
            }
            await control.serve(leg: self, commands: commandStream)
        }
        task.withLock { $0 = started }
    }

    /// Passes a command to the channel's task.
    func command(_ command: Command) { commands.yield(command) }

    /// Leaves the room (asynchronously) and closes every connection of the channel.
    func leave() {
        commands.yield(.leave)
        commands.finish()
    }

    /// Waits until the channel's task has ended.
    func finished() async { await task.withLock { $0 }?.value }

    // MARK: Packets

    /// Sends `packet` on the publishing connection, if there is one.
    func sendRTP(_ packet: RTPPacket) {
        guard let publication = publication.withLock({ $0 }) else { return }
        publication.send(packet)
    }

    /// Sends RTCP to where `recipient` is reached: a remote publisher's subscription, or the
    /// publishing connection (sender reports, answers to the server's own reports).
    func sendRTCP(_ bytes: [UInt8], to recipient: UInt32) {
        if recipient != JanusTransport.serverUid, let subscription = subscriptions.withLock({ $0[recipient] }) {
            bytes.withUnsafeBytes { Self.sendCompound($0, on: subscription.connection) }
        } else if let publication = publication.withLock({ $0 }) {
            bytes.withUnsafeBytes { _ = publication.connection.sendRTCP($0) }
        }
    }

    /// Sends RTCP feedback as a compound packet that starts with a receiver report (RFC 3550
    /// §6.1, RFC 4585 §3.1: Janus offers no reduced-size RTCP). A keyframe request sent alone
    /// gets a receiver report put before it, with one report block naming the stream it asks
    /// about: Janus tells which stream feedback concerns by the sender's SSRC, which it does not
    /// know from a receive-only subscriber, and then by the first report block's (or NACK's)
    /// media SSRC; without it, it dropped every PLI of ours as "unknown SSRC". The block reports
    /// nothing lost, since the receiver's own reports carry the figures. Built on the stack.
    ///
    /// A receiver report with several blocks (the engine reports a user's audio and video in
    /// one) goes as one report per block, the rest of the compound after the first: Janus files
    /// a report by its first block alone and takes the round trip from it, so the video's
    /// block never gave it one, and it retransmits only once it has a round trip (it answered
    /// none of our NACKs).
    ///
    /// Each block's delay since the last sender report (DLSR) goes 1 ms short: Janus keeps a
    /// subscriber's packets for retransmission only from the first report whose round trip,
    /// in whole milliseconds, differs from the last one, which starts at 0; a round trip under
    /// 1 ms (the same host, a LAN) never does, and no NACK was ever answered. The round trip it
    /// reads is 1 ms longer than the true one.
    static func sendCompound(_ bytes: UnsafeRawBufferPointer, on connection: WebRTCConnection) {
        feedbackDatagrams(bytes) { _ = connection.sendRTCP($0) }
    }

    /// The datagrams ``sendCompound(_:on:)`` sends for the compound `bytes`, each given to `send`
    /// (valid only during the call).
    static func feedbackDatagrams(_ bytes: UnsafeRawBufferPointer, _ send: (UnsafeRawBufferPointer) -> Void) {
        if bytes.count >= 8, bytes[1] == RTCPPacket.PacketType.receiverReport, bytes[0] & 0x1F >= 1 {
            return sendReportsApart(bytes, send)
        }
        if bytes.count >= 12, bytes[1] == RTCPPacket.PacketType.transportFeedback, bytes[0] & 0x1F == 1 {
            // A generic NACK goes twice: Janus ignores a repeat for a packet it resent within
            // 200 ms, so a lost request would otherwise cost a 200 ms round; the copy costs
            // a few bytes and is answered only if the first was lost.
            send(bytes)
            send(bytes)
            return
        }
        // A payload-specific feedback message (PLI, FIR) first: sender SSRC at 4, media at 8.
        guard bytes.count >= 12, bytes[1] == RTCPPacket.PacketType.payloadFeedback else {
            send(bytes)
            return
        }
        let reportBytes = 32
        withUnsafeTemporaryAllocation(byteCount: reportBytes + bytes.count, alignment: 4) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            // V=2, one report block; RR (201); length 7 words; the sender's SSRC; the block's SSRC.
            buffer[0] = 0x81
            buffer[1] = RTCPPacket.PacketType.receiverReport
            buffer[3] = 7
            for index in 0..<4 {
                buffer[4 + index] = bytes[4 + index]
                buffer[8 + index] = bytes[8 + index]
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[reportBytes...]).copyMemory(from: bytes)
            send(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Sends the receiver report leading `bytes` as one report per block (the messages after it
    /// with the first), on the stack.
    private static func sendReportsApart(_ bytes: UnsafeRawBufferPointer, _ send: (UnsafeRawBufferPointer) -> Void) {
        let blocks = Int(bytes[0] & 0x1F)
        let reportBytes = (Int(bytes[2]) << 8 | Int(bytes[3]) + 1) * 4
        guard reportBytes >= 8 + 24 * blocks, reportBytes <= bytes.count else {
            send(bytes)  // not what the engine writes: as it is
            return
        }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[reportBytes...])
        let singleBytes = 8 + 24
        withUnsafeTemporaryAllocation(byteCount: singleBytes + rest.count, alignment: 4) { buffer in
            for block in 0..<blocks {
                // V=2, one block; RR; length 7 words; the sender's SSRC; the block.
                buffer[0] = 0x81
                buffer[1] = RTCPPacket.PacketType.receiverReport
                buffer[2] = 0
                buffer[3] = 7
                UnsafeMutableRawBufferPointer(rebasing: buffer[4..<8]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: bytes[4..<8]))
                UnsafeMutableRawBufferPointer(rebasing: buffer[8..<singleBytes]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: bytes[(8 + 24 * block)..<(8 + 24 * block + 24)]))
                shortenDelaySinceLastSenderReport(UnsafeMutableRawBufferPointer(rebasing: buffer[8..<singleBytes]))
                let withRest = block == 0 ? rest.count : 0
                if withRest > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[singleBytes..<(singleBytes + withRest)]).copyMemory(
                        from: rest)
                }
                send(UnsafeRawBufferPointer(rebasing: buffer[..<(singleBytes + withRest)]))
            }
        }
    }

    /// Takes 1 ms (66 units of 1/65536 s) off the DLSR of the report block `block`, when it
    /// echoes a sender report (LSR not 0).
    private static func shortenDelaySinceLastSenderReport(_ block: UnsafeMutableRawBufferPointer) {
        let lastSenderReport = block.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
        guard lastSenderReport != 0 else { return }
        let delay = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 20, as: UInt32.self))
        block.storeBytes(of: (delay > 66 ? delay - 66 : 0).bigEndian, toByteOffset: 20, as: UInt32.self)
    }

    /// Hands on or drops `publisher`'s `kind` (remote mutes, auto-subscribe): at once here (the
    /// packets already on their way are dropped), and Janus is asked to stop (or resume) sending
    /// it on the subscription.
    func setSubscribed(_ subscribed: Bool, publisher: UInt32, kind: MediaKind) {
        control.setSubscribedNow(subscribed, publisher: publisher, kind: kind)
        subscriptions.withLock { $0[publisher] }?.mapper.setSubscribed(subscribed, kind)
        commands.yield(.wanted(publisher: publisher))
    }

    /// Asks for `type` of `publisher`'s video (nil: of every publisher not named): remembered
    /// at once, told to Janus by the channel's task.
    func setVideoLayer(_ type: VideoStreamType, publisher: UInt32?) {
        control.setLayerNow(type, publisher: publisher)
        commands.yield(.layer(publisher: publisher))
    }

    /// What crossed the channel's connections.
    var statistics: [JanusConnectionStatistics] {
        var all: [JanusConnectionStatistics] = []
        if let publication = publication.withLock({ $0 }) {
            all.append(publication.statistics(channelId: channelId))
        }
        for (uid, subscription) in subscriptions.withLock({ $0 }) {
            all.append(subscription.statistics(channelId: channelId, publisher: uid))
        }
        return all
    }
}

/// How the published video's two encodings (dual stream mode's high and low streams) go out
/// as simulcast: each packet with the header extension block naming the video section's mid
/// and its encoding's RTP stream ID, made once.
struct JanusSimulcastSending: Sendable {
    let highSSRC: UInt32
    let lowSSRC: UInt32
    let highBlock: [UInt8]
    let lowBlock: [UInt8]
}

/// The publishing connection of a channel and how the engine's payload types and video layers
/// go out on it.
final class JanusPublication: Sendable {
    let connection: WebRTCConnection
    /// Engine payload type → the one negotiated with Janus.
    private let wirePayloadType: [UInt8]
    /// The low video stream's SSRC, if the engine has one.
    private let lowVideoSSRC: UInt32?
    /// The encodings' extension blocks, when Janus took simulcast.
    let simulcast: JanusSimulcastSending?

    init(
        connection: WebRTCConnection, wirePayloadType: [UInt8], lowVideoSSRC: UInt32? = nil,
        simulcast: JanusSimulcastSending? = nil
    ) {
        self.connection = connection
        self.wirePayloadType = wirePayloadType
        self.lowVideoSSRC = lowVideoSSRC
        self.simulcast = simulcast
    }

    /// Sends an engine packet: a video packet of either layer as its simulcast encoding (a
    /// low-layer packet is dropped when Janus took one encoding), audio as negotiated.
    func send(_ packet: RTPPacket) {
        let wire = wirePayloadType[Int(packet.header.payloadType & 0x7F)]
        if wire != PayloadTypeMap.none {
            let ssrc = packet.header.ssrc
            if let simulcast {
                let block =
                    ssrc == simulcast.highSSRC
                    ? simulcast.highBlock : ssrc == simulcast.lowSSRC ? simulcast.lowBlock : nil
                connection.sendRTP(packet, payloadType: wire, extensionBlock: block)
            } else if ssrc != lowVideoSSRC {
                connection.sendRTP(packet, payloadType: wire)
            }
            return
        }
        // Redundant audio to a server that did not take RFC 2198 (Janus answers Opus alone):
        // its primary block goes as plain Opus.
        let opus = wirePayloadType[Int(RTPPayloadType.opus)]
        guard packet.header.payloadType == RTPPayloadType.red, opus != PayloadTypeMap.none else { return }
        var primary: Range<Int>?
        packet.withUnsafePayload { payload in
            try? AudioRedundancy.forEachBlock(in: payload) { block in
                if block.isPrimary { primary = block.range }
            }
        }
        guard let primary else { return }
        let offset = packet.payloadRange.lowerBound
        connection.sendRTP(
            packet, payloadType: opus, payload: (primary.lowerBound + offset)..<(primary.upperBound + offset))
    }

    func statistics(channelId: String) -> JanusConnectionStatistics {
        JanusConnectionStatistics(channelId: channelId, publisher: nil, connection: connection)
    }
}

/// One remote publisher's subscription: its handle, its connection, its packet mapper (which
/// keeps the layer Janus last said it switched the subscription to), and the mids Janus gave
/// its streams.
final class JanusSubscription: Sendable {
    let handle: JanusHandle
    let connection: WebRTCConnection
    let mapper: ReceivedPacketMapper
    /// The subscription's mid of each kind received (Janus's offer).
    let mids: [MediaKind: String]
    /// The kinds Janus was last told not to send (nil: nothing told yet, it sends everything).
    let toldUnwanted = LockedValue<Set<MediaKind>?>(nil)
    /// The video layer Janus was last told to send (nil: nothing told yet, it climbs to the
    /// highest).
    let toldLayer = LockedValue<VideoStreamType?>(nil)
    /// When the low wish is told again, after the subscription was moved to the high substream
    /// because its low one went silent (``JanusLegControl/reviveSilentLowLayers(leg:)``).
    let lowLayerRetellAt = LockedValue<ContinuousClock.Instant?>(nil)
    /// When a low wish Janus has not acted on was last asked for again, and the wait before the
    /// next time (``JanusLegControl/reviveSilentLowLayers(leg:)``).
    let lowLayerReasked = LockedValue<(last: ContinuousClock.Instant, wait: Duration)?>(nil)

    init(handle: JanusHandle, connection: WebRTCConnection, mapper: ReceivedPacketMapper, mids: [MediaKind: String]) {
        self.handle = handle
        self.connection = connection
        self.mapper = mapper
        self.mids = mids
    }

    func statistics(channelId: String, publisher: UInt32) -> JanusConnectionStatistics {
        let mapped = mapper.counters
        var statistics = JanusConnectionStatistics(channelId: channelId, publisher: publisher, connection: connection)
        statistics.retransmissionsReceived = mapped.retransmissions
        statistics.ignored += mapped.ignored
        return statistics
    }
}

extension JanusConnectionStatistics {
    /// The counts of `connection`.
    init(channelId: String, publisher: UInt32?, connection: WebRTCConnection) {
        let counters = connection.statistics
        self.init(channelId: channelId, publisher: publisher)
        rtpReceived = counters.rtpReceived
        rtcpReceived = counters.rtcpReceived
        rtpSent = counters.rtpSent
        rtcpSent = counters.rtcpSent
        unprotectFailures = counters.unprotectFailures
        ignored = counters.ignored
        connected = connection.isConnected
    }
}
