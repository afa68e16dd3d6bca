/// What a selective forwarder does for one subscriber of one publisher's layered video: it
/// forwards one layer at a time, switches to the layer the subscriber wants only on that
/// layer's keyframe (asking the publisher for one, once per switch), and rewrites what it
/// forwards (SSRC, sequence numbers, PictureID and TL0PICIDX) so the subscriber sees one
/// continuous stream: the high layer's SSRC, sequence numbers and PictureIDs that follow on
/// across every switch. The layers share one RTP time base, so timestamps pass unchanged.
///
/// The rules are LiveKit's and mediasoup's: a switch waits for a keyframe that starts a frame
/// of the target layer (a delta frame of another layer would decode into a wrong picture), and
/// when the frame forwarded last was not whole, one sequence number is skipped, so the
/// subscriber sees the gap and drops that frame rather than decoding it short.
struct VideoLayerForwarder: Sendable {
    /// The layer the subscriber wants.
    var target: VideoStreamType
    /// The layer being forwarded now; nil until the first packet is, for a subscriber that had
    /// nothing of the publisher's video before (the first packet forwarded is then a keyframe of
    /// the target layer).
    private(set) var current: VideoStreamType?
    /// Whether a keyframe of ``target`` was asked for since it became the target.
    private(set) var keyframeRequested = false
    /// What is added to a layer's sequence numbers and PictureIDs (mod 2^16 and 2^15) and its
    /// TL0PICIDX (mod 2^8) as it is forwarded.
    struct Offsets: Equatable {
        var sequence: UInt16 = 0
        var pictureId: UInt16 = 0
        var layerZeroIndex: UInt8 = 0
    }
    /// The forwarded layer's offsets.
    private var offsets = Offsets()
    /// The last packet forwarded, as rewritten: its sequence number, PictureID, TL0PICIDX,
    /// and whether it ended its frame.
    private var lastSequence: UInt16?
    private var lastPictureId: UInt16?
    private var lastLayerZeroIndex: UInt8?
    private var lastEndedFrame = true
    /// The mapping in use before the last switch: the NACKs of packets forwarded before it
    /// name numbers of that layer, and their retransmissions go out as those packets did.
    /// `switchedAt` is the first rewritten number after it.
    private var previous: (layer: VideoStreamType, offsets: Offsets)?
    private var switchedAt: UInt16 = 0
    /// Storage for rewritten packets (reused: a subscriber holds a few hundred at most).
    private var recycler = ByteRecycler(slotCount: 1024, capacity: RTPHeader.fixedByteCount + 1300)

    /// A forwarder wanting `target`. A subscriber that had the high layer up to `lastForwarded`
    /// already (by reference, before the publisher became layered) goes on with it as it comes,
    /// and the numbers after a switch follow on from there; one that had nothing (nil) gets
    /// nothing until a keyframe of `target`, asked for once, as at any switch.
    init(target: VideoStreamType, after lastForwarded: RTPPacket? = nil) {
        self.target = target
        if let lastForwarded {
            current = .high
            note(lastForwarded)
        }
    }

    /// What to do with one packet.
    enum Decision {
        /// Not forwarded (another layer, or the target's frames before its keyframe).
        case drop
        /// Forwarded as it is (the mapping is the identity).
        case forward
        /// Forwarded rewritten.
        case rewritten(RTPPacket)
    }

    /// Whether a keyframe request for ``target`` is due: the target is not the current layer
    /// and none was asked for since it became the target. Marks it asked.
    mutating func takeKeyframeRequest() -> Bool {
        guard target != current, !keyframeRequested else { return false }
        keyframeRequested = true
        return true
    }

    /// Changes the wanted layer (a new request is due if it differs from the current one).
    mutating func want(_ layer: VideoStreamType) {
        guard layer != target else { return }
        target = layer
        keyframeRequested = false
    }

