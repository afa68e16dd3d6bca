/// A user's role in a live channel (Agora's `CLIENT_ROLE_TYPE`).
public enum ClientRole: Int, Sendable, CaseIterable {
    /// Sends and receives media; visible to the other users.
    case broadcaster = 1
    /// Receives only; invisible to the other users.
    case audience = 2
}

/// What a user does in a channel when joining (Agora's `ChannelMediaOptions`).
public struct ChannelMediaOptions: Sendable, Equatable {
    /// Subscribe to the audio of remote users automatically.
    public var autoSubscribeAudio = true
    /// Subscribe to the video of remote users automatically.
    public var autoSubscribeVideo = true
    /// Publish the local audio in this channel (broadcasters only).
    public var publishLocalAudio = true
    /// Publish the local video in this channel (broadcasters only).
    public var publishLocalVideo = true

    /// Options with every flag set.
    public init(
        autoSubscribeAudio: Bool = true, autoSubscribeVideo: Bool = true, publishLocalAudio: Bool = true,
        publishLocalVideo: Bool = true
    ) {
        self.autoSubscribeAudio = autoSubscribeAudio
        self.autoSubscribeVideo = autoSubscribeVideo
        self.publishLocalAudio = publishLocalAudio
        self.publishLocalVideo = publishLocalVideo
    }

    /// Subscribe to everything, publish nothing: what an audience member joins with.
    public static let subscribeOnly = ChannelMediaOptions(publishLocalAudio: false, publishLocalVideo: false)

    func publishes(_ kind: MediaKind) -> Bool { kind == .audio ? publishLocalAudio : publishLocalVideo }

    mutating func setPublishes(_ kind: MediaKind) {
        if kind == .audio { publishLocalAudio = true } else { publishLocalVideo = true }
    }

    func autoSubscribes(_ kind: MediaKind) -> Bool { kind == .audio ? autoSubscribeAudio : autoSubscribeVideo }
}

/// Audio or video.
public enum MediaKind: String, Sendable, CaseIterable {
    case audio, video
}

/// The media a remote user currently sends in a channel.
public struct PublishedMedia: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Audio is published (and not muted).
    public static let audio = PublishedMedia(rawValue: 1)
    /// Video is published (and not muted).
    public static let video = PublishedMedia(rawValue: 2)

    /// The member for one kind.
    init(_ kind: MediaKind) { self = kind == .audio ? PublishedMedia.audio : PublishedMedia.video }

    func contains(_ kind: MediaKind) -> Bool { contains(PublishedMedia(kind)) }
}

/// The state of a remote audio or video stream (Agora's `REMOTE_AUDIO_STATE` / `REMOTE_VIDEO_STATE`).
public enum RemoteStreamState: Int, Sendable, CaseIterable {
    /// Not playing: never started, muted, or the user left.
    case stopped = 0
    /// The first packet arrived; nothing decoded yet.
    case starting = 1
    /// Decoding and playing.
    case decoding = 2
    /// Packets stopped arriving.
    case frozen = 3
    /// Decoding failed.
    case failed = 4
}

/// Why a remote stream changed state (Agora's `REMOTE_AUDIO_STATE_REASON` / `REMOTE_VIDEO_STATE_REASON`).
public enum RemoteStreamStateReason: Int, Sendable, CaseIterable {
    /// Internal reasons (a first start, a decode failure).
    case `internal` = 0
    /// Packets stopped arriving.
    case networkCongestion = 1
    /// Packets arrive again.
    case networkRecovery = 2
    /// The local user stopped receiving the stream.
    case localMuted = 3
    /// The local user resumed receiving the stream.
    case localUnmuted = 4
    /// The remote user stopped sending the stream.
    case remoteMuted = 5
    /// The remote user resumed sending the stream.
    case remoteUnmuted = 6
    /// The remote user left the channel or became audience.
    case remoteOffline = 7
    /// The downlink is poor: the video is not received, audio only (``StreamFallbackOptions/audioOnly``).
    case audioFallback = 8
    /// The downlink recovered: the video is received again.
    case audioFallbackRecovery = 9
}

/// Why a remote user went offline (Agora's `USER_OFFLINE_REASON_TYPE`).
public enum UserOfflineReason: Int, Sendable, CaseIterable {
    /// The user left.
    case quit = 0
    /// The user's connection dropped.
    case dropped = 1
    /// The user became audience.
    case becomeAudience = 2
}

/// The connection of one channel to its transport (Agora's `CONNECTION_STATE_TYPE`).
public enum ConnectionState: Int, Sendable, CaseIterable {
    /// Not connected: before joining, after leaving.
    case disconnected = 1
    /// Joining: the transport has not answered yet.
    case connecting = 2
    /// Joined.
    case connected = 3
    /// The connection was interrupted; the transport is trying to restore it.
    case reconnecting = 4
    /// The transport gave up (a refused join, a lost connection that did not come back).
    case failed = 5
}

