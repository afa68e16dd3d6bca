/// Encodes a Y4M file into an IVF or WebM file with VP8 or VP9, and into WebM with a WAV
/// file's audio beside it.
public enum VideoFileEncoder {
    /// Encodes `input` (Y4M) into `output`: WebM when its name ends in `.webm`, IVF otherwise.
    /// The size and frame rate in `settings` are replaced by the file's; frame `n` gets
    /// timestamp `n` in IVF's time base of one frame, and its time in milliseconds in WebM.
    /// With `audio` (a WAV file; WebM only), its Opus encode with `audioSettings` is the
    /// second track, interleaved with the video by time and trimmed to the WAV's exact length.
    @discardableResult
    public static func encode(
        input: String, output: String, settings: VPXEncoderConfiguration, audio: String? = nil,
        audioSettings: OpusEncoderConfiguration = .init(), progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        if audio != nil, MediaFileKind.forOutput(path: output) != .webm {
            throw MediaError.invalidArgument("\(output): audio beside video needs a .webm output")
        }
        let audioStream = try audio.map { try WAVOpusStream(input: $0, settings: audioSettings) }
        let reader = try Y4MReader(path: input, bufferCount: 2)
        let header = reader.header
        var configuration = settings
        configuration.width = header.width
        configuration.height = header.height
        configuration.frameRateNumerator = header.frameRateNumerator
        configuration.frameRateDenominator = header.frameRateDenominator
        let encoder = try VPXEncoder(configuration: configuration)
        let sink = try VideoFileSink(path: output, configuration: configuration, audio: audioStream?.head)
        // Audio packets go in as far as the video has come: the file interleaves them by time.
        var audioSink: OpusFileSink?
        if case .webm(let writer) = sink, audioStream != nil { audioSink = .track(1, of: writer) }
        var audioPosition48k: Int64 = 0
        func writeAudio(until microseconds: Int64?) throws {
            guard let audioStream, let audioSink else { return }
            while microseconds.map({ audioPosition48k * 1000 / 48 < $0 }) ?? true {
                guard let packet = try audioStream.nextPacket() else { break }
                try audioSink.write(packet: packet.bytes, samples48k: packet.samples48k)
                audioPosition48k += Int64(packet.samples48k)
            }
        }
        let frameMicroseconds = 1_000_000 * Int64(header.frameRateDenominator) / Int64(header.frameRateNumerator)
        var index: Int64 = 0
        while let picture = try reader.readFrame() {
            let frame = try encoder.encode(picture)
            try writeAudio(
                until: index * 1_000_000 * Int64(header.frameRateDenominator) / Int64(header.frameRateNumerator))
            try sink.write(
                frame, index: index,
                timestampMicroseconds: index * 1_000_000 * Int64(header.frameRateDenominator)
                    / Int64(header.frameRateNumerator), durationMicroseconds: frameMicroseconds)
            index += 1
            if let progress, reader.fileSize > 0, index % 8 == 0 {
                progress(Double(reader.bytesRead) / Double(reader.fileSize))
            }
        }
        guard index > 0 else { throw MediaError(.truncated, "Y4M file has no frame", file: input) }
        try writeAudio(until: nil)
        try audioSink?.finish(playableSamples48k: audioStream?.playableSamples48k ?? 0)
        try sink.finish()
        progress?(1)
        return TranscodeSummary(
            kind: .video, codec: configuration.codec.mediaCodec, input: input, output: output,
            durationSeconds: Double(index) / header.framesPerSecond, frames: index, width: header.width,
            height: header.height, compressedBytes: sink.payloadBytes)
    }
}

/// Where encoded video goes: an IVF or a WebM file, chosen by the output's name.
private enum VideoFileSink {
    case ivf(IVFWriter)
    case webm(WebMWriter)

    init(path: String, configuration: VPXEncoderConfiguration, audio: OpusHead? = nil) throws {
        if MediaFileKind.forOutput(path: path) == .webm {
            var tracks: [WebMTrack] = [
                .video(configuration.codec, width: configuration.width, height: configuration.height)
            ]
            if let audio { tracks.append(.opus(audio)) }
            self = .webm(try WebMWriter(path: path, tracks: tracks))
        } else {
            self = .ivf(
                try IVFWriter(
                    path: path,
                    header: IVFHeader(
                        codec: configuration.codec, width: configuration.width, height: configuration.height,
                        timebaseNumerator: configuration.frameRateDenominator,
                        timebaseDenominator: configuration.frameRateNumerator)))
        }
    }

    func write(_ frame: EncodedFrame, index: Int64, timestampMicroseconds: Int64, durationMicroseconds: Int64) throws {
        switch self {
        case .ivf(let writer): try writer.write(frame.bytes, timestamp: index)
        case .webm(let writer):
            try frame.withUnsafeBytes {
                try writer.write(
                    track: 0, $0, timestampMicroseconds: timestampMicroseconds,
                    durationMicroseconds: durationMicroseconds,
                    isKeyframe: frame.isKeyframe)
            }
        }
    }

    var payloadBytes: Int64 {
        switch self {
        case .ivf(let writer): writer.payloadBytes
        case .webm(let writer): writer.payloadBytes
        }
    }

    func finish() throws {
        switch self {
        case .ivf(let writer): try writer.finish()
        case .webm(let writer): try writer.finish()
        }
    }
}
