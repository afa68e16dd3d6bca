/// One value for audio and one for video, so per-kind state needs no pairs of fields.
struct PerMedia<Value> {
    var audio: Value
    var video: Value

    /// The same value for both kinds.
    init(_ both: Value) {
        audio = both
        video = both
    }

    subscript(kind: MediaKind) -> Value {
        get { kind == .audio ? audio : video }
        set { if kind == .audio { audio = newValue } else { video = newValue } }
    }
}

/// Names one channel object of an engine: its id, and a serial number that tells a channel
/// destroyed and created again under the same id from the old one (answers and events of the
/// old one are then recognised as stale).
struct ChannelRef: Hashable, Sendable {
    let id: String
    let serial: Int
}

/// One remote user as seen from one channel: part of the control plane's value.
///
/// The control plane decides when the user's receivers (its receive pipelines) run and names
/// them (``receiving``); the media side holds them (``ReceiverStore``) and reaches them through
/// the receive router.
struct RemoteUser: Sendable {
    // The fields a packet that needs a decision reads come first, so they share cache lines.
    let uid: UInt32
    /// Per kind, the receiver the control plane decided to run, while it receives (the media
    /// side holds it: ``ReceiverStore``).
    var receiving = PerMedia<ReceiverID?>(nil)
    var trackers = PerMedia(RemoteStreamTracker())
    var subscribe = PerMedia(SubscribeState.idle)
    let key: StreamKey
    /// What the user sends now.
    var media: PublishedMedia
    /// Local decisions not to receive.
    var muted: PerMedia<Bool>
    /// Playback gain, 0...4.
    var volume: Float = 1
    /// The video layer the transport says it forwards (high until it says otherwise).
    var rxStreamType = VideoStreamType.high
    /// How far the subscription fell back under loss.
    var fallback = SubscribeFallback()
    /// The layer the transport was last asked for (nil: never, the channel's default applies).
    var askedVideoType: VideoStreamType?
    /// Width × height of the last picture decoded while each stream was said to arrive (a
    /// picture or two after a switch still belongs to the stream before it).
    var pictureAreas: [VideoStreamType: Int] = [:]
    /// Width × height of the high stream's pictures: seen, or four times the low stream's (its
    /// default size); 0 before a picture.
    var highPictureArea: Int { pictureAreas[.high] ?? (pictureAreas[.low] ?? 0) * 4 }
    var reportedWidth = 0, reportedHeight = 0
    /// When the video last became FROZEN (clock microseconds), while it is.
    var videoFrozenSince: Int64?
    /// Clock time of the last keyframe request sent for the video (microseconds), if any.
    var lastKeyframeRequest: Int64?
    /// Clock time of the last decoded video frame (microseconds).
    var lastDecodedAt: Int64?
    /// Per kind: when its receiver started (the subscribe), until its first frame is reported
    /// (`firstRemoteAudioFrame` / `firstRemoteVideoFrame`), then nil.
    var awaitingFirstFrameSince = PerMedia<Int64?>(nil)
    /// The round trip to the user, from its answers to our reference times (RTCP XR), if measured.
    var roundTripMicroseconds: Int64?
    /// What its statistics count, and the last ones reported.
    var reception = UserReception()
    var lastAudioStats: RemoteAudioStats?
    var lastVideoStats: RemoteVideoStats?
    /// Peak level over the current volume indication interval.
    var peakLevel: Int16 = 0
    /// What keeps the user's audio and video in step.
    var lipSync = LipSync()
    /// What the packet path counts without the control lock (``ControlPlane/takeTally(_:_:)``).
    let tally = ArrivalTally()

    init(uid: UInt32, channelId: String, media: PublishedMedia, muted: PerMedia<Bool>) {
        self.uid = uid
        key = StreamKey(channelId: channelId, uid: uid)
        self.media = media
        self.muted = muted
    }

    /// Whether a receiver of either kind runs.
    var receivesAny: Bool { receiving.audio != nil || receiving.video != nil }

    /// Whether the user sends `kind` and the local user wants it.
    func wants(_ kind: MediaKind) -> Bool {
        !muted[kind] && media.contains(kind) && !(kind == .video && fallback.level == .audioOnly)
    }

    /// Per kind, whether a packet needs no decision on arrival: a kind without a receiver is
    /// only counted; one with a receiver needs a decision while STOPPED or not SUBSCRIBED.
    var routeSettled: PerMedia<Bool> {
        var settled = PerMedia(true)
        for kind in MediaKind.allCases where receiving[kind] != nil {
            settled[kind] = trackers[kind].state != .stopped && subscribe[kind] == .subscribed
        }
        return settled
    }

    /// The sender's SSRC when the video receiver should ask its publisher for a keyframe now:
    /// it wants one (`wanted`, its ``VideoReceiver/keyframeState``: it is waiting for one and
    /// has dropped frames since its last request), and `interval` has passed since that
    /// request. Marks the request as made.
    mutating func keyframeRequestDue(wanted: UInt32?, now: Int64, interval: Int64) -> UInt32? {
        guard receiving.video != nil, let ssrc = wanted else { return nil }
        if let last = lastKeyframeRequest, now - last < interval { return nil }
        lastKeyframeRequest = now
        return ssrc
    }
}

