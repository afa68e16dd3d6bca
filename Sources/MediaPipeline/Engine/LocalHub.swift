/// The embedded transport: an in-process selective forwarding unit. Engines (users) join
/// channels on it; it forwards each RTP packet by reference to every subscriber of the
/// sender's channel, announces broadcasters to each other (audience members stay invisible, as
/// in a live channel), carries RTCP feedback, and can impair links for tests.
///
/// Thread-safe. Endpoints are called outside the hub's lock.
public final class LocalHub: MediaTransport, @unchecked Sendable {
    /// Conditions applied to packets from one publisher to one receiving endpoint.
    public struct LinkConditions: Sendable, Equatable {
        /// Drop every packet (a network outage).
        public var blocked = false
        /// Drop this percentage of packets, 0...100, deterministically spread.
        public var lossPercent = 0
        /// No impairment.
        public init(blocked: Bool = false, lossPercent: Int = 0) {
            self.blocked = blocked
            self.lossPercent = lossPercent
        }
    }

    private final class Member {
        let uid: UInt32
        /// Weak: an engine that goes away without leaving is simply gone (its deinit leaves).
        weak var endpoint: TransportEndpoint?
        var role: ClientRole
        var media: PublishedMedia
        let receivesMedia: Bool
        /// Streams this member does not want, as ``streamKey(_:_:)``s.
        var unsubscribed: Set<UInt64> = []

        /// One number per publisher and media kind.
        static func streamKey(_ publisher: UInt32, _ kind: MediaKind) -> UInt64 {
            UInt64(publisher) * 2 + (kind == .audio ? 0 : 1)
        }
        init(uid: UInt32, endpoint: TransportEndpoint, role: ClientRole, media: PublishedMedia, receivesMedia: Bool) {
            self.uid = uid
            self.endpoint = endpoint
            self.role = role
            self.media = media
            self.receivesMedia = receivesMedia
        }
        var isBroadcaster: Bool { role == .broadcaster }
    }

    private struct Room {
        var members: [UInt32: Member] = [:]
        var order: [UInt32] = []
        /// Members that receive media, rebuilt on membership change so sending never allocates.
        var receivers: [Member] = []

        mutating func rebuildReceivers() { receivers = order.compactMap { members[$0] }.filter(\.receivesMedia) }
    }

    private struct LinkKey: Hashable {
        var channelId: String
        var publisher: UInt32
        var receiver: ObjectIdentifier
    }

    private let lock = Lock()
    private var rooms: [String: Room] = [:]
    private var links: [LinkKey: (conditions: LinkConditions, counter: Int)] = [:]
    private var nextAssignedUid: UInt32 = 10_000
    private var packetsForwarded: Int64 = 0

    /// An empty hub.
    public init() {}

