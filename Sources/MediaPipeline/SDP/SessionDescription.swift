import Foundation

/// A session description (SDP, RFC 8866): the subset RTP peers exchange for Opus, VP8 and VP9
/// — where each stream goes (connection address, port, RTCP port or rtcp-mux), its payload
/// types (rtpmap, fmtp), the feedback it takes (rtcp-fb: nack, nack pli, ccm fir) and its
/// SSRC. Read from what ffmpeg and GStreamer write, and written for them.
///
/// It also reads and writes what WebRTC peers (browsers, Janus) put around that (RFC 8829, JSEP):
/// BUNDLE groups, mids, directions, msid, several SSRCs per section with their `ssrc-group`s,
/// header extensions, ICE credentials and candidates, the DTLS fingerprint and setup role,
/// rtcp-rsize, and sections that are not RTP (data channels). Attributes it does not know are
/// kept as they are. ``SessionDescription/webRTCOffer(publishing:)``,
/// ``SessionDescription/webRTCAnswer(to:transport:sessionID:)`` and ``WebRTCNegotiation`` build on it.
public struct SessionDescription: Sendable, Equatable {
    /// A stream direction (RFC 8866 §6.7): what the describing side does with a section's media.
    public enum Direction: String, Sendable, CaseIterable {
        /// Sends and receives.
        case sendrecv
        /// Sends only.
        case sendonly
        /// Receives only.
        case recvonly
        /// Neither sends nor receives.
        case inactive

        /// Whether the describing side sends.
        public var sends: Bool { self == .sendrecv || self == .sendonly }
        /// Whether the describing side receives.
        public var receives: Bool { self == .sendrecv || self == .recvonly }

        /// The direction of the given abilities.
        public init(sends: Bool, receives: Bool) {
            switch (sends, receives) {
            case (true, true): self = .sendrecv
            case (true, false): self = .sendonly
            case (false, true): self = .recvonly
            case (false, false): self = .inactive
            }
        }
    }

    /// A DTLS role offered or taken (`a=setup`, RFC 4145 and RFC 5763).
    public enum SetupRole: String, Sendable, CaseIterable {
        /// Either role; the answerer chooses (what offers say).
        case actpass
        /// The DTLS client, which sends the ClientHello.
        case active
        /// The DTLS server.
        case passive
        /// No connection for now.
        case holdconn
    }

    /// A certificate fingerprint (`a=fingerprint`, RFC 8122): the hash function's name and the
    /// certificate's digest.
    public struct Fingerprint: Sendable, Equatable {
        /// The hash function, in lower case ("sha-256").
        public var algorithm: String
        /// The digest.
        public var bytes: [UInt8]

        /// A fingerprint.
        public init(algorithm: String, bytes: [UInt8]) {
            self.algorithm = algorithm.lowercased()
            self.bytes = bytes
        }

        /// Reads an attribute value, "sha-256 AB:CD:…".
        /// - Throws: ``MediaError/Code/invalidFormat`` saying what is wrong with it.
        public init(parsing text: String) throws {
            if let reason = Self.fault(text) { throw MediaError.invalidFormat("fingerprint '\(text)': \(reason)") }
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            self.init(
                algorithm: String(parts[0]), bytes: parts[1].split(separator: ":").map { UInt8($0, radix: 16)! })
        }

        /// The attribute value: the algorithm, a space, the digest as upper-case hex pairs joined by ':'.
        public var text: String {
            algorithm + " "
                + bytes.map { byte in
                    let hex = String(byte, radix: 16, uppercase: true)
                    return hex.count == 1 ? "0" + hex : hex
                }.joined(separator: ":")
        }

