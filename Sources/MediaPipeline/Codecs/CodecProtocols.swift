/// What the engine needs of an audio encoder: fixed-size frames of interleaved PCM in, one
/// encoded frame out. ``OpusEncoder`` is the engine's default; a test can put a fake in its
/// place (``CodecFactory``).
public protocol AudioEncoding: AnyObject {
    /// Samples per channel in one frame.
    var samplesPerFrame: Int { get }
    /// Encodes one frame of interleaved PCM.
    func encode(_ pcm: UnsafeBufferPointer<Int16>, timestampMicroseconds: Int64) throws -> EncodedFrame
    /// Prepares for `percent` packet loss: in-band FEC on (above 0) or off, and as much
    /// redundancy as that loss needs. Encoders without FEC ignore it.
    func protect(expectedLossPercent percent: Int) throws
}

extension AudioEncoding {
    /// Ignores it: an encoder without FEC.
    public func protect(expectedLossPercent percent: Int) throws {}
}

/// What the engine needs of a video encoder: one picture in, one encoded frame out, a
/// keyframe on request (libwebrtc's `VideoEncoder`, pion's `ForceKeyFrame`).
public protocol VideoEncoding: AnyObject {
    /// Encodes one picture, a keyframe when `forceKeyframe`.
    func encode(_ picture: I420View, timestampMicroseconds: Int64?, forceKeyframe: Bool) throws -> EncodedFrame
    /// Changes the target bitrate from the next picture on.
    func setBitrate(_ bitsPerSecond: Int) throws
}

extension VideoEncoding {
    /// Ignores it: an encoder with a fixed rate.
    public func setBitrate(_ bitsPerSecond: Int) throws {}
}

/// What the engine needs of an audio decoder: packets to PCM, and concealment for a packet
/// that never came. ``OpusDecoder`` is the default.
public protocol AudioDecoding: AnyObject {
    /// Decodes one packet into `pcm`; returns the samples per channel written.
    func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws -> Int
    /// Writes `samplesPerChannel` samples of loss concealment; returns the samples per channel written.
    func concealLoss(samplesPerChannel: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws -> Int
    /// Rebuilds `samplesPerChannel` samples of a lost packet from the in-band FEC carried by
    /// `nextPacket`; returns the samples per channel written. Decoders without FEC conceal.
    func recoverLoss(
        fromFECIn nextPacket: UnsafeRawBufferPointer, samplesPerChannel: Int,
        into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws -> Int
}

extension AudioDecoding {
    /// Conceals: a decoder that cannot read FEC.
    public func recoverLoss(
        fromFECIn nextPacket: UnsafeRawBufferPointer, samplesPerChannel: Int,
        into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws -> Int {
        try concealLoss(samplesPerChannel: samplesPerChannel, into: pcm)
    }
}

/// What the engine needs of a video decoder: one frame in, the pictures it yields passed to
/// `body`. ``VPXDecoder`` is the default.
public protocol VideoDecoding: AnyObject {
    /// Decodes one frame; calls `body` with each picture (valid only inside `body`); returns the
    /// pictures yielded.
    func decode(_ packet: UnsafeRawBufferPointer, _ body: (I420View) throws -> Void) throws -> Int
}

extension OpusEncoder: AudioEncoding {
    /// In-band FEC on above 0 %, and libopus's expected loss set to `percent`.
    public func protect(expectedLossPercent percent: Int) throws {
        try setInbandForwardErrorCorrection(percent > 0)
        try setExpectedPacketLossPercent(min(100, max(0, percent)))
    }
}
extension VPXEncoder: VideoEncoding {}
extension OpusDecoder: AudioDecoding {}
extension VPXDecoder: VideoDecoding {}

/// Makes the engine's encoders and decoders. ``libraries`` (the default) makes libopus and
/// libvpx ones; tests and apps with codecs of their own supply other closures.
public struct CodecFactory: Sendable {
    /// An audio encoder for local audio of the given settings (Opus on the wire).
    public var makeAudioEncoder: @Sendable (AudioEncoderSettings) throws -> AudioEncoding
    /// A video encoder for local pictures of the given settings' size.
    public var makeVideoEncoder: @Sendable (VideoEncoderSettings) throws -> VideoEncoding
    /// An audio decoder producing `sampleRate` Hz with `channelCount` channels.
    public var makeAudioDecoder: @Sendable (_ sampleRate: Int, _ channelCount: Int) throws -> AudioDecoding
    /// A video decoder for `codec` on `threads` threads.
    public var makeVideoDecoder: @Sendable (_ codec: VideoCodec, _ threads: Int) throws -> VideoDecoding

    /// A factory of the given closures.
    public init(
        makeAudioEncoder: @escaping @Sendable (AudioEncoderSettings) throws -> AudioEncoding,
        makeVideoEncoder: @escaping @Sendable (VideoEncoderSettings) throws -> VideoEncoding,
        makeAudioDecoder: @escaping @Sendable (_ sampleRate: Int, _ channelCount: Int) throws -> AudioDecoding,
        makeVideoDecoder: @escaping @Sendable (_ codec: VideoCodec, _ threads: Int) throws -> VideoDecoding
    ) {
        self.makeAudioEncoder = makeAudioEncoder
        self.makeVideoEncoder = makeVideoEncoder
        self.makeAudioDecoder = makeAudioDecoder
        self.makeVideoDecoder = makeVideoDecoder
    }

    /// libopus and libvpx.
    public static let libraries = CodecFactory(
        makeAudioEncoder: { try OpusEncoder(configuration: OpusEncoderConfiguration($0)) },
        makeVideoEncoder: { try VPXEncoder(configuration: VPXEncoderConfiguration($0)) },
        makeAudioDecoder: { try OpusDecoder(sampleRate: $0, channelCount: $1) },
        makeVideoDecoder: { try VPXDecoder(codec: $0, threads: $1) })
}
