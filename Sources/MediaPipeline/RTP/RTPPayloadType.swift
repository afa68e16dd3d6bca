/// The RTP payload types engines use with each other (the dynamic numbers browsers offer first:
/// VP8 96, VP9 98, Opus 111). A network session maps a peer's numbers through its SDP.
public enum RTPPayloadType {
    /// Opus, 48 kHz clock, 2 channels (RFC 7587).
    public static let opus: UInt8 = 111
    /// VP8, 90 kHz clock (RFC 7741).
    public static let vp8: UInt8 = 96
    /// VP9, 90 kHz clock (RFC 9628).
    public static let vp9: UInt8 = 98
    /// Redundant audio (RFC 2198) whose blocks are Opus, 48 kHz clock: "red/48000/2" with
    /// fmtp "111/111", the number browsers use.
    public static let red: UInt8 = 63

    /// The payload type of `codec`.
    public static func of(_ codec: MediaCodec) -> UInt8 {
        switch codec {
        case .opus: opus
        case .vp8: vp8
        case .vp9: vp9
        }
    }

    /// The codec carried under `payloadType`, if it is one of these (Opus for ``red``, whose
    /// blocks are Opus frames).
    public static func codec(_ payloadType: UInt8) -> MediaCodec? {
        switch payloadType {
        case opus, red: .opus
        case vp8: .vp8
        case vp9: .vp9
        default: nil
        }
    }
}
