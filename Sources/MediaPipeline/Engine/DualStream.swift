/// The low video stream a publisher in dual stream mode sends beside its high one (Agora's
/// low-bitrate stream): the same captured pictures, smaller, fewer and at a lower bitrate, as
/// its own RTP stream (SSRC) on the high stream's time base.
public struct LowVideoStreamConfiguration: Sendable, Equatable {
    /// Width and height are divided by this (2: a quarter of the area), kept even.
    public var sizeDivisor: Int
    /// One captured picture in this many is encoded (2: half the frame rate).
    public var frameRateDivisor: Int
    /// The low stream's bitrate; nil: a fifth of the high stream's.
    public var bitrateBitsPerSecond: Int?

    /// A configuration; the defaults give a quarter of the area, half the frame rate and a
    /// fifth of the bitrate (640x360 at 15 fps and 500 kbit/s: 320x180 at 7.5 fps and 100 kbit/s).
    public init(sizeDivisor: Int = 2, frameRateDivisor: Int = 2, bitrateBitsPerSecond: Int? = nil) {
        self.sizeDivisor = sizeDivisor
        self.frameRateDivisor = frameRateDivisor
        self.bitrateBitsPerSecond = bitrateBitsPerSecond
    }

    /// The low stream's size for a high picture of `width` × `height`.
    func size(width: Int, height: Int) -> (width: Int, height: Int) {
        (max(2, width / sizeDivisor & ~1), max(2, height / sizeDivisor & ~1))
    }

    /// Throws for a value out of range.
    func validate() throws {
        guard (1...16).contains(sizeDivisor) else {
            throw EngineError(.invalidArgument, "low stream size divisor \(sizeDivisor) is outside 1...16")
        }
        guard (1...30).contains(frameRateDivisor) else {
            throw EngineError(.invalidArgument, "low stream frame rate divisor \(frameRateDivisor) is outside 1...30")
        }
        if let bitrate = bitrateBitsPerSecond, !(10_000...10_000_000).contains(bitrate) {
            throw EngineError(.invalidArgument, "low stream bitrate \(bitrate) bit/s is outside 10 kbit/s...10 Mbit/s")
        }
    }
}

/// The low layer's encoder and scaled picture: part of ``Publisher``, owned by the engine's
/// `local` lock with it.
struct LowVideoLayer {
    let configuration: LowVideoStreamConfiguration
    var encoder: VideoEncoding?
    var encoderSize = (width: 0, height: 0)
    var picture: I420Buffer?
    /// Captured pictures seen since the mode was enabled (one in ``LowVideoStreamConfiguration/frameRateDivisor`` is encoded).
    var picturesSeen = 0

    init(_ configuration: LowVideoStreamConfiguration) { self.configuration = configuration }

    /// Scales `picture` and encodes it as the low layer's next frame if this picture is one
    /// the low frame rate takes; nil otherwise.
    mutating func encode(
        _ picture: I420Buffer, timestampMicroseconds: Int64, forceKeyframe: Bool, engine: EngineConfiguration,
        highBitrate: Int
    ) throws -> EncodedFrame? {
        defer { picturesSeen += 1 }
        guard picturesSeen % configuration.frameRateDivisor == 0 || forceKeyframe else { return nil }
        let size = configuration.size(width: picture.width, height: picture.height)
        if encoder == nil || encoderSize != size {
            let settings = VideoEncoderSettings(
                codec: engine.videoCodec, width: size.width, height: size.height,
                frameRateNumerator: max(1, engine.videoFrameRate / configuration.frameRateDivisor),
                bitrateBitsPerSecond: configuration.bitrateBitsPerSecond ?? max(10_000, highBitrate / 5),
                keyframeIntervalFrames: max(1, engine.videoKeyframeIntervalFrames / configuration.frameRateDivisor),
                speed: engine.videoSpeed)
            encoder = nil  // free the old handle before making a new one
            encoder = try engine.codecs.makeVideoEncoder(settings)
            encoderSize = size
            self.picture = try I420Buffer(width: size.width, height: size.height)
        }
        guard let encoder, let scaled = self.picture else { return nil }
        picture.withView { source in
            scaled.withMutableView { target in
                PictureScaler.scale(
                    source, .init(x: 0, y: 0, width: source.width, height: source.height), into: target,
                    .init(x: 0, y: 0, width: size.width, height: size.height))
            }
        }
        return try scaled.withView {
            try encoder.encode($0, timestampMicroseconds: timestampMicroseconds, forceKeyframe: forceKeyframe)
        }
    }
}

extension MediaEngine {
    /// Turns dual stream mode on or off (Agora's `enableDualStreamMode`): the published video
    /// is also encoded as a low stream (``LowVideoStreamConfiguration``) from the same captured
    /// pictures, sent as its own RTP stream. Subscribers choose per publisher
    /// (``MediaChannel/setRemoteVideoStreamType(_:type:)``) on transports that forward layers
    /// (``LocalHub``; ``JanusTransport``, as the two encodings of a VP8 simulcast); others carry
    /// the high stream alone. Turning it off tells the transport,
    /// whose low subscribers go back to the high stream.
    /// - Throws: ``EngineError/Code/invalidArgument`` for a configuration out of range.
    public func enableDualStreamMode(_ enabled: Bool, low: LowVideoStreamConfiguration = .init()) throws {
        try low.validate()
        local.withLock { publisher in
            if enabled {
                if publisher.lowLayer?.configuration != low { publisher.lowLayer = LowVideoLayer(low) }
                return
            }
            guard publisher.lowLayer != nil else { return }
            stopLowLayer(publisher)
        }
    }

    /// Whether dual stream mode is on.
    public var isDualStreamModeEnabled: Bool { local.withLock { $0.lowLayer != nil } }
}

extension MediaEngine {
    /// What remote video falls back to when the downlink is poor (Agora's
    /// `setRemoteSubscribeFallbackOption`; default ``StreamFallbackOptions/videoStreamLow``, as
    /// Agora 3.x documents it). Decided per remote user at each 2 s statistics report from the
    /// network loss of its stream, and undone step by step as it recovers.
    public func setRemoteSubscribeFallbackOption(_ option: StreamFallbackOptions) {
        input { $0.subscribeFallbackOption = option }
    }
}
