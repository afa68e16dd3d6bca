import Foundation
import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// Sample media prepared once for a simulated session: the speech as 10 ms PCM frames and as
/// Opus packets, and the moving picture as pictures and as VP8 frames, so that simulated remote
/// users replay encoded media (only the subscriber's work is measured) while the local user
/// encodes its own.
public final class SampleMedia: Sendable {
    /// 10 ms frames of 48 kHz stereo speech.
    public let audioFrames: [AudioFrame]
    /// The same speech as 20 ms Opus packets.
    public let opusPackets: [EncodedFrame]
    /// The pictures, at ``videoFrameRate``.
    public let pictures: [I420Buffer]
    /// The same pictures as VP8 frames, a keyframe every ``keyframeIntervalFrames``.
    public let vp8Frames: [EncodedFrame]
    /// Frames per second of ``pictures`` and ``vp8Frames``.
    public let videoFrameRate: Int
    /// Distance between keyframes in ``vp8Frames``.
    public let keyframeIntervalFrames: Int
    /// The encoders' bitrates, for ``userMedia(variant:)``.
    private let audioBitrate: Int, videoBitrate: Int
    /// ``lowVP8Frames()`` once made.
    private let lowLayerCache = LowLayerCache()

    /// Loads `speech` (WAV, 48 kHz stereo) and `video` (IVF), keeping every `frameStep`-th
    /// picture to reach `videoFrameRate`, and encodes both for replay.
    public init(
        speechWAV: String, videoIVF: String, videoFrameRate: Int = 15, frameStep: Int = 2, audioBitrate: Int = 32000,
        videoBitrate: Int = 500_000, keyframeIntervalFrames: Int = 30
    ) throws {
        let reader = try WAVReader(path: speechWAV)
        guard reader.format.sampleRate == 48000, reader.format.channelCount == 2 else {
            throw MediaError(.invalidArgument, "\(speechWAV): simulation speech must be 48 kHz stereo")
        }
        var frames: [AudioFrame] = []
        var block: [Float] = []
        var position: Int64 = 0
        while try reader.read(into: &block, maxFrames: 480) == 480 {
            frames.append(
                AudioFrame(
                    samples: block.map(\.int16Sample), sampleRate: 48000, channelCount: 2, timestampSamples: position))
            position += 480
        }
        guard frames.count >= 2 else { throw MediaError(.invalidArgument, "\(speechWAV): too short for a simulation") }
        if frames.count % 2 == 1 { frames.removeLast() }
        audioFrames = frames
        var opus = OpusEncoderConfiguration()
        opus.bitrateBitsPerSecond = audioBitrate
        let encoder = try OpusEncoder(configuration: opus)
        var packets: [EncodedFrame] = []
        for pair in stride(from: 0, to: frames.count, by: 2) {
            let joined = AudioFrame(
                samples: frames[pair].samples + frames[pair + 1].samples, sampleRate: 48000, channelCount: 2,
                timestampSamples: frames[pair].timestampSamples)
            packets.append(try encoder.encode(joined))
        }
        opusPackets = packets

        let ivf = try IVFReader(path: videoIVF)
        let decoder = try VPXDecoder(codec: ivf.header.codec)
        var pictures: [I420Buffer] = []
        var index = 0
        while let frame = try ivf.readFrame() {
            _ = try frame.bytes.withUnsafeBytes { bytes in
                try decoder.decode(bytes) { view in
                    if index % frameStep == 0 {
                        let copy = try I420Buffer(width: view.width, height: view.height)
                        copy.copy(from: view)
                        pictures.append(copy)
                    }
                    index += 1
                }
            }
        }
        guard let first = pictures.first else { throw MediaError(.invalidArgument, "\(videoIVF): no picture") }
        self.pictures = pictures
        var settings = VPXEncoderConfiguration(codec: .vp8, width: first.width, height: first.height)
        settings.bitrateBitsPerSecond = videoBitrate
        settings.frameRateNumerator = videoFrameRate
        settings.keyframeIntervalFrames = keyframeIntervalFrames
        let vp8 = try VPXEncoder(configuration: settings)
        vp8Frames = try pictures.enumerated().map { index, picture in
            try vp8.encode(
                picture, timestampMicroseconds: Int64(index) * 1_000_000 / Int64(videoFrameRate),
                forceKeyframe: index % keyframeIntervalFrames == 0)
        }
        self.videoFrameRate = videoFrameRate
        self.keyframeIntervalFrames = keyframeIntervalFrames
        self.audioBitrate = audioBitrate
        self.videoBitrate = videoBitrate
    }

