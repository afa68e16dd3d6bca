/// What the local audio is, for the encoder to favour (libwebrtc's and Agora's audio scenarios).
public enum AudioContent: String, Sendable, CaseIterable {
    /// Voices: intelligibility first (libopus's `OPUS_APPLICATION_VOIP`).
    case speech
    /// Music and mixed content: fidelity first (libopus's `OPUS_APPLICATION_AUDIO`).
    case music
}

/// What the engine asks of a local audio encoder, whatever library encodes: the settings
/// ``CodecFactory/makeAudioEncoder`` receives and ``EngineConfiguration/audio`` holds. The
/// engine sends Opus (RFC 7587), so the ranges are those any Opus encoder takes. The library's
/// libopus encoder takes them as an ``OpusEncoderConfiguration``
/// (``OpusEncoderConfiguration/init(_:)``); an encoder of an app's own reads what applies to it.
public struct AudioEncoderSettings: Sendable, Equatable {
    /// Input sample rate in Hz: 8000, 12000, 16000, 24000 or 48000. The engine's playout runs
    /// at the same rate.
    public var sampleRate: Int
    /// Input channels: 1 or 2.
    public var channelCount: Int
    /// One encoded frame's duration in microseconds: 2500, 5000, 10000, 20000, 40000 or 60000.
    public var frameDurationMicroseconds: Int
    /// Target bitrate in bits per second, 500...512000.
    public var bitrateBitsPerSecond: Int
    /// What the audio is, for the encoder to favour.
    public var content: AudioContent
    /// Whether the encoder sends almost nothing during silence (discontinuous transmission,
    /// RFC 7587's `usedtx`).
    public var discontinuousTransmission: Bool

    /// Settings of the given format; the defaults are the engine's: 48 kHz stereo, 20 ms frames,
    /// 32 kbit/s, music, no DTX.
    public init(
        sampleRate: Int = 48_000, channelCount: Int = 2, frameDurationMicroseconds: Int = 20_000,
        bitrateBitsPerSecond: Int = 32_000, content: AudioContent = .music, discontinuousTransmission: Bool = false
    ) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.frameDurationMicroseconds = frameDurationMicroseconds
        self.bitrateBitsPerSecond = bitrateBitsPerSecond
        self.content = content
        self.discontinuousTransmission = discontinuousTransmission
    }

    /// Samples per channel in one frame at ``sampleRate``.
    public var samplesPerFrame: Int { sampleRate * frameDurationMicroseconds / 1_000_000 }

    /// Throws ``MediaError/Code/invalidArgument`` naming the first field out of the ranges an
    /// Opus encoder takes (the engine sends Opus, whatever library encodes).
    public func validate() throws { try OpusEncoderConfiguration(self).validate() }
}

extension OpusEncoderConfiguration {
    /// The libopus configuration for the engine's `settings`; the rest at their defaults
    /// (complexity 10, unconstrained VBR, no FEC until the engine asks for it).
    public init(_ settings: AudioEncoderSettings) {
        self.init()
        sampleRate = settings.sampleRate
        channelCount = settings.channelCount
        frameDurationMicroseconds = settings.frameDurationMicroseconds
        bitrateBitsPerSecond = settings.bitrateBitsPerSecond
        application = settings.content == .speech ? .voip : .audio
        discontinuousTransmission = settings.discontinuousTransmission
    }
}
