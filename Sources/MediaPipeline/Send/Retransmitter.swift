/// The publisher's side of loss recovery: its recent video packets (``PacketHistory``), the
/// round trip its subscribers' reports measure (which paces resending), and recycled storage
/// for its answers to receivers' reference times (RTCP XR DLRR). A value in the engine's
/// `retransmitter` lock, apart from the encoders' lock: a NACK is answered on whatever thread
/// carries the RTCP, even while a push holds the encoders and is sending the packets that
/// revealed the loss.
struct Retransmitter: Sendable {
    var history = PacketHistory()
    /// The low video layer's packets (dual stream mode).
    var lowHistory = PacketHistory()
    /// The round trip to subscribers, from their last reception report. A packet is resent to
    /// the same subscriber again only after three quarters of it (a repeated NACK that crossed
    /// a faster path is still answered).
    var roundTripMicroseconds: Int64 = NackTracker.defaultRoundTripMicroseconds
    /// Storage for DLRR answers.
    var replies = ByteRecycler(slotCount: 16, capacity: 24)
}

/// Walks an RTCP datagram for the NACKs of the local video and resends each packet asked for,
/// from the packet history, to the one subscriber that asked. The history's lock is held for
/// one lookup at a time, never across the transport call (which may deliver more feedback to
/// this engine on the same thread).
struct NackResponder: RTCPVisitor {
    let engine: MediaEngine
    let channelId: String
    /// The local user's uid in the channel, and the subscriber that asked.
    let localUid: UInt32
    let subscriber: UInt32
    let nowMicroseconds: Int64
    private var forVideo = false
    private var forLowVideo = false

    init(engine: MediaEngine, channelId: String, localUid: UInt32, subscriber: UInt32, nowMicroseconds: Int64) {
        self.engine = engine
        self.channelId = channelId
        self.localUid = localUid
        self.subscriber = subscriber
        self.nowMicroseconds = nowMicroseconds
    }

    mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32) {
        forVideo = mediaSSRC == engine.rtp.videoSSRC
        forLowVideo = mediaSSRC == engine.rtp.lowVideoSSRC
    }

    mutating func lost(_ sequenceNumber: UInt16) {
        guard forVideo || forLowVideo else { return }
        let (low, now, subscriber) = (forLowVideo, nowMicroseconds, subscriber)
        let ssrc = low ? engine.rtp.lowVideoSSRC : engine.rtp.videoSSRC
        let packet = engine.retransmitter.withLock { state in
            let roundTrip = state.roundTripMicroseconds * 3 / 4
            return low
                ? state.lowHistory.retransmission(
                    ssrc: ssrc, sequenceNumber: sequenceNumber, to: subscriber, now: now,
                    roundTripMicroseconds: roundTrip)
                : state.history.retransmission(
                    ssrc: ssrc, sequenceNumber: sequenceNumber, to: subscriber, now: now,
                    roundTripMicroseconds: roundTrip)
        }
        guard let packet else { return }
        let stream = MediaStreamID.video(channelId: channelId, uid: localUid, layer: low ? .low : .high)
        engine.transport.resend(packet, stream: stream, to: subscriber)
    }

    mutating func endOfMessage() { (forVideo, forLowVideo) = (false, false) }
}
