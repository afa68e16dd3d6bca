/// This side's ICE and DTLS attributes for a WebRTC description: its ICE credentials, the
/// fingerprint of its DTLS certificate and its candidates. This side is always the DTLS client,
/// so what it writes says `a=setup:active`.
public struct WebRTCLocalTransport: Sendable, Equatable {
    /// The ICE username fragment.
    public var iceUfrag: String
    /// The ICE password.
    public var icePassword: String
    /// The fingerprint of the DTLS certificate ("sha-256").
    public var fingerprint: SessionDescription.Fingerprint
    /// The candidates, as `a=candidate` values ("1 1 udp 2122260223 127.0.0.1 40000 typ host").
    /// They are all listed, followed by `a=end-of-candidates`.
    public var candidates: [String]

    /// This side's transport attributes.
    public init(
        iceUfrag: String, icePassword: String, fingerprint: SessionDescription.Fingerprint, candidates: [String]
    ) {
        self.iceUfrag = iceUfrag
        self.icePassword = icePassword
        self.fingerprint = fingerprint
        self.candidates = candidates
    }

    /// The attributes a section carries: the credentials, the fingerprint and `setup:active`,
    /// with the candidates when `withCandidates`.
    func attributes(withCandidates: Bool) -> SessionDescription.TransportAttributes {
        var attributes = SessionDescription.TransportAttributes()
        attributes.iceUfrag = iceUfrag
        attributes.icePassword = icePassword
        attributes.fingerprints = [fingerprint]
        attributes.setup = .active
        if withCandidates {
            attributes.candidates = candidates
            attributes.endOfCandidates = true
        }
        return attributes
    }

    /// The default destination for m= and c= (JSEP §5.2.1): the first RTP candidate's address and
    /// port, or 0.0.0.0 and 9 without one.
    var defaultDestination: (address: String, port: Int) {
        for candidate in candidates {
            let fields = candidate.split(separator: " ")
            if fields.count >= 6, fields[1] == "1", let port = Int(fields[5]) { return (String(fields[4]), port) }
        }
        return ("0.0.0.0", 9)
    }

    /// A section for this transport: port and address from the default destination.
    func section(kind: String, formats: [SessionDescription.Media.Format], withCandidates: Bool)
        -> SessionDescription.Media
    {
        let destination = defaultDestination
        var section = SessionDescription.Media(
            kind: kind, port: destination.port, transport: "UDP/TLS/RTP/SAVPF", formats: formats)
        section.connectionAddress = destination.address
        section.transportAttributes = attributes(withCandidates: withCandidates)
        section.rtcpMux = true
        section.rtcpReducedSize = true
        return section
    }
}

/// What this side publishes to a WebRTC peer (a Janus VideoRoom publisher): its audio and video
/// streams with their SSRCs, and its transport.
public struct WebRTCPublication: Sendable, Equatable {
    /// The audio stream: Opus (payload type 111), optionally with redundant audio (RFC 2198,
    /// payload type 63).
    public struct Audio: Sendable, Equatable {
        /// The SSRC of the audio packets.
        public var ssrc: UInt32
        /// Whether redundant audio ("red/48000/2", fmtp "111/111") is offered too.
        public var redundancy: Bool
        /// The track's ID in `msid`.
        public var trackID: String

        /// An audio stream.
        public init(ssrc: UInt32, redundancy: Bool = false, trackID: String = "audio") {
            self.ssrc = ssrc
            self.redundancy = redundancy
            self.trackID = trackID
        }
    }

    /// The video stream: VP8 (payload type 96) or VP9 profile 0 (98), with retransmissions
    /// (RFC 4588, payload type 97 or 99) on their own SSRC when one is given.
    public struct Video: Sendable, Equatable {
        /// ``MediaCodec/vp8`` or ``MediaCodec/vp9``.
        public var codec: MediaCodec
        /// The SSRC of the video packets.
        public var ssrc: UInt32
        /// The SSRC of the retransmissions, or nil to offer none.
        public var retransmissionSSRC: UInt32?
        /// The track's ID in `msid`.
        public var trackID: String
        /// The simulcast encodings' RTP stream IDs (RFC 8851 `a=rid`), the highest quality first
        /// (the order Janus reads as highest to lowest); empty for one encoding. With two or more,
        /// the section offers `a=rid:ID send` for each, `a=simulcast:send` and the mid,
        /// rtp-stream-id and repaired-rtp-stream-id header extensions
        /// (``WebRTCPublication/extensionIDs``), which every packet then carries: a receiver tells
        /// the encodings apart by them, not by SSRC. `ssrc` stays declared for a receiver that
        /// takes no simulcast.
        public var simulcastStreamIDs: [String]

