/// How good a remote stream's reception is, on Agora's scale (`QUALITY_TYPE`).
public enum NetworkQuality: Int, Sendable, Equatable, Comparable {
    /// Not known yet (nothing measured in the interval).
    case unknown = 0
    /// Under 1 % lost, under 100 ms of delay.
    case excellent = 1
    /// Under 3 % lost, under 200 ms.
    case good = 2
    /// Under 8 % lost, under 300 ms: noticeable but fluent.
    case poor = 3
    /// Under 15 % lost: communication is hard.
    case bad = 4
    /// Under 30 % lost: barely usable.
    case veryBad = 5
    /// 30 % or more lost, or nothing received in the interval.
    case down = 6

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The quality of a stream that lost `lossPercent` of its media with `delayMs` of delay.
    static func of(lossPercent: Double, delayMs: Int64, received: Bool) -> NetworkQuality {
        guard received else { return .down }
        switch lossPercent {
        case ..<1 where delayMs < 100: return .excellent
        case ..<3 where delayMs < 200: return .good
        case ..<8 where delayMs < 300: return .poor
        case ..<15: return .bad
        case ..<30: return .veryBad
        default: return .down
        }
    }
}

/// One remote user's audio over the last statistics interval (2 s) and since subscribing,
/// as Agora's `RemoteAudioStats`.
public struct RemoteAudioStats: Sendable, Equatable {
    /// The remote user.
    public var uid: UInt32
    /// The channel the user is in.
    public var channelId: String
    /// The stream these figures are of: the remote user's audio in its channel.
    public var stream: MediaStreamID { .audio(channelId: channelId, uid: uid) }
    /// Reception quality over the interval.
    public var quality: NetworkQuality = .unknown
    /// Half the round trip to the user, in milliseconds (0 before one is measured).
    public var networkTransportDelayMs: Int64 = 0
    /// How long audio waited in the jitter buffer past its arrival on the fastest path, on
    /// average over the interval (the playout delay the buffer chose), in milliseconds.
    public var jitterBufferDelayMs: Int64 = 0
    /// The jitter buffer's target delay at the end of the interval, in milliseconds.
    public var targetDelayMs: Int64 = 0
    /// Share of the interval's 10 ms frames that were not decoded audio (concealed or silent),
    /// in percent (Agora's audio frame loss rate).
    public var audioLossRatePercent: Double = 0
    /// Share of the interval's packets lost on the network (before recovery), in percent.
    public var packetLossRatePercent: Double = 0
    /// Bitrate received over the interval, in kbit/s.
    public var receivedBitrateKbps: Int = 0
    /// Time frozen since subscribing: each interval whose audio frame loss rate reached 4 %
    /// counts whole (Agora's definition), in milliseconds.
    public var totalFrozenTimeMs: Int64 = 0
    /// ``totalFrozenTimeMs`` as a share of ``totalActiveTimeMs``, in percent.
    public var frozenRatePercent: Double = 0
    /// Time the audio has been received since subscribing, in milliseconds.
    public var totalActiveTimeMs: Int64 = 0
    /// Since subscribing: 10 ms frames produced, and those concealed or silent.
    public var frames: Int64 = 0, framesConcealed: Int64 = 0
    /// Since subscribing: concealed frames that were silent themselves (under -50 dBFS, as the
    /// W3C statistics' silent concealed samples): concealment nobody hears.
    public var framesConcealedSilent: Int64 = 0
    /// Since subscribing: lost packets rebuilt from in-band FEC or from a redundant copy
    /// (RFC 2198) a later packet carried.
    public var packetsRecoveredByFEC: Int64 = 0

    /// Nothing measured yet, of `uid`'s audio in `channelId`.
    public init(channelId: String, uid: UInt32) {
        self.channelId = channelId
        self.uid = uid
    }
}

