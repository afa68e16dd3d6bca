import MediaPipeline
import MediaPipelineTesting

/// What `pipebench join --video/--audio` publishes instead of the bundled samples: a Y4M's
/// pictures and a WAV's 10 ms frames, looped, encoded live by the engine.
struct JoinSource {
    /// The pictures, in order, and their rate (numerator / denominator per second).
    var pictures: [I420Buffer]
    var frameRateNumerator: Int, frameRateDenominator: Int
    /// 10 ms frames of 48 kHz stereo.
    var audioFrames: [AudioFrame]

    /// The most pictures read from a Y4M (kept in memory to loop): 60 s at 25 frames/s.
    static let maximumPictures = 1_500

    /// The bundled samples' pictures and speech, as `--encode` publishes them.
    init(samples: SampleMedia) {
        pictures = samples.pictures
        frameRateNumerator = samples.videoFrameRate
        frameRateDenominator = 1
        audioFrames = samples.audioFrames
    }

    /// Replaces the pictures with those of the Y4M file at `path`.
    /// - Throws: ``MediaError`` naming the file when it cannot be read, holds no picture, or
    ///   holds more than ``maximumPictures``.
    mutating func loadVideo(_ path: String) throws {
        let reader = try Y4MReader(path: path)
        var read: [I420Buffer] = []
        while let picture = try reader.readFrame() {
            guard read.count < Self.maximumPictures else {
                throw MediaError(
                    .invalidArgument, "more than \(Self.maximumPictures) pictures: loop a shorter file", file: path)
            }
            // The reader's buffers go back to its pool: each picture is kept as a copy.
            let kept = try I420Buffer(width: picture.width, height: picture.height)
            picture.withView { kept.copy(from: $0) }
            read.append(kept)
        }
        guard !read.isEmpty else { throw MediaError(.invalidArgument, "no picture", file: path) }
        pictures = read
        frameRateNumerator = reader.header.frameRateNumerator
        frameRateDenominator = reader.header.frameRateDenominator
    }

    /// Replaces the audio with the WAV file at `path` (48 kHz, mono or stereo; mono is sent on
    /// both channels), cut into 10 ms frames (a last partial frame is left out).
    /// - Throws: ``MediaError`` naming the file when it cannot be read, is not 48 kHz mono or
    ///   stereo, or is shorter than 10 ms.
    mutating func loadAudio(_ path: String) throws {
        let reader = try WAVReader(path: path)
        let channels = reader.format.channelCount
        guard reader.format.sampleRate == 48_000, channels == 1 || channels == 2 else {
            throw MediaError(
                .invalidArgument,
                "\(reader.format.sampleRate) Hz, \(channels) channels: join publishes 48 kHz mono or stereo",
                file: path)
        }
        var frames: [AudioFrame] = []
        var block: [Float] = []
        var position: Int64 = 0
        while try reader.read(into: &block, maxFrames: 480) == 480 {
            var samples = [Int16](repeating: 0, count: 960)
            for i in 0..<480 {
                samples[2 * i] = block[i * channels].int16Sample
                samples[2 * i + 1] = block[i * channels + channels - 1].int16Sample
            }
            frames.append(AudioFrame(samples: samples, sampleRate: 48_000, channelCount: 2, timestampSamples: position))
            position += 480
        }
        guard !frames.isEmpty else { throw MediaError(.invalidArgument, "shorter than 10 ms", file: path) }
        audioFrames = frames
    }

    /// When picture `index` (counted from the start, across loops) is due, in microseconds.
    func pictureTimeMicroseconds(_ index: Int) -> Int64 {
        Int64(index) * 1_000_000 * Int64(frameRateDenominator) / Int64(frameRateNumerator)
    }
}
