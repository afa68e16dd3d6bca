import Logging

/// Settings of a ``MediaEngine``.
public struct EngineConfiguration: Sendable {
    /// Where the engine logs (swift-log): joins and leaves, connection and remote stream state
    /// changes, relay changes, keyframe requests sent and received, failures with their cause.
    /// Nothing per frame or per packet. The default logs under the label "MediaPipeline" to
    /// whatever backend the app bootstrapped, warnings and errors only: set its `logLevel` to
    /// `.info` for membership and connection changes, `.debug` for every state change.
    public var logger: Logger = {
        var logger = Logger(label: "MediaPipeline")
        logger.logLevel = .warning
        return logger
    }()
    /// The local audio encoder's settings (``CodecFactory/makeAudioEncoder`` receives them).
    /// Local audio is pushed at this rate and channel count, and playout runs at this rate.
    public var audio = AudioEncoderSettings()
    /// Local video codec.
    public var videoCodec: VideoCodec = .vp8
    /// Local video bitrate in bits per second: where it starts, and the most it rises to.
    public var videoBitrateBitsPerSecond = 500_000
    /// The least the video bitrate drops to under loss, in bits per second.
    public var videoMinimumBitrateBitsPerSecond = 100_000
    /// Whether the encoders follow the loss subscribers report: the video bitrate (down above
    /// 10 %, up below 2 %) and Opus in-band FEC with its expected loss.
    public var adaptsToLoss = true
    /// Whether a remote user's video is received as its low stream (dual stream mode) while
    /// its canvas shows no more than a quarter of its high pictures' area, unless the app asked
    /// for the high stream (``MediaChannel/setRemoteVideoStreamType(_:type:)``): LiveKit's
    /// adaptive stream.
    public var adaptsVideoStreamToCanvas = true
    /// Whether, with ``adaptsToLoss``, Opus packets under reported loss also carry copies of
    /// the one or two frames before them (RFC 2198 redundant audio under payload type 63, as
    /// browsers send it for Opus: one copy from 2 % smoothed loss, two from 8 %). Receivers must
    /// understand it; the engine's own receivers do.
    public var audioRedundancy = true
    /// Local video frame rate (frames per second), for rate control.
    public var videoFrameRate = 15
    /// libvpx speed for the local encoder (negative: fixed speed).
    public var videoSpeed = -6
    /// Longest distance between local keyframes, in frames; keyframe requests come in between.
    public var videoKeyframeIntervalFrames = 3000
    /// Playout (mix) rate and channels.
    public var playoutSampleRate = 48000, playoutChannelCount = 2
    /// A publisher forces at most one keyframe per this many milliseconds, and a subscriber asks
    /// at most this often.
    public var keyframeRequestIntervalMs = 300
    /// Remote audio is FROZEN after this long without packets (it is concealed before that).
    public var audioFreezeMs = 300
    /// Remote video is FROZEN after this long without a decoded frame.
    public var videoFreezeMs = 600
    /// Remote audio gaps up to this long are filled with Opus loss concealment.
    public var audioConcealMs = 100
    /// How long a missing video packet may hold later frames back before the frames behind it
    /// are handed on as following a gap (a reordered packet arrives within this time). With
    /// ``videoRetransmission`` the wait grows with the round trip, jitter and loss (up to 2 s), so
    /// that retransmissions can fill the gap.
    public var videoReorderWaitMs = 50
    /// Whether lost video packets are asked for again (RTCP generic NACK, RFC 4585) and the
    /// publisher resends them from its packet history; a keyframe is requested only when a gap
    /// cannot be filled in time.
    public var videoRetransmission = true
    /// Fixes the engine's random choices (SSRCs, first sequence numbers and timestamps) for a
    /// reproducible session; nil draws them from the system's generator.
    public var randomSeed: UInt64?
    /// Makes the engine's encoders and decoders (libopus and libvpx unless replaced).
    public var codecs = CodecFactory.libraries
    /// Threads (the caller's included) that decode independent streams, audio and video, in parallel.
    public var decodeThreads = 2

    /// The defaults: 48 kHz stereo Opus at 32 kbit/s, 20 ms; VP8 at 500 kbit/s, 15 fps.
    public init() {}
}

/// Counters of an engine's work, for tests, benchmarks and reports.
public struct EngineStatistics: Sendable, Equatable {
    /// Local frames encoded (each once, whatever the number of receivers).
    public var audioFramesEncoded: Int64 = 0, videoFramesEncoded: Int64 = 0
    /// Encoded frames handed to the transport (one per destination channel).
    public var audioFramesSent: Int64 = 0, videoFramesSent: Int64 = 0
    /// Keyframe requests (RTCP PLI or FIR) received as a publisher, and keyframes forced because of them.
    public var keyframeRequestsReceived: Int64 = 0, keyframesForced: Int64 = 0
    /// Video packets sent again because a subscriber asked (RTCP NACK), and their payload bytes.
    public var packetsRetransmitted: Int64 = 0, bytesRetransmitted: Int64 = 0
    /// Keyframe requests sent as a subscriber (RTCP PLI).
    public var keyframeRequestsSent: Int64 = 0
    /// Decoders alive now.
    public var liveAudioDecoders = 0, liveVideoDecoders = 0
    /// 10 ms playout frames mixed.
    public var playoutFrames: Int64 = 0
    /// RTP packets a transport delivered that no receiver took: a payload type the engine does
    /// not know (``RTPPayloadType``), or one of another kind than the stream the transport
    /// named (an audio payload delivered as video). A transport that mislabels its streams
    /// shows here.
    public var packetsDroppedUnknownKind: Int64 = 0
}

/// Receives decoded audio before and after mixing. Called on the thread that pulls playout,
/// after its playout round, with no engine lock held; copy what you keep.
public protocol AudioFrameObserver: AnyObject, Sendable {
    /// One remote stream's 10 ms of decoded audio, before mixing.
    func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey)
    /// One remote stream's 10 ms of decoded audio, before mixing, with the sender's RTP
    /// timestamp (48 kHz) of its first sample: where in the sender's media it lies (stretched
    /// or concealed audio included). The default calls ``remoteAudioFrame(_:stream:)``.
    func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey, rtpTimestamp: UInt32?)
    /// The 10 ms playout mix.
    func mixedAudioFrame(_ samples: UnsafeBufferPointer<Int16>)
}

extension AudioFrameObserver {
    /// Passes the frame on without its timestamp.
    public func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey, rtpTimestamp: UInt32?) {
        remoteAudioFrame(samples, stream: stream)
    }
}

/// A destination of a channel media relay: the channel and the uid the relayed stream uses there
/// (0: the destination assigns a free one, reported by the relay's join).
public struct ChannelMediaRelayDestination: Sendable, Equatable {
    /// Destination channel.
    public var channelId: String
    /// The relayed stream's uid in the destination (0: assigned there).
    public var uid: UInt32

    /// A destination.
    public init(channelId: String, uid: UInt32 = 0) {
        self.channelId = channelId
        self.uid = uid
    }
}
