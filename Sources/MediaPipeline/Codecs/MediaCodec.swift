/// The codecs MediaPipeline encodes and decodes, and what each is called in the formats that
/// carry it (SDP's rtpmap, Matroska's CodecID, IVF's fourcc): one table, so that a codec is a
/// row here rather than a case in every container and session description.
public enum MediaCodec: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Opus audio (RFC 6716).
    case opus
    /// VP8 video (RFC 6386).
    case vp8
    /// VP9 video.
    case vp9

    /// What the formats call one codec.
    private struct Names {
        let kind: MediaKind
        let display: String
        /// rtpmap's encoding name, clock rate and channels (RFC 7587 for Opus: always
        /// "opus/48000/2"; RFC 7741 for VP8; RFC 9628 for VP9).
        let rtpEncoding: String
        let rtpClockRate: Int
        let rtpChannels: Int
        let matroskaCodecID: String
        let ivfFourCC: String?
    }

    private var names: Names {
        switch self {
        case .opus:
            Names(
                kind: .audio, display: "Opus", rtpEncoding: "opus", rtpClockRate: 48_000, rtpChannels: 2,
                matroskaCodecID: "A_OPUS", ivfFourCC: nil)
        case .vp8:
            Names(
                kind: .video, display: "VP8", rtpEncoding: "VP8", rtpClockRate: 90_000, rtpChannels: 1,
                matroskaCodecID: "V_VP8", ivfFourCC: "VP80")
        case .vp9:
            Names(
                kind: .video, display: "VP9", rtpEncoding: "VP9", rtpClockRate: 90_000, rtpChannels: 1,
                matroskaCodecID: "V_VP9", ivfFourCC: "VP90")
        }
    }

    /// Audio for Opus, video for VP8 and VP9.
    public var kind: MediaKind { names.kind }

    public var description: String { names.display }

    /// The encoding name an SDP rtpmap gives the codec ("opus", "VP8", "VP9").
    public var rtpEncodingName: String { names.rtpEncoding }

    /// The RTP clock rate of the codec's payload format in Hz: 48,000 for Opus (RFC 7587
    /// section 4.1), 90,000 for VP8 and VP9.
    public var rtpClockRate: Int { names.rtpClockRate }

    /// The channel count an SDP rtpmap gives the codec: 2 for Opus whatever it carries (RFC 7587
    /// section 7), 1 for video.
    public var rtpChannels: Int { names.rtpChannels }

    /// The Matroska (WebM) CodecID: "A_OPUS", "V_VP8", "V_VP9".
    public var matroskaCodecID: String { names.matroskaCodecID }

    /// The IVF fourcc: "VP80", "VP90"; nil for Opus, which IVF does not carry.
    public var ivfFourCC: String? { names.ivfFourCC }

    /// The codec an rtpmap encoding name names (without regard to case, as RFC 4566 reads
    /// them), or nil for a codec MediaPipeline does not handle.
    public init?(rtpEncodingName name: String) {
        let lowercased = name.lowercased()
        guard let codec = Self.allCases.first(where: { $0.rtpEncodingName.lowercased() == lowercased }) else {
            return nil
        }
        self = codec
    }

    /// The codec a Matroska CodecID names, or nil for a codec MediaPipeline does not handle.
    public init?(matroskaCodecID id: String) {
        guard let codec = Self.allCases.first(where: { $0.matroskaCodecID == id }) else { return nil }
        self = codec
    }

    /// The codec an IVF fourcc names, or nil for one MediaPipeline does not handle.
    public init?(ivfFourCC fourcc: String) {
        guard let codec = Self.allCases.first(where: { $0.ivfFourCC == fourcc }) else { return nil }
        self = codec
    }
}

extension SessionDescription.Media.Format {
    /// The format of `codec` under `payloadType`, with the codec's rtpmap (encoding name, clock
    /// rate, channels) and no fmtp or feedback.
    public init(payloadType: Int, codec: MediaCodec) {
        self.init(
            payloadType: payloadType, encoding: codec.rtpEncodingName, clockRate: codec.rtpClockRate,
            channels: codec.rtpChannels)
    }
}