/// Everything the engine knows about one channel: part of the control plane's value.
struct ChannelState: Sendable {
    // The fields the packet path reads come first, so they share cache lines.
    let ref: ChannelRef
    var id: String { ref.id }
    var joined = false
    /// Between join's start and the transport's answer: events wait in `deferred`.
    var joining = false
    /// Remote broadcasters present, in the order they appeared.
    var users: [RemoteUser] = []
    var stats = ChannelStats()
    var deferred: [ChannelEvent] = []
    /// Counts join attempts, so an answer to an abandoned one (left before the transport
    /// answered) is recognised.
    var joinAttempt = 0
    /// The connection state last reported.
    var connection = ConnectionState.disconnected
    /// Counts relay starts and updates, so answers to a superseded one are recognised.
    var relayAttempt = 0
    var uid: UInt32 = 0
    var role: ClientRole = .broadcaster
    /// The role the transport was last told (with the join, or by a role change since): a role
    /// set while the join is under way differs from it until the join's answer applies it.
    var roleAnnounced: ClientRole = .broadcaster
    /// The media the transport was last told of (likewise: a mute while joining differs).
    var mediaAnnounced: PublishedMedia = []
    var options = ChannelMediaOptions()
    /// Local media the user stopped publishing here.
    var localMuted = PerMedia(false)
    var joinedAt: Int64 = 0
    /// Explicit per-uid mutes, kept for users who are not (yet) in the channel.
    var explicitMute = PerMedia<[UInt32: Bool]>([:])
    var allMuted = PerMedia(false)
    var defaultMuted = PerMedia(false)
    /// The video layer asked for per uid (kept for users not yet present), and for the others.
    var remoteVideoTypes: [UInt32: VideoStreamType] = [:]
    var defaultRemoteVideoType = VideoStreamType.high
    var publish = PerMedia(PublishState.idle)
    var relayDestinations: [ChannelMediaRelayDestination] = []
    var relayUids: [UInt32] = []
    var relayState = ChannelMediaRelayState.idle
    /// The relay runs but sends nothing (``MediaChannel/pauseAllChannelMediaRelay()``).
    var relayPaused = false
    /// Whether the first media since the relay (re)started has been reported sent.
    var relaySentReported = false
    /// When receiver reports last went to this channel's users (clock microseconds).
    var lastReceiverReportAt: Int64 = 0
    /// When statistics were last reported, and the channel's byte counts then.
    var lastStatisticsAt: Int64?
    var lastStatisticsBytes = (tx: Int64(0), rx: Int64(0))
    var lastStatisticsPackets = (received: Int64(0), lost: Int64(0))
    var volumeIntervalMs = 0
    var volumeElapsedMs = 0
    var mixEnabled = false
    /// The mix's peak over the current volume indication interval.
    var mixPeak: Int16 = 0

    init(ref: ChannelRef) { self.ref = ref }

    /// Media this channel sends now.
    var publishedMedia: PublishedMedia {
        guard joined else { return [] }
        return wouldPublish(options: options, role: role)
    }

    /// Media this channel would send with `options` and `role`, given its local mutes.
    func wouldPublish(options: ChannelMediaOptions, role: ClientRole) -> PublishedMedia {
        guard role == .broadcaster else { return [] }
        var media: PublishedMedia = []
        for kind in MediaKind.allCases where options.publishes(kind) && !localMuted[kind] {
            media.insert(PublishedMedia(kind))
        }
        return media
    }

    /// Whether playout rounds mix this channel's streams on their own (its mix is enabled, or
    /// its volume indication runs); the mix itself is the media side's (``ChannelMixRound``).
    var keepsMix: Bool { mixEnabled || volumeIntervalMs > 0 }

    func elapsedMs(_ now: Int64) -> Int64 { (now - joinedAt) / 1000 }

    /// Whether a newly seen user starts muted for `kind`.
    func startsMuted(_ uid: UInt32, _ kind: MediaKind) -> Bool {
        explicitMute[kind][uid] ?? (allMuted[kind] || defaultMuted[kind] || !options.autoSubscribes(kind))
    }

    /// The position of `uid` in ``users``, trying `hint` first. Reads the users in place.
    func userIndex(_ uid: UInt32, hint: Int? = nil) -> Int? {
        users.withUnsafeBufferPointer { users in
            if let hint, users.indices.contains(hint), users[hint].uid == uid { return hint }
            return users.indices.first { users[$0].uid == uid }
        }
    }

    /// The uids present, in the order they appeared.
    var userOrder: [UInt32] { users.map(\.uid) }

    /// Video frozen up to `now`: the sum of ended freezes plus the ones going on.
    func videoFrozenMs(now: Int64) -> Int64 {
        var total = stats.videoFrozenMs
        for user in users { if let since = user.videoFrozenSince { total += (now - since) / 1000 } }
        return total
    }
}

extension ChannelStats {
    /// Adds what a video receiver's delivery or poll did.
    mutating func add(_ progress: VideoReceiver.Progress) {
        rxVideoFrames += Int64(progress.frames)
        rxPacketsLost += progress.packetsLost
        videoFramesDroppedBeforeDecode += progress.framesDropped
    }
}

extension PerMedia: Sendable where Value: Sendable {}
extension PerMedia: Equatable where Value: Equatable {}
