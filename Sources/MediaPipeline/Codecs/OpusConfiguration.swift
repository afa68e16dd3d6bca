/// What an Opus encoder is tuned for (libopus's `OPUS_APPLICATION_*`).
public enum OpusApplication: String, Sendable, CaseIterable {
    /// Speech: favours intelligibility (`OPUS_APPLICATION_VOIP`).
    case voip
    /// Music and mixed content: favours fidelity (`OPUS_APPLICATION_AUDIO`).
    case audio
    /// The lowest delay: no speech mode (`OPUS_APPLICATION_RESTRICTED_LOWDELAY`).
    case lowDelay = "lowdelay"
}

/// Settings for an ``OpusEncoder``. The defaults are a 48 kHz stereo, 20 ms, 64 kbit/s stream
/// at complexity 10 with unconstrained VBR, as opusenc and ffmpeg default to.
public struct OpusEncoderConfiguration: Sendable, Equatable {
    /// Input sample rate in Hz: 8000, 12000, 16000, 24000 or 48000.
    public var sampleRate: Int = 48000
    /// 1 or 2.
    public var channelCount: Int = 2
    /// The encoder's tuning.
    public var application: OpusApplication = .audio
    /// Target bitrate in bits per second, 500...512000.
    public var bitrateBitsPerSecond: Int = 64000
    /// 0 (fastest) ... 10 (best).
    public var complexity: Int = 10
    /// Variable bitrate (true) or constant bitrate (false).
    public var variableBitrate: Bool = true
    /// With VBR, keep each packet near the target. Off by default, as in opusenc and ffmpeg:
    /// unconstrained VBR spends bits where the signal needs them.
    public var constrainedVariableBitrate: Bool = false
    /// Embed a low-bitrate copy of each frame in the next one, so a lost packet can be rebuilt.
    public var inbandForwardErrorCorrection: Bool = false
    /// Expected packet loss in percent, 0...100: how much the encoder invests in FEC.
    public var expectedPacketLossPercent: Int = 0
    /// Discontinuous transmission: send almost nothing during silence.
    public var discontinuousTransmission: Bool = false
    /// Frame duration in microseconds: 2500, 5000, 10000, 20000, 40000 or 60000.
    public var frameDurationMicroseconds: Int = 20_000

    /// The default configuration.
    public init() {}

    /// Sample rates Opus encodes and decodes natively, in Hz.
    public static let supportedSampleRates = [8000, 12000, 16000, 24000, 48000]
    /// Frame durations Opus encodes, in microseconds.
    public static let supportedFrameDurationsMicroseconds = [2500, 5000, 10000, 20000, 40000, 60000]

    /// Samples per channel in one frame at ``sampleRate``.
    public var samplesPerFrame: Int { sampleRate * frameDurationMicroseconds / 1_000_000 }

    /// Throws ``MediaError/Code/invalidArgument`` naming the first field out of range.
    public func validate() throws {
        guard Self.supportedSampleRates.contains(sampleRate) else {
            throw MediaError.invalidArgument(
                "Opus sample rate \(sampleRate) Hz is not one of \(Self.supportedSampleRates)")
        }
        guard channelCount == 1 || channelCount == 2 else {
            throw MediaError.invalidArgument("Opus channel count \(channelCount) is not 1 or 2")
        }
        guard (500...512_000).contains(bitrateBitsPerSecond) else {
            throw MediaError.invalidArgument("Opus bitrate \(bitrateBitsPerSecond) bit/s is outside 500...512000")
        }
        guard (0...10).contains(complexity) else {
            throw MediaError.invalidArgument("Opus complexity \(complexity) is outside 0...10")
        }
        guard (0...100).contains(expectedPacketLossPercent) else {
            throw MediaError.invalidArgument(
                "Opus expected packet loss \(expectedPacketLossPercent) % is outside 0...100")
        }
        guard Self.supportedFrameDurationsMicroseconds.contains(frameDurationMicroseconds) else {
            throw MediaError.invalidArgument(
                "Opus frame duration \(Double(frameDurationMicroseconds) / 1000) ms is not one of 2.5, 5, 10, 20, 40, 60 ms"
            )
        }
    }
}
