/// One track of a WebM (or Matroska) file as its TrackEntry describes it.
public struct WebMTrackInfo: Sendable, Equatable {
    /// The track's number, which its blocks name (any positive number, not always 1, 2…).
    public var number: Int
    /// The Matroska track type: 1 video, 2 audio, others (subtitles, metadata…) are read and
    /// their frames returned, but nothing here decodes them.
    public var type: Int
    /// The Matroska codec ID ("V_VP8", "V_VP9", "A_OPUS", or another codec's).
    public var codecID: String
    /// The codec when MediaPipeline decodes it (VP8, VP9, Opus); nil for other codecs.
    public var codec: MediaCodec?
    /// Video: the picture size in pixels.
    public var width = 0, height = 0
    /// Audio: the sampling frequency in Hz and the channel count.
    public var samplingFrequency: Double = 0, channelCount = 0
    /// The codec's private data (Opus: its `OpusHead`).
    public var codecPrivate: [UInt8] = []
    /// The CodecDelay: audio the decoder must drop at the start, in nanoseconds (Opus: the
    /// pre-skip), subtracted from every block's time; 0 when the track declares none.
    public var codecDelayNanoseconds: Int64 = 0
    /// How much audio to decode before the target after a seek, in nanoseconds.
    public var seekPreRollNanoseconds: Int64 = 0
    /// Every frame's duration, when the track declares one, in nanoseconds.
    public var defaultDurationNanoseconds: Int64?
    /// Opus: the identification header (from the CodecPrivate, or built from the channel
    /// count), its pre-skip taken from CodecDelay when the track has one.
    public var opusHead: OpusHead?
    /// Why a track of a codec MediaPipeline knows is not decoded here (an Opus track of more
    /// than two channels, multistream): ``codec`` is then nil, and commands skip the track.
    public var unsupportedReason: String?

    /// True for a video track (type 1).
    public var isVideo: Bool { type == 1 }
    /// True for an audio track (type 2).
    public var isAudio: Bool { type == 2 }

    /// A track with number `number` of `type` and `codecID`.
    public init(number: Int, type: Int, codecID: String) {
        self.number = number
        self.type = type
        self.codecID = codecID
    }
}

/// One frame read from a WebM file.
public struct WebMFrame: Sendable {
    /// The index of its track in ``WebMReader/tracks``.
    public var track: Int
    /// The compressed frame.
    public var bytes: [UInt8]
    /// Its presentation time in nanoseconds: the block's time × the file's timestamp scale, less
    /// the track's CodecDelay (so an Opus track starts before 0); laced frames after the first
    /// add the track's frame duration.
    public var timestampNanoseconds: Int64
    /// True for a keyframe (a SimpleBlock's flag, or a BlockGroup without a ReferenceBlock).
    public var isKeyframe: Bool
    /// The BlockGroup's BlockDuration in nanoseconds, if it had one.
    public var durationNanoseconds: Int64?
    /// How much of the frame's decoded end to drop, in nanoseconds (an Opus track's last frame).
    public var discardPaddingNanoseconds: Int64 = 0
}
