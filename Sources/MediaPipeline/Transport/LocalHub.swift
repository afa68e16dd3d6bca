/// The embedded transport: an in-process selective forwarding unit. Engines (users) join
/// channels on it; it forwards each RTP packet by reference to every subscriber of the
/// sender's channel, announces broadcasters to each other (audience members stay invisible, as
/// in a live channel) and carries RTCP feedback.
///
/// It is also the network simulator: each link (channel, publisher, receiver) can lose, delay,
/// jitter, reorder, duplicate and rate-limit packets (``LinkConditions``), deterministically
/// for a given seed and sequence of calls. Packets a link holds back arrive when the hub's
/// clock reaches their time, at the next ``send(_:stream:)`` or ``deliverDue()``: a
/// simulation that advances a virtual clock calls ``deliverDue()`` after each step.
///
/// Thread-safe. Endpoints are called outside the hub's lock.
public final class LocalHub: MediaTransport, Sendable {
    /// One member of a channel.
    private struct Member {
        let uid: UInt32
        /// Held strongly until the member leaves: an engine's endpoint holds the engine weakly,
        /// so an engine that goes away without leaving is still gone (its deinit leaves). A weak
        /// reference here would give the endpoint a side table, which every retain of it on the
        /// send path would then go through.
        var endpoint: TransportEndpoint?
        var role: ClientRole
        var media: PublishedMedia
        let receivesMedia: Bool
        /// Streams this member does not want, as ``streamKey(_:_:)``s.
        var unsubscribed: Set<UInt64> = []
        /// As a subscriber: the video layer wanted per publisher, and for publishers not named.
        var videoTypes: [UInt32: VideoStreamType] = [:]
        var defaultVideoType = VideoStreamType.high
        /// As a publisher: the SSRC of its (high) video, and of its low layer once it sent one,
        /// and whether it sends that layer (said by ``setSendsLowVideo(_:channelId:uid:)``
        /// or shown by a low packet). Once it sends or sent a low layer, its video goes through
        /// `VideoLayerForwarder`s.
        var videoSSRC: UInt32?
        var lowVideoSSRC: UInt32?
        var sendsLowVideo = false
        /// The SSRC its endpoint describes for its video (``TransportEndpoint/transportLocalStreams()``,
        /// read as it joins), known before any packet: a source that sends a picture's low frame
        /// before its high one has it rewritten to this from the first.
        var describedVideoSSRC: UInt32?
        /// The SSRC its subscribers see its video on: its high video's, as its packets show it
        /// or, before the first, as its endpoint describes it.
        var forwardedVideoSSRC: UInt32? { videoSSRC ?? describedVideoSSRC }
        /// Its last high video packet forwarded to every subscriber by reference, before it
        /// became layered: what they had last then, so the forwarders made at its first layered
        /// packet number on from there. Nil from then on (a subscriber that comes later had
        /// nothing), and when it was layered from its first packet.
        var lastHighVideo: RTPPacket?
        /// Whether its video goes through forwarders.
        var isLayered: Bool { sendsLowVideo || lowVideoSSRC != nil }

        /// One number per publisher and media kind.
        static func streamKey(_ publisher: UInt32, _ kind: MediaKind) -> UInt64 {
            UInt64(publisher) * 2 + (kind == .audio ? 0 : 1)
        }
        var isBroadcaster: Bool { role == .broadcaster }

        /// Notes whether it sends a low layer; returns true when that unsaid a low layer no
        /// packet of which came (its video goes by reference again).
        mutating func setSendsLowVideo(_ sending: Bool) -> Bool {
            guard sendsLowVideo != sending else { return false }
            sendsLowVideo = sending
            return !isLayered
        }
    }

    /// A member that receives media, as the send path sees it: immutable, so a snapshot of
    /// them can be used outside the lock. It holds the endpoint strongly, as the member does. A
    /// value: the send path walks them in one buffer, which the processor reads ahead.
    private struct Recipient: Sendable {
        let uid: UInt32
        let endpoint: TransportEndpoint?
        /// Streams this member does not want, as ``Member/streamKey(_:_:)``s.
        let unsubscribed: Set<UInt64>
        let videoTypes: [UInt32: VideoStreamType]
        let defaultVideoType: VideoStreamType

