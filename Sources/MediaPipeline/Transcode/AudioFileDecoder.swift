/// Decodes an Ogg Opus file into a 16-bit WAV file.
public enum AudioFileDecoder {
    /// Decodes `input` (Ogg Opus) into `output` (WAV) at `sampleRate` (an Opus rate, 48 kHz by
    /// default), with pre-skip, end trimming and the header's output gain applied.
    @discardableResult
    public static func decode(
        input: String, output: String, sampleRate: Int = 48000, progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        let reader = try OggOpusReader(path: input)
        let writer = try WAVWriter(path: output, sampleRate: sampleRate, channelCount: reader.head.channelCount)
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
            frames: frames, sampleRate: sampleRate, channelCount: reader.head.channelCount,
            compressedBytes: reader.packetBytesRead)
    }
}