    /// Decides on `packet` of `layer`, where `highSSRC` is the SSRC the subscriber sees.
    /// Returns the decision and whether it switched layers (or began with one: the first
    /// packet forwarded to a subscriber that had nothing before).
    mutating func forward(_ packet: RTPPacket, layer: VideoStreamType, highSSRC: UInt32) -> (Decision, switched: Bool) {
        var switched = false
        if layer != current {
            guard layer == target, Self.startsKeyframe(packet) else { return (.drop, false) }
            beginLayer(layer, packet)
            switched = true
        }
        let out = mapped(packet, offsets, highSSRC: highSSRC)
        if case .rewritten(let rewritten) = out { note(rewritten) } else { note(packet) }
        return (out, switched)
    }

    /// A retransmission of `packet` of `layer` for this subscriber: rewritten as its first
    /// sending was. Packets of the layer forwarded before the last switch are resent when they
    /// went out before it (the frames before the new layer's keyframe are still wanted);
    /// others of a layer not forwarded are dropped.
    mutating func retransmission(_ packet: RTPPacket, layer: VideoStreamType, highSSRC: UInt32) -> Decision {
        var mapping = offsets
        if layer != current {
            guard let previous, layer == previous.layer,
                Self.isShortlyBefore(packet.header.sequenceNumber &+ previous.offsets.sequence, switchedAt)
            else { return .drop }
            mapping = previous.offsets
        }
        return mapped(packet, mapping, highSSRC: highSSRC)
    }

    /// `packet` under `offsets` and the SSRC the subscriber sees: as it is when that changes
    /// nothing, rewritten otherwise.
    private mutating func mapped(_ packet: RTPPacket, _ offsets: Offsets, highSSRC: UInt32) -> Decision {
        offsets == Offsets() && packet.header.ssrc == highSSRC
            ? .forward : .rewritten(rewrite(packet, offsets, ssrc: highSSRC))
    }

    /// The layer and original sequence number of the forwarded packet the subscriber knows as
    /// `sequence` (for its NACKs).
    func original(of sequence: UInt16) -> (VideoStreamType, UInt16) {
        if let previous, Self.isShortlyBefore(sequence, switchedAt) {
            return (previous.layer, sequence &- previous.offsets.sequence)
        }
        return (current ?? target, sequence &- offsets.sequence)
    }

    /// Starts forwarding `layer` at `packet` (its keyframe's first packet): the offsets that
    /// make its numbers follow the last ones forwarded.
    private mutating func beginLayer(_ layer: VideoStreamType, _ packet: RTPPacket) {
        previous = current.map { ($0, offsets) }
        current = layer
        keyframeRequested = false
        if let lastSequence {
            // One number skipped after a frame forwarded short: the subscriber sees it missing.
            let next = lastSequence &+ (lastEndedFrame ? 1 : 2)
            offsets.sequence = next &- packet.header.sequenceNumber
        }
        switchedAt = packet.header.sequenceNumber &+ offsets.sequence
        let fields = Self.layerFields(packet)
        if let lastPictureId, let id = fields.pictureId {
            offsets.pictureId = ((lastPictureId &+ 1) &- id) & 0x7FFF
        }
        if let lastLayerZeroIndex, let index = fields.layerZeroIndex {
            offsets.layerZeroIndex = (lastLayerZeroIndex &+ 1) &- index
        }
    }

    /// Remembers what the subscriber last got.
    private mutating func note(_ packet: RTPPacket) {
        // A number at or shortly before the last is a retransmission or a late copy; one far
        // from it (a seed from long ago) is taken as the new last.
        if let last = lastSequence, Self.isShortlyBefore(packet.header.sequenceNumber, last &+ 1) { return }
        lastSequence = packet.header.sequenceNumber
        lastEndedFrame = packet.header.marker
        let fields = Self.layerFields(packet)
        if let id = fields.pictureId { lastPictureId = id }
        if let index = fields.layerZeroIndex { lastLayerZeroIndex = index }
    }

