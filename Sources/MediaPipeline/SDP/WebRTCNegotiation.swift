/// What an offer and its answer agreed, for the WebRTC transport: per accepted section its kind,
/// directions, the remote's payload types and what each carries, the remote's SSRCs and the
/// feedback both take; and the remote's ICE credentials, candidates, DTLS fingerprint and setup
/// role (of the first accepted section of the BUNDLE group, where this side and the remote share
/// one transport).
///
/// The remote may number payload types otherwise than the engine (``RTPPayloadType``):
/// ``PayloadType/number`` is the remote's, ``PayloadType/enginePayloadType`` the engine's.
public struct WebRTCNegotiation: Sendable, Equatable {
    /// RTCP feedback both sides take for a format (rtcp-fb).
    public struct Feedback: OptionSet, Sendable, Hashable {
        /// The set's bits.
        public let rawValue: UInt8
        /// Creates the set from its raw bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Generic NACK (`nack`, RFC 4585).
        public static let nack = Feedback(rawValue: 1)
        /// Picture loss indication (`nack pli`).
        public static let pli = Feedback(rawValue: 2)
        /// Full intra request (`ccm fir`, RFC 5104).
        public static let fir = Feedback(rawValue: 4)
        /// Receiver estimated maximum bitrate (`goog-remb`).
        public static let remb = Feedback(rawValue: 8)

        /// The feedback one rtcp-fb value names, if it is one of these.
        init?(attribute: String) {
            switch attribute.lowercased() {
            case "nack": self = .nack
            case "nack pli": self = .pli
            case "ccm fir": self = .fir
            case "goog-remb": self = .remb
            default: return nil
            }
        }

        /// The feedback a list of rtcp-fb values names.
        init(attributes: [String]) {
            self = []
            for value in attributes { if let one = Feedback(attribute: value) { insert(one) } }
        }
    }

    /// One of the remote's payload types and what it carries.
    public struct PayloadType: Sendable, Equatable {
        /// What a payload type carries.
        public enum Content: Sendable, Equatable {
            /// A codec's packets.
            case media(MediaCodec)
            /// Redundant audio (RFC 2198) whose blocks are the payload type `primary` (Opus).
            case redundantAudio(primary: Int)
            /// Retransmissions (RFC 4588) of the payload type `of`.
            case retransmission(of: Int)
        }

        /// The remote's number.
        public var number: Int
        /// What it carries.
        public var content: Content
        /// The RTP clock rate in Hz.
        public var clockRate: Int
        /// The feedback both sides take for it.
        public var feedback: Feedback

        /// Whether it carries a codec's packets (not redundancy or retransmissions).
        public var isMedia: Bool {
            if case .media = content { true } else { false }
        }

        /// The number the engine uses for the same content (``RTPPayloadType``): the codec's, or
        /// ``RTPPayloadType/red``; nil for retransmissions, which the transport maps with their
        /// `apt`.
        public var enginePayloadType: UInt8? {
            switch content {
            case .media(let codec): RTPPayloadType.of(codec)
            case .redundantAudio: RTPPayloadType.red
            case .retransmission: nil
            }
        }
    }

    /// One SSRC the remote sends, with its retransmission SSRC (`a=ssrc-group:FID`).
    public struct RemoteSource: Sendable, Equatable {
        /// The media SSRC.
        public var ssrc: UInt32
        /// The SSRC its retransmissions come on, if the remote named one.
        public var retransmissionSSRC: UInt32?
        /// Its cname, if given.
        public var cname: String?
        /// Its msid ("STREAM TRACK"), from `a=ssrc:N msid:` or else the section's `a=msid`.
        public var msid: String?
    }

    /// One section both sides accepted.
    public struct Stream: Sendable, Equatable {
        /// The section's position in the descriptions.
        public var index: Int
        /// The section's mid, if it has one.
        public var mid: String?
        /// Audio or video.
        public var kind: MediaKind
        /// Whether this side sends on it.
        public var sends: Bool
        /// Whether this side receives on it.
        public var receives: Bool
        /// The remote's payload types that both sides have, in the remote's order.
        public var payloadTypes: [PayloadType]
        /// The SSRCs the remote declared.
        public var remoteSources: [RemoteSource]
        /// The feedback both sides take for any of the stream's codecs.
        public var feedback: Feedback
        /// The header extensions (`a=extmap`) both sides list, with the remote's IDs.
        public var headerExtensions: [SessionDescription.Media.HeaderExtension] = []
        /// The simulcast encodings this side sends, highest first: the local `a=rid:ID send` the
        /// remote answered `a=rid:ID recv`, when both list `a=simulcast` and the rtp-stream-id
        /// header extension; empty otherwise (one encoding).
        public var sentSimulcastStreamIDs: [String] = []

