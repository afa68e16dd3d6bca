/// Decodes Ogg Opus, or a WebM file's first Opus track, into a 16-bit WAV file.
public enum AudioFileDecoder {
    /// Decodes `input` (Ogg Opus or WebM) into `output` (WAV) at `sampleRate` (an Opus rate,
    /// 48 kHz by default), with the pre-skip (WebM: CodecDelay), end trimming (Ogg: the final
    /// granule position; WebM: DiscardPadding) and the header's output gain applied, so the
    /// WAV has exactly the encoded source's length.
    @discardableResult
    public static func decode(
        input: String, output: String, sampleRate: Int = 48000, progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        if try MediaFileKind.detect(path: input) == .webm {
            return try decodeWebM(input: input, output: output, sampleRate: sampleRate, progress: progress)
        }
        let reader = try OggOpusReader(path: input)
        let writer = try WAVWriter(path: output, sampleRate: sampleRate, channelCount: reader.head.decodedChannelCount)
        var lastReport = 0
        let frames = try reader.decode(sampleRate: sampleRate) { block in
            try writer.write(block)
            if let progress, reader.fileSize > 0, reader.packetsRead - lastReport >= 50 {
                lastReport = reader.packetsRead
                progress(Double(reader.bytesRead) / Double(reader.fileSize))
            }
        }
        try writer.finish()
        progress?(1)
        return TranscodeSummary(
            kind: .audio, codec: .opus, input: input, output: output,
            durationSeconds: Double(frames) / Double(sampleRate),
            frames: frames, sampleRate: sampleRate, channelCount: reader.head.decodedChannelCount,
            compressedBytes: reader.packetBytesRead)
    }

    private static func decodeWebM(
        input: String, output: String, sampleRate: Int, progress: ProgressHandler?
    ) throws -> TranscodeSummary {
        let reader = try WebMReader(path: input)
        guard let track = reader.tracks.firstIndex(where: { $0.codec == .opus }),
            let head = reader.tracks[track].opusHead
        else {
            if let skipped = reader.tracks.first(where: { $0.unsupportedReason != nil }) {
                throw MediaError.unsupported(
                    "Opus track \(skipped.number) is not decoded here: \(skipped.unsupportedReason!)", file: input)
            }
            throw MediaError.unsupported(
                "has no Opus track (tracks: \(reader.tracks.map(\.codecID).joined(separator: ", ")))", file: input)
        }
        var stream = try OpusStreamDecoder(head: head, sampleRate: sampleRate)
        let writer = try WAVWriter(path: output, sampleRate: sampleRate, channelCount: head.decodedChannelCount)
        var compressedBytes: Int64 = 0
        while let frame = try reader.readFrame() {
            guard frame.track == track else { continue }
            compressedBytes += Int64(frame.bytes.count)
            let discard = MediaTime.samples48k(nanoseconds: frame.discardPaddingNanoseconds)
            do {
                try frame.bytes.withUnsafeBytes {
                    try stream.decode($0, discardAtEnd48k: discard) { try writer.write($0) }
                }
            } catch let error as MediaError {
                throw error.attributed(to: input)
            }
            if let progress, reader.fileSize > 0, stream.packets % 50 == 0 {
                progress(Double(reader.bytesRead) / Double(reader.fileSize))
            }
        }
        guard stream.packets > 0 else { throw MediaError(.truncated, "its Opus track has no frame", file: input) }
        try writer.finish()
        progress?(1)
        return TranscodeSummary(
            kind: .audio, codec: .opus, input: input, output: output,
            durationSeconds: Double(stream.delivered) / Double(sampleRate), frames: stream.delivered,
            sampleRate: sampleRate, channelCount: head.decodedChannelCount, compressedBytes: compressedBytes)
    }
}
