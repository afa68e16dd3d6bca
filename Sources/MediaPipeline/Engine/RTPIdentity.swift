/// The RTP identity of one engine: the SSRCs of its audio and video streams and of its
/// feedback, and the random starting points of its sequence numbers, timestamps and PictureIDs
/// (RFC 3550 5.1). Drawn from ``EngineConfiguration/randomSeed`` when one is set, so a seeded
/// session sends the same packets every time.
struct RTPIdentity: Sendable {
    let audioSSRC: UInt32
    let videoSSRC: UInt32
    /// The SSRC this engine's receiver reports and feedback come from.
    let feedbackSSRC: UInt32
    /// The SSRC of the low video layer (dual stream mode), and its sequence number and
    /// PictureID starts (drawn last, so a seeded session's other streams stay as they were).
    let lowVideoSSRC: UInt32
    private let starts: [UInt64]
    private let lowStart: UInt64

    init(seed: UInt64?) {
        var generator = SplitMix64(seed: seed ?? UInt64.random(in: 0...UInt64.max))
        var ssrcs: Set<UInt32> = [0]
        func distinct() -> UInt32 {
            var value: UInt32
            repeat { value = UInt32(truncatingIfNeeded: generator.next()) } while ssrcs.contains(value)
            ssrcs.insert(value)
            return value
        }
        audioSSRC = distinct()
        videoSSRC = distinct()
        feedbackSSRC = distinct()
        starts = (0..<3).map { _ in generator.next() }
        lowVideoSSRC = distinct()
        lowStart = generator.next()
    }

    /// The SSRC of the local stream of `kind`.
    func ssrc(_ kind: MediaKind) -> UInt32 { kind == .audio ? audioSSRC : videoSSRC }

    /// A packetizer for the local stream of `codec`.
    func packetizer(for codec: MediaCodec) throws -> RTPPacketizer {
        try RTPPacketizer(
            codec: codec, ssrc: ssrc(codec.kind), payloadType: RTPPayloadType.of(codec),
            firstSequenceNumber: UInt16(truncatingIfNeeded: starts[0] >> (codec.kind == .audio ? 0 : 16)),
            timestampOffset: UInt32(truncatingIfNeeded: starts[1] >> (codec.kind == .audio ? 0 : 32)),
            firstPictureId: UInt16(truncatingIfNeeded: starts[2]) & 0x7FFF)
    }

    /// A packetizer for the low video layer of `codec`: its own SSRC, sequence numbers and
    /// PictureIDs, on the high layer's RTP time base (one timestamp offset for both).
    func lowVideoPacketizer(for codec: MediaCodec) throws -> RTPPacketizer {
        try RTPPacketizer(
            codec: codec, ssrc: lowVideoSSRC, payloadType: RTPPayloadType.of(codec),
            firstSequenceNumber: UInt16(truncatingIfNeeded: lowStart),
            timestampOffset: UInt32(truncatingIfNeeded: starts[1] >> 32),
            firstPictureId: UInt16(truncatingIfNeeded: lowStart >> 16) & 0x7FFF)
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64), for reproducible
/// sessions and link impairments.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