        /// The remote's ID of the header extension `uri`, if both sides list it.
        public func headerExtensionID(_ uri: String) -> Int? { headerExtensions.first { $0.uri == uri }?.id }

        /// The remote's payload type `number`, if negotiated.
        public func payloadType(_ number: Int) -> PayloadType? { payloadTypes.first { $0.number == number } }
    }

    /// The accepted sections, in the descriptions' order.
    public var streams: [Stream]
    /// The remote's ICE username fragment.
    public var remoteICEUfrag: String
    /// The remote's ICE password.
    public var remoteICEPassword: String
    /// The remote's candidates (`a=candidate` values), without repeats.
    public var remoteCandidates: [String]
    /// Whether the remote said its candidate list is complete (`a=end-of-candidates`).
    public var remoteEndOfCandidates: Bool
    /// The fingerprint the remote's DTLS certificate must have.
    public var remoteFingerprint: SessionDescription.Fingerprint
    /// The remote's setup role, if it stated one (`actpass` or `passive`: this side is the DTLS
    /// client).
    public var remoteSetup: SessionDescription.SetupRole?

    /// The RTP stream IDs `local` offers to send (`a=rid:ID send`, in its order) that `remote`
    /// takes (`a=rid:ID recv`), when both sides list simulcast and the rtp-stream-id extension.
    static func simulcastStreamIDs(
        sentBy local: SessionDescription.Media, receivedBy remote: SessionDescription.Media
    ) -> [String] {
        func ids(_ section: SessionDescription.Media, _ direction: String) -> [String] {
            section.attributes.compactMap { attribute in
                let fields = attribute.split(separator: " ")
                guard fields.count >= 2, fields[0].hasPrefix("rid:"), fields[1] == direction else { return nil }
                return String(fields[0].dropFirst("rid:".count))
            }
        }
        let bothListSimulcast =
            local.attributes.contains { $0.hasPrefix("simulcast:send") }
            && remote.attributes.contains { $0.hasPrefix("simulcast:recv") }
        let bothListStreamID = [local, remote].allSatisfy { section in
            section.headerExtensions.contains { $0.uri == RTPHeaderExtensionURI.streamID }
        }
        guard bothListSimulcast, bothListStreamID else { return [] }
        let taken = Set(ids(remote, "recv"))
        return ids(local, "send").filter { taken.contains($0) }
    }