/// One remote user's video over the last statistics interval (2 s) and since subscribing,
/// as Agora's `RemoteVideoStats`.
public struct RemoteVideoStats: Sendable, Equatable {
    /// The remote user.
    public var uid: UInt32
    /// The channel the user is in.
    public var channelId: String
    /// The stream these figures are of: the remote user's video in its channel, of the layer
    /// received (``rxStreamType``).
    public var stream: MediaStreamID { .video(channelId: channelId, uid: uid, layer: rxStreamType) }
    /// Half the round trip to the user, in milliseconds (0 before one is measured).
    public var delayMs: Int64 = 0
    /// The size of the last decoded picture.
    public var width = 0, height = 0
    /// The video layer received (Agora's `rxStreamType`): ``VideoStreamType/low`` once the
    /// transport forwards the publisher's low stream, as asked or as a fallback.
    public var rxStreamType = VideoStreamType.high
    /// Bitrate received over the interval, in kbit/s.
    public var receivedBitrateKbps: Int = 0
    /// Frames per second decoded and rendered over the interval.
    public var decoderOutputFrameRate: Double = 0, rendererOutputFrameRate: Double = 0
    /// Share of the interval's packets lost on the network (before retransmission), in percent.
    public var packetLossRatePercent: Double = 0
    /// Time frozen since subscribing: the gaps of more than 500 ms between decoded frames
    /// (Agora's definition), a gap still open counting up to now, in milliseconds.
    public var totalFrozenTimeMs: Int64 = 0
    /// ``totalFrozenTimeMs`` as a share of ``totalActiveTimeMs``, in percent.
    public var frozenRatePercent: Double = 0
    /// Time since the first decoded frame, in milliseconds.
    public var totalActiveTimeMs: Int64 = 0
    /// Since subscribing: NACKs and keyframe requests sent, frames decoded, frames dropped
    /// before decoding (incomplete, or after a gap until a keyframe).
    public var nacksSent: Int64 = 0, keyframeRequestsSent: Int64 = 0
    public var framesDecoded: Int64 = 0, framesDroppedBeforeDecode: Int64 = 0
    /// Whether the user's audio and video play in sync, aligned by its sender reports (false
    /// before both streams' first reports, after a report that jumped, or without audio).
    public var isAVSynced = false
    /// How much later the user's audio plays than the pictures captured with it, in
    /// milliseconds (negative: earlier), as the engine decided it at its last sync decision:
    /// from the two streams' delays and the delay it added to them, not measured in the
    /// playout (Agora's `avSyncTimeMs`); 0 while not synced.
    public var avSyncOffsetMs: Int64 = 0
    /// The delay added to the video less the delay added to the audio to keep the two in
    /// sync, in milliseconds (positive: the video is held back). While the later stream's own
    /// delay comes down at the sync pace, both may be held for a moment.
    public var syncDelayMs: Int64 = 0
    /// How long after its fastest arrival a frame is shown, without the delay added for sync,
    /// in milliseconds: what the video's jitter buffer holds frames for (covering jitter and
    /// the waits for retransmissions).
    public var renderDelayMs: Int64 = 0

    /// Nothing measured yet, of `uid`'s video in `channelId`.
    public init(channelId: String, uid: UInt32) {
        self.channelId = channelId
        self.uid = uid
    }
}

/// A channel's figures over the last statistics interval (2 s), as Agora's `RtcStats`.
public struct RtcStats: Sendable, Equatable {
    /// Time in the channel, in milliseconds.
    public var durationMs: Int64 = 0
    /// Bytes sent and received since joining (encoded media).
    public var txBytes: Int64 = 0, rxBytes: Int64 = 0
    /// Bitrates sent and received over the interval, in kbit/s.
    public var txKBitRate: Int = 0, rxKBitRate: Int = 0
    /// Remote broadcasters present.
    public var userCount = 0
    /// The round trip to subscribers of the local streams, in milliseconds.
    public var roundTripTimeMs: Int64 = 0
    /// Share of the local streams' packets subscribers last reported lost, and of remote
    /// packets lost on the way here over the interval, in percent.
    public var txPacketLossRatePercent: Double = 0, rxPacketLossRatePercent: Double = 0

    /// Nothing measured yet.
    public init() {}
}

/// A remote user's totals since its streams were subscribed
/// (``MediaChannel/remoteStreamTotals(_:)``).
public struct RemoteStreamTotals: Sendable, Equatable {
    /// Sequence numbers never received (after retransmissions), per stream.
    public var audioPacketsLost: Int64 = 0, videoPacketsLost: Int64 = 0
    /// Audio: 10 ms frames played, and those holding loss concealment.
    public var audioFrames: Int64 = 0, audioFramesConcealed: Int64 = 0
    /// Audio: the concealed frames that are silent (below about -50 dBFS, where concealment is
    /// not heard: the W3C statistics' silent concealed samples).
    public var audioFramesConcealedSilent: Int64 = 0
    /// Audio: packets decoded, and lost packets rebuilt from in-band FEC or redundancy.
    public var audioPacketsDecoded: Int64 = 0, audioPacketsRecovered: Int64 = 0
    /// Video: frames decoded, and frames dropped before decoding (incomplete, or after a gap
    /// and before a keyframe).
    public var videoFramesDecoded: Int64 = 0, videoFramesDropped: Int64 = 0
    /// Video: NACK messages and keyframe requests sent to the user.
    public var nacksSent: Int64 = 0, keyframeRequestsSent: Int64 = 0
    /// Video: how long frames waited, on average, beyond their fastest path (the transit of the
    /// quickest frame so far) before being decoded: the delay the jitter buffer adds.
    public var videoMeanAddedDelayMs: Double = 0

    /// Totals of zero.
    public init() {}
}
