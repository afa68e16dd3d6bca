/// One remote user as seen from one channel. Guarded by the engine's lock.
final class RemoteUser {
    let uid: UInt32
    let key: StreamKey
    /// What the user sends now.
    var media: PublishedMedia
    /// Local decisions not to receive.
    var audioMuted: Bool, videoMuted: Bool
    /// Playback gain, 0...4.
    var volume: Float = 1
    var audio: AudioReceiver?
    var video: VideoReceiver?
    var audioTracker = RemoteStreamTracker()
    var videoTracker = RemoteStreamTracker()
    var audioSubscribe = SubscribeState.idle
    var videoSubscribe = SubscribeState.idle
    var reportedWidth = 0, reportedHeight = 0
    /// Peak level over the current volume indication interval.
    var peakLevel: Int16 = 0

    init(uid: UInt32, channelId: String, media: PublishedMedia, audioMuted: Bool, videoMuted: Bool) {
        self.uid = uid
        key = StreamKey(channelId: channelId, uid: uid)
        self.media = media
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
    }

    var wantsAudio: Bool { !audioMuted && media.contains(.audio) }
    var wantsVideo: Bool { !videoMuted && media.contains(.video) }
}

/// Everything the engine knows about one channel. Guarded by the engine's lock.
final class ChannelState {
    let id: String
    /// The app's handle; events for a channel whose handle is gone are dropped.
    weak var handle: MediaChannel?
    var joined = false
    /// Between join's start and the transport's answer: events wait in `deferred`.
    var joining = false
    var deferred: [ChannelEvent] = []
    var uid: UInt32 = 0
    var role: ClientRole = .broadcaster
    var options = ChannelMediaOptions()
    var localAudioMuted = false, localVideoMuted = false
    var joinedAt: Int64 = 0
    var users: [UInt32: RemoteUser] = [:]
    var userOrder: [UInt32] = []
    /// Explicit per-uid mutes, kept for users who are not (yet) in the channel.
    var explicitAudioMute: [UInt32: Bool] = [:], explicitVideoMute: [UInt32: Bool] = [:]
    var allAudioMuted = false, allVideoMuted = false
    var defaultAudioMuted = false, defaultVideoMuted = false
    var audioPublish = PublishState.idle, videoPublish = PublishState.idle
    var stats = ChannelStats()
    var relayDestinations: [ChannelMediaRelayDestination] = []
    var relayUids: [UInt32] = []
    var relayState = ChannelMediaRelayState.idle
    var volumeIntervalMs = 0
    var volumeElapsedMs = 0
    var mixEnabled = false
    var mixer: AudioMixer?
    var mix: [Int16] = []
    var mixPeak: Int16 = 0
    var destroyed = false

    init(id: String) { self.id = id }

    /// Media this channel sends now.
    var publishedMedia: PublishedMedia {
        guard joined, role == .broadcaster else { return [] }
        var media: PublishedMedia = []
        if options.publishLocalAudio && !localAudioMuted { media.insert(.audio) }
        if options.publishLocalVideo && !localVideoMuted { media.insert(.video) }
        return media
    }

    func elapsedMs(_ now: Int64) -> Int64 { (now - joinedAt) / 1000 }

    /// Whether a newly seen user starts muted for `kind`.
    func startsMuted(_ uid: UInt32, _ kind: MediaKind) -> Bool {
        if kind == .audio {
            return explicitAudioMute[uid] ?? (allAudioMuted || defaultAudioMuted || !options.autoSubscribeAudio)
        }
        return explicitVideoMute[uid] ?? (allVideoMuted || defaultVideoMuted || !options.autoSubscribeVideo)
    }
}