        init(_ member: Member) {
            uid = member.uid
            endpoint = member.endpoint
            unsubscribed = member.unsubscribed
            videoTypes = member.videoTypes
            defaultVideoType = member.defaultVideoType
        }

        /// The layer this member wants of `publisher`'s video.
        func videoType(of publisher: UInt32) -> VideoStreamType { videoTypes[publisher] ?? defaultVideoType }
    }

    /// One subscriber's view of one publisher's layered video.
    private struct ForwarderKey: Hashable {
        var channelId: String
        var subscriber: UInt32
        var publisher: UInt32

        init(_ channelId: String, _ subscriber: UInt32, _ publisher: UInt32) {
            (self.channelId, self.subscriber, self.publisher) = (channelId, subscriber, publisher)
        }
    }

    /// What one layered packet's forwarding leaves to do outside the lock: deliveries, keyframe
    /// requests to the publisher (from a subscriber, for an SSRC), and switches to announce.
    /// Kept in the hub between packets so its arrays keep their storage.
    private struct LayeredWork: Sendable {
        struct Delivery: Sendable {
            let endpoint: TransportEndpoint
            let receiver: UInt32
            let packet: RTPPacket
        }
        var deliveries: [Delivery] = []
        var keyframeRequests: [(subscriber: UInt32, ssrc: UInt32)] = []
        var switches: [(endpoint: TransportEndpoint, type: VideoStreamType)] = []

        mutating func clear() {
            deliveries.removeAll(keepingCapacity: true)
            keyframeRequests.removeAll(keepingCapacity: true)
            switches.removeAll(keepingCapacity: true)
        }
    }

    /// How one packet is forwarded: not at all (its sender is gone or not a broadcaster), to
    /// every receiver by reference, or through the layered publisher's forwarders.
    private enum SendPath {
        case none
        case plain([Recipient], TransportEndpoint, hasLinks: Bool)
        case layered
    }

    private struct Room {
        var members: [UInt32: Member] = [:]
        var order: [UInt32] = []
        /// Members that receive media, in join order: a snapshot rebuilt whenever membership or
        /// a subscription changes, so sending takes it in one lock hold and never allocates.
        var receivers: [Recipient] = []

        /// How `packet` of `stream` is forwarded, noting what a video packet says of its sender
        /// (its layers' SSRCs, its last high packet). Reads and writes the sender in place: one
        /// lookup, no copy of the member.
        mutating func sendPath(_ packet: RTPPacket, stream: MediaStreamID, hasLinks: Bool) -> SendPath {
            guard let index = members.index(forKey: stream.uid) else { return .none }
            // One in-place access to the member (a read through `values[index]` copies it whole).
            return Self.sendPath(of: &members.values[index], packet, stream, receivers, hasLinks)
        }

        private static func sendPath(
            of sender: inout Member, _ packet: RTPPacket, _ stream: MediaStreamID, _ receivers: [Recipient],
            _ hasLinks: Bool
        ) -> SendPath {
            guard sender.isBroadcaster, let endpoint = sender.endpoint else { return .none }
            if stream.kind == .video {
                let ssrc = packet.header.ssrc
                if stream.layer == .low {
                    if sender.lowVideoSSRC != ssrc || !sender.sendsLowVideo {
                        sender.lowVideoSSRC = ssrc
                        sender.sendsLowVideo = true
                    }
                } else {
                    sender.videoSSRC = ssrc
                }
                if sender.isLayered { return .layered }
                sender.lastHighVideo = packet
            }
            return .plain(receivers, endpoint, hasLinks: hasLinks)
        }

        mutating func rebuildReceivers() {
            receivers = order.compactMap { members[$0] }.filter(\.receivesMedia).map(Recipient.init)
        }
    }

