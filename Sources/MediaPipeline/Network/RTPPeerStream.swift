/// How one kind of media (audio or video) crosses between this side and a plain RTP peer:
/// where its packets arrive here, which payload types the peer sends, and where this side's
/// packets of that kind go.
///
/// One socket carries the stream both ways (symmetric RTP: this side sends from the port it
/// receives on), with RTCP on the same port (rtcp-mux, RFC 5761) or on a second one.
public struct RTPPeerStream: Sendable, Equatable {
    /// Audio or video.
    public var kind: MediaKind
    /// The local address bound (numeric IPv4 or IPv6; "0.0.0.0" or "::" for every interface).
    public var localAddress: String
    /// The local RTP port (0: any free port; the bound one is in ``RTPPeerTransport/streams``).
    public var localPort: Int
    /// RTP and RTCP on one port.
    public var rtcpMux: Bool
    /// The local RTCP port without rtcp-mux (nil: the RTP port + 1, or any free port when
    /// ``localPort`` is 0).
    public var localRTCPPort: Int?
    /// The payload types the peer sends this stream with (empty: this side receives none).
    public var receiveFormats: [SessionDescription.Media.Format]
    /// The peer's SSRC for this stream, when its SDP names it (otherwise the first packet's).
    public var remoteSSRC: UInt32?
    /// Where this side's packets of ``kind`` go (nil: this side sends none, and its RTCP goes
    /// where the peer's RTCP comes from).
    public var remoteHost: String?
    /// The peer's RTP port, and its RTCP port (nil: the RTP port + 1, or the RTP port with
    /// rtcp-mux). A remote host with an RTCP port and no RTP port receives this side's RTCP
    /// alone (feedback to a sender that reads it on a port of its own).
    public var remotePort: Int?, remoteRTCPPort: Int?
    /// The payload types this side sends with, by codec (the peer's numbers; a codec not listed
    /// keeps ``RTPPayloadType``'s).
    public var sendFormats: [SessionDescription.Media.Format]

    /// A stream of `kind` bound to `localAddress`:`localPort`, receiving and sending nothing
    /// until formats and a remote are set.
    public init(kind: MediaKind, localAddress: String = "0.0.0.0", localPort: Int = 0, rtcpMux: Bool = false) {
        self.kind = kind
        self.localAddress = localAddress
        self.localPort = localPort
        self.rtcpMux = rtcpMux
        receiveFormats = []
        sendFormats = []
    }

    /// Whether the peer sends this stream.
    public var receives: Bool { !receiveFormats.isEmpty }
    /// Whether this side sends this stream.
    public var sends: Bool { remoteHost != nil && remotePort != nil }

    /// The streams for a peer described by session descriptions:
    /// - `receiving`: where the peer's streams arrive (an SDP whose connection address and ports
    ///   are this side's, as a sender such as ffmpeg writes with `-sdp_file`). Its first audio
    ///   and first video section with Opus, VP8 or VP9 are received, on their ports (an audio
    ///   section's `red/48000/2`, RFC 2198 redundancy, as well, and `rtx` formats, RFC 4588
    ///   retransmissions, whose `apt` is one of those).
    /// - `sendingTo`: where this side's streams go (an SDP whose address and ports are the
    ///   peer's, as a receiver such as ffmpeg reads with `-i`). A kind it has but `receiving`
    ///   does not is bound at `localAddress` and `localPort` + 2 × its section's place in
    ///   `sendingTo` (RTCP on the next port; `localPort` 0: any free ports).
    /// - Throws: ``MediaError/Code/invalidArgument`` when neither names an audio or video stream
    ///   of a codec this library handles.
    public static func streams(
        receiving: SessionDescription?, sendingTo: SessionDescription?, localAddress: String? = nil,
        localPort: Int = 0
    ) throws -> [RTPPeerStream] {
        func section(_ sdp: SessionDescription?, _ kind: MediaKind) -> SessionDescription.Media? {
            sdp?.media.first {
                $0.kind == (kind == .audio ? "audio" : "video") && $0.formats.contains { $0.codec != nil }
            }
        }
        var streams: [RTPPeerStream] = []
        for kind in [MediaKind.audio, .video] {
            let incoming = section(receiving, kind)
            let outgoing = section(sendingTo, kind)
            guard incoming != nil || outgoing != nil else { continue }
            var stream: RTPPeerStream
            if let incoming, let receiving {
                let address = receiving.address(of: incoming) ?? "0.0.0.0"
                stream = RTPPeerStream(
                    kind: kind, localAddress: address, localPort: incoming.port, rtcpMux: incoming.rtcpMux)
                // Port 0 (any free port): RTCP on any free port too, unless a=rtcp names one.
                stream.localRTCPPort =
                    incoming.rtcpMux ? nil : incoming.port == 0 ? incoming.rtcpPort : incoming.effectiveRTCPPort
                let media = incoming.formats.filter {
                    $0.codec?.kind == kind || (kind == .audio && $0.isRedundantAudio)
                }
                // Retransmissions (RFC 4588) of those formats, as their own payload types.
                let resent = incoming.formats.filter { format in
                    format.retransmittedPayloadType.map { type in media.contains { $0.payloadType == type } } ?? false
                }
                stream.receiveFormats = media + resent
                stream.remoteSSRC = incoming.ssrc
            } else {
                let family = (outgoing.flatMap { sendingTo?.address(of: $0) } ?? "").contains(":") ? "::" : "0.0.0.0"
                let position = outgoing.flatMap { o in sendingTo?.media.firstIndex { $0 == o } } ?? streams.count
                let port = localPort == 0 ? 0 : localPort + 2 * position
                stream = RTPPeerStream(
                    kind: kind, localAddress: localAddress ?? family, localPort: port,
                    rtcpMux: outgoing?.rtcpMux ?? false)
                if port != 0 && !stream.rtcpMux { stream.localRTCPPort = port + 1 }
            }
            if let outgoing, let sendingTo {
                guard let host = sendingTo.address(of: outgoing) else {
                    throw MediaError.invalidArgument("the SDP's \(outgoing.kind) stream has no connection address (c=)")
                }
                stream.remoteHost = host
                stream.remotePort = outgoing.port
                stream.remoteRTCPPort = outgoing.effectiveRTCPPort
                stream.sendFormats = outgoing.formats.filter { $0.codec?.kind == kind }
            }
            streams.append(stream)
        }
        guard !streams.isEmpty else {
            throw MediaError.invalidArgument("the SDP names no audio or video stream in Opus, VP8 or VP9")
        }
        return streams
    }
}