    /// How far back a number still counts as before another: wider than any NACK or packet
    /// history reaches (512 packets), far narrower than half the number space, so a mapping
    /// from before a switch is not used again when the numbers come round.
    static let lookBackPackets: UInt16 = 4096

    /// Whether `sequence` comes before `reference` by at most ``lookBackPackets``.
    static func isShortlyBefore(_ sequence: UInt16, _ reference: UInt16) -> Bool {
        let behind = reference &- sequence
        return behind > 0 && behind <= lookBackPackets
    }

    /// `packet` with `ssrc` and `offsets` applied, in recycled storage.
    private mutating func rewrite(_ packet: RTPPacket, _ offsets: Offsets, ssrc: UInt32) -> RTPPacket {
        let (sequenceOffset, pictureIdOffset, indexOffset) = (
            offsets.sequence, offsets.pictureId, offsets.layerZeroIndex
        )
        var header = packet.header
        header.sequenceNumber = header.sequenceNumber &+ sequenceOffset
        header.ssrc = ssrc
        let places = Self.fieldPlaces(packet)
        let bytes = packet.bytes.withUnsafeBytes { source in
            recycler.bytes(copying: source) { out in
                out.storeBytes(of: header.sequenceNumber.bigEndian, toByteOffset: 2, as: UInt16.self)
                out.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
                if let at = places.pictureId {
                    if places.pictureIdIs15Bit {
                        let id = ((UInt16(out[at] & 0x7F) << 8 | UInt16(out[at + 1])) &+ pictureIdOffset) & 0x7FFF
                        out[at] = 0x80 | UInt8(id >> 8)
                        out[at + 1] = UInt8(id & 0xFF)
                    } else {
                        out[at] = UInt8(truncatingIfNeeded: (UInt16(out[at]) &+ pictureIdOffset) & 0x7F)
                    }
                }
                if let at = places.layerZeroIndex { out[at] = out[at] &+ indexOffset }
            }
        }
        return RTPPacket(trusted: bytes, header: header)
    }

    // MARK: - Reading the payload descriptor

    /// Where `packet`'s PictureID and TL0PICIDX lie in its bytes (its codec's
    /// ``VideoPayloadFormat/numberingPlaces(_:)``, moved to the packet's payload).
    private static func fieldPlaces(_ packet: RTPPacket) -> VideoNumberingPlaces {
        guard let format = RTPPayloadType.codec(packet.header.payloadType)?.videoPayloadFormat else {
            return VideoNumberingPlaces()
        }
        var places = packet.withUnsafePayload { format.numberingPlaces($0) }
        let start = packet.payloadRange.lowerBound
        places.pictureId = places.pictureId.map { $0 + start }
        places.layerZeroIndex = places.layerZeroIndex.map { $0 + start }
        return places
    }

    /// The PictureID and TL0PICIDX of `packet`, where it has them.
    private static func layerFields(_ packet: RTPPacket) -> (pictureId: UInt16?, layerZeroIndex: UInt8?) {
        let places = fieldPlaces(packet)
        let bytes = packet.bytes
        var id: UInt16?
        if let at = places.pictureId {
            id = places.pictureIdIs15Bit ? (UInt16(bytes[at] & 0x7F) << 8 | UInt16(bytes[at + 1])) : UInt16(bytes[at])
        }
        return (id, places.layerZeroIndex.map { bytes[$0] })
    }

    /// Whether `packet` is the first packet of a keyframe, as its codec's payload format tells
    /// it (``VideoPayloadFormat/describe(_:)``: the frame assembler's reading).
    static func startsKeyframe(_ packet: RTPPacket) -> Bool {
        guard let format = RTPPayloadType.codec(packet.header.payloadType)?.videoPayloadFormat else { return false }
        return packet.withUnsafePayload { format.describe($0)?.startsKeyframe ?? false }
    }
}

