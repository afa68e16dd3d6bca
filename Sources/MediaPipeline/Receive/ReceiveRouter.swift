/// What the packet path counts of one remote user's media without the control lock: the
/// arrivals since the control plane last took them into its statistics (``ArrivalTally/take()``).
struct ArrivalCounts: Sendable, Equatable {
    var packets: Int64 = 0
    /// Payload bytes of packets a receiver took.
    var audioBytes: Int64 = 0, videoBytes: Int64 = 0
    /// Payload bytes of packets with no receiver to take them (counted for the channel only).
    var unreceivedAudioBytes: Int64 = 0, unreceivedVideoBytes: Int64 = 0
    /// Audio frames queued (a packet carrying redundancy may give more than one).
    var audioFrames: Int64 = 0
    /// Video frames assembled.
    var videoFrames: Int64 = 0
    /// Packets the receivers gave up on, audio and video.
    var packetsLost: Int64 = 0
    /// Video frames dropped before decoding (incomplete, or after a gap).
    var videoFramesDropped: Int64 = 0
}

/// One remote user's ``ArrivalCounts``, in their own lock (a leaf: nothing is called while it is
/// held). Lives as long as the user does in its channel, across receivers, as the control plane's
/// counters did.
final class ArrivalTally: Sendable {
    private let counts = LockedValue(ArrivalCounts())

    init() {}

    /// Counts a packet of `kind` with `bytes` payload bytes that no receiver took.
    func unreceived(_ kind: MediaKind, bytes: Int) {
        counts.withLock {
            $0.packets += 1
            if kind == .audio {
                $0.unreceivedAudioBytes += Int64(bytes)
            } else {
                $0.unreceivedVideoBytes += Int64(bytes)
            }
        }
    }

    /// Counts `packets` audio packets of `bytes` payload bytes in all that gave `frames` frames
    /// and found `lost` packets lost.
    func audioArrived(packets: Int, bytes: Int, frames: Int, lost: Int64) {
        counts.withLock {
            $0.packets += Int64(packets)
            $0.audioBytes += Int64(bytes)
            $0.audioFrames += Int64(frames)
            $0.packetsLost += lost
        }
    }

    /// Counts a video packet of `bytes` payload bytes and what the receiver made of it.
    func videoArrived(bytes: Int, _ progress: VideoReceiver.Progress) {
        counts.withLock {
            $0.packets += 1
            $0.videoBytes += Int64(bytes)
            $0.videoFrames += Int64(progress.frames)
            $0.packetsLost += progress.packetsLost
            $0.videoFramesDropped += progress.framesDropped
        }
    }

    /// The counts since the last call, and zero from now on.
    func take() -> ArrivalCounts {
        counts.withLock { counts in
            defer { counts = ArrivalCounts() }
            return counts
        }
    }
}

/// Where the packet path takes one remote user's packets, as the control plane last decided.
/// Immutable, and a class: a delivery reaches it through one reference, and its receivers
/// through its own (no copy of the route, no retain of each receiver).
final class ReceiveRoute: Sendable {
    let audio: AudioReceiver?
    let video: VideoReceiver?
    let tally: ArrivalTally
    /// Per kind: whether the control plane has nothing to decide on a packet's arrival. False
    /// while the stream's state is STOPPED or its subscribe state is not SUBSCRIBED: the first
    /// packet then goes through the control plane, which moves them (STARTING, SUBSCRIBED) and
    /// publishes a route that is settled.
    let settled: PerMedia<Bool>

    init(audio: AudioReceiver?, video: VideoReceiver?, tally: ArrivalTally, settled: PerMedia<Bool>) {
        (self.audio, self.video, self.tally, self.settled) = (audio, video, tally, settled)
    }

    /// What a delivered packet asks of the control plane: feedback to count and send.
    struct Feedback {
        /// A NACK the receiver wrote.
        var nack: [UInt8]?
        /// The sender's SSRC when the video receiver waits for a keyframe and dropped frames
        /// since it last asked: a keyframe request may be due.
        var keyframeWanted: UInt32?
    }

    /// The route's receivers.
    var receivers: RemoteReceivers { RemoteReceivers(audio: audio, video: video) }

    /// Hands `packet` of `kind`, arrived at clock time `now`, to the receiver of its kind (if
    /// there is one) and counts it in the tally: the one delivery of both paths, inside a
    /// control input (a packet that needs a decision) or without it. Audio waits in its
    /// receiver's pending list until the receiver's next access (``AudioReceiver/arrive(_:now:)``);
    /// its NACKs go with the playout's tick.
    func deliver(_ packet: RTPPacket, _ kind: MediaKind, now: Int64) -> Feedback {
        if kind == .audio, let audio {
            audio.arrive(packet, now: now)
            return Feedback()
        }
        let bytes = packet.payloadByteCount
        if kind == .video, let video {
            let progress = video.receive(packet, now: now)
            tally.videoArrived(bytes: bytes, progress)
            return Feedback(nack: progress.nack, keyframeWanted: progress.keyframeWanted)
        }
        tally.unreceived(kind, bytes: bytes)
        return Feedback()
    }
}

