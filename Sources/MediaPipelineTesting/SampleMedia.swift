import MediaPipeline

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
    }
}