/// Why the connection state changed (Agora's `CONNECTION_CHANGED_REASON_TYPE`, with its numbers).
public enum ConnectionChangedReason: Int, Sendable, CaseIterable {
    /// Joining.
    case connecting = 0
    /// The join succeeded.
    case joinSuccess = 1
    /// The connection was interrupted.
    case interrupted = 2
    /// The server banned the user.
    case bannedByServer = 3
    /// The join failed (``ChannelEvent/error(code:message:)`` tells why).
    case joinFailed = 4
    /// The user left the channel.
    case leaveChannel = 5
    /// The server rejected the request.
    case rejectedByServer = 10
    /// No answer from the server for too long.
    case keepAliveTimeout = 14
}

/// Local publishing state of one media kind in a channel (Agora's `STREAM_PUBLISH_STATE`).
public enum PublishState: Int, Sendable, CaseIterable {
    case idle = 0
    case noPublish = 1
    case publishing = 2
    case published = 3
}

/// Subscription state of a remote stream (Agora's `STREAM_SUBSCRIBE_STATE`).
public enum SubscribeState: Int, Sendable, CaseIterable {
    case idle = 0
    case noSubscribe = 1
    case subscribing = 2
    case subscribed = 3
}

/// State of a channel media relay (Agora's `CHANNEL_MEDIA_RELAY_STATE`).
public enum ChannelMediaRelayState: Int, Sendable, CaseIterable {
    case idle = 0
    case connecting = 1
    case running = 2
    case failure = 3
}

/// What happened during a channel media relay (Agora 3.x `AgoraChannelMediaRelayEvent`, with
/// its numbers). The engine reports the ones that apply to it: joined destination, sent to
/// destination, updated, update refused, paused, resumed (and their failures).
public enum ChannelMediaRelayEvent: Int, Sendable, CaseIterable {
    /// The user disconnected from the server.
    case disconnect = 0
    /// The user connected to the server.
    case connected = 1
    /// The relay joined the source channel.
    case joinedSourceChannel = 2
    /// The relay joined a destination channel (one event per destination).
    case joinedDestinationChannel = 3
    /// The first media since the relay started (or resumed) went to the destinations.
    case sentToDestinationChannel = 4
    /// The source's first video reached the relay.
    case receivedVideoPacketFromSource = 5
    /// The source's first audio reached the relay.
    case receivedAudioPacketFromSource = 6
    /// ``MediaChannel/updateChannelMediaRelay(_:)`` took effect.
    case updateDestinationChannel = 7
    /// ``MediaChannel/updateChannelMediaRelay(_:)`` could not join a new destination; the old
    /// destinations stay.
    case updateDestinationChannelRefused = 8
    /// The video profile sent to the destinations changed.
    case videoProfileUpdate = 9
    /// ``MediaChannel/pauseAllChannelMediaRelay()`` took effect.
    case pauseSendPacketToDestinationChannelSuccess = 10
    /// ``MediaChannel/pauseAllChannelMediaRelay()`` failed: no relay runs.
    case pauseSendPacketToDestinationChannelFailed = 11
    /// ``MediaChannel/resumeAllChannelMediaRelay()`` took effect.
    case resumeSendPacketToDestinationChannelSuccess = 12
    /// ``MediaChannel/resumeAllChannelMediaRelay()`` failed: no paused relay runs.
    case resumeSendPacketToDestinationChannelFailed = 13
}

/// One speaker's loudness in a volume indication.
public struct AudioVolumeInfo: Sendable, Equatable {
    /// The speaker.
    public var uid: UInt32
    /// Loudness 0...255 over the indication interval (peak, linear in amplitude).
    public var volume: Int
}

/// What a channel reports when the local user leaves it.
public struct ChannelStats: Sendable, Equatable {
    /// Time in the channel, in milliseconds of the engine's clock.
    public var durationMs: Int64 = 0
    /// Encoded bytes and frames sent in this channel.
    public var txAudioBytes: Int64 = 0, txVideoBytes: Int64 = 0, txAudioFrames: Int64 = 0, txVideoFrames: Int64 = 0
    /// Encoded bytes and frames received from remote users.
    public var rxAudioBytes: Int64 = 0, rxVideoBytes: Int64 = 0, rxAudioFrames: Int64 = 0, rxVideoFrames: Int64 = 0
    /// Remote audio decoded, in 10 ms frames played, and remote video frames decoded.
    public var audioFramesDecoded: Int64 = 0, videoFramesDecoded: Int64 = 0
    /// Remote video frames rendered into canvases.
    public var videoFramesRendered: Int64 = 0
    /// RTP packets sent in this channel, received from remote users, and lost on the way (never
    /// received, as the receivers' sequence numbers tell).
    public var txPackets: Int64 = 0, rxPackets: Int64 = 0, rxPacketsLost: Int64 = 0
    /// Remote video frames not decoded because packets of theirs or of a frame they depend on were
    /// lost (incomplete, or delta frames after a gap, until the next keyframe).
    public var videoFramesDroppedBeforeDecode: Int64 = 0
    /// Keyframe requests (RTCP PLI) sent to remote users in this channel.
    public var keyframeRequestsSent: Int64 = 0
    /// NACKs (RTCP generic NACK) sent to remote users in this channel, asking for lost video
    /// packets again.
    public var nacksSent: Int64 = 0
    /// Milliseconds remote video spent FROZEN, summed over users (a freeze still going counts up
    /// to the moment the statistics are read).
    public var videoFrozenMs: Int64 = 0
    /// The round trip to a subscriber of the local streams, from its last reception report
    /// (RTCP RR: now - LSR - DLSR), in milliseconds; 0 before one came.
    public var roundTripTimeMs: Int64 = 0
    /// The share of the local streams' packets a subscriber last reported lost, 0...100.
    public var txPacketLossPercent = 0
    /// Remote broadcasters present when leaving.
    public var userCount: Int = 0
}

