import Logging
import Synchronization

/// The engine as the transport sees it: a separate object, so the transport's callbacks are not
/// part of the engine's public API. Holds the engine weakly (the transport holds endpoints).
/// `@unchecked Sendable`: ``engine`` is set once, in the engine's initialiser, before the
/// endpoint is handed to any transport.
final class EngineEndpoint: TransportEndpoint, @unchecked Sendable {
    weak var engine: MediaEngine?
    /// The engine's receive router and clock, held here so a packet whose route is settled
    /// reaches its receiver without loading the engine (``transportReceive(_:stream:)``).
    private let routes: LockedValue<ReceiveRoutes>
    private let clock: MediaClock
    /// Packets dropped for a payload type unknown or of another kind than their stream
    /// (``EngineStatistics/packetsDroppedUnknownKind``).
    let packetsDroppedUnknownKind = Atomic<Int64>(0)

    init(routes: LockedValue<ReceiveRoutes>, clock: MediaClock) {
        self.routes = routes
        self.clock = clock
    }

    func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {
        engine?.userJoined(channelId: channelId, uid: uid, media: media)
    }
    func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        engine?.userOffline(channelId: channelId, uid: uid, reason: reason)
    }
    func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {
        engine?.mediaChanged(channelId: channelId, uid: uid, media: media)
    }
    /// The packet path: the route's receiver takes the packet, without the control lock and
    /// without the engine; only a packet that needs a decision or asks for feedback reaches the
    /// engine.
    /// A packet whose payload type is not of the stream's kind is dropped.
    func transportReceive(_ packet: RTPPacket, stream: MediaStreamID) {
        guard let codec = RTPPayloadType.codec(packet.header.payloadType), codec.kind == stream.kind else {
            packetsDroppedUnknownKind.wrappingAdd(1, ordering: .relaxed)
            return
        }
        let (channelId, uid) = (stream.channelId, stream.uid)
        let now = clock.nowMicroseconds
        // Delivered under the routes lock, so the snapshot and the route need no retain.
        guard let feedback = routes.withLock({ $0.deliverSettled(packet, stream: stream, now: now) }) else {
            engine?.receiveDeciding(packet, codec.kind, channelId: channelId, from: uid)
            return
        }
        guard feedback.nack != nil || feedback.keyframeWanted != nil else { return }
        engine?.feedbackAfterArrival(channelId: channelId, uid: uid, codec.kind, feedback)
    }
    func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        engine?.receiveRTCP(bytes, channelId: channelId, from: uid)
    }
    func transportConnectionStateChanged(channelId: String, state: ConnectionState, reason: ConnectionChangedReason) {
        engine?.connectionStateChanged(channelId: channelId, state: state, reason: reason)
    }
    func transportVideoStreamTypeChanged(channelId: String, uid: UInt32, type: VideoStreamType) {
        engine?.input { $0.videoStreamTypeChanged(channelId, uid, type) }
    }
    func transportLocalStreams() -> LocalStreamDescription? {
        guard let engine else { return nil }
        return LocalStreamDescription(
            audioSSRC: engine.rtp.audioSSRC, videoSSRC: engine.rtp.videoSSRC, feedbackSSRC: engine.rtp.feedbackSSRC,
            videoCodec: engine.configuration.videoCodec.mediaCodec,
            audioRedundancy: engine.configuration.audioRedundancy, lowVideoSSRC: engine.rtp.lowVideoSSRC)
    }
}

/// What the transport reports, as inputs to the control plane. Packets reach their receivers
/// through the receive router (``ReceiveRoutes``) and each receiver's own lock, never the control
/// lock and never behind a decode; only a packet that needs a decision (the first of a stream,
/// one of a user not yet known) or feedback to count goes through the control plane.
extension MediaEngine {
    func userJoined(channelId: String, uid: UInt32, media: PublishedMedia) {
        input { $0.userJoined(channelId, uid, media) }
    }

