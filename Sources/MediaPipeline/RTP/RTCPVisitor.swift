/// Told the fields of RTCP messages as ``RTCPCompound`` walks a datagram, in order, so that a
/// reader takes what it needs without any message being built. Every method does nothing
/// unless implemented.
protocol RTCPVisitor {
    /// A sender report's own fields; its report blocks follow.
    mutating func senderReport(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32)
    /// A receiver report from `ssrc`; its report blocks follow.
    mutating func receiverReport(ssrc: UInt32)
    /// One report block of the current sender or receiver report, whose SSRC is `reporter`.
    mutating func reportBlock(_ block: RTCPReportBlock, from reporter: UInt32)
    /// A BYE of these sources.
    mutating func bye<Sources: Sequence<UInt32>>(ssrcs: Sources)
    /// A generic NACK; the lost sequence numbers follow.
    mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32)
    /// One sequence number the current NACK reports lost.
    mutating func lost(_ sequenceNumber: UInt16)
    /// A picture loss indication.
    mutating func pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32)
    /// A full intra request; its entries follow.
    mutating func fullIntraRequest(senderSSRC: UInt32)
    /// One entry of the current full intra request.
    mutating func fullIntraRequestEntry(_ entry: RTCPPacket.FullIntraRequestEntry)
    /// A receiver estimated maximum bitrate (REMB, draft-alvestrand-rmcat-remb: payload-specific
    /// feedback 15 with "REMB"): the most `bitsPerSecond` the receiver asks the streams `ssrcs`
    /// together to use.
    mutating func receiverEstimatedMaximumBitrate<Sources: Sequence<UInt32>>(bitsPerSecond: UInt64, ssrcs: Sources)
    /// An extended report (XR) from `ssrc`; its blocks follow.
    mutating func extendedReport(ssrc: UInt32)
    /// An RRTR block of the current XR: the reporter's NTP clock when it sent it.
    mutating func receiverReferenceTime(ntpTimestamp: UInt64)
    /// One DLRR sub-block of the current XR.
    mutating func delaySinceLastReceiverReport(_ item: RTCPPacket.DLRRItem)
    /// A message of another type.
    mutating func other(packetType: UInt8, format: UInt8)
    /// The current message is over.
    mutating func endOfMessage()
}

extension RTCPVisitor {
    mutating func senderReport(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32
    ) {}
    mutating func receiverReport(ssrc: UInt32) {}
    mutating func reportBlock(_ block: RTCPReportBlock, from reporter: UInt32) {}
    mutating func bye<Sources: Sequence<UInt32>>(ssrcs: Sources) {}
    mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32) {}
    mutating func lost(_ sequenceNumber: UInt16) {}
    mutating func pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32) {}
    mutating func fullIntraRequest(senderSSRC: UInt32) {}
    mutating func fullIntraRequestEntry(_ entry: RTCPPacket.FullIntraRequestEntry) {}
    mutating func receiverEstimatedMaximumBitrate<Sources: Sequence<UInt32>>(bitsPerSecond: UInt64, ssrcs: Sources) {}
    mutating func extendedReport(ssrc: UInt32) {}
    mutating func receiverReferenceTime(ntpTimestamp: UInt64) {}
    mutating func delaySinceLastReceiverReport(_ item: RTCPPacket.DLRRItem) {}
    mutating func other(packetType: UInt8, format: UInt8) {}
    mutating func endOfMessage() {}
}
