/// Encodes a composed picture and a mix once into one WebM file: VP8 (or VP9) video of the
/// pictures handed to ``addPicture(_:timestampMicroseconds:)`` and Opus audio of the 10 ms mix
/// frames handed to ``addAudio(_:)``, interleaved as they come. A channel's grid
/// (``MediaEngine/renderGrid(channelId:into:labels:)``) and its channel mix make a room composite;
/// `pipebench compose` lays files into a grid with it.
///
/// Written in live mode (a Cluster a second at most), so a process that dies leaves every
/// complete Cluster; ``finish()`` makes the file whole and seekable.
public final class CompositeWriter {
    /// The file written.
    public let path: String
    private let writer: WebMWriter
    private let video: VPXEncoder
    private let audio: OpusEncoder
    /// Audio waiting for a whole Opus frame, interleaved stereo at 48 kHz.
    private var pending: [Int16] = []
    /// 48 kHz samples encoded (in whole packets), and given.
    private var audioSamples48k: Int64 = 0
    private var inputSamples48k: Int64 = 0
    private let frameMicroseconds: Int64
    /// Pictures and Opus packets written.
    public private(set) var pictures: Int64 = 0, audioPackets: Int64 = 0

    /// A composite of `width` × `height` pictures at about `framesPerSecond`, encoded with
    /// `videoSettings` (size and rate replaced) and `audioSettings` (48 kHz stereo).
    public init(
        path: String, width: Int, height: Int, framesPerSecond: Int,
        videoSettings: VPXEncoderConfiguration = VPXEncoderConfiguration(width: 1, height: 1),
        audioSettings: OpusEncoderConfiguration = .init()
    ) throws {
        guard framesPerSecond > 0 else {
            throw MediaError.invalidArgument("\(path): a frame rate of \(framesPerSecond)")
        }
        var videoSettings = videoSettings
        videoSettings.width = width
        videoSettings.height = height
        videoSettings.frameRateNumerator = framesPerSecond
        videoSettings.frameRateDenominator = 1
        var audioSettings = audioSettings
        audioSettings.sampleRate = 48_000
        audioSettings.channelCount = 2
        video = try VPXEncoder(configuration: videoSettings)
        audio = try OpusEncoder(configuration: audioSettings)
        self.path = path
        frameMicroseconds = 1_000_000 / Int64(framesPerSecond)
        let head = OpusHead(channelCount: 2, preSkip: audio.preSkip48kHz, inputSampleRate: 48_000)
        writer = try WebMWriter(
            path: path, tracks: [.video(videoSettings.codec, width: width, height: height), .opus(head)], mode: .live)
        pending.reserveCapacity(audio.samplesPerFrame * 2)
    }

    /// Encodes the picture shown from `timestampMicroseconds` (times must not go back).
    public func addPicture(_ picture: I420View, timestampMicroseconds: Int64) throws {
        let frame = try video.encode(picture, timestampMicroseconds: timestampMicroseconds)
        try writer.write(track: 0, frame, durationMicroseconds: frameMicroseconds)
        pictures += 1
    }

    /// Adds interleaved stereo 48 kHz samples (any count; the mix's 10 ms frames), encoded in
    /// Opus frames as they fill. The audio's time is its sample count from the start.
    public func addAudio(_ samples: UnsafeBufferPointer<Int16>) throws {
        var index = 0
        let frameSamples = audio.samplesPerFrame * 2
        while index < samples.count {
            let take = min(frameSamples - pending.count, samples.count - index)
            pending.append(contentsOf: samples[index..<index + take])
            index += take
            inputSamples48k += Int64(take / 2)
            if pending.count == frameSamples { try encodePending() }
        }
    }

    /// Encodes `pending` (a whole frame); `discardPadding48k` of its end is padding.
    private func encodePending(discardPadding48k: Int64 = 0) throws {
        let time = audioSamples48k * 1_000_000 / 48_000
        let packet = try pending.withUnsafeBufferPointer { try audio.encode($0, timestampMicroseconds: time) }
        try packet.withUnsafeBytes {
            try writer.write(
                track: 1, $0, timestampMicroseconds: time, durationMicroseconds: packet.durationMicroseconds,
                isKeyframe: true, discardPaddingNanoseconds: discardPadding48k * 1_000_000_000 / 48_000)
        }
        audioSamples48k += Int64(audio.samplesPerFrame)
        audioPackets += 1
        pending.removeAll(keepingCapacity: true)
    }

    /// Encodes the audio left, then silence until the encoder has given out every sample it
    /// holds back (its pre-skip), the padding marked to be dropped, so the track decodes to
    /// exactly the audio given; and finishes the file.
    public func finish() throws {
        let needed = Int64(audio.preSkip48kHz) + inputSamples48k
        while inputSamples48k > 0, audioSamples48k < needed {
            pending.append(contentsOf: repeatElement(0, count: audio.samplesPerFrame * 2 - pending.count))
            let end = audioSamples48k + Int64(audio.samplesPerFrame)
            try encodePending(discardPadding48k: max(0, end - needed))
        }
        try writer.finish()
    }
}
