/// A session description (SDP, RFC 8866): the subset RTP peers exchange for Opus, VP8 and VP9
/// — where each stream goes (connection address, port, RTCP port or rtcp-mux), its payload
/// types (rtpmap, fmtp), the feedback it takes (rtcp-fb: nack, nack pli, ccm fir) and its
/// SSRC. Read from what ffmpeg and GStreamer write, and written for them.
public struct SessionDescription: Sendable, Equatable {
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
            public var codec: MediaCodec? {
                switch encoding.lowercased() {
                case "opus": .opus
                case "vp8": .vp8
                case "vp9": .vp9
                default: nil
                }
            }

            /// For a retransmission format (RFC 4588, "rtx" with `apt=PT` in its fmtp): the payload
            /// type whose packets it resends. Nil for any other format.
            public var retransmittedPayloadType: Int? {
                guard encoding.lowercased() == "rtx", let parameters else { return nil }
                for item in parameters.split(separator: ";") {
                    let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    if pair.count == 2, pair[0].lowercased() == "apt", let type = Int(pair[1]), (0..<128).contains(type)
                    {
                        return type
                    }
                }
                return nil
            }

            /// Whether this is redundant audio (RFC 2198, "red/48000/2" as browsers offer it for
            /// Opus), which this library receives.
            public var isRedundantAudio: Bool { encoding.lowercased() == "red" && clockRate == 48_000 }

