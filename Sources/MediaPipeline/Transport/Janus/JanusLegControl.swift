/// The signalling of one channel of a ``JanusTransport``, one step at a time: the join, the
/// room's events, publishing and unpublishing, subscriptions. Not a per-packet path.
actor JanusLegControl {
    let transport: JanusTransport
    let channelId: String
    private let room: JanusID
    /// The room's pin: the join's token, or the configuration's.
    private let pin: String?
    private var uid: UInt32
    var role: ClientRole
    var media: PublishedMedia
    let receivesMedia: Bool
    weak var endpoint: TransportEndpoint?
    var handle: JanusHandle?
    private var privateID: UInt64?
    /// Remote publishers present, with what they publish.
    var publishers: [UInt32: PublishedMedia] = [:]
    /// The publishers the last join found in the room.
    var publishersAtJoin: Set<UInt32> = []
    /// Participant ids of remote publishers, by uid.
    private var remoteIds: [UInt32: JanusID] = [:]
    /// Kinds the engine does not want, per remote publisher (set from any thread).
    let unwanted = LockedValue<[UInt32: Set<MediaKind>]>([:])
    /// The video layer wanted of each publisher (any thread writes it; the loop tells Janus).
    let layerChoices = LockedValue(JanusLayerChoices())
    var leaving = false
    /// Where timers put their inputs (the serving loop's stream), while it runs.
    var input: AsyncStream<Input>.Continuation?
    /// Forwards the publisher handle's events into ``input``.
    private var roomEventsTask: Task<Void, Never>?
    /// The connection's health: see JanusLegControl+Health.swift.
    var health = JanusLegHealth()
    /// Publishers that unpublished and have not left (yet), with the serial of their timer.
    var unpublished: [UInt32: Int] = [:]
    /// When each remote publisher's media was last heard, kept across its subscriptions (a
    /// subscription made anew starts with nothing heard): a publisher that left after a long
    /// silence dropped.
    var lastHeard: [UInt32: ContinuousClock.Instant] = [:]
    private var timerSerial = 0
    /// Publishers whose subscription Janus refused with "No such feed" (428), with the attempts
    /// made: Janus announces a publisher when it has its offer, but takes subscriptions only
    /// once the publisher's connection is up. Asked again shortly; not a fault of this side's
    /// connection meanwhile.
    var feedNotReady: [UInt32: Int] = [:]
    /// How often, and how soon after each other, a subscription refused with 428 is asked again;
    /// after the last attempt the feed counts as gone until Janus announces it again.
    static let feedRetryAttempts = 8
    static let feedRetryDelay = Duration.milliseconds(150)
    /// Remote participants whose display marks them broadcasters (``JanusTransport/broadcasterMark``):
    /// present even when they publish nothing.
    var markedBroadcasters: Set<UInt32> = []
    /// Whether this side's display marks it a broadcaster (as Janus last accepted it).
    var displayedBroadcaster = false

    /// The stream description an engine gives a stream it does not send (a local mute), so the
    /// room's other participants learn of it; "live" when it sends again.
    static let mutedDescription = "muted"
    /// The mids of this side's publisher offer: audio, then video.
    static let publishedMids: [(kind: MediaKind, mid: String)] = [(.audio, "0"), (.video, "1")]

    /// How long an unpublished publisher may take to leave before it counts as audience: Janus
    /// sends "unpublished" then "leaving" when a participant leaves.
    static let leavingGraceMilliseconds = 1_500
    /// A publisher whose media stopped this long before it left counts as dropped.
    static let droppedSilenceMicroseconds: Int64 = 3_000_000

    init(
        transport: JanusTransport, channelId: String, room: JanusID, uid: UInt32, pin: String?, role: ClientRole,
        media: PublishedMedia, receivesMedia: Bool, endpoint: TransportEndpoint
    ) {
        self.transport = transport
        self.channelId = channelId
        self.room = room
        self.pin = pin
        self.uid = uid
        self.role = role
        self.media = media
        self.receivesMedia = receivesMedia
        self.endpoint = endpoint
    }

    /// The participant id `uid` has in rooms of this server.
    private nonisolated func participantId(_ uid: UInt32) -> JanusID {
        transport.configuration.numericIds ? .number(UInt64(uid)) : .string(String(uid))
    }

    /// The uid a remote participant id stands for: its number, or (an id that is not a
    /// number, as Janus draws them for clients that name none) a stable hash with the top bit
    /// set, apart from the numbers engines choose.
    nonisolated static func uid(of id: JanusID) -> UInt32 {
        switch id {
        case .number(let value): return UInt32(truncatingIfNeeded: value)
        case .string(let text):
            if let value = UInt32(text) { return value }
            var hash: UInt32 = 2_166_136_261
            for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
            return hash | 0x8000_0000
        }
    }

    /// Enters the room as a participant (its publisher handle), announces the publishers there
    /// and returns the uid in use. Subscribing and publishing follow in ``serve(leg:commands:)``.
    func join(leg: JanusChannelLeg) async throws -> UInt32 {
        let signalling = transport.signalling
        try await signalling.create()
        let handle = try await signalling.attach()
        self.handle = handle
        var joined: VideoRoomJoined?
        // Uid 0: one is drawn, and drawn again when it is taken (as the server would assign).
        for attempt in 0..<4 {
            let wanted = uid != 0 ? uid : UInt32.random(in: 100_000...999_999_999)
            do {
                joined = try await handle.joinAsPublisher(
                    room: room, id: participantId(wanted), display: displayText(broadcaster: false), pin: pin)
                uid = wanted
                break
            } catch let error as JanusError where error.pluginCode == JanusError.VideoRoomCode.idExists {
                if uid != 0 || attempt == 3 { throw error }
            }
        }
        guard let joined else { throw JanusError.badResponse("no 'joined' answer") }
        privateID = joined.privateID
        displayedBroadcaster = false
        publishersAtJoin = Set(joined.publishers.map { Self.uid(of: $0.id) })
        for publisher in joined.publishers { announce(publisher) }
        // Broadcasters that publish nothing: the VideoRoom lists them as participants only.
        do {
            for participant in try await handle.listParticipants(room: room)
            where !participant.publisher && Self.isBroadcaster(participant.display) {
                let uid = Self.uid(of: participant.id)
                publishersAtJoin.insert(uid)
                markBroadcaster(participant.id, display: participant.display)
            }
        } catch {
            transport.log("listing the participants of '\(channelId)' failed: \(error)")
        }
        // A broadcaster that will publish nothing is announced now; one that publishes is
        // announced by its publication (with its media).
        if role == .broadcaster && media.isEmpty { await updateDisplay(leg: leg) }
        return uid
    }

    /// The display this side has in the room: the configured name, ending with the
    /// broadcaster's mark when `broadcaster` (never nil: the VideoRoom tells others of a display
    /// change only when there was one).
    private nonisolated func displayText(broadcaster: Bool) -> String {
        let name = transport.configuration.display ?? ""
        guard broadcaster else { return name }
        return name.isEmpty ? JanusTransport.broadcasterMark : name + " " + JanusTransport.broadcasterMark
    }

    /// Whether `display` marks a broadcaster.
    nonisolated static func isBroadcaster(_ display: String?) -> Bool {
        display?.hasSuffix(JanusTransport.broadcasterMark) ?? false
    }

    /// Makes this side's display say what the room would not know otherwise (`configure` with
    /// `display`; Janus answers `configured: ok` and tells the room's other participants, in
    /// an event with `id` and `display`): marked while a broadcaster publishes nothing (the
    /// VideoRoom announces publishers only), kept marked while it stays broadcaster, unmarked
    /// when it becomes audience. A broadcaster that publishes from the start is announced by
    /// its publication (with its media, before any mark could reach the others) and is never
    /// marked.
    func updateDisplay(leg: JanusChannelLeg) async {
        let publishing = leg.publication.withLock { $0 } != nil
        let broadcaster = role == .broadcaster && (displayedBroadcaster || !publishing)
        guard broadcaster != displayedBroadcaster, let handle else { return }
        do {
            _ = try await handle.configure(extra: ["display": .string(displayText(broadcaster: broadcaster))])
            displayedBroadcaster = broadcaster
        } catch {
            transport.log("announcing the role in '\(channelId)' failed: \(error)")
        }
    }

    /// A remote participant whose display marks it a broadcaster: present (with no media when it
    /// publishes nothing).
    private func markBroadcaster(_ id: JanusID, display: String?) {
        let uid = Self.uid(of: id)
        guard uid != self.uid else { return }
        markedBroadcasters.insert(uid)
        guard publishers[uid] == nil else { return }
        remoteIds[uid] = id
        publishers[uid] = []
        endpoint?.transportUserJoined(channelId: channelId, uid: uid, media: [])
    }

    /// A remote participant's display changed (or it joined, in a room that tells joins).
    private func displayChanged(_ id: JanusID, display: String?, leg: JanusChannelLeg) async {
        let uid = Self.uid(of: id)
        if Self.isBroadcaster(display) {
            markBroadcaster(id, display: display)
        } else if markedBroadcasters.remove(uid) != nil {
            // A broadcaster no more: audience now (it unpublishes, if it published, next).
            unpublished[uid] = nil
            await gone(uid, reason: .becomeAudience, leg: leg)
        }
    }

    /// Serves the channel: subscribes and publishes as asked, then takes the room's events and
    /// the engine's commands until the channel is left.
    func serve(leg: JanusChannelLeg, commands: AsyncStream<JanusChannelLeg.Command>) async {
        guard handle != nil else { return }
        // The room's events, the engine's commands and the timers, merged into one ordered stream.
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        self.input = input
        forwardRoomEvents()
        let forwardCommands = Task {
            for await command in commands { input.yield(.command(command)) }
            input.finish()
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(JanusLegHealth.tickMilliseconds))
                input.yield(.tick)
            }
        }
        await subscribeAndPublish(leg: leg)
        for await next in inputs {
            switch next {
            case .event(let event): await roomEvent(event, leg: leg)
            case .settle(let uid, let serial):
                // Unpublished and still in the room after the grace period: audience now.
                if unpublished[uid] == serial {
                    unpublished[uid] = nil
                    if markedBroadcasters.contains(uid) {
                        // Still a broadcaster: it publishes nothing now.
                        if publishers[uid] != nil && publishers[uid] != [] {
                            publishers[uid] = []
                            endpoint?.transportMediaChanged(channelId: channelId, uid: uid, media: [])
                        }
                    } else {
                        await gone(uid, reason: .becomeAudience, leg: leg)
                    }
                }
            case .tick:
                await checkHealth(leg: leg)
                await reviveSilentLowLayers(leg: leg)
            case .probed(let answered, let client): probed(answered, client)
            case .hangup(let publisher, let handleId): await hungUp(publisher, handleId: handleId, leg: leg)
            case .resubscribe(let uid):
                if feedNotReady[uid] != nil && receivesMedia { await subscribe(uid, leg: leg) }
            case .command(.wanted(let publisher)): await tellWanted(publisher, leg: leg)
            case .command(.layer(let publisher)): await tellLayers(publisher, leg: leg)
            case .command(.leave):
                leaving = true
                input.finish()
            case .command(.role(let newRole)):
                role = newRole
                await updatePublication(leg: leg)
            case .command(.media(let newMedia)):
                media = newMedia
                await updatePublication(leg: leg)
            case .command(.session(let event, let client)): sessionChanged(event, client)
            }
            if leaving { break }
        }
        roomEventsTask?.cancel()
        forwardCommands.cancel()
        ticker.cancel()
        self.input = nil
        await tearDown(leg: leg)
    }

    /// Subscribes to every publisher present (when this side receives media) and publishes
    /// (when it is a broadcaster with media).
    func subscribeAndPublish(leg: JanusChannelLeg) async {
        if receivesMedia {
            for uid in publishers.keys.sorted() { await subscribe(uid, leg: leg) }
        }
        if role == .broadcaster && !media.isEmpty { await publish(leg: leg) }
    }

    /// Forwards the publisher handle's events (the room's, and its connection's) into the
    /// serving loop.
    func forwardRoomEvents() {
        roomEventsTask?.cancel()
        guard let handle, let input else { return }
        roomEventsTask = Task {
            for await event in handle.events { input.yield(.event(event)) }
        }
    }

    enum Input: Sendable {
        case event(JanusEvent)
        case command(JanusChannelLeg.Command)
        /// The grace period of an "unpublished" (numbered `serial`) is over.
        case settle(UInt32, serial: Int)
        /// Time to look at the connections' health.
        case tick
        /// A peer connection went down (Janus hung it up, or ICE or DTLS failed): a remote
        /// publisher's subscription on the handle given, or (nil) the publication.
        case hangup(UInt32?, handleId: UInt64)
        /// Whether Janus answered a keepalive on the session of the client given.
        case probed(Bool, JanusSignalling)
        /// Time to ask again for a subscription Janus refused with "No such feed".
        case resubscribe(UInt32)
    }

    /// A room event on the publisher handle.
    private func roomEvent(_ event: JanusEvent, leg: JanusChannelLeg) async {
        if case .hangup = event, let handle {
            await hungUp(nil, handleId: handle.id, leg: leg)
            return
        }
        guard case .plugin(let data, _) = event else { return }
        transport.logger.debug("room event in '\(channelId)': \(data)")
        for publisher in VideoRoomPublisher.list(in: data) {
            let uid = Self.uid(of: publisher.id)
            let known = publishers[uid] != nil
            // Published again within the grace period: the subscription it lost comes back.
            let resumed = unpublished.removeValue(forKey: uid) != nil
            // Listed again: a feed Janus had refused may be ready now.
            let refused = feedNotReady.removeValue(forKey: uid) != nil
            announce(publisher)
            // A known broadcaster that publishes now (it published nothing) is subscribed too.
            let unsubscribed = leg.subscriptions.withLock { $0[uid] } == nil
            if (!known || resumed || refused || unsubscribed) && receivesMedia { await subscribe(uid, leg: leg) }
        }
        if data["publishers"] == nil, let id = JanusID(data["id"]), let display = data["display"]?.stringValue {
            await displayChanged(id, display: display, leg: leg)
        }
        if let joining = data["joining"], let id = JanusID(joining["id"]) {
            await displayChanged(id, display: joining["display"]?.stringValue, leg: leg)
        }
        if let id = JanusID(data["unpublished"]) {
            // Stopped publishing: its media ends now; whether it left or became audience, its
            // "leaving" (or the lack of one within the grace period) tells.
            let uid = Self.uid(of: id)
            guard publishers[uid] != nil, unpublished[uid] == nil else { return }
            timerSerial += 1
            unpublished[uid] = timerSerial
            await closeSubscription(uid, leg: leg)
            let input = self.input
            let serial = timerSerial
            Task {
                try? await Task.sleep(for: .milliseconds(Self.leavingGraceMilliseconds))
                input?.yield(.settle(uid, serial: serial))
            }
        }
        for key in ["leaving", "kicked"] {
            guard let id = JanusID(data[key]) else { continue }
            let uid = Self.uid(of: id)
            unpublished[uid] = nil
            // A publisher silent for a while before Janus saw it go (its session timed out)
            // dropped; one that left as its media flowed quit.
            noteHeard(uid, leg: leg)
            let silence = wantsNothing(of: uid) ? .zero : lastHeard[uid].map { ContinuousClock.now - $0 } ?? .zero
            await gone(
                uid,
                reason: silence > .microseconds(Self.droppedSilenceMicroseconds) || key == "kicked" ? .dropped : .quit,
                leg: leg)
        }
    }

    /// Tells the engine of a publisher (new, or with other media).
    private func announce(_ publisher: VideoRoomPublisher) {
        let uid = Self.uid(of: publisher.id)
        guard uid != self.uid else { return }
        var media: PublishedMedia = []
        for stream in publisher.streams where !stream.disabled && stream.description != Self.mutedDescription {
            if stream.type == "audio" { media.insert(.audio) }
            if stream.type == "video" { media.insert(.video) }
        }
        remoteIds[uid] = publisher.id
        if Self.isBroadcaster(publisher.display) { markedBroadcasters.insert(uid) }
        let before = publishers[uid]
        publishers[uid] = media
        if before == nil {
            endpoint?.transportUserJoined(channelId: channelId, uid: uid, media: media)
        } else if before != media {
            endpoint?.transportMediaChanged(channelId: channelId, uid: uid, media: media)
        }
    }

    /// A publisher left or stopped publishing: its subscription ends and the engine is told.
    func gone(_ uid: UInt32, reason: UserOfflineReason, leg: JanusChannelLeg) async {
        guard publishers.removeValue(forKey: uid) != nil else { return }
        remoteIds[uid] = nil
        feedNotReady[uid] = nil
        markedBroadcasters.remove(uid)
        lastHeard[uid] = nil
        await closeSubscription(uid, leg: leg)
        endpoint?.transportUserOffline(channelId: channelId, uid: uid, reason: reason)
    }

    /// Ends the subscription to `uid`, if there is one.
    /// Notes when `uid`'s current subscription last heard its media.
    func noteHeard(_ uid: UInt32, leg: JanusChannelLeg) {
        guard let mapper = leg.subscriptions.withLock({ $0[uid] })?.mapper, mapper.counters.packets > 0 else { return }
        let heard = ContinuousClock.now - .microseconds(mapper.microsecondsSinceLastPacket)
        if lastHeard[uid].map({ heard > $0 }) ?? true { lastHeard[uid] = heard }
    }

    func closeSubscription(_ uid: UInt32, leg: JanusChannelLeg) async {
        noteHeard(uid, leg: leg)
        guard let subscription = leg.subscriptions.withLock({ $0.removeValue(forKey: uid) }) else { return }
        subscription.connection.close()
        // Not waited for: an unreachable Janus must not hold the channel's other work.
        Task { try? await subscription.handle.detach() }
    }

    /// Subscribes to `uid`'s streams over a connection of their own (Janus offers).
    func subscribe(_ uid: UInt32, leg: JanusChannelLeg) async {
        guard let id = remoteIds[uid], let endpoint, leg.subscriptions.withLock({ $0[uid] }) == nil else { return }
        do {
            let handle = try await transport.signalling.attach()
            // Janus hanging up this subscription's connection brings a new one.
            // Janus switching the subscription's substream is told to the engine.
            let input = self.input
            Task { [channelId, weak endpoint] in
                for await event in handle.events {
                    switch event {
                    case .hangup: input?.yield(.hangup(uid, handleId: handle.id))
                    case .plugin(let data, _):
                        if let substream = data["substream"]?.intValue {
                            let type = JanusLayerChoices.type(ofSubstream: substream)
                            leg.subscriptions.withLock { $0[uid] }?.mapper.videoLayer = type
                            endpoint?.transportVideoStreamTypeChanged(channelId: channelId, uid: uid, type: type)
                        }
                    default: break
                    }
                }
            }
            let reply: JanusReply
            do {
                reply = try await handle.joinAsSubscriber(
                    room: room, feeds: [VideoRoomFeed(id)], privateID: privateID, pin: pin)
            } catch let error as JanusError where error.pluginCode == JanusError.VideoRoomCode.noSuchFeed {
                Task { try? await handle.detach() }
                feedNotReady(uid, error)
                return
            }
            feedNotReady[uid] = nil
            guard let offer = reply.jsep, offer.type == "offer" else {
                throw JanusError.badResponse("no offer in the subscription's answer")
            }
            transport.logger.debug("subscription to \(uid) in '\(channelId)': Janus offers\n\(offer.sdp)")
            let remote = try SessionDescription(parsing: offer.sdp)
            let mapper = ReceivedPacketMapper(channelId: channelId, uid: uid, endpoint: endpoint)
            for kind in unwanted.withLock({ $0[uid] ?? [] }) { mapper.setSubscribed(false, kind) }
            let connection = try WebRTCConnection(
                controllingICE: false, certificate: transport.certificate,
                localAddresses: transport.configuration.localAddresses,
                handlers: .init(
                    rtp: { mapper.rtp($0) }, rtcp: { mapper.rtcp($0) },
                    state: { state in
                        // ICE or DTLS failed for good: the subscription is made anew.
                        if case .failed = state { input?.yield(.hangup(uid, handleId: handle.id)) }
                    }))
            let local = try JanusSDP.localTransport(
                connection, candidates: try connection.gatherCandidates(ports: transport.configuration.localPorts))
            let answer = JanusSDP.subscriberAnswer(to: remote, transport: local)
            let negotiation = try WebRTCNegotiation(local: answer, remote: remote)
            mapper.payloadTypes = JanusSDP.receiveMap(negotiation)
            var mids: [MediaKind: String] = [:]
            for stream in negotiation.streams where stream.receives { mids[stream.kind] = stream.mid }
            let subscription = JanusSubscription(handle: handle, connection: connection, mapper: mapper, mids: mids)
            leg.subscriptions.withLock { $0[uid] = subscription }
            transport.logger.debug(
                "subscription to \(uid) in '\(channelId)' on handle \(handle.id): \(local.candidates)")
            // What the engine does not want (remote mutes) Janus does not send, from the start.
            await tellWanted(uid, leg: leg)
            await tellLayer(uid, leg: leg)
            try await handle.start(answer: JanusJSEP(type: "answer", sdp: answer.text))
            try connection.start(
                remoteCredentials: .init(ufrag: negotiation.remoteICEUfrag, password: negotiation.remoteICEPassword),
                remoteCandidates: JanusSDP.remoteCandidates(negotiation),
                remoteFingerprint: try JanusSDP.fingerprintText(negotiation.remoteFingerprint))
        } catch {
            transport.log("subscribing to \(uid) in '\(channelId)' failed: \(error)")
        }
    }

    /// Janus refused to subscribe to `uid`: the publisher's feed is not started (its connection
    /// is still being set up) or is gone. Asked again shortly, a few times; then left until
    /// Janus lists the publisher again (or tells it left).
    private func feedNotReady(_ uid: UInt32, _ error: JanusError) {
        let attempts = (feedNotReady[uid] ?? 0) + 1
        feedNotReady[uid] = attempts
        guard attempts < Self.feedRetryAttempts else {
            transport.log("subscribing to \(uid) in '\(channelId)': no such feed after \(attempts) attempts (\(error))")
            return
        }
        transport.logger.debug("subscribing to \(uid) in '\(channelId)': \(error), asked again")
        let input = self.input
        Task {
            try? await Task.sleep(for: Self.feedRetryDelay)
            input?.yield(.resubscribe(uid))
        }
    }

    /// Tells Janus which of `uid`'s streams to send on its subscription: those the engine wants
    /// (`configure` with `streams: [{mid, send}]`; Janus answers `configured: ok`, and asks the
    /// publisher for a keyframe when video resumes). Only what changed since it was last told.
    func tellWanted(_ uid: UInt32, leg: JanusChannelLeg) async {
        guard let subscription = leg.subscriptions.withLock({ $0[uid] }) else { return }
        let unwanted = self.unwanted.withLock { $0[uid] ?? [] }.filter { subscription.mids[$0] != nil }
        let told = subscription.toldUnwanted.withLock { $0 }
        guard told != unwanted, !(told == nil && unwanted.isEmpty) else { return }
        var streams: [JSONValue] = []
        for kind in MediaKind.allCases {
            guard let mid = subscription.mids[kind], (told ?? []).contains(kind) != unwanted.contains(kind) else {
                continue
            }
            streams.append(.object(["mid": .string(mid), "send": .bool(!unwanted.contains(kind))]))
        }
        do {
            _ = try await subscription.handle.configure(extra: ["streams": .array(streams)])
            subscription.toldUnwanted.withLock { $0 = unwanted }
        } catch {
            transport.log("telling Janus which streams of \(uid) to send in '\(channelId)' failed: \(error)")
        }
    }

    /// Publishes or unpublishes as the role and media now ask. A broadcaster that mutes both
    /// streams stays published (sending neither); becoming audience unpublishes.
    ///
    /// The display tells the role where publishing does not (``updateDisplay(leg:)``): a
    /// broadcaster that publishes nothing is marked, an audience member unmarked before it
    /// unpublishes (others learn it became audience, not that it stopped publishing).
    private func updatePublication(leg: JanusChannelLeg) async {
        if role != .broadcaster { await updateDisplay(leg: leg) }
        let publishing = leg.publication.withLock { $0 } != nil
        if role == .broadcaster && !media.isEmpty && !publishing {
            await publish(leg: leg)
        } else if role != .broadcaster && publishing {
            let publication = leg.publication.withLock { publication in
                defer { publication = nil }
                return publication
            }
            publication?.connection.close()
            _ = try? await handle?.unpublish()
        } else if publishing {
            await announceSending()
        }
        if role == .broadcaster { await updateDisplay(leg: leg) }
    }

    /// Tells Janus which of this side's streams it sends (it forwards only those), and the room
    /// through the streams' descriptions.
    private func announceSending() async {
        var streams: [JSONValue] = []
        var descriptions: [JSONValue] = []
        for (kind, mid) in Self.publishedMids {
            let sends = media.contains(kind == .audio ? .audio : .video)
            streams.append(.object(["mid": .string(mid), "send": .bool(sends)]))
            descriptions.append(
                .object(["mid": .string(mid), "description": .string(sends ? "live" : Self.mutedDescription)]))
        }
        do {
            _ = try await handle?.configure(extra: ["streams": .array(streams), "descriptions": .array(descriptions)])
        } catch {
            transport.log("announcing the streams sent in '\(channelId)' failed: \(error)")
        }
    }

    /// Publishes this side's streams over a connection of their own (this side offers).
    func publish(leg: JanusChannelLeg) async {
        guard let handle, let endpoint, let streams = endpoint.transportLocalStreams() else { return }
        do {
            let connection = try WebRTCConnection(
                controllingICE: true, certificate: transport.certificate,
                localAddresses: transport.configuration.localAddresses,
                handlers: .init(
                    rtp: { _ in },
                    rtcp: { [channelId, weak endpoint] bytes in
                        endpoint?.transportReceiveRTCP(
                            Array(bytes), channelId: channelId, from: JanusTransport.serverUid)
                    },
                    state: { [input, handleId = handle.id] state in
                        if case .failed = state { input?.yield(.hangup(nil, handleId: handleId)) }
                    }))
            let local = try JanusSDP.localTransport(
                connection, candidates: try connection.gatherCandidates(ports: transport.configuration.localPorts))
            // Both streams are offered (mids "0" and "1"), so a mute is a flag, not a renegotiation.
            let offer = try JanusSDP.publisherOffer(streams: streams, media: [.audio, .video], transport: local)
            let reply = try await handle.configure(offer: JanusJSEP(type: "offer", sdp: offer.text))
            guard let answer = reply.jsep, answer.type == "answer" else {
                throw JanusError.badResponse("no answer to the publisher's offer")
            }
            transport.logger.debug("publishing in '\(channelId)': Janus answers\n\(answer.sdp)")
            let negotiation = try WebRTCNegotiation(local: offer, remote: try SessionDescription(parsing: answer.sdp))
            let simulcast = try JanusSDP.simulcastSending(negotiation, streams: streams)
            if streams.lowVideoSSRC != nil && streams.videoCodec == .vp8 && simulcast == nil {
                transport.log("publishing in '\(channelId)': Janus took no simulcast; the low video stream is not sent")
            }
            leg.publication.withLock {
                $0 = JanusPublication(
                    connection: connection, wirePayloadType: JanusSDP.sendMap(negotiation),
                    lowVideoSSRC: streams.lowVideoSSRC, simulcast: simulcast)
            }
            try connection.start(
                remoteCredentials: .init(ufrag: negotiation.remoteICEUfrag, password: negotiation.remoteICEPassword),
                remoteCandidates: JanusSDP.remoteCandidates(negotiation),
                remoteFingerprint: try JanusSDP.fingerprintText(negotiation.remoteFingerprint))
            // What is muted from the start is announced as such.
            if media != [.audio, .video] { await announceSending() }
        } catch {
            transport.log("publishing in '\(channelId)' failed: \(error)")
        }
    }

    /// Unsubscribes, unpublishes and leaves the room; closes every connection of the channel.
    func tearDown(leg: JanusChannelLeg) async {
        let subscriptions = leg.subscriptions.withLock { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        for subscription in subscriptions {
            subscription.connection.close()
            try? await subscription.handle.detach()
        }
        let publication = leg.publication.withLock { publication in
            defer { publication = nil }
            return publication
        }
        publication?.connection.close()
        if let handle {
            _ = try? await handle.leave()
            try? await handle.detach()
        }
        handle = nil
    }

    /// Whether the engine wants none of what `uid` publishes (it muted all of it remotely): Janus
    /// sends none of it, so its silence says nothing.
    func wantsNothing(of uid: UInt32) -> Bool {
        let media = publishers[uid] ?? []
        let notWanted = unwanted.withLock { $0[uid] ?? [] }
        return !media.isEmpty && (!media.contains(.audio) || notWanted.contains(.audio))
            && (!media.contains(.video) || notWanted.contains(.video))
    }

    /// Remembers which kinds the engine wants of `publisher` (any thread), for subscriptions
    /// made later.
    nonisolated func setSubscribedNow(_ subscribed: Bool, publisher: UInt32, kind: MediaKind) {
        unwanted.withLock { unwanted in
            if subscribed {
                unwanted[publisher]?.remove(kind)
            } else {
                unwanted[publisher, default: []].insert(kind)
            }
        }
    }

    /// The engine's error for a failed join.
    nonisolated func engineError(_ error: Error) -> EngineError {
        guard let janus = error as? JanusError else {
            return EngineError(.joinChannelRejected, "joining '\(channelId)' failed: \(error)")
        }
        switch janus.pluginCode {
        case JanusError.VideoRoomCode.noSuchRoom:
            return EngineError(.joinChannelRejected, "channel '\(channelId)' does not exist on the server (\(janus))")
        case JanusError.VideoRoomCode.idExists:
            return EngineError(.joinChannelRejected, "uid is taken in channel '\(channelId)' (\(janus))")
        case JanusError.VideoRoomCode.unauthorized:
            return EngineError(.invalidToken, "the server refused the token for '\(channelId)' (\(janus))")
        case JanusError.VideoRoomCode.missingElement where "\(janus)".contains("pin"):
            return EngineError(.invalidToken, "the server wants a token for '\(channelId)' (\(janus))")
        default:
            return EngineError(.joinChannelRejected, "joining '\(channelId)' failed: \(janus)")
        }
    }
}