extension VideoLayerForwarder {
    /// The subscriber's compound RTCP `bytes` to the publisher, with what it says about the
    /// stream it sees (`highSSRC`, rewritten numbers) said about the layers forwarded: each NACK's
    /// numbers go back to the layer and the numbers they were forwarded from, and picture loss
    /// and intra requests name the layer forwarded now. The other messages pass as they came;
    /// a datagram that cannot be read passes whole.
    func translateFeedback(_ bytes: [UInt8], highSSRC: UInt32, lowSSRC: UInt32) -> [UInt8] {
        func uint32(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        func ssrc(of layer: VideoStreamType) -> UInt32 { layer == .high ? highSSRC : lowSSRC }
        // Most datagrams are reports alone: they pass as they came, with no copy.
        guard Self.holdsRequests(bytes) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        var lost: [(VideoStreamType, UInt16)] = []
        var nackSender: UInt32 = 0
        var offset = 0
        while offset + 4 <= bytes.count {
            let first = bytes[offset]
            let type = bytes[offset + 1]
            let end = offset + ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1) * 4
            guard first >> 6 == 2, end <= bytes.count else { return bytes }
            let format = first & 0x1F
            let aboutHigh = end - offset >= 12 && uint32(offset + 8) == highSSRC
            if type == RTCPPacket.PacketType.transportFeedback && format == 1 && aboutHigh {
                nackSender = uint32(offset + 4)
                for entry in stride(from: offset + 12, to: end - 3, by: 4) {
                    let packetId = UInt16(bytes[entry]) << 8 | UInt16(bytes[entry + 1])
                    let bitmask = UInt16(bytes[entry + 2]) << 8 | UInt16(bytes[entry + 3])
                    lost.append(original(of: packetId))
                    for bit in 0..<16 where bitmask & (1 << bit) != 0 {
                        lost.append(original(of: packetId &+ UInt16(bit + 1)))
                    }
                }
            } else if type == RTCPPacket.PacketType.payloadFeedback && format == 1 && aboutHigh {
                let start = out.count
                out.append(contentsOf: bytes[offset..<end])
                let media = ssrc(of: current ?? target)
                for k in 0..<4 { out[start + 8 + k] = UInt8(truncatingIfNeeded: media >> (24 - 8 * k)) }
            } else if type == RTCPPacket.PacketType.payloadFeedback && format == 4 {
                let start = out.count
                out.append(contentsOf: bytes[offset..<end])
                let media = ssrc(of: current ?? target)
                for entry in stride(from: start + 12, to: out.count - 7, by: 8)
                where uint32(offset + entry - start) == highSSRC {
                    for k in 0..<4 { out[entry + k] = UInt8(truncatingIfNeeded: media >> (24 - 8 * k)) }
                }
            } else {
                out.append(contentsOf: bytes[offset..<end])
            }
            offset = end
        }
        guard offset == bytes.count else { return bytes }
        for layer in VideoStreamType.allCases {
            let numbers = lost.filter { $0.0 == layer }.map(\.1)
            guard !numbers.isEmpty else { continue }
            out += RTCPCompound.serialize([
                .nack(senderSSRC: nackSender, mediaSSRC: ssrc(of: layer), lostSequenceNumbers: numbers)
            ])
        }
        return out
    }

    /// Whether the compound RTCP `bytes` holds a NACK, a picture loss indication or a full
    /// intra request (what ``translateFeedback(_:highSSRC:lowSSRC:)`` rewrites).
    private static func holdsRequests(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset + 4 <= bytes.count {
            let (format, type) = (bytes[offset] & 0x1F, bytes[offset + 1])
            if (type == RTCPPacket.PacketType.transportFeedback && format == 1)
                || (type == RTCPPacket.PacketType.payloadFeedback && (format == 1 || format == 4))
            {
                return true
            }
            offset += ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1) * 4
        }
        return false
    }
}