            /// A format.
            public init(payloadType: Int, encoding: String, clockRate: Int, channels: Int = 1) {
                self.payloadType = payloadType
                self.encoding = encoding
                self.clockRate = clockRate
                self.channels = channels
            }
        }

        /// "audio" or "video" (others are kept and ignored).
        public var kind: String
        /// The RTP port.
        public var port: Int
        /// The transport: "RTP/AVP", or "RTP/AVPF" when the peer takes feedback (NACK, PLI).
        public var transport: String
        /// The payload types, in the m= line's order, described.
        public var formats: [Format]
        /// The section's connection address, if it has its own.
        public var connectionAddress: String?
        /// The RTCP port (a=rtcp), when it is not the RTP port + 1.
        public var rtcpPort: Int?
        /// RTP and RTCP on one port (RFC 5761).
        public var rtcpMux = false
        /// The sender's SSRC (a=ssrc), if given.
        public var ssrc: UInt32?

        /// A section.
        public init(kind: String, port: Int, transport: String = "RTP/AVP", formats: [Format]) {
            self.kind = kind
            self.port = port
            self.transport = transport
            self.formats = formats
        }

        /// Where RTCP goes: the RTP port with rtcp-mux, a=rtcp's port, or the RTP port + 1.
        public var effectiveRTCPPort: Int { rtcpMux ? port : rtcpPort ?? port + 1 }
    }

    /// The session name (s=).
    public var name: String
    /// The session-level connection address (c=), IPv4 or IPv6.
    public var connectionAddress: String?
    /// The origin's address (o=).
    public var originAddress: String
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

    /// Reads SDP text.
    /// - Throws: ``MediaError/Code/invalidFormat`` naming the line (number and text) at fault.
    public init(parsing text: String) throws {
        name = "-"
        connectionAddress = nil
        originAddress = "127.0.0.1"
        media = []
        var sawVersion = false
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingSuffix()
            guard !line.isEmpty else { continue }
            func fail(_ why: String) -> MediaError {
                MediaError.invalidFormat("SDP line \(index + 1) '\(line.prefix(80))': \(why)")
            }
            guard line.count >= 2, line.dropFirst().first == "=" else { throw fail("not a 'x=value' line") }
            let type = line.first!
            let value = String(line.dropFirst(2))
            let fields = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            switch type {
            case "v":
                guard value == "0" else { throw fail("version \(value); SDP has version 0") }
                sawVersion = true
            case "o":
                guard fields.count >= 6 else { throw fail("an origin needs 6 fields") }
                originAddress = fields[5]
            case "s":
                name = value
            case "c":
                guard fields.count >= 3, fields[0] == "IN", ["IP4", "IP6"].contains(fields[1]) else {
                    throw fail("a connection must be 'IN IP4|IP6 ADDRESS'")
                }
                let address = String(fields[2].split(separator: "/").first ?? "")
                if media.isEmpty {
                    connectionAddress = address
                } else {
                    media[media.count - 1].connectionAddress = address
                }
            case "m":
                guard fields.count >= 4, let port = Int(fields[1].split(separator: "/").first ?? ""),
                    (0...65535).contains(port)
                else { throw fail("a media line must be 'KIND PORT PROTO FORMAT...'") }
                var formats: [Media.Format] = []
                for field in fields[3...] {
                    guard let payloadType = Int(field), (0...127).contains(payloadType) else {
                        throw fail("payload type '\(field)' is not 0...127")
                    }
                    formats.append(Media.Format(payloadType: payloadType, encoding: "", clockRate: 0))
                }
                media.append(Media(kind: fields[0], port: port, transport: fields[2], formats: formats))
            case "a":
                guard !media.isEmpty else { continue }  // session attributes (tool, recvonly…) are not used
                let m = media.count - 1
                let (name, argument) = value.splitOnce(":")
                switch name {
                case "rtpmap":
                    let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
                    let codec = parts.count == 2 ? parts[1].split(separator: "/").map(String.init) : []
                    guard parts.count == 2, let payloadType = Int(parts[0]), codec.count >= 2,
                        let clockRate = Int(codec[1]), clockRate > 0
                    else { throw fail("rtpmap must be 'PT ENCODING/CLOCKRATE[/CHANNELS]'") }
                    guard let f = media[m].formats.firstIndex(where: { $0.payloadType == payloadType }) else {
                        throw fail("payload type \(payloadType) is not on its m= line")
                    }
                    media[m].formats[f].encoding = codec[0]
                    media[m].formats[f].clockRate = clockRate
                    media[m].formats[f].channels = codec.count > 2 ? Int(codec[2]) ?? 1 : 1
                case "fmtp", "rtcp-fb":
                    let (pt, rest) = argument.splitOnce(" ")
                    let targets = media[m].formats.indices.filter {
                        pt == "*" || String(media[m].formats[$0].payloadType) == pt
                    }
                    guard !targets.isEmpty else { throw fail("payload type \(pt) is not on its m= line") }
                    for f in targets {
                        if name == "fmtp" {
                            media[m].formats[f].parameters = rest
                        } else {
                            media[m].formats[f].feedback.append(rest)
                        }
                    }
                case "rtcp":
                    guard let port = Int(argument.split(separator: " ").first ?? ""), (1...65535).contains(port) else {
                        throw fail("rtcp must give a port")
                    }
                    media[m].rtcpPort = port
                case "rtcp-mux":
                    media[m].rtcpMux = true
                case "ssrc":
                    guard let ssrc = UInt32(argument.split(separator: " ").first ?? "") else {
                        throw fail("ssrc must start with a 32-bit number")
                    }
                    media[m].ssrc = ssrc
                default:
                    break
                }
            default:
                break  // t=, b=, i=, … are not needed here
            }
        }
        guard sawVersion else { throw MediaError.invalidFormat("SDP has no 'v=0' line") }
        // Static payload types without rtpmap are none of ours; dynamic ones must be described.
        for section in media where section.kind == "audio" || section.kind == "video" {
            for format in section.formats where format.payloadType >= 96 && format.encoding.isEmpty {
                throw MediaError.invalidFormat(
                    "SDP \(section.kind) payload type \(format.payloadType) has no rtpmap line")
            }
        }
    }

    /// The description as SDP text (CRLF line ends).
    public var text: String {
        let family = (connectionAddress ?? originAddress).contains(":") ? "IP6" : "IP4"
        var lines = [
            "v=0", "o=- 0 0 IN \(family) \(originAddress)", "s=\(name)",
        ]
        if let connectionAddress { lines.append("c=IN \(family) \(connectionAddress)") }
        lines.append("t=0 0")
        for section in media {
            lines.append(
                "m=\(section.kind) \(section.port) \(section.transport) "
                    + section.formats.map { String($0.payloadType) }.joined(separator: " "))
            if let address = section.connectionAddress {
                lines.append("c=IN \(address.contains(":") ? "IP6" : "IP4") \(address)")
            }
            if section.rtcpMux {
                lines.append("a=rtcp-mux")
            } else if let port = section.rtcpPort {
                lines.append("a=rtcp:\(port)")
            }
            for format in section.formats {
                let channels = format.channels > 1 ? "/\(format.channels)" : ""
                lines.append("a=rtpmap:\(format.payloadType) \(format.encoding)/\(format.clockRate)\(channels)")
                if let parameters = format.parameters { lines.append("a=fmtp:\(format.payloadType) \(parameters)") }
                for feedback in format.feedback { lines.append("a=rtcp-fb:\(format.payloadType) \(feedback)") }
            }
            if let ssrc = section.ssrc { lines.append("a=ssrc:\(ssrc) cname:mediapipeline") }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

extension Substring {
    fileprivate func trimmingSuffix() -> Substring {
        var end = endIndex
        while end > startIndex, let last = self[startIndex..<end].last, last == " " || last == "\t" || last == "\r" {
            end = index(before: end)
        }
        return self[startIndex..<end]
    }
}

extension String {
    /// The text before and after the first `separator` (all of it and "" when there is none).
    fileprivate func splitOnce(_ separator: Character) -> (String, String) {
        guard let at = firstIndex(of: separator) else { return (self, "") }
        return (String(self[..<at]), String(self[index(after: at)...]))
    }
}