    private struct LinkKey: Hashable {
        var channelId: String
        var publisher: UInt32
        var receiver: UInt32
    }

    /// Everything the hub knows, as one value in one lock.
    private struct Network {
        var rooms: [String: Room] = [:]
        var links: [LinkKey: SimulatedLink] = [:]
        var held = DeliveryQueue()
        var nextAssignedUid: UInt32 = 10_000
        var packetsForwarded: Int64 = 0
        /// Per subscriber of a layered publisher: which layer it gets, and how it is rewritten.
        var forwarders: [ForwarderKey: VideoLayerForwarder] = [:]
        var layeredWork = LayeredWork()
    }

    private let network = LockedValue(Network())
    private let clock: MediaClock?
    private let seed: UInt64

    /// An empty hub. Links that delay packets need `clock` (the session's); `seed` fixes every
    /// link's random choices.
    public init(clock: MediaClock? = nil, seed: UInt64 = 0) {
        self.clock = clock
        self.seed = seed
    }

    // MARK: - Membership

    /// Answers at once, on the calling thread: the hub has no round trip. (``join(channelId:uid:role:media:receivesMedia:endpoint:)``
    /// is the same, returning the answer.)
    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        do {
            answer(
                .success(
                    try join(
                        channelId: channelId, uid: uid, role: role, media: media, receivesMedia: receivesMedia,
                        endpoint: endpoint)))
        } catch let error as EngineError {
            answer(.failure(error))
        } catch {
            answer(.failure(EngineError(.notReady, "\(error)")))
        }
    }

    /// Enters `channelId` as `uid` (0: the hub assigns one) and returns the uid in use, for
    /// members that are not engines (load generators, tests).
    /// - Throws: ``EngineError/Code/joinChannelRejected`` when the uid is taken in that channel.
    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint
    ) throws -> UInt32 {
        var notifications: [() -> Void] = []
        let describedVideoSSRC = endpoint.transportLocalStreams()?.videoSSRC
        let assigned: UInt32 = try network.withLock { network in
            var room = network.rooms[channelId] ?? Room()
            var chosen = uid
            if chosen == 0 {
                repeat {
                    network.nextAssignedUid &+= 1
                    chosen = network.nextAssignedUid
                } while room.members[chosen] != nil || chosen == 0
            }
            guard room.members[chosen] == nil else {
                throw EngineError(.joinChannelRejected, "uid \(chosen) is already in channel '\(channelId)'")
            }
            var member = Member(uid: chosen, endpoint: endpoint, role: role, media: media, receivesMedia: receivesMedia)
            member.describedVideoSSRC = describedVideoSSRC
            // The newcomer learns about the broadcasters present; they learn about a broadcaster newcomer.
            if receivesMedia {
                for other in room.order.compactMap({ room.members[$0] })
                where other.isBroadcaster && other.endpoint != nil && other.endpoint !== endpoint {
                    let (otherUid, otherMedia) = (other.uid, other.media)
                    notifications.append {
                        endpoint.transportUserJoined(channelId: channelId, uid: otherUid, media: otherMedia)
                    }
                }
            }
            if member.isBroadcaster {
                notifications += announce(room, except: endpoint) {
                    $0.transportUserJoined(channelId: channelId, uid: chosen, media: media)
                }
            }
            room.members[chosen] = member
            room.order.append(chosen)
            room.rebuildReceivers()
            network.rooms[channelId] = room
            return chosen
        }
        for notify in notifications { notify() }
        return assigned
    }

    public func leave(channelId: String, uid: UInt32) { remove(channelId: channelId, uid: uid, reason: .quit) }

    /// Removes `uid` from `channelId` as if its connection dropped: the others see
    /// ``UserOfflineReason/dropped``.
    public func drop(channelId: String, uid: UInt32) { remove(channelId: channelId, uid: uid, reason: .dropped) }

    private func remove(channelId: String, uid: UInt32, reason: UserOfflineReason) {
        let notifications: [() -> Void] = network.withLock { network in
            guard var room = network.rooms[channelId], let member = room.members.removeValue(forKey: uid) else {
                return []
            }
            room.order.removeAll { $0 == uid }
            // What the others wanted of its video goes with it (their engines ask again).
            for other in room.order where room.members[other]?.videoTypes[uid] != nil {
                room.members[other]?.videoTypes[uid] = nil
            }
            room.rebuildReceivers()
            network.rooms[channelId] = room.members.isEmpty ? nil : room
            if !network.forwarders.isEmpty {
                network.forwarders = network.forwarders.filter {
                    $0.key.channelId != channelId || ($0.key.subscriber != uid && $0.key.publisher != uid)
                }
            }
            guard member.isBroadcaster else { return [] }
            return announce(room, except: member.endpoint) {
                $0.transportUserOffline(channelId: channelId, uid: uid, reason: reason)
            }
        }
        for notify in notifications { notify() }
    }

    public func setRole(channelId: String, uid: UInt32, role: ClientRole) {
        let notifications: [() -> Void] = network.withLock { network in
            guard var room = network.rooms[channelId], var member = room.members[uid], member.role != role else {
                return []
            }
            member.role = role
            room.members[uid] = member  // the receivers' snapshot holds no role: it stands
            network.rooms[channelId] = room
            let media = member.media
            return announce(room, except: member.endpoint) { endpoint in
                if role == .broadcaster {
                    endpoint.transportUserJoined(channelId: channelId, uid: uid, media: media)
                } else {
                    endpoint.transportUserOffline(channelId: channelId, uid: uid, reason: .becomeAudience)
                }
            }
        }
        for notify in notifications { notify() }
    }

    public func setMedia(channelId: String, uid: UInt32, media: PublishedMedia) {
        let notifications: [() -> Void] = network.withLock { network in
            guard var room = network.rooms[channelId], var member = room.members[uid], member.media != media else {
                return []
            }
            member.media = media
            room.members[uid] = member
            network.rooms[channelId] = room
            guard member.isBroadcaster else { return [] }
            return announce(room, except: member.endpoint) {
                $0.transportMediaChanged(channelId: channelId, uid: uid, media: media)
            }
        }
        for notify in notifications { notify() }
    }

    /// Closures that tell every media-receiving member of `room`, except `endpoint`, something.
    private func announce(
        _ room: Room, except endpoint: TransportEndpoint?, _ tell: @escaping (TransportEndpoint) -> Void
    )
        -> [() -> Void]
    {
        room.receivers.compactMap { member in
            guard let target = member.endpoint, target !== endpoint else { return nil }
            return { tell(target) }
        }
    }

    // MARK: - Media

    /// Forwards `packet` of `stream`. A publisher's video goes through a `VideoLayerForwarder`
    /// per subscriber once it said it sends a low layer or sent one; until then (and for audio)
    /// each packet goes to every subscriber by reference.
    public func send(_ packet: RTPPacket, stream: MediaStreamID) {
        // One lock hold: the room's receivers as they are now (subscriptions included).
        let (path, hasHeld) = network.withLock { network -> (SendPath, Bool) in
            let hasHeld = !network.held.isEmpty
            guard let room = network.rooms.index(forKey: stream.channelId) else { return (.none, hasHeld) }
            let path = network.rooms.values[room].sendPath(packet, stream: stream, hasLinks: !network.links.isEmpty)
            return (path, hasHeld)
        }
        if hasHeld { deliverDue() }
        switch path {
        case .none:
            return
        case .layered:
            sendLayered(packet, stream: stream)
        case .plain(let receivers, let senderEndpoint, let hasLinks):
            let key = Member.streamKey(stream.uid, stream.kind)
            var delivered: Int64 = 0
            for receiver in receivers {
                guard let endpoint = receiver.endpoint, endpoint !== senderEndpoint,
                    !receiver.unsubscribed.contains(key)
                else { continue }
                delivered += deliver(packet, hasLinks: hasLinks, stream: stream, to: receiver.uid, endpoint)
            }
            network.withLock { $0.packetsForwarded += delivered }
        }
    }

    /// Delivers `packet` of `stream` to `receiver` across their link (if links are set);
    /// returns the copies delivered now.
    private func deliver(
        _ packet: RTPPacket, hasLinks: Bool, stream: MediaStreamID, to receiver: UInt32, _ endpoint: TransportEndpoint
    ) -> Int64 {
        var copies = 1
        if hasLinks {
            let key = LinkKey(channelId: stream.channelId, publisher: stream.uid, receiver: receiver)
            copies = route(.rtp(packet, stream), byteCount: packet.bytes.count, key: key, to: endpoint)
        }
        for _ in 0..<copies { endpoint.transportReceive(packet, stream: stream) }
        return Int64(copies)
    }

    /// Forwards a layered publisher's video packet: each subscriber's forwarder decides (under
    /// the lock, as its state is per packet), then the deliveries, keyframe requests and switch
    /// announcements go out.
    private func sendLayered(_ packet: RTPPacket, stream: MediaStreamID) {
        let (channelId, uid, layer) = (stream.channelId, stream.uid, stream.layer)
        var work = LayeredWork()
        let (publisher, hasLinks) = network.withLock { network -> (TransportEndpoint?, Bool) in
            swap(&work, &network.layeredWork)
            guard let room = network.rooms[channelId], let sender = room.members[uid], let endpoint = sender.endpoint,
                let highSSRC = sender.forwardedVideoSSRC
            else { return (nil, false) }
            let stream = Member.streamKey(uid, .video)
            // The subscribers present now had the publisher's last plain packet; those who come
            // later had nothing, and their forwarders wait for a keyframe of what they want.
            defer {
                if sender.lastHighVideo != nil { network.rooms[channelId]?.members[uid]?.lastHighVideo = nil }
            }
            for receiver in room.receivers {
                guard let target = receiver.endpoint, target !== endpoint, !receiver.unsubscribed.contains(stream)
                else {
                    continue
                }
                let wanted = sender.sendsLowVideo ? receiver.videoType(of: uid) : .high
                let key = ForwarderKey(channelId, receiver.uid, uid)
                // Found by index and changed in place: the `default:` subscript taken inout
                // allocates twice per call in release builds.
                var index = network.forwarders.index(forKey: key)
                if index == nil {
                    network.forwarders[key] = VideoLayerForwarder(target: wanted, after: sender.lastHighVideo)
                    index = network.forwarders.index(forKey: key)
                }
                // A keyframe of the wanted layer is asked for once a packet of it was seen (a low
                // layer said to come is asked for at its first packet if that is no keyframe; the
                // high one, at a low packet before any high one, is on its way, keyframe first).
                let wantedSSRC = wanted == .low ? sender.lowVideoSSRC : sender.videoSSRC
                let (decision, switched, request) = Self.decide(
                    &network.forwarders.values[index!], packet, layer, wanted, highSSRC: highSSRC,
                    mayRequest: wantedSSRC != nil)
                if request, let wantedSSRC { work.keyframeRequests.append((receiver.uid, wantedSSRC)) }
                if switched { work.switches.append((target, layer)) }
                switch decision {
                case .drop: continue
                case .forward: work.deliveries.append(.init(endpoint: target, receiver: receiver.uid, packet: packet))
                case .rewritten(let out):
                    work.deliveries.append(.init(endpoint: target, receiver: receiver.uid, packet: out))
                }
            }
            return (endpoint, !network.links.isEmpty)
        }
        var delivered: Int64 = 0
        for delivery in work.deliveries {
            delivered += deliver(
                delivery.packet, hasLinks: hasLinks, stream: stream, to: delivery.receiver, delivery.endpoint)
        }
        for request in work.keyframeRequests {
            let message = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: 0, mediaSSRC: request.ssrc)])
            publisher?.transportReceiveRTCP(message, channelId: channelId, from: request.subscriber)
        }
        for change in work.switches {
            change.endpoint.transportVideoStreamTypeChanged(channelId: channelId, uid: uid, type: change.type)
        }
        work.clear()
        network.withLock {
            $0.packetsForwarded += delivered
            swap(&work, &$0.layeredWork)
        }
    }

    /// One forwarder's decision on a packet, with whether it switched and whether a keyframe
    /// request for the wanted layer is due (taken only when it `mayRequest`: the layer's SSRC
    /// is known).
    private static func decide(
        _ forwarder: inout VideoLayerForwarder, _ packet: RTPPacket, _ layer: VideoStreamType,
        _ wanted: VideoStreamType, highSSRC: UInt32, mayRequest: Bool
    ) -> (VideoLayerForwarder.Decision, Bool, Bool) {
        forwarder.want(wanted)
        let (decision, switched) = forwarder.forward(packet, layer: layer, highSSRC: highSSRC)
        return (decision, switched, mayRequest && forwarder.takeKeyframeRequest())
    }
    /// Carries a retransmission of `stream` to `recipient` only, across their link, if the
    /// recipient still receives that stream.
    public func resend(_ packet: RTPPacket, stream: MediaStreamID, to recipient: UInt32) {
        let (channelId, uid) = (stream.channelId, stream.uid)
        let (target, out, hasLinks, hasHeld) = network.withLock {
            network -> (TransportEndpoint?, RTPPacket, Bool, Bool) in
            guard let room = network.rooms[channelId], let member = room.members[recipient], member.receivesMedia,
                !member.unsubscribed.contains(Member.streamKey(uid, stream.kind))
            else { return (nil, packet, false, !network.held.isEmpty) }
            var out = packet
            if stream.kind == .video, let publisher = room.members[uid], let highSSRC = publisher.forwardedVideoSSRC,
                let lowSSRC = publisher.lowVideoSSRC
            {
                // A layered publisher's packet goes as the recipient's forwarder rewrites it.
                let key = ForwarderKey(channelId, recipient, uid)
                let layer: VideoStreamType = packet.header.ssrc == lowSSRC ? .low : .high
                switch network.forwarders[key]?.retransmission(packet, layer: layer, highSSRC: highSSRC) {
                case .drop, nil: return (nil, packet, false, !network.held.isEmpty)
                case .forward: break
                case .rewritten(let rewritten): out = rewritten
                }
            }
            return (member.endpoint, out, !network.links.isEmpty, !network.held.isEmpty)
        }
        if hasHeld { deliverDue() }
        guard let target else { return }
        let copies = deliver(out, hasLinks: hasLinks, stream: stream, to: recipient, target)
        network.withLock { $0.packetsForwarded += copies }
    }

    /// Carries RTCP from `uid` to `recipient`; recipient 0 means every other member receiving
    /// media in the channel (a sender report). RTCP goes the media's way across the link from
    /// `uid` to `recipient` when there is one (a sender report, an answer to a receiver's
    /// reference time); otherwise it is feedback to a publisher and crosses the link of the media
    /// it is about the other way.
    public func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32) {
        let (target, receivers, senderEndpoint, hasLinks, hasHeld, bytes) = network.withLock { network in
            let room = network.rooms[channelId]
            // Feedback on a layered publisher's video names what the subscriber sees: said again
            // about the layers it was forwarded from.
            var bytes = bytes
            if recipient != 0, let forwarder = network.forwarders[ForwarderKey(channelId, uid, recipient)],
                let publisher = room?.members[recipient], let highSSRC = publisher.forwardedVideoSSRC,
                let lowSSRC = publisher.lowVideoSSRC
            {
                bytes = forwarder.translateFeedback(bytes, highSSRC: highSSRC, lowSSRC: lowSSRC)
            }
            return (
                room?.members[recipient]?.endpoint, recipient == 0 ? room?.receivers ?? [] : [],
                room?.members[uid]?.endpoint, !network.links.isEmpty, !network.held.isEmpty, bytes
            )
        }
        if hasHeld { deliverDue() }
        if recipient == 0 {
            for receiver in receivers {
                guard receiver.uid != uid, let endpoint = receiver.endpoint, endpoint !== senderEndpoint else {
                    continue
                }
                var copies = 1
                if hasLinks {
                    let key = LinkKey(channelId: channelId, publisher: uid, receiver: receiver.uid)
                    copies = route(
                        .rtcp(bytes, channelId: channelId, from: uid), byteCount: bytes.count, key: key, to: endpoint)
                }
                for _ in 0..<copies { endpoint.transportReceiveRTCP(bytes, channelId: channelId, from: uid) }
            }
            return
        }
        guard let target else { return }
        var copies = 1
        if hasLinks {
            copies = route(
                .rtcp(bytes, channelId: channelId, from: uid), byteCount: bytes.count,
                key: LinkKey(channelId: channelId, publisher: uid, receiver: recipient),
                orElse: LinkKey(channelId: channelId, publisher: recipient, receiver: uid), to: target)
        }
        for _ in 0..<copies { target.transportReceiveRTCP(bytes, channelId: channelId, from: uid) }
    }

    /// Applies the link `key`'s conditions (or, when it has none, `fallback`'s) to one packet:
    /// returns how many copies to deliver now (0, 1 or 2); copies that arrive later are held.
    private func route(
        _ payload: DeliveryQueue.Payload, byteCount: Int, key preferred: LinkKey, orElse fallback: LinkKey? = nil,
        to endpoint: TransportEndpoint
    ) -> Int {
        let now = clock?.nowMicroseconds ?? 0
        return network.withLock { network in
            let key = network.links[preferred] == nil ? fallback ?? preferred : preferred
            guard var link = network.links[key] else { return 1 }
            let fate = link.fate(byteCount: byteCount, now: now)
            network.links[key] = link
            guard let fate else { return 0 }
            var immediate = fate.first <= 0 ? 1 : 0
            if fate.first > 0 {
                network.held.push(payload, to: endpoint, dueMicroseconds: now + fate.first)
            }
            if let second = fate.second {
                if second <= 0 {
                    immediate += 1
                } else {
                    network.held.push(payload, to: endpoint, dueMicroseconds: now + second)
                }
            }
            return immediate
        }
    }

    /// Delivers every held packet whose time has come on the hub's clock, in arrival order.
    public func deliverDue() {
        let now = clock?.nowMicroseconds ?? .max
        while let delivery = network.withLock({ $0.held.popDue(now: now) }) {
            guard let endpoint = delivery.endpoint else { continue }
            switch delivery.payload {
            case .rtp(let packet, let stream):
                network.withLock { $0.packetsForwarded += 1 }
                endpoint.transportReceive(packet, stream: stream)
            case .rtcp(let bytes, let channelId, let from):
                endpoint.transportReceiveRTCP(bytes, channelId: channelId, from: from)
            }
        }
    }

    public func setSubscribed(_ subscribed: Bool, to stream: MediaStreamID, subscriber: UInt32) {
        network.withLock { network in
            guard var room = network.rooms[stream.channelId], var member = room.members[subscriber] else { return }
            let key = Member.streamKey(stream.uid, stream.kind)
            if subscribed { member.unsubscribed.remove(key) } else { member.unsubscribed.insert(key) }
            room.members[subscriber] = member
            room.rebuildReceivers()
            network.rooms[stream.channelId] = room
        }
    }

    public func setRemoteVideoStreamType(
        _ type: VideoStreamType, channelId: String, subscriber: UInt32, publisher: UInt32?
    ) {
        network.withLock { network in
            guard var room = network.rooms[channelId], var member = room.members[subscriber] else { return }
            if let publisher {
                member.videoTypes[publisher] = type
            } else {
                member.defaultVideoType = type
            }
            room.members[subscriber] = member
            room.rebuildReceivers()
            network.rooms[channelId] = room
        }
    }

    public func setSendsLowVideo(_ sending: Bool, channelId: String, uid: UInt32) {
        network.withLock { network in
            // Said at every picture: found by index and changed in place (a read through
            // `values[index]` copies the member).
            guard let room = network.rooms.index(forKey: channelId),
                let member = network.rooms.values[room].members.index(forKey: uid),
                network.rooms.values[room].members.values[member].setSendsLowVideo(sending)
            else { return }
            // Said and unsaid before any low packet came: the forwarders made meanwhile (some
            // never forwarded anything) go, so that a later start makes them afresh from what
            // the subscribers had by then.
            network.forwarders = network.forwarders.filter { $0.key.channelId != channelId || $0.key.publisher != uid }
        }
    }

    /// The layer of `publisher`'s video that `subscriber` gets in `channelId` now; nil when the
    /// publisher never sent or announced a low layer (every subscriber gets its one stream), or
    /// nothing of its layered video has reached the subscriber yet.
    public func forwardedVideoStreamType(channelId: String, subscriber: UInt32, publisher: UInt32) -> VideoStreamType? {
        let key = ForwarderKey(channelId, subscriber, publisher)
        return network.withLock { $0.forwarders[key]?.current ?? nil }
    }

    // MARK: - Impairments

    /// Applies `conditions` to the link from `publisher` to `receiver` (uids) in `channelId`: to
    /// the media packets that way and to the receiver's RTCP the other way. A link keeps its
    /// random stream and counters when its conditions change.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a value out of range, or for conditions
    ///   that hold packets back on a hub made without a clock.
    public func setLinkConditions(
        _ conditions: LinkConditions, channelId: String, publisher: UInt32, receiver: UInt32
    ) throws {
        try conditions.validate()
        if conditions.delays && clock == nil {
            throw MediaError.invalidArgument(
                "link delay, jitter, reordering or bandwidth needs a hub made with a clock")
        }
        let key = LinkKey(channelId: channelId, publisher: publisher, receiver: receiver)
        network.withLock { network in
            if network.links[key] != nil {
                network.links[key]!.conditions = conditions
                return
            }
            // The link's random stream depends on the hub's seed and the link's names only.
            var mix = SplitMix64(seed: seed ^ UInt64(publisher) << 32 ^ UInt64(receiver))
            var linkSeed = mix.next()
            for byte in channelId.utf8 { linkSeed = (linkSeed ^ UInt64(byte)) &* 0x100_0000_01B3 }
            network.links[key] = SimulatedLink(conditions: conditions, seed: linkSeed)
        }
    }

    /// What the link from `publisher` to `receiver` (uids) in `channelId` did so far (nil when it
    /// was never given conditions).
    public func linkStatistics(channelId: String, publisher: UInt32, receiver: UInt32) -> LinkStatistics? {
        let key = LinkKey(channelId: channelId, publisher: publisher, receiver: receiver)
        return network.withLock { $0.links[key]?.statistics }
    }

    /// Packets held back by links, not yet delivered.
    public var packetsInFlight: Int { network.withLock { $0.held.count } }

    /// Tells member `uid` of `channelId` that its connection changed (a simulated interruption,
    /// recovery or loss).
    public func notifyConnectionState(
        _ state: ConnectionState, reason: ConnectionChangedReason, channelId: String, uid: UInt32
    ) {
        let endpoint = network.withLock { $0.rooms[channelId]?.members[uid]?.endpoint }
        endpoint?.transportConnectionStateChanged(channelId: channelId, state: state, reason: reason)
    }

    // MARK: - Inspection

    /// Members of `channelId` in join order, with their roles.
    public func members(of channelId: String) -> [(uid: UInt32, role: ClientRole)] {
        network.withLock { network in
            guard let room = network.rooms[channelId] else { return [] }
            return room.order.compactMap { room.members[$0] }.map { ($0.uid, $0.role) }
        }
    }

    /// RTP packet deliveries made so far (one per copy delivered to a receiving endpoint).
    public var deliveries: Int64 { network.withLock { $0.packetsForwarded } }
}