        /// A video stream.
        public init(
            codec: MediaCodec, ssrc: UInt32, retransmissionSSRC: UInt32? = nil, trackID: String = "video",
            simulcastStreamIDs: [String] = []
        ) {
            self.codec = codec
            self.ssrc = ssrc
            self.retransmissionSSRC = retransmissionSSRC
            self.trackID = trackID
            self.simulcastStreamIDs = simulcastStreamIDs
        }
    }

    /// The header extension IDs a simulcast video section offers: mid, rtp-stream-id and
    /// repaired-rtp-stream-id, in the one-byte form's range.
    public static let extensionIDs = (mid: 1, streamID: 2, repairedStreamID: 3)

    /// The audio stream, if any.
    public var audio: Audio?
    /// The video stream, if any.
    public var video: Video?
    /// The RTCP CNAME of both streams.
    public var cname: String
    /// The media stream's ID in `msid`.
    public var streamID: String
    /// This side's ICE and DTLS attributes.
    public var transport: WebRTCLocalTransport
    /// The o= line's session ID.
    public var sessionID: UInt64

    /// A publication.
    public init(
        audio: Audio?, video: Video?, cname: String = "mediapipeline", streamID: String = "mediapipeline",
        transport: WebRTCLocalTransport, sessionID: UInt64 = .random(in: 1..<(1 << 62))
    ) {
        self.audio = audio
        self.video = video
        self.cname = cname
        self.streamID = streamID
        self.transport = transport
        self.sessionID = sessionID
    }
}

extension SessionDescription {
    /// The feedback this side takes for video: NACK, PLI, FIR and REMB (what Janus sends).
    static let videoFeedback = ["goog-remb", "ccm fir", "nack", "nack pli"]

    /// This side's offer as a WebRTC publisher (to Janus): one BUNDLE of an audio section (mid
    /// "0") and a video section (mid "1", or "0" without audio), both `sendonly`, each with its
    /// `a=ssrc` lines (cname and msid, for the media SSRC and the retransmission SSRC) and, for
    /// video with retransmissions, `a=ssrc-group:FID MEDIA RTX`; ICE credentials, fingerprint,
    /// `setup:active`, rtcp-mux, rtcp-rsize; the candidates and end-of-candidates in the first
    /// section.
    /// - Throws: ``MediaError/Code/invalidArgument`` without audio and video, for a video codec
    ///   that is not VP8 or VP9, or when two SSRCs are the same.
    public static func webRTCOffer(publishing publication: WebRTCPublication) throws -> SessionDescription {
        let ssrcs = [publication.audio?.ssrc, publication.video?.ssrc, publication.video?.retransmissionSSRC]
            .compactMap { $0 }
        guard !ssrcs.isEmpty else { throw MediaError.invalidArgument("a WebRTC offer needs audio or video") }
        guard Set(ssrcs).count == ssrcs.count else {
            throw MediaError.invalidArgument("the SSRCs of a WebRTC offer must differ: \(ssrcs)")
        }
        var description = SessionDescription(name: "-", connectionAddress: nil, media: [])
        description.sessionID = String(publication.sessionID)
        description.sessionVersion = "2"
        description.msidSemantic = "WMS \(publication.streamID)"
        func source(_ ssrc: UInt32, _ trackID: String) -> Media.Source {
            Media.Source(ssrc: ssrc, cname: publication.cname, msid: "\(publication.streamID) \(trackID)")
        }
        if let audio = publication.audio {
            var opus = Media.Format(payloadType: Int(RTPPayloadType.opus), codec: .opus)
            opus.parameters = "minptime=10;useinbandfec=1"
            var formats = [opus]
            if audio.redundancy {
                var red = Media.Format(
                    payloadType: Int(RTPPayloadType.red), encoding: "red", clockRate: 48_000, channels: 2)
                red.parameters = "\(RTPPayloadType.opus)/\(RTPPayloadType.opus)"
                formats.append(red)
            }
            var section = publication.transport.section(kind: "audio", formats: formats, withCandidates: true)
            section.mid = "0"
            section.direction = .sendonly
            section.msid = "\(publication.streamID) \(audio.trackID)"
            section.sources = [source(audio.ssrc, audio.trackID)]
            description.media.append(section)
        }
        if let video = publication.video {
            guard video.codec.kind == .video else {
                throw MediaError.invalidArgument("a WebRTC video section carries VP8 or VP9, not \(video.codec)")
            }
            let payloadType = Int(RTPPayloadType.of(video.codec))
            var media = Media.Format(payloadType: payloadType, codec: video.codec)
            if video.codec == .vp9 { media.parameters = "profile-id=0" }
            media.feedback = videoFeedback
            var formats = [media]
            var section = publication.transport.section(
                kind: "video", formats: [], withCandidates: description.media.isEmpty)
            section.mid = String(description.media.count)
            section.direction = .sendonly
            section.msid = "\(publication.streamID) \(video.trackID)"
            section.sources = [source(video.ssrc, video.trackID)]
            if let rtxSSRC = video.retransmissionSSRC {
                var rtx = Media.Format(payloadType: payloadType + 1, encoding: "rtx", clockRate: 90_000)
                rtx.parameters = "apt=\(payloadType)"
                formats.append(rtx)
                section.sourceGroups = [Media.SourceGroup(semantics: "FID", ssrcs: [video.ssrc, rtxSSRC])]
                section.sources.append(source(rtxSSRC, video.trackID))
            }
            if !video.simulcastStreamIDs.isEmpty {
                try offerSimulcast(video.simulcastStreamIDs, in: &section)
            }
            section.formats = formats
            description.media.append(section)
        }
        description.groups = [Group(semantics: "BUNDLE", mids: description.media.compactMap(\.mid))]
        return description
    }