    /// What `local` and `remote` (an offer and its answer, either way round) agreed.
    /// - Throws: ``MediaError/Code/invalidFormat`` when the descriptions do not match (section
    ///   counts or mids differ) or the remote lacks ICE credentials or a fingerprint;
    ///   ``MediaError/Code/unsupported`` when no section is accepted by both or the remote wants
    ///   to be the DTLS client.
    public init(local: SessionDescription, remote: SessionDescription) throws {
        guard local.media.count == remote.media.count else {
            throw MediaError.invalidFormat(
                "SDP offer and answer have \(local.media.count) and \(remote.media.count) media sections")
        }
        var streams: [Stream] = []
        for (index, (ours, theirs)) in zip(local.media, remote.media).enumerated() {
            if let a = ours.mid, let b = theirs.mid, a != b {
                throw MediaError.invalidFormat("SDP media section \(index + 1) has mid '\(a)' here and '\(b)' remotely")
            }
            guard ours.port != 0, theirs.port != 0, ours.carriesRTP, ours.kind == theirs.kind,
                let kind = MediaKind(rawValue: ours.kind)
            else { continue }
            let localContents = ours.formats.compactMap { format in
                WebRTCCodecs.content(of: format, in: ours).map { (format, $0) }
            }
            // The local format of the same content: the same codec, redundancy, or retransmission
            // of the same codec (numbers may differ).
            func localMatch(_ content: PayloadType.Content) -> SessionDescription.Media.Format? {
                localContents.first { _, mine in
                    switch (mine, content) {
                    case (.media(let a), .media(let b)): a == b
                    case (.redundantAudio, .redundantAudio): true
                    case (.retransmission(let a), .retransmission(let b)):
                        ours.format(a)?.codec == theirs.format(b)?.codec
                    default: false
                    }
                }?.0
            }
            var payloadTypes: [PayloadType] = []
            for format in theirs.formats {
                guard let content = WebRTCCodecs.content(of: format, in: theirs), let mine = localMatch(content) else {
                    continue
                }
                payloadTypes.append(
                    PayloadType(
                        number: format.payloadType, content: content, clockRate: format.clockRate,
                        feedback: Feedback(attributes: format.feedback).intersection(
                            Feedback(attributes: mine.feedback))))
            }
            // Redundancy and retransmissions only over a media payload type that stayed.
            let mediaNumbers = Set(payloadTypes.filter(\.isMedia).map(\.number))
            payloadTypes.removeAll { type in
                switch type.content {
                case .media: false
                case .redundantAudio(let primary), .retransmission(let primary): !mediaNumbers.contains(primary)
                }
            }
            guard !mediaNumbers.isEmpty else { continue }
            let localDirection = local.direction(of: ours)
            let remoteDirection = remote.direction(of: theirs)
            var sources: [RemoteSource] = []
            let fid = theirs.sourceGroups.filter { $0.semantics == "FID" && $0.ssrcs.count >= 2 }
            let repairs = Set(fid.map { $0.ssrcs[1] })
            // Media SSRCs: those of a=ssrc lines that repair none, then FID groups' firsts not named yet.
            let named = theirs.sources.map(\.ssrc) + fid.map { $0.ssrcs[0] }
            for ssrc in named where !repairs.contains(ssrc) && !sources.contains(where: { $0.ssrc == ssrc }) {
                let source = theirs.sources.first { $0.ssrc == ssrc }
                sources.append(
                    RemoteSource(
                        ssrc: ssrc, retransmissionSSRC: fid.first { $0.ssrcs[0] == ssrc }?.ssrcs[1],
                        cname: source?.cname, msid: source?.msid ?? theirs.msid))
            }
            streams.append(
                Stream(
                    index: index, mid: theirs.mid, kind: kind,
                    sends: localDirection.sends && remoteDirection.receives,
                    receives: localDirection.receives && remoteDirection.sends, payloadTypes: payloadTypes,
                    remoteSources: sources,
                    feedback: payloadTypes.reduce(into: []) { set, type in set.formUnion(type.feedback) },
                    headerExtensions: theirs.headerExtensions.filter { remote in
                        ours.headerExtensions.contains { $0.uri == remote.uri }
                    },
                    sentSimulcastStreamIDs: Self.simulcastStreamIDs(sentBy: ours, receivedBy: theirs)))
        }
        guard let first = streams.first else {
            throw MediaError.unsupported("SDP offer and answer have no audio or video section in common")
        }
        // With BUNDLE, the accepted sections of the group share the first one's transport.
        let bundle = remote.bundle ?? []
        let bundled = streams.filter { stream in stream.mid.map { bundle.contains($0) } ?? false }
        let transportStream = bundled.first ?? first
        let attributes = remote.transportAttributes(of: remote.media[transportStream.index])
        var candidates: [String] = []
        var endOfCandidates = attributes.endOfCandidates
        for stream in bundled.isEmpty ? [first] : bundled {
            let those = remote.transportAttributes(of: remote.media[stream.index])
            for candidate in those.candidates where !candidates.contains(candidate) { candidates.append(candidate) }
            endOfCandidates = endOfCandidates || those.endOfCandidates
        }
        guard let ufrag = attributes.iceUfrag, let password = attributes.icePassword else {
            throw MediaError.invalidFormat("the remote SDP has no ice-ufrag and ice-pwd")
        }
        guard let fingerprint = attributes.fingerprint else {
            throw MediaError.invalidFormat("the remote SDP has no DTLS fingerprint")
        }
        if attributes.setup == .active || attributes.setup == .holdconn {
            throw MediaError.unsupported(
                "the remote SDP says setup:\(attributes.setup!.rawValue); this side is always the DTLS client")
        }
        self.streams = streams
        remoteICEUfrag = ufrag
        remoteICEPassword = password
        remoteCandidates = candidates
        remoteEndOfCandidates = endOfCandidates
        remoteFingerprint = fingerprint
        remoteSetup = attributes.setup
    }
}