    /// The low layer a publisher in dual stream mode sends beside ``vp8Frames``, as the
    /// engine's defaults make it (``LowVideoStreamConfiguration``): one picture in
    /// ``lowLayerPictureStep`` from the first, scaled to ``lowLayerSize`` (libyuv box filtering,
    /// as the publisher's scaler), encoded as VP8 at that fraction of ``videoFrameRate`` and a
    /// fifth of the high frames' bitrate. A picture whose high frame is a keyframe (one in
    /// ``keyframeIntervalFrames``) is a keyframe here too, so with an even interval the layers'
    /// keyframes fall on the same pictures. Low frame `i` is picture `i × lowLayerPictureStep`,
    /// stamped with that picture's time.
    ///
    /// Made on the first call (about a second of encoding) and kept: the benches that replay
    /// one layer never pay for it. Thread-safe.
    public func lowVP8Frames() throws -> [EncodedFrame] {
        try lowLayerCache.frames { try encodeLowLayer() }
    }

    /// One picture in this many has a low-layer frame (the engine's default frame rate divisor).
    public var lowLayerPictureStep: Int { LowVideoStreamConfiguration().frameRateDivisor }

    /// The low layer's picture size: ``pictures``' divided by the engine's default size divisor,
    /// kept even (640x360: 320x180).
    public var lowLayerSize: (width: Int, height: Int) {
        let divisor = LowVideoStreamConfiguration().sizeDivisor
        return (max(2, pictures[0].width / divisor & ~1), max(2, pictures[0].height / divisor & ~1))
    }

    /// Encodes ``lowVP8Frames()``.
    private func encodeLowLayer() throws -> [EncodedFrame] {
        let (width, height) = lowLayerSize
        let step = lowLayerPictureStep
        var settings = VPXEncoderConfiguration(codec: .vp8, width: width, height: height)
        settings.bitrateBitsPerSecond =
            LowVideoStreamConfiguration().bitrateBitsPerSecond ?? max(10_000, videoBitrate / 5)
        settings.frameRateNumerator = videoFrameRate
        settings.frameRateDenominator = step
        settings.keyframeIntervalFrames = max(1, keyframeIntervalFrames / step)
        let vp8 = try VPXEncoder(configuration: settings)
        // A canvas that fills its whole area scales as the publisher's low layer does.
        let scaler = try CanvasBuffer(
            VideoCanvas(channelId: "low layer", uid: 0, width: width, height: height, renderMode: .fill))
        return try stride(from: 0, to: pictures.count, by: step).map { index in
            pictures[index].withView { scaler.render($0) }
            return try scaler.withLockedPicture { scaled in
                try vp8.encode(
                    scaled, timestampMicroseconds: Int64(index) * 1_000_000 / Int64(videoFrameRate),
                    forceKeyframe: index % keyframeIntervalFrames == 0)
            }
        }
    }

    /// How many different users ``userMedia(variant:)`` makes before repeating.
    public static let userVariants = 8