    /// Adds to the video `section` the simulcast of the encodings `streamIDs` (highest first):
    /// the header extensions that name a packet's section and encoding, an `a=rid` per encoding
    /// and `a=simulcast:send`.
    private static func offerSimulcast(_ streamIDs: [String], in section: inout Media) throws {
        guard streamIDs.count >= 2, Set(streamIDs).count == streamIDs.count else {
            throw MediaError.invalidArgument("simulcast needs two or more distinct RTP stream IDs, not \(streamIDs)")
        }
        for id in streamIDs {
            // RFC 8852 restricts an RtpStreamId to letters and digits (RFC 8851 allows - and _
            // too); the one-byte extension carries up to 16 bytes.
            guard (1...16).contains(id.utf8.count), id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else {
                throw MediaError.invalidArgument("RTP stream ID '\(id)' is not 1 to 16 letters or digits")
            }
        }
        let ids = WebRTCPublication.extensionIDs
        section.headerExtensions = [
            Media.HeaderExtension(id: ids.mid, uri: RTPHeaderExtensionURI.mid),
            Media.HeaderExtension(id: ids.streamID, uri: RTPHeaderExtensionURI.streamID),
            Media.HeaderExtension(id: ids.repairedStreamID, uri: RTPHeaderExtensionURI.repairedStreamID),
        ]
        section.attributes += streamIDs.map { "rid:\($0) send" }
        section.attributes.append("simulcast:send " + streamIDs.joined(separator: ";"))
    }