        /// Why `text` is not a fingerprint, or nil when it is one.
        static func fault(_ text: String) -> String? {
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2 else { return "a fingerprint must be 'HASH XX:XX:…'" }
            let pairs = parts[1].split(separator: ":", omittingEmptySubsequences: false)
            let hex = Set("0123456789abcdefABCDEF".utf8)
            guard pairs.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy(hex.contains) }) else {
                return "the digest must be hex pairs joined by ':'"
            }
            let lengths = ["sha-1": 20, "sha-224": 28, "sha-256": 32, "sha-384": 48, "sha-512": 64]
            if let length = lengths[parts[0].lowercased()], pairs.count != length {
                return "a \(parts[0].lowercased()) digest has \(length) bytes, not \(pairs.count)"
            }
            return nil
        }
    }

    /// The ICE and DTLS attributes of a transport (RFC 8839, RFC 8842), at session level or in a
    /// section. Candidates are kept as the attribute's value, without "candidate:"
    /// ("1 1 udp 2122260223 127.0.0.2 40000 typ host").
    public struct TransportAttributes: Sendable, Equatable {
        /// `a=ice-ufrag`.
        public var iceUfrag: String?
        /// `a=ice-pwd`.
        public var icePassword: String?
        /// `a=ice-options` ("trickle", …).
        public var iceOptions: [String] = []
        /// `a=fingerprint` lines.
        public var fingerprints: [Fingerprint] = []
        /// `a=setup`.
        public var setup: SetupRole?
        /// `a=candidate` values.
        public var candidates: [String] = []
        /// `a=end-of-candidates`: the list is complete.
        public var endOfCandidates = false

        /// Empty attributes.
        public init() {}

        /// The first fingerprint, if any.
        public var fingerprint: Fingerprint? { fingerprints.first }

        /// These attributes with each one that is absent here taken from `fallback` (a section's
        /// over the session's).
        public func over(_ fallback: TransportAttributes) -> TransportAttributes {
            var merged = self
            merged.iceUfrag = iceUfrag ?? fallback.iceUfrag
            merged.icePassword = icePassword ?? fallback.icePassword
            if iceOptions.isEmpty { merged.iceOptions = fallback.iceOptions }
            if fingerprints.isEmpty { merged.fingerprints = fallback.fingerprints }
            merged.setup = setup ?? fallback.setup
            merged.candidates = fallback.candidates + candidates
            merged.endOfCandidates = endOfCandidates || fallback.endOfCandidates
            return merged
        }
    }

    /// A group of sections (`a=group`, RFC 5888): "BUNDLE" and the mids bundled on one transport.
    public struct Group: Sendable, Equatable {
        /// The semantics ("BUNDLE", "LS").
        public var semantics: String
        /// The sections' mids.
        public var mids: [String]

        /// A group.
        public init(semantics: String, mids: [String]) {
            self.semantics = semantics
            self.mids = mids
        }
    }

    /// One m= section.
    public struct Media: Sendable, Equatable {
        /// One payload type of the section.
        public struct Format: Sendable, Equatable {
            /// The payload type number.
            public var payloadType: Int
            /// The encoding name ("opus", "VP8", "VP9"…), as rtpmap gives it.
            public var encoding: String
            /// The RTP clock rate in Hz.
            public var clockRate: Int
            /// Audio channels (rtpmap's third field; 1 when absent).
            public var channels: Int = 1
            /// The fmtp parameters, as written ("minptime=10;useinbandfec=1").
            public var parameters: String?
            /// The rtcp-fb lines' values ("nack", "nack pli", "ccm fir").
            public var feedback: [String] = []

            /// The codec, when MediaPipeline handles it.
            public var codec: MediaCodec? { MediaCodec(rtpEncodingName: encoding) }

            /// For a retransmission format (RFC 4588, "rtx" with `apt=PT` in its fmtp): the payload
            /// type whose packets it resends. Nil for any other format.
            public var retransmittedPayloadType: Int? {
                guard encoding.lowercased() == "rtx", let value = parameter("apt"), let type = Int(value),
                    (0..<128).contains(type)
                else { return nil }
                return type
            }

            /// Whether this is redundant audio (RFC 2198, "red/48000/2" as browsers offer it for
            /// Opus), which this library receives.
            public var isRedundantAudio: Bool { encoding.lowercased() == "red" && clockRate == 48_000 }

            /// For redundant audio: the payload types its fmtp names for the blocks ("111/111" gives
            /// [111, 111]); empty when the fmtp is absent or is not such a list.
            public var redundantPayloadTypes: [Int] {
                guard isRedundantAudio, let parameters else { return [] }
                let types = parameters.split(separator: "/").map { Int($0.trimmingCharacters(in: .whitespaces)) }
                guard !types.isEmpty, types.allSatisfy({ $0.map { (0..<128).contains($0) } ?? false }) else {
                    return []
                }
                return types.map { $0! }
            }

            /// The value of fmtp parameter `name` (matched without regard to case), if present.
            public func parameter(_ name: String) -> String? {
                guard let parameters else { return nil }
                for item in parameters.split(separator: ";") {
                    let pair = item.split(separator: "=", maxSplits: 1).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                    if pair.count == 2, pair[0].lowercased() == name.lowercased() { return pair[1] }
                }
                return nil
            }

            /// A format.
            public init(payloadType: Int, encoding: String, clockRate: Int, channels: Int = 1) {
                self.payloadType = payloadType
                self.encoding = encoding
                self.clockRate = clockRate
                self.channels = channels
            }
        }

        /// One SSRC the section's sender uses (`a=ssrc`, RFC 5576), with the attributes kept:
        /// cname and msid.
        public struct Source: Sendable, Equatable {
            /// The SSRC.
            public var ssrc: UInt32
            /// `a=ssrc:N cname:X`.
            public var cname: String?
            /// `a=ssrc:N msid:STREAM TRACK`, the value.
            public var msid: String?

            /// A source.
            public init(ssrc: UInt32, cname: String? = nil, msid: String? = nil) {
                self.ssrc = ssrc
                self.cname = cname
                self.msid = msid
            }
        }

        /// A group of SSRCs (`a=ssrc-group`, RFC 5576): "FID" with the media SSRC first and its
        /// retransmission SSRC second (RFC 4588), "SIM", "FEC-FR"…
        public struct SourceGroup: Sendable, Equatable {
            /// The semantics ("FID").
            public var semantics: String
            /// The SSRCs, in the line's order.
            public var ssrcs: [UInt32]

            /// A group.
            public init(semantics: String, ssrcs: [UInt32]) {
                self.semantics = semantics
                self.ssrcs = ssrcs
            }
        }

        /// A header extension (`a=extmap`, RFC 8285).
        public struct HeaderExtension: Sendable, Equatable {
            /// The extension's ID in packets.
            public var id: Int
            /// The direction, when given ("2/sendonly").
            public var direction: Direction?
            /// The URI naming the extension.
            public var uri: String
            /// Anything after the URI.
            public var attributes: String?

            /// An extension.
            public init(id: Int, direction: Direction? = nil, uri: String, attributes: String? = nil) {
                self.id = id
                self.direction = direction
                self.uri = uri
                self.attributes = attributes
            }
        }

        /// "audio" or "video" (others, such as "application", are kept and ignored).
        public var kind: String
        /// The RTP port; 0 in an offer or answer says the section is declined.
        public var port: Int
        /// The transport: "RTP/AVP", or "RTP/AVPF" when the peer takes feedback (NACK, PLI);
        /// "UDP/TLS/RTP/SAVPF" for WebRTC media, "UDP/DTLS/SCTP" for data channels.
        public var transport: String
        /// The payload types, in the m= line's order, described.
        public var formats: [Format]
        /// The m= line's formats when the transport is not RTP ("webrtc-datachannel").
        public var otherFormats: [String] = []
        /// The section's connection address, if it has its own.
        public var connectionAddress: String?
        /// The RTCP port (a=rtcp), when it is not the RTP port + 1.
        public var rtcpPort: Int?
        /// RTP and RTCP on one port (RFC 5761).
        public var rtcpMux = false
        /// Reduced-size RTCP (`a=rtcp-rsize`, RFC 5506).
        public var rtcpReducedSize = false
        /// The section's identification (`a=mid`, RFC 5888).
        public var mid: String?
        /// The direction, when the section states one.
        public var direction: Direction?
        /// `a=msid` (RFC 8830): the stream and track IDs, as written.
        public var msid: String?
        /// The sender's SSRCs with their attributes, in first-mention order.
        public var sources: [Source] = []
        /// `a=ssrc-group` lines.
        public var sourceGroups: [SourceGroup] = []
        /// `a=extmap` lines.
        public var headerExtensions: [HeaderExtension] = []
        /// The section's ICE and DTLS attributes and candidates.
        public var transportAttributes = TransportAttributes()
        /// Other attributes, as written after "a=" ("sctp-port:5000", "extmap-allow-mixed").
        public var attributes: [String] = []

        /// A section.
        public init(kind: String, port: Int, transport: String = "RTP/AVP", formats: [Format]) {
            self.kind = kind
            self.port = port
            self.transport = transport
            self.formats = formats
        }

        /// Where RTCP goes: the RTP port with rtcp-mux, a=rtcp's port, or the RTP port + 1.
        public var effectiveRTCPPort: Int { rtcpMux ? port : rtcpPort ?? port + 1 }

        /// The sender's SSRC: the first of an FID group when there is one (the media SSRC, not
        /// its retransmissions), else the first `a=ssrc`. Setting it replaces every source and
        /// SSRC group by this one SSRC with cname "mediapipeline".
        public var ssrc: UInt32? {
            get { sourceGroups.first { $0.semantics == "FID" }?.ssrcs.first ?? sources.first?.ssrc }
            set {
                sourceGroups = []
                sources = newValue.map { [Source(ssrc: $0, cname: "mediapipeline")] } ?? []
            }
        }

        /// Whether the m= line carries RTP (its formats are payload types).
        public var carriesRTP: Bool { transport.uppercased().contains("RTP") }

        /// Whether this is a WebRTC section (ICE and DTLS: "UDP/TLS/RTP/SAVPF", "UDP/DTLS/SCTP"…).
        public var isWebRTC: Bool {
            let upper = transport.uppercased()
            return upper.contains("TLS") || upper.contains("DTLS")
        }

        /// The format with payload type `payloadType`, if the section has it.
        public func format(_ payloadType: Int) -> Format? { formats.first { $0.payloadType == payloadType } }
    }

    /// The session name (s=).
    public var name: String
    /// The session-level connection address (c=), IPv4 or IPv6.
    public var connectionAddress: String?
    /// The origin's address (o=).
    public var originAddress: String
    /// The origin's session ID (o=, second field).
    public var sessionID = "0"
    /// The origin's session version (o=, third field).
    public var sessionVersion = "0"
    /// `a=group` lines (BUNDLE).
    public var groups: [Group] = []
    /// `a=msid-semantic`'s value ("WMS *"), if given.
    public var msidSemantic: String?
    /// The session-level direction, the default of every section that states none.
    public var direction: Direction?
    /// Session-level ICE and DTLS attributes, the default of every section's.
    public var transportAttributes = TransportAttributes()
    /// Other session-level attributes, as written after "a=" ("tool:libavformat 61.7.100").
    public var attributes: [String] = []
    /// The media sections.
    public var media: [Media]

    /// A description of `media`, sent from or to `connectionAddress`.
    public init(name: String = "MediaPipeline", connectionAddress: String?, media: [Media]) {
        self.name = name
        self.connectionAddress = connectionAddress
        originAddress = connectionAddress ?? "127.0.0.1"
        self.media = media
    }

    /// The address a section's packets go to.
    public func address(of media: Media) -> String? { media.connectionAddress ?? connectionAddress }

    /// A section's direction: its own, else the session's, else sendrecv.
    public func direction(of media: Media) -> Direction { media.direction ?? direction ?? .sendrecv }

    /// A section's ICE and DTLS attributes: its own, each absent one taken from the session's.
    public func transportAttributes(of media: Media) -> TransportAttributes {
        media.transportAttributes.over(transportAttributes)
    }

    /// The mids of the first BUNDLE group, or nil when there is none.
    public var bundle: [String]? { groups.first { $0.semantics == "BUNDLE" }?.mids }
}
