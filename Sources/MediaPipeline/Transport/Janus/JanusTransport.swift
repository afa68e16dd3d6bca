import Dispatch
import Foundation
import Logging

/// Settings of a ``JanusTransport``.
public struct JanusTransportConfiguration: Sendable {
    /// The Janus API URL (HTTP long-poll), e.g. `http://127.0.0.1:8088/janus`, or an `https`
    /// one, whose server certificate is checked against the system's trusted authorities (or
    /// ``trustedCertificatesPath``) and must name the URL's host.
    public var url: String
    /// A PEM file of the certificate authorities an `https` Janus's certificate is checked
    /// against, instead of the system's (a deployment's own authority, or a self-signed
    /// server's certificate itself); nil: the system's.
    public var trustedCertificatesPath: String?
    /// Whether rooms and participant ids are numbers (a VideoRoom plugin without `string_ids`):
    /// channel ids must then be decimal numbers. By default they are strings: the channel id is
    /// the room's name and the uid, written in decimal, the participant's id.
    public var numericIds = false
    /// The rooms' pin, when they have one.
    public var pin: String?
    /// The Janus API token, when the server requires one.
    public var token: String?
    /// The addresses ICE gathers candidates on; empty: every interface.
    public var localAddresses: [String] = []
    /// The UDP ports the peer connections bind (each takes one); nil: any the system gives.
    public var localPorts: ClosedRange<Int>?
    /// How long a Janus request may take, in seconds.
    public var requestTimeoutSeconds: Double = 10
    /// How long a channel may stay RECONNECTING (Janus unreachable, media silent, the session
    /// being rejoined) before it is FAILED, in seconds.
    public var reconnectTimeoutSeconds: Double = 60
    /// Janus's `session_timeout`, in seconds: an unreachable server has dropped our session
    /// after this long, and it is joined again.
    public var sessionTimeoutSeconds: Double = 60
    /// The name other participants see. A broadcaster's display ends with " [broadcaster]"
    /// (``JanusTransport/broadcasterMark``): that is how other engines learn of a broadcaster
    /// that publishes nothing, which the VideoRoom does not announce.
    public var display: String?
    /// The loss the published audio is protected against (Opus in-band FEC), in percent: Janus
    /// reports the loss of the publisher's own leg only, never its subscribers', so without a
    /// floor a subscriber on a lossy link would get no redundancy at all. 0 turns it off (the
    /// FEC costs the audio some of its bitrate).
    public var audioExpectedLossPercent = 10

    /// Settings for the Janus API at `url`.
    public init(url: String) { self.url = url }
}

/// A ``MediaTransport`` whose channels are Janus VideoRoom rooms: the engine joins them as a
/// WebRTC participant, beside browsers and other engines.
///
/// The mapping of the Agora model onto the VideoRoom:
/// - a channel is a room, a uid a participant id (0: one is drawn, and drawn again if taken);
///   every joined channel has a publisher handle, which brings the room's publisher events
///   (`userJoined`, `userOffline`, media changes) even when nothing is published;
/// - the broadcaster of the publishing channel publishes over its own peer connection
///   (ICE, DTLS-SRTP; this side the DTLS client), announcing its SSRCs and codecs in the offer;
/// - each remote publisher is subscribed over a peer connection of its own, Janus offering;
/// - the engine's RTCP goes where it is addressed: sender reports to the publishing connection,
///   receiver reports, NACK and PLI to the subscription of the publisher they concern; what
///   Janus sends back arrives as feedback from uid 0 (the server) or from the publisher.
///
/// Per-packet work (sending, receiving) never waits for signalling: the packet finds its
/// connection under short locks and is protected or unprotected in the connection's buffer.
public final class JanusTransport: MediaTransport, Sendable {
    /// The uid the server's own feedback (receiver reports, NACK, PLI, REMB on what this side
    /// publishes) is reported from.
    public static let serverUid: UInt32 = 0

    /// What ends the display of a broadcaster (the VideoRoom has no roles: a participant that
    /// publishes nothing is not announced as a publisher). Engines set it with a `configure`
    /// request, which the VideoRoom tells every participant of the room (an event with `id` and
    /// `display`), and read it from `listparticipants` when they join.
    public static let broadcasterMark = "[broadcaster]"