    // MARK: - Membership

    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint
    ) throws -> UInt32 {
        var notifications: [() -> Void] = []
        let assigned: UInt32 = try lock.withLock {
            var room = rooms[channelId] ?? Room()
            var chosen = uid
            if chosen == 0 {
                repeat {
                    nextAssignedUid &+= 1
                    chosen = nextAssignedUid
                } while room.members[chosen] != nil || chosen == 0
            }
            guard room.members[chosen] == nil else {
                throw EngineError(.joinChannelRejected, "uid \(chosen) is already in channel '\(channelId)'")
            }
            let member = Member(uid: chosen, endpoint: endpoint, role: role, media: media, receivesMedia: receivesMedia)
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
            rooms[channelId] = room
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
        let notifications: [() -> Void] = lock.withLock {
            guard var room = rooms[channelId], let member = room.members.removeValue(forKey: uid) else { return [] }
            room.order.removeAll { $0 == uid }
            room.rebuildReceivers()
            rooms[channelId] = room.members.isEmpty ? nil : room
            guard member.isBroadcaster else { return [] }
            return announce(room, except: member.endpoint) {
                $0.transportUserOffline(channelId: channelId, uid: uid, reason: reason)
            }
        }
        for notify in notifications { notify() }
    }

    public func setRole(channelId: String, uid: UInt32, role: ClientRole) {
        let notifications: [() -> Void] = lock.withLock {
            guard let room = rooms[channelId], let member = room.members[uid], member.role != role else { return [] }
            member.role = role
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
        let notifications: [() -> Void] = lock.withLock {
            guard let room = rooms[channelId], let member = room.members[uid], member.media != media else { return [] }
            member.media = media
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

    public func send(_ packet: RTPPacket, channelId: String, from uid: UInt32) {
        guard let codec = RTPPayloadType.codec(packet.header.payloadType) else { return }
        let (receivers, sender, hasLinks) = lock.withLock { () -> ([Member], Member?, Bool) in
            guard let room = rooms[channelId], let sender = room.members[uid], sender.isBroadcaster else {
                return ([], nil, false)
            }
            return (room.receivers, sender, !links.isEmpty)
        }
        guard let sender else { return }
        let stream = Member.streamKey(uid, codec.kind)
        var delivered: Int64 = 0
        let senderEndpoint = sender.endpoint
        for receiver in receivers {
            guard let endpoint = receiver.endpoint, endpoint !== senderEndpoint else { continue }
            if lock.withLock({ receiver.unsubscribed.contains(stream) }) { continue }
            if hasLinks && !admit(channelId: channelId, publisher: uid, receiver: endpoint) { continue }
            endpoint.transportReceive(packet, channelId: channelId, from: uid)
            delivered += 1
        }
        lock.withLock { packetsForwarded += delivered }
    }

    public func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32) {
        let endpoint = lock.withLock { rooms[channelId]?.members[recipient]?.endpoint }
        endpoint?.transportReceiveRTCP(bytes, channelId: channelId, from: uid)
    }

    public func setSubscribed(
        _ subscribed: Bool, channelId: String, subscriber: UInt32, publisher: UInt32, kind: MediaKind
    ) {
        lock.withLock {
            guard let member = rooms[channelId]?.members[subscriber] else { return }
            let stream = Member.streamKey(publisher, kind)
            if subscribed { member.unsubscribed.remove(stream) } else { member.unsubscribed.insert(stream) }
        }
    }

    // MARK: - Impairments

    /// Applies `conditions` to packets from `publisher` in `channelId` to `receiver`.
    public func setLinkConditions(
        _ conditions: LinkConditions, channelId: String, publisher: UInt32, receiver: TransportEndpoint
    ) {
        let key = LinkKey(channelId: channelId, publisher: publisher, receiver: ObjectIdentifier(receiver))
        lock.withLock {
            if conditions == LinkConditions() { links[key] = nil } else { links[key] = (conditions, 0) }
        }
    }

    private func admit(channelId: String, publisher: UInt32, receiver: TransportEndpoint) -> Bool {
        let key = LinkKey(channelId: channelId, publisher: publisher, receiver: ObjectIdentifier(receiver))
        return lock.withLock {
            guard var link = links[key] else { return true }
            if link.conditions.blocked { return false }
            link.counter += 1
            links[key] = link
            // Spread losses evenly: drop frame n when the running share of losses falls behind.
            let expectedLosses = link.counter * link.conditions.lossPercent / 100
            let previousLosses = (link.counter - 1) * link.conditions.lossPercent / 100
            return expectedLosses == previousLosses
        }
    }

    // MARK: - Inspection

    /// Members of `channelId` in join order, with their roles.
    public func members(of channelId: String) -> [(uid: UInt32, role: ClientRole)] {
        lock.withLock {
            guard let room = rooms[channelId] else { return [] }
            return room.order.compactMap { room.members[$0] }.map { ($0.uid, $0.role) }
        }
    }

    /// Packet deliveries made so far (one per receiving endpoint per packet).
    public var deliveries: Int64 { lock.withLock { packetsForwarded } }
}