    /// One simulated user's own media, derived from the samples so that users differ to eye and
    /// ear: the speech played faster or slower (another pitch), at another level and from another
    /// point, and the picture in other colours from another frame; both encoded for replay as
    /// the samples are (same packet and frame counts, keyframes at the same places). Variant 0
    /// is the samples' own media.
    public func userMedia(variant: Int) throws -> UserMedia {
        let variant = variant % Self.userVariants
        guard variant > 0 else { return UserMedia(opusPackets: opusPackets, vp8Frames: vp8Frames) }
        let rates = [1.0, 1.19, 0.84, 1.12, 0.89, 1.26, 0.79, 1.06]
        let gains = [1.0, 0.8, 1.0, 0.7, 0.9, 0.75, 1.0, 0.85]
        let source = audioFrames.flatMap(\.samples)
        let sourceFrames = source.count / 2
        var encoder = OpusEncoderConfiguration()
        encoder.bitrateBitsPerSecond = audioBitrate
        let opus = try OpusEncoder(configuration: encoder)
        var packets: [EncodedFrame] = []
        var pcm = [Int16](repeating: 0, count: 1920)
        var position = Double((variant * 37 * 960) % sourceFrames)
        for index in 0..<opusPackets.count {
            for frame in 0..<960 {
                // Linear interpolation between the two nearest source frames, looping.
                let whole = Int(position)
                let fraction = position - Double(whole)
                let a = whole % sourceFrames
                let b = (whole + 1) % sourceFrames
                for channel in 0..<2 {
                    let value =
                        (Double(source[2 * a + channel]) * (1 - fraction)
                            + Double(source[2 * b + channel]) * fraction) * gains[variant]
                    pcm[2 * frame + channel] = Int16(clamping: Int(value.rounded()))
                }
                position += rates[variant]
                if position >= Double(sourceFrames) { position -= Double(sourceFrames) }
            }
            packets.append(
                try pcm.withUnsafeBufferPointer { try opus.encode($0, timestampMicroseconds: Int64(index) * 20_000) })
        }

        // The chroma turned around grey by an eighth of a circle per variant.
        let angle = Double(variant) * 2 * Double.pi / Double(Self.userVariants)
        let (cosine, sine) = (cos(angle), sin(angle))
        var settings = VPXEncoderConfiguration(codec: .vp8, width: pictures[0].width, height: pictures[0].height)
        settings.bitrateBitsPerSecond = videoBitrate
        settings.frameRateNumerator = videoFrameRate
        settings.keyframeIntervalFrames = keyframeIntervalFrames
        let vp8 = try VPXEncoder(configuration: settings)
        let picture = try I420Buffer(width: pictures[0].width, height: pictures[0].height)
        var frames: [EncodedFrame] = []
        for index in 0..<pictures.count {
            let source = pictures[(index + variant * 5) % pictures.count]
            source.withView { from in
                picture.withMutableView { to in
                    for row in 0..<from.height {
                        (to.y + row * to.strideY).update(from: from.y + row * from.strideY, count: from.width)
                    }
                    for row in 0..<from.chromaHeight {
                        for column in 0..<from.chromaWidth {
                            let u = Double(from.u[row * from.strideU + column]) - 128
                            let v = Double(from.v[row * from.strideV + column]) - 128
                            to.u[row * to.strideU + column] = UInt8(
                                clamping: Int((128 + cosine * u - sine * v).rounded()))
                            to.v[row * to.strideV + column] = UInt8(
                                clamping: Int((128 + sine * u + cosine * v).rounded()))
                        }
                    }
                }
            }
            frames.append(
                try vp8.encode(
                    picture, timestampMicroseconds: Int64(index) * 1_000_000 / Int64(videoFrameRate),
                    forceKeyframe: index % keyframeIntervalFrames == 0))
        }
        return UserMedia(opusPackets: packets, vp8Frames: frames)
    }
}

/// ``SampleMedia/lowVP8Frames()``, made once on first use.
private final class LowLayerCache: @unchecked Sendable {
    /// Guards ``made``.
    private let lock = NSLock()
    /// The frames, once made.
    private var made: [EncodedFrame]?

    /// The kept frames, or those `make` returns (kept), made under the lock so that callers on
    /// several threads encode once.
    func frames(_ make: () throws -> [EncodedFrame]) rethrows -> [EncodedFrame] {
        try lock.withLock {
            if let made { return made }
            let frames = try make()
            made = frames
            return frames
        }
    }
}

/// One simulated user's media, encoded for replay (see ``SampleMedia/userMedia(variant:)``).
public final class UserMedia: Sendable {
    /// 20 ms Opus packets of the user's speech.
    public let opusPackets: [EncodedFrame]
    /// VP8 frames of the user's picture, at the samples' frame rate and keyframe interval.
    public let vp8Frames: [EncodedFrame]

    init(opusPackets: [EncodedFrame], vp8Frames: [EncodedFrame]) {
        self.opusPackets = opusPackets
        self.vp8Frames = vp8Frames
    }
}