/// Something that happened in a channel, delivered in order (Agora's `AgoraRtcChannelDelegate`).
public enum ChannelEvent: Sendable, Equatable {
    /// The local user joined with `uid`.
    case joinSuccess(uid: UInt32, elapsedMs: Int64)
    /// A remote broadcaster joined (or an audience member became broadcaster).
    case userJoined(uid: UInt32, elapsedMs: Int64)
    /// A remote broadcaster left, dropped or became audience.
    case userOffline(uid: UInt32, reason: UserOfflineReason)
    /// The local user's role changed.
    case clientRoleChanged(old: ClientRole, new: ClientRole)
    /// Local publishing of `kind` changed state.
    case localPublishStateChanged(kind: MediaKind, old: PublishState, new: PublishState, elapsedMs: Int64)
    /// Subscription to a remote user's `kind` changed state.
    case remoteSubscribeStateChanged(
        uid: UInt32, kind: MediaKind, old: SubscribeState, new: SubscribeState, elapsedMs: Int64)
    /// A remote user's audio changed state.
    case remoteAudioStateChanged(
        uid: UInt32, state: RemoteStreamState, reason: RemoteStreamStateReason, elapsedMs: Int64)
    /// A remote user's video changed state.
    case remoteVideoStateChanged(
        uid: UInt32, state: RemoteStreamState, reason: RemoteStreamStateReason, elapsedMs: Int64)
    /// A remote user's decoded video has a new size.
    case videoSizeChanged(uid: UInt32, width: Int, height: Int)
    /// The first 10 ms of a remote user's audio was decoded since it was subscribed to:
    /// `elapsedMs` after the local user's join (Agora's `firstRemoteAudioFrame`), and
    /// `sinceSubscribeMs` after its receiver started (the join, a remote unmute, the user's
    /// first audio).
    case firstRemoteAudioFrame(uid: UInt32, elapsedMs: Int64, sinceSubscribeMs: Int64)
    /// The first picture of a remote user's video was decoded since it was subscribed to, of
    /// `width` × `height`: `elapsedMs` after the local user's join (Agora's
    /// `firstRemoteVideoFrame`), `sinceSubscribeMs` after its receiver started.
    case firstRemoteVideoFrame(uid: UInt32, width: Int, height: Int, elapsedMs: Int64, sinceSubscribeMs: Int64)
    /// The loudest remote speakers over the last interval (at most 3), and the mix's level.
    case audioVolumeIndication(speakers: [AudioVolumeInfo], totalVolume: Int)
    /// The media relay changed state.
    case channelMediaRelayStateChanged(state: ChannelMediaRelayState)
    /// Something happened during the media relay.
    case channelMediaRelayEvent(ChannelMediaRelayEvent)
    /// The local user left; the session's statistics.
    case leave(ChannelStats)
    /// The channel's connection changed state.
    case connectionStateChanged(state: ConnectionState, reason: ConnectionChangedReason)
    /// The channel's statistics, every 2 s while joined.
    case rtcStats(RtcStats)
    /// A remote user's audio statistics, every 2 s while its audio is received.
    case remoteAudioStats(RemoteAudioStats)
    /// A remote user's video statistics, every 2 s while its video is received.
    case remoteVideoStats(RemoteVideoStats)
    /// A remote user's video stopped being received because the downlink is poor (true), or is
    /// received again (false): Agora's `onRemoteSubscribeFallbackToAudioOnly`, under
    /// ``StreamFallbackOptions/audioOnly``. A fallback to the low stream has no event:
    /// ``RemoteVideoStats/rxStreamType`` shows it.
    case remoteSubscribeFallbackToAudioOnly(uid: UInt32, isFallbackOrRecover: Bool)
    /// A recording of user `uid`'s stream began writing `path`.
    case recordingStarted(uid: UInt32, path: String)
    /// A recording was finished: `path` holds the frames the receiver decoded.
    case recordingStopped(uid: UInt32, path: String, audioFrames: Int64, videoFrames: Int64)
    /// A recording could not be written (the disk is full, the folder went away): `path` holds
    /// its Clusters up to the failure, and nothing more is written.
    case recordingFailed(uid: UInt32, path: String, message: String)
    /// Something failed after the call that started it returned (a join the transport refused):
    /// Agora's error code and what happened.
    case error(code: EngineError.Code, message: String)
}