    func userOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        input { plane in
            takeAudioArrivals(channelId: channelId, uid: uid)
            plane.userOffline(channelId, uid, reason)
        }
    }

    func mediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {
        input { $0.mediaChanged(channelId, uid, media) }
    }

    /// The feedback a receiver asked for on a packet's arrival (a NACK, or it waits for a
    /// keyframe), counted by the control plane and sent if due.
    func feedbackAfterArrival(channelId: String, uid: UInt32, _ kind: MediaKind, _ feedback: ReceiveRoute.Feedback) {
        let request = withControl { $0.feedbackAfterArrival(channelId: channelId, uid: uid, kind, feedback) }
        if let request { sendFeedback(request) }
    }

    /// A packet the control plane sees itself: the route is not settled (a decision is due on
    /// arrival) or there is none yet. Delivered through the route inside the control input, so
    /// the decision follows the delivery.
    func receiveDeciding(_ packet: RTPPacket, _ kind: MediaKind, channelId: String, from uid: UInt32) {
        let (request, decided) = withControl { plane -> (ControlPlane.FeedbackRequest?, Bool) in
            guard let route = routes.withLock({ $0.route(channelId: channelId, uid: uid) }) else { return (nil, false) }
            let before = plane.decisions
            let feedback = route.deliver(packet, kind, now: plane.now)
            let request = plane.packetArrived(kind, channelId: channelId, from: uid, feedback)
            return (request, plane.decisions != before)
        }
        if let request { sendFeedback(request) }
        if decided { flushActions() }
    }

    /// Sends a receiver's feedback to a publisher: its NACK, and a keyframe request (RTCP PLI).
    func sendFeedback(_ request: ControlPlane.FeedbackRequest) {
        if let nack = request.nack {
            transport.sendRTCP(nack, channelId: request.channelId, from: request.localUid, to: request.publisher)
        }
        guard let ssrc = request.pictureLossSSRC else { return }
        configuration.logger.debug(
            "keyframe request (PLI) to user \(request.publisher)",
            metadata: ["channel": "\(request.channelId)", "ssrc": "\(ssrc)"])
        let message = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: rtp.feedbackSSRC, mediaSSRC: ssrc)])
        transport.sendRTCP(message, channelId: request.channelId, from: request.localUid, to: request.publisher)
    }

    func receiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        let now = self.now
        var reader = FeedbackReader(
            audioSSRC: rtp.audioSSRC, videoSSRC: rtp.videoSSRC, lowVideoSSRC: rtp.lowVideoSSRC,
            feedbackSSRC: rtp.feedbackSSRC, ntpNowMicroseconds: ntpMicroseconds(now))
        // Feedback that cannot be read is dropped, as a network stack drops a corrupt datagram.
        guard (try? bytes.withUnsafeBytes({ try RTCPCompound.visit($0, &reader) })) != nil else { return }
        if reader.keyframeWanted {
            configuration.logger.debug("keyframe requested by user \(uid)", metadata: ["channel": "\(channelId)"])
        }
        let localUid = withControl { plane in
            plane.feedbackArrived(reader, channelId: channelId, from: uid)
            return plane.localUid(in: channelId)
        }
        routes.withLock { $0.receivers(channelId: channelId, uid: uid) }.take(reader, now: now)
        let roundTrip = retransmitter.withLock { state in
            if let measured = reader.roundTripMicroseconds { state.roundTripMicroseconds = max(1_000, measured) }
            return state.roundTripMicroseconds
        }
        if let cap = reader.maximumBitrate {
            rateControl.withLock { $0.cap(bitsPerSecond: cap, now: now) }
        }
        if let fraction = reader.fractionLost, configuration.adaptsToLoss {
            rateControl.withLock {
                $0.report(fractionLost: Double(fraction) / 256, roundTripMicroseconds: roundTrip, now: now)
            }
        }
        guard let localUid else { return }
        if let (ssrc, referenceTime) = reader.receiverReferenceTime {
            // Answered at once (DLRR 0), so the receiver measures its round trip to us.
            let item = RTCPPacket.DLRRItem(
                ssrc: ssrc, lastReceiverReport: UInt32(truncatingIfNeeded: referenceTime >> 16), delay: 0)
            let answer = retransmitter.withLock {
                RTCPCompound.delaySinceLastReceiverReport(ssrc: rtp.videoSSRC, item, in: &$0.replies)
            }
            transport.sendRTCP(answer, channelId: channelId, from: localUid, to: uid)
        }
        if reader.nackForVideo {
            var responder = NackResponder(
                engine: self, channelId: channelId, localUid: localUid, subscriber: uid, nowMicroseconds: now)
            _ = try? bytes.withUnsafeBytes { try RTCPCompound.visit($0, &responder) }
        }
    }

    /// The transport says the connection of `channelId` changed: reported as Agora's
    /// connection state event.
    func connectionStateChanged(channelId: String, state connection: ConnectionState, reason: ConnectionChangedReason) {
        input { $0.connectionChanged(channelId, connection, reason) }
    }
}