    /// The settings given.
    public let configuration: JanusTransportConfiguration
    /// The signalling client of the current Janus session (replaced when the session is lost).
    private let client: LockedValue<JanusSignalling>
    let certificate: DTLSCertificate
    private let legs = LockedValue<[String: JanusChannelLeg]>([:])

    /// Where signalling failures that have no event of their own are told.
    let logger: Logger

    /// A transport for the Janus at `configuration.url`. Nothing is sent until a channel is
    /// joined.
    /// - Throws: ``MediaError`` when ``JanusTransportConfiguration/trustedCertificatesPath``
    ///   names no readable file, or the DTLS certificate cannot be made.
    public init(configuration: JanusTransportConfiguration, logger: Logger = Logger(label: "MediaPipeline.Janus"))
        throws
    {
        if let path = configuration.trustedCertificatesPath {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue,
                FileManager.default.isReadableFile(atPath: path)
            else {
                throw MediaError.invalidArgument(
                    "\(path): no readable file of trusted certificates (trustedCertificatesPath)")
            }
        }
        self.configuration = configuration
        self.logger = logger
        client = LockedValue(Self.makeSignalling(configuration))
        certificate = try DTLSCertificate.generate()
        watch(signalling)
    }

    private static func makeSignalling(_ configuration: JanusTransportConfiguration) -> JanusSignalling {
        var settings = JanusSignalling.Configuration(url: configuration.url, token: configuration.token)
        settings.trustedCertificatesPath = configuration.trustedCertificatesPath
        settings.requestTimeout = .milliseconds(Int64(configuration.requestTimeoutSeconds * 1000))
        settings.sessionTimeout = .milliseconds(Int64(configuration.sessionTimeoutSeconds * 1000))
        settings.keepaliveInterval = .milliseconds(Int64(max(1, configuration.sessionTimeoutSeconds / 3) * 1000))
        return JanusSignalling(configuration: settings)
    }

    /// The signalling client of the current session.
    var signalling: JanusSignalling { client.withLock { $0 } }

    /// A client for a new session when `ended` is still the current one (its session is
    /// gone); the current one otherwise (another channel renewed it first).
    func renewSignalling(replacing ended: JanusSignalling) -> JanusSignalling {
        let (current, made) = client.withLock { client -> (JanusSignalling, Bool) in
            guard client === ended else { return (client, false) }
            client = Self.makeSignalling(configuration)
            return (client, true)
        }
        if made {
            watch(current)
            Task { await ended.close() }
        }
        return current
    }