/// The receive router: an immutable snapshot of where every joined channel's remote users'
/// packets go, which the control plane replaces (under its lock) whenever users, receivers or
/// the states that need a decision on arrival change. Transports' packets reach their
/// receivers through it without the control lock: a lookup of the channel and the user, then
/// the receiver's own lock. A value, so the lock that holds it holds the first channel beside
/// the mutex: a delivery there reaches the user's entry through one buffer (the channel's users).
struct ReceiveRoutes: Sendable {
    /// One user's entry: beside the route, the audio receiver's pending list
    /// (``AudioReceiver/arrivals``) when its audio is settled, so an audio packet goes there
    /// from the entry itself, without loading the route or the receiver.
    private struct User: Sendable {
        let uid: UInt32
        let settledAudioArrivals: LockedValue<PendingArrivals>?
        let route: ReceiveRoute
    }
    /// One joined channel: its users in ascending uid order.
    private struct Channel: Sendable {
        let id: String
        let users: [User]
    }
    /// The first joined channel, inline (most engines join one: a delivery then reads no
    /// buffer of channels), and the others.
    private let first: Channel?
    private let others: [Channel]

    /// Routes for `channels`.
    init(_ channels: [(id: String, users: [UInt32: ReceiveRoute])]) {
        let all = channels.map { channel in
            let users = channel.users.sorted { $0.key < $1.key }.map { uid, route in
                User(uid: uid, settledAudioArrivals: route.settled.audio ? route.audio?.arrivals : nil, route: route)
            }
            return Channel(id: channel.id, users: users)
        }
        first = all.first
        others = Array(all.dropFirst())
    }

    /// No channel.
    static let empty = ReceiveRoutes([])

    /// Delivers `packet` of `stream`, arrived at `now`, when its route is settled
    /// (``ReceiveRoute/deliver(_:_:now:)``), in place: the route is not copied out (no retain of
    /// its receivers). Both layers of a user's video go to its one video receiver (a forwarder
    /// makes them one stream). Nil when the channel is not joined, the user is not known there
    /// or its route is not settled: the control plane then decides.
    func deliverSettled(_ packet: RTPPacket, stream: MediaStreamID, now: Int64) -> ReceiveRoute.Feedback? {
        if let first, first.id == stream.channelId {
            return Self.deliver(packet, stream.kind, uid: stream.uid, first.users, now: now)
        }
        for channel in others where channel.id == stream.channelId {
            return Self.deliver(packet, stream.kind, uid: stream.uid, channel.users, now: now)
        }
        return nil
    }

    /// The route of `uid` in `channelId`, settled or not; nil when the channel is not joined or
    /// the user not known there. Allocates nothing.
    func route(channelId: String, uid: UInt32) -> ReceiveRoute? {
        if let first, first.id == channelId { return Self.user(uid, first.users).map { first.users[$0].route } }
        for channel in others where channel.id == channelId {
            return Self.user(uid, channel.users).map { channel.users[$0].route }
        }
        return nil
    }

    /// The receivers of `uid` in `channelId` (none when it has no route): what the media side
    /// works on when the control plane names a user.
    func receivers(channelId: String, uid: UInt32) -> RemoteReceivers {
        route(channelId: channelId, uid: uid)?.receivers ?? RemoteReceivers()
    }

    /// The receivers of every user in `channelId` (every joined channel when nil), in uid
    /// order: for reads and teardown, not a per-packet path (it allocates).
    func receivers(inChannel channelId: String? = nil) -> [RemoteReceivers] {
        ([first].compactMap { $0 } + others).filter { channelId == nil || $0.id == channelId }.flatMap { channel in
            channel.users.map(\.route.receivers)
        }
    }

    /// The position of `uid` in `users` (ascending uids), found by a binary search.
    private static func user(_ uid: UInt32, _ users: [User]) -> Int? {
        var (low, high) = (0, users.count)
        while low < high {
            let middle = (low + high) / 2
            if users[middle].uid < uid { low = middle + 1 } else { high = middle }
        }
        return low < users.count && users[low].uid == uid ? low : nil
    }

    /// ``deliverSettled(_:stream:now:)`` within one channel's `users`, found by a
    /// binary search (no hashing, no allocation).
    private static func deliver(_ packet: RTPPacket, _ kind: MediaKind, uid: UInt32, _ users: [User], now: Int64)
        -> ReceiveRoute.Feedback?
    {
        guard let low = user(uid, users) else { return nil }
        if kind == .audio, let arrivals = users[low].settledAudioArrivals,
            arrivals.withLock({ $0.append(packet, now: now) })
        {
            return ReceiveRoute.Feedback()  // counted in the tally when the receiver takes it in
        }
        guard users[low].route.settled[kind] else { return nil }
        return users[low].route.deliver(packet, kind, now: now)
    }
}