    /// This side's answer to a WebRTC offer (Janus's subscriber offer, or a browser's): for each
    /// offered section, what this side can receive — Opus, redundant audio over an accepted
    /// Opus, VP8, VP9 profile 0, and retransmissions of an accepted codec, with the feedback
    /// this side takes (nack, nack pli, ccm fir, goog-remb) — answered `recvonly` (or
    /// `inactive` when the offer does not send), with `setup:active`, rtcp-mux, the offer's mid,
    /// and the candidates in the first accepted section.
    ///
    /// What this side cannot do is declined (port 0, mid kept), never an error: data channels,
    /// sections with no codec in common, sections without rtcp-mux or outside the offer's
    /// BUNDLE group (without one, every section after the first accepted one), and sections the
    /// offer declined. Header extensions are not answered (none is used). The BUNDLE group
    /// lists the accepted mids.
    public static func webRTCAnswer(
        to offer: SessionDescription, transport: WebRTCLocalTransport,
        sessionID: UInt64 = .random(in: 1..<(1 << 62))
    ) -> SessionDescription {
        var answer = SessionDescription(name: "-", connectionAddress: nil, media: [])
        answer.sessionID = String(sessionID)
        answer.sessionVersion = "2"
        let offeredBundle = offer.bundle
        var accepted: [String] = []
        var acceptedAny = false
        for offered in offer.media {
            let formats = WebRTCCodecs.receivable(in: offered)
            let bundled =
                offeredBundle.map { bundle in offered.mid.map { bundle.contains($0) } ?? false } ?? !acceptedAny
            if offered.port != 0, offered.transport.uppercased() == "UDP/TLS/RTP/SAVPF", offered.rtcpMux, bundled,
                formats.contains(where: { $0.retransmittedPayloadType == nil && !$0.isRedundantAudio })
            {
                var section = transport.section(kind: offered.kind, formats: formats, withCandidates: !acceptedAny)
                section.rtcpReducedSize = offered.rtcpReducedSize
                section.mid = offered.mid
                let sends = offer.direction(of: offered).sends
                section.direction = sends ? .recvonly : .inactive
                answer.media.append(section)
                acceptedAny = true
                if let mid = offered.mid { accepted.append(mid) }
            } else {
                var section = Media(
                    kind: offered.kind, port: 0, transport: offered.transport,
                    formats: offered.formats.prefix(1).map {
                        Media.Format(
                            payloadType: $0.payloadType, encoding: $0.encoding, clockRate: $0.clockRate,
                            channels: $0.channels)
                    })
                section.otherFormats = offered.otherFormats
                section.connectionAddress = "0.0.0.0"
                section.mid = offered.mid
                answer.media.append(section)
            }
        }
        if offeredBundle != nil && !accepted.isEmpty { answer.groups = [Group(semantics: "BUNDLE", mids: accepted)] }
        return answer
    }
}

/// What this side can receive, and the mapping of a format to what it carries.
enum WebRTCCodecs {
    /// What a format carries, when this side handles it.
    static func content(of format: SessionDescription.Media.Format, in section: SessionDescription.Media)
        -> WebRTCNegotiation.PayloadType.Content?
    {
        if let found = codec(of: format, in: section) { return .media(found) }
        if section.kind == "audio", format.isRedundantAudio {
            let blocks = format.redundantPayloadTypes
            guard let primary = blocks.first, blocks.allSatisfy({ $0 == primary }),
                let blockFormat = section.format(primary), codec(of: blockFormat, in: section) == .opus
            else { return nil }
            return .redundantAudio(primary: primary)
        }
        if let original = format.retransmittedPayloadType, let resent = section.format(original),
            codec(of: resent, in: section) != nil, format.clockRate == resent.clockRate
        {
            return .retransmission(of: original)
        }
        return nil
    }

    /// The codec of a format, when this side handles it in a section of that kind: Opus at
    /// 48 kHz, VP8 and VP9 profile 0 at 90 kHz.
    static func codec(of format: SessionDescription.Media.Format, in section: SessionDescription.Media) -> MediaCodec? {
        guard let codec = format.codec, codec.kind.rawValue == section.kind, format.clockRate == codec.rtpClockRate
        else { return nil }
        // VP9 profile 0 alone (8-bit 4:2:0), the profile the pipeline decodes and renders.
        if codec == .vp9 && (format.parameter("profile-id") ?? "0") != "0" { return nil }
        return codec
    }

    /// The offered formats this side receives, in the offer's order, with the fmtp this side
    /// wants and the offered feedback it takes.
    static func receivable(in section: SessionDescription.Media) -> [SessionDescription.Media.Format] {
        section.formats.compactMap { offered in
            guard let content = content(of: offered, in: section) else { return nil }
            var format = SessionDescription.Media.Format(
                payloadType: offered.payloadType, encoding: offered.encoding, clockRate: offered.clockRate,
                channels: offered.channels)
            switch content {
            case .media(.opus): format.parameters = "minptime=10;useinbandfec=1"
            case .media(.vp9): format.parameters = offered.parameters.map { _ in "profile-id=0" }
            case .media: break
            case .redundantAudio, .retransmission: format.parameters = offered.parameters
            }
            if case .media(let codec) = content, codec.kind == .video {
                format.feedback = offered.feedback.filter { SessionDescription.videoFeedback.contains($0) }
            }
            return format
        }
    }
}