    /// Passes what happens to `signalling`'s session to every channel.
    private func watch(_ signalling: JanusSignalling) {
        let events = signalling.sessionEvents
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                for leg in self.legs.withLock({ Array($0.values) }) { leg.command(.session(event, signalling)) }
            }
        }
    }

    deinit { close() }

    /// Leaves every channel, closes every connection and ends the Janus session. Waits up to
    /// a few seconds for Janus to acknowledge.
    public func close() {
        let all = legs.withLock { legs in
            defer { legs.removeAll() }
            return Array(legs.values)
        }
        for leg in all { leg.leave() }
        let signalling = self.signalling
        let done = DispatchSemaphore(value: 0)
        // The channels' tasks are told to stop; their requests end with the session.
        Task {
            for leg in all { await leg.finished() }
            await signalling.close()
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
    }

    /// What crossed each connection so far, per channel.
    public var statistics: [JanusConnectionStatistics] {
        legs.withLock { Array($0.values) }.flatMap { $0.statistics }
    }

    // MARK: MediaTransport

    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        join(
            channelId: channelId, uid: uid, token: nil, role: role, media: media, receivesMedia: receivesMedia,
            endpoint: endpoint, answer: answer)
    }

    /// Joins the room `channelId`; `token` is the room's pin (``JanusTransportConfiguration/pin``
    /// when nil). Janus refusing it (a wrong or missing pin) fails the join with
    /// ``EngineError/Code/invalidToken``.
    public func join(
        channelId: String, uid: UInt32, token: String?, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        let room: JanusID
        if configuration.numericIds {
            guard let number = UInt64(channelId) else {
                return answer(
                    .failure(
                        EngineError(
                            .invalidChannelName, "channel '\(channelId)' is not a number, as numeric room ids need")))
            }
            room = .number(number)
        } else {
            room = .string(channelId)
        }
        let leg = JanusChannelLeg(
            transport: self, channelId: channelId, room: room, uid: uid, pin: token ?? configuration.pin, role: role,
            media: media, receivesMedia: receivesMedia, endpoint: endpoint)
        let taken = legs.withLock { legs -> Bool in
            if legs[channelId] != nil { return true }
            legs[channelId] = leg
            return false
        }
        guard !taken else {
            return answer(.failure(EngineError(.joinChannelRejected, "channel '\(channelId)' is joined already")))
        }
        leg.start { [weak self] result in
            if case .failure = result { self?.legs.withLock { $0[channelId] = nil } }
            answer(result)
        }
    }

    public func leave(channelId: String, uid: UInt32) {
        let leg = legs.withLock { $0.removeValue(forKey: channelId) }
        leg?.leave()
    }

    public func setRole(channelId: String, uid: UInt32, role: ClientRole) {
        leg(channelId)?.command(.role(role))
    }

    public func setMedia(channelId: String, uid: UInt32, media: PublishedMedia) {
        leg(channelId)?.command(.media(media))
    }

    /// Janus ignores a NACK for a packet it retransmitted less than 200 ms before, reports to
    /// a publisher the loss of its own leg only, and resends audio to subscribers whose answer
    /// asks for NACK (this transport's do).
    public var feedbackProfile: TransportFeedbackProfile {
        TransportFeedbackProfile(
            repeatedNackIgnoredMicroseconds: 200_000,
            audioExpectedLossFloorPercent: configuration.audioExpectedLossPercent, audioRetransmission: true)
    }

    /// Both layers of video go on the publishing connection, as the encodings of its simulcast
    /// (a low layer Janus did not take is dropped there).
    public func send(_ packet: RTPPacket, stream: MediaStreamID) {
        leg(stream.channelId)?.sendRTP(packet)
    }

    /// Asks Janus for the substream of `publisher`'s simulcast that `type` is (nil: for every
    /// publisher not named). Janus switches on that substream's next keyframe and says so,
    /// which reaches the endpoint as ``TransportEndpoint/transportVideoStreamTypeChanged(channelId:uid:type:)``.
    public func setRemoteVideoStreamType(
        _ type: VideoStreamType, channelId: String, subscriber: UInt32, publisher: UInt32?
    ) {
        leg(channelId)?.setVideoLayer(type, publisher: publisher)
    }

    public func resend(_ packet: RTPPacket, stream: MediaStreamID, to recipient: UInt32) {
        // Janus keeps its own history towards its subscribers: what it asked for goes to it.
        leg(stream.channelId)?.sendRTP(packet)
    }

    public func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32) {
        leg(channelId)?.sendRTCP(bytes, to: recipient)
    }

    public func setSubscribed(_ subscribed: Bool, to stream: MediaStreamID, subscriber: UInt32) {
        leg(stream.channelId)?.setSubscribed(subscribed, publisher: stream.uid, kind: stream.kind)
    }

    func log(_ message: String) { logger.warning("\(message)") }

    private func leg(_ channelId: String) -> JanusChannelLeg? { legs.withLock { $0[channelId] } }
}

/// What crossed one peer connection of a ``JanusTransport``.
public struct JanusConnectionStatistics: Sendable, Equatable {
    /// The channel.
    public var channelId: String
    /// The remote publisher a subscription receives; nil for the publishing connection.
    public var publisher: UInt32?
    /// RTP packets and RTCP compound packets received (after SRTP) and sent.
    public var rtpReceived: Int64 = 0, rtcpReceived: Int64 = 0, rtpSent: Int64 = 0, rtcpSent: Int64 = 0
    /// Retransmissions received in their own payload type (RFC 4588), made original again.
    public var retransmissionsReceived: Int64 = 0
    /// Datagrams dropped: SRTP authentication or replay failures, datagrams that are neither
    /// DTLS nor RTP/RTCP, packets of a payload type not negotiated.
    public var unprotectFailures: Int64 = 0, ignored: Int64 = 0
    /// Whether SRTP keys are agreed.
    public var connected = false
}
