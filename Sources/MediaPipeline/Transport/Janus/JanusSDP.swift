/// The session descriptions a ``JanusTransport`` exchanges, and what it takes from them: its
/// publisher offer, its answers to Janus's subscriber offers, and the payload type maps both
/// ways.
enum JanusSDP {
    /// This side's ICE and DTLS attributes for a description.
    static func localTransport(
        _ connection: WebRTCConnection, candidates: [String]
    ) throws -> WebRTCLocalTransport {
        let credentials = connection.localCredentials
        return WebRTCLocalTransport(
            iceUfrag: credentials.ufrag, icePassword: credentials.password,
            fingerprint: try SessionDescription.Fingerprint(parsing: "sha-256 \(connection.certificate.fingerprint)"),
            candidates: candidates.map(attributeValue))
    }

    /// A candidate as SDP's `a=candidate:` carries it (the agent's lines start with
    /// "candidate:").
    static func attributeValue(_ candidate: String) -> String {
        candidate.hasPrefix("candidate:") ? String(candidate.dropFirst("candidate:".count)) : candidate
    }

    /// The remote's candidates as the agent takes them.
    static func remoteCandidates(_ negotiation: WebRTCNegotiation) -> [String] {
        negotiation.remoteCandidates.map { $0.hasPrefix("candidate:") ? $0 : "candidate:" + $0 }
    }

    /// This side's answer to a subscriber offer: the standard answer, with `nack` feedback on
    /// the Opus of the audio section. Janus offers none for audio but reads the answer's to
    /// decide whether it keeps a subscriber's audio for retransmission; with it, it resends
    /// the audio packets a NACK asks for (the original packet, not RTX).
    static func subscriberAnswer(to offer: SessionDescription, transport: WebRTCLocalTransport) -> SessionDescription {
        var answer = SessionDescription.webRTCAnswer(to: offer, transport: transport)
        for index in answer.media.indices where answer.media[index].kind == "audio" && answer.media[index].port != 0 {
            for format in answer.media[index].formats.indices
            where answer.media[index].formats[format].codec == .opus
                && !answer.media[index].formats[format].feedback.contains("nack")
            {
                answer.media[index].formats[format].feedback.append("nack")
            }
        }
        return answer
    }

    /// The RTP stream IDs of the published video's two encodings. The high one is offered
    /// first: Janus reads the first `a=rid` as its highest substream and the last as substream 0.
    static let simulcastStreamIDs = (high: "h", low: "l")

    /// The publisher offer for the engine's streams of `media`. VP8 video of an endpoint with a
    /// low stream is offered as simulcast of two encodings (the VideoRoom takes simulcast for
    /// VP8 and H.264 only), whether or not dual stream mode is on yet: an encoding that sends
    /// nothing costs nothing, and turning the mode on needs no renegotiation.
    static func publisherOffer(
        streams: LocalStreamDescription, media: PublishedMedia, transport: WebRTCLocalTransport
    ) throws -> SessionDescription {
        let simulcast =
            streams.videoCodec == .vp8 && streams.lowVideoSSRC != nil
            ? [simulcastStreamIDs.high, simulcastStreamIDs.low] : []
        return try SessionDescription.webRTCOffer(
            publishing: WebRTCPublication(
                audio: media.contains(.audio)
                    ? .init(ssrc: streams.audioSSRC, redundancy: streams.audioRedundancy) : nil,
                video: media.contains(.video)
                    ? .init(codec: streams.videoCodec, ssrc: streams.videoSSRC, simulcastStreamIDs: simulcast) : nil,
                cname: "mediapipeline-\(streams.feedbackSSRC)", transport: transport))
    }

    /// How the video's encodings go out, when Janus's answer took the offer's simulcast: nil
    /// when it took one encoding, or lacks the extensions that name a packet's section and
    /// encoding (Janus learns each encoding's SSRC from them).
    static func simulcastSending(_ negotiation: WebRTCNegotiation, streams: LocalStreamDescription) throws
        -> JanusSimulcastSending?
    {
        guard let lowSSRC = streams.lowVideoSSRC,
            let video = negotiation.streams.first(where: { $0.kind == .video && $0.sends }),
            let mid = video.mid,
            Set(video.sentSimulcastStreamIDs) == [simulcastStreamIDs.high, simulcastStreamIDs.low],
            let midID = video.headerExtensionID(RTPHeaderExtensionURI.mid),
            let streamID = video.headerExtensionID(RTPHeaderExtensionURI.streamID)
        else { return nil }
        return JanusSimulcastSending(
            highSSRC: streams.videoSSRC, lowSSRC: lowSSRC,
            highBlock: try RTPOneByteExtensionBlock([(midID, mid), (streamID, simulcastStreamIDs.high)]).bytes,
            lowBlock: try RTPOneByteExtensionBlock([(midID, mid), (streamID, simulcastStreamIDs.low)]).bytes)
    }

    /// The fingerprint as the DTLS association checks it ("AB:CD:…").
    static func fingerprintText(_ fingerprint: SessionDescription.Fingerprint) throws -> String {
        guard fingerprint.algorithm.lowercased() == "sha-256" else {
            throw MediaError(.unsupported, "fingerprint algorithm '\(fingerprint.algorithm)' (sha-256 is used)")
        }
        let digits = Array("0123456789ABCDEF")
        return fingerprint.bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined(
            separator: ":")
    }

    /// How the remote's payload types map to the engine's, for what it sends this side.
    static func receiveMap(_ negotiation: WebRTCNegotiation) -> PayloadTypeMap {
        var map = PayloadTypeMap()
        for stream in negotiation.streams where stream.receives {
            for payloadType in stream.payloadTypes {
                switch payloadType.content {
                case .retransmission(let original):
                    map.mapRetransmission(remote: payloadType.number, resending: original)
                default:
                    if let engine = payloadType.enginePayloadType { map.map(remote: payloadType.number, to: engine) }
                }
            }
        }
        return map
    }

    /// Engine payload type → the remote's number, for what this side sends
    /// (``PayloadTypeMap/none`` where nothing was agreed).
    static func sendMap(_ negotiation: WebRTCNegotiation) -> [UInt8] {
        var map = [UInt8](repeating: PayloadTypeMap.none, count: 128)
        for stream in negotiation.streams where stream.sends {
            for payloadType in stream.payloadTypes {
                if let engine = payloadType.enginePayloadType, (0..<128).contains(payloadType.number) {
                    map[Int(engine & 0x7F)] = UInt8(payloadType.number)
                }
            }
        }
        return map
    }
}
