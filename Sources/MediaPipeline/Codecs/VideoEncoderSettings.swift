/// What the engine asks of a local video encoder, whatever library encodes: the settings
/// ``CodecFactory/makeVideoEncoder`` receives. The library's libvpx encoder takes them as a
/// ``VPXEncoderConfiguration`` (``VPXEncoderConfiguration/init(_:)``); an encoder of an app's
/// own reads what applies to it.
public struct VideoEncoderSettings: Sendable, Equatable {
    /// The codec the engine packetizes and negotiates.
    public var codec: VideoCodec
    /// Picture width in pixels.
    public var width: Int
    /// Picture height in pixels.
    public var height: Int
    /// Frames per second as a fraction, for rate control: `frameRateNumerator / frameRateDenominator`.
    public var frameRateNumerator: Int
    /// See ``frameRateNumerator``.
    public var frameRateDenominator: Int
    /// Target bitrate in bits per second; ``VideoEncoding/setBitrate(_:)`` changes it later.
    public var bitrateBitsPerSecond: Int
    /// The longest distance between keyframes, in frames; keyframe requests come in between.
    public var keyframeIntervalFrames: Int
    /// How fast to encode, on libvpx's `cpu-used` scale: -16...16, the further from 0 the
    /// faster and the plainer; negative values a fixed speed (WebRTC's -6), positive ones
    /// adapted to the wall clock. ``EngineConfiguration/videoSpeed``. Other encoders map it to
    /// presets of their own or ignore it.
    public var speed: Int

    /// Settings for `width` × `height` pictures of `codec`.
    public init(
        codec: VideoCodec, width: Int, height: Int, frameRateNumerator: Int, frameRateDenominator: Int = 1,
        bitrateBitsPerSecond: Int, keyframeIntervalFrames: Int, speed: Int
    ) {
        self.codec = codec
        self.width = width
        self.height = height
        self.frameRateNumerator = frameRateNumerator
        self.frameRateDenominator = frameRateDenominator
        self.bitrateBitsPerSecond = bitrateBitsPerSecond
        self.keyframeIntervalFrames = keyframeIntervalFrames
        self.speed = speed
    }
}

extension VPXEncoderConfiguration {
    /// The libvpx configuration for the engine's `settings`; the rest at their defaults (one
    /// thread, not error resilient).
    public init(_ settings: VideoEncoderSettings) {
        self.init(codec: settings.codec, width: settings.width, height: settings.height)
        frameRateNumerator = settings.frameRateNumerator
        frameRateDenominator = settings.frameRateDenominator
        bitrateBitsPerSecond = settings.bitrateBitsPerSecond
        keyframeIntervalFrames = settings.keyframeIntervalFrames
        speed = settings.speed
    }
}
