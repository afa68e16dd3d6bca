/// The packets a publisher sent lately, by sequence number, to answer NACKs (RFC 4585) with
/// retransmissions (the role of libwebrtc's RtpPacketHistory).
///
/// A ring of ``capacity`` packets shared by reference with the ones sent: storing copies no
/// byte and allocates nothing. Each packet is resent to a subscriber at most once per round
/// trip, however often it repeats its NACK in that time; packets older than
/// ``maximumAgeMicroseconds`` are not resent (a receiver has given up on them long since).
struct PacketHistory {
    /// Packets kept: about 10 s of 500 kbit/s video, and less than the packetizer's recycled
    /// storage holds, so stored packets never keep its slots from being reused.
    static let capacity = 512
    /// The oldest packet worth resending.
    static let maximumAgeMicroseconds: Int64 = 3_000_000

    private var packets: [RTPPacket?] = Array(repeating: nil, count: capacity)
    private var sentAt = [Int64](repeating: 0, count: capacity)
    private var resentAt = [Int64](repeating: .min, count: capacity)
    /// Who the packet was last resent to.
    private var resentTo = [UInt32](repeating: 0, count: capacity)
    /// Packets and payload bytes sent again.
    private(set) var packetsRetransmitted: Int64 = 0
    private(set) var bytesRetransmitted: Int64 = 0
    /// NACKed packets that were not resent: unknown, too old, or resent within the round trip.
    private(set) var requestsIgnored: Int64 = 0

    /// Keeps `packet`, sent at clock time `now`.
    mutating func store(_ packet: RTPPacket, now: Int64) {
        let index = Int(packet.header.sequenceNumber) & (Self.capacity - 1)
        packets[index] = packet
        sentAt[index] = now
        resentAt[index] = .min
    }

    /// The packet of `ssrc` numbered `sequenceNumber` to send again to `subscriber` at clock
    /// time `now`, if it is kept, recent enough, and was not resent to that subscriber within
    /// `roundTripMicroseconds`; counted as retransmitted.
    mutating func retransmission(
        ssrc: UInt32, sequenceNumber: UInt16, to subscriber: UInt32, now: Int64, roundTripMicroseconds: Int64
    ) -> RTPPacket? {
        let index = Int(sequenceNumber) & (Self.capacity - 1)
        guard let packet = packets[index], packet.header.sequenceNumber == sequenceNumber,
            packet.header.ssrc == ssrc, now - sentAt[index] <= Self.maximumAgeMicroseconds,
            resentAt[index] == .min || resentTo[index] != subscriber || now - resentAt[index] >= roundTripMicroseconds
        else {
            requestsIgnored += 1
            return nil
        }
        resentAt[index] = now
        resentTo[index] = subscriber
        packetsRetransmitted += 1
        bytesRetransmitted += Int64(packet.payloadByteCount)
        return packet
    }
}
