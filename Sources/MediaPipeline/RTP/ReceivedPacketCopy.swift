/// How a receive path hands a peer's RTP packet to the engine: one copy into recycled storage,
/// in the engine's payload types. Shared by the plain RTP peer transport and the WebRTC
/// connections.
enum ReceivedPacketCopy {
    /// `datagram` (whose parsed header is `header`) copied into `storage` with the payload type
    /// `enginePayloadType`; the blocks of redundant audio (RFC 2198) name their payload types
    /// through `map` (the peer's → the engine's) too.
    static func mapped(
        _ datagram: UnsafeRawBufferPointer, header: RTPHeader, enginePayloadType: UInt8, map: [UInt8],
        into storage: inout ByteRecycler
    ) -> RTPPacket {
        let bytes = storage.bytes(copying: datagram) { copy in
            copy[1] = copy[1] & 0x80 | enginePayloadType
            if enginePayloadType == RTPPayloadType.red, header.byteCount + header.paddingByteCount <= copy.count {
                AudioRedundancy.mapBlockPayloadTypes(
                    in: UnsafeMutableRawBufferPointer(
                        rebasing: copy[header.byteCount..<(copy.count - header.paddingByteCount)]),
                    map)
            }
        }
        var header = header
        header.payloadType = enginePayloadType
        return RTPPacket(trusted: bytes, header: header)
    }

    /// The original packet a retransmission in its own payload type and SSRC carries (RFC 4588
    /// §4: the original sequence number leads its payload): the media stream's `ssrc`, the
    /// original sequence number, `enginePayloadType`, and the payload after those two bytes,
    /// copied into `storage`. Nil when it carries no payload (a padding-only probe).
    static func restored(
        _ datagram: UnsafeRawBufferPointer, header: RTPHeader, enginePayloadType: UInt8, ssrc: UInt32,
        into storage: inout ByteRecycler
    ) -> RTPPacket? {
        let payloadStart = header.byteCount + 2
        let payloadEnd = datagram.count - header.paddingByteCount
        guard payloadStart < payloadEnd else { return nil }
        let restored = RTPHeader(
            marker: header.marker, payloadType: enginePayloadType,
            sequenceNumber: UInt16(datagram[header.byteCount]) << 8 | UInt16(datagram[header.byteCount + 1]),
            timestamp: header.timestamp, ssrc: ssrc)
        let payload = UnsafeRawBufferPointer(rebasing: datagram[payloadStart..<payloadEnd])
        let bytes = storage.bytes(
            headCount: RTPHeader.fixedByteCount, writeHead: { restored.write(into: $0) }, body: payload)
        return RTPPacket(trusted: bytes, header: restored)
    }
}
