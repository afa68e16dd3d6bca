/// One reception report block of a sender or receiver report (RFC 3550 section 6.4.1): what
/// the reporter received from one source.
public struct RTCPReportBlock: Sendable, Equatable {
    /// The source reported on.
    public var ssrc: UInt32
    /// Packets lost since the previous report, as a fraction of 256.
    public var fractionLost: UInt8
    /// Packets lost since reception started (expected minus received; negative with duplicates),
    /// 24 bits signed on the wire.
    public var cumulativeLost: Int32
    /// The highest sequence number received, with the count of wrap-arounds in the upper 16 bits.
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter in RTP timestamp units.
    public var jitter: UInt32
    /// LSR: the middle 32 bits of the NTP timestamp of the last sender report received (0: none).
    public var lastSenderReport: UInt32
    /// DLSR: time since that sender report, in units of 1/65536 s.
    public var delaySinceLastSenderReport: UInt32

    /// A report block with every field given.
    public init(
        ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequenceNumber: UInt32,
        jitter: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }
}

/// One RTCP message. A UDP datagram carries several (a compound packet, ``RTCPCompound``).
public enum RTCPPacket: Sendable, Equatable {
    /// SR (PT 200): a sender's clock and counts, and its reception reports.
    case senderReport(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reports: [RTCPReportBlock])
    /// RR (PT 201): a receiver's reception reports.
    case receiverReport(ssrc: UInt32, reports: [RTCPReportBlock])
    /// BYE (PT 203): the sources leave.
    case bye(ssrcs: [UInt32])
    /// Generic NACK (RTPFB PT 205, FMT 1, RFC 4585 section 6.2.1): these packets of `mediaSSRC`
    /// were lost.
    case nack(senderSSRC: UInt32, mediaSSRC: UInt32, lostSequenceNumbers: [UInt16])
    /// PLI (PSFB PT 206, FMT 1, RFC 4585 section 6.3.1): the receiver lost a picture of `mediaSSRC`.
    case pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32)
    /// FIR (PSFB PT 206, FMT 4, RFC 5104 section 4.3.1): each entry asks `ssrc` for a keyframe;
    /// the sequence number tells a new request from a repeated one.
    case fullIntraRequest(senderSSRC: UInt32, entries: [FullIntraRequestEntry])
    /// XR (PT 207, RFC 3611) with the blocks a receive-only endpoint needs for its round trip:
    /// a receiver reference time (RRTR, block type 4: the reporter's NTP clock) and the
    /// answers to earlier ones (DLRR, block type 5). Blocks of other types are read past.
    case extendedReport(
        senderSSRC: UInt32, receiverReferenceTime: UInt64?, delaySinceLastReceiverReports: [DLRRItem])
    /// A message this library reads past (SDES, APP, other feedback), kept by its type and format.
    case other(packetType: UInt8, format: UInt8)

    /// One DLRR sub-block (RFC 3611 section 4.5): the answer to `ssrc`'s last receiver
    /// reference time report.
    public struct DLRRItem: Sendable, Equatable {
        /// The receiver whose RRTR this answers.
        public var ssrc: UInt32
        /// LRR: the middle 32 bits of that RRTR's NTP timestamp.
        public var lastReceiverReport: UInt32
        /// DLRR: time between receiving it and sending this, in units of 1/65536 s.
        public var delay: UInt32
        /// A sub-block with every field given.
        public init(ssrc: UInt32, lastReceiverReport: UInt32, delay: UInt32) {
            self.ssrc = ssrc
            self.lastReceiverReport = lastReceiverReport
            self.delay = delay
        }
    }

    /// One FIR request.
    public struct FullIntraRequestEntry: Sendable, Equatable {
        /// The media source asked for a keyframe.
        public var ssrc: UInt32
        /// The request's command sequence number.
        public var sequenceNumber: UInt8
        /// An entry for `ssrc`.
        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    /// RTCP packet types (RFC 3550, 4585).
    enum PacketType {
        static let senderReport: UInt8 = 200
        static let receiverReport: UInt8 = 201
        static let sourceDescription: UInt8 = 202
        static let bye: UInt8 = 203
        static let transportFeedback: UInt8 = 205
        static let payloadFeedback: UInt8 = 206
        static let extendedReport: UInt8 = 207
    }
}
