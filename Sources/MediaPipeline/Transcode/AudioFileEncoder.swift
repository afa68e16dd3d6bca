/// Encodes a WAV file into an Ogg Opus file, or a WebM file with one Opus track.
///
/// Sample rates that Opus takes (8, 12, 16, 24, 48 kHz) are encoded as they are; any other rate
/// is resampled to 48 kHz with libsoxr. The decoded output is trimmed to exactly the source's
/// duration: by the Ogg file's granule positions (RFC 7845 §4.4), or by the WebM track's
/// CodecDelay and its last block's DiscardPadding.
public enum AudioFileEncoder {
    /// Encodes `input` (WAV) into `output` (WebM when its name ends in `.webm`, Ogg Opus
    /// otherwise) with `settings`; the sample rate and channel count in `settings` are replaced
    /// by the file's.
    @discardableResult
    public static func encode(
        input: String, output: String, settings: OpusEncoderConfiguration = .init(), progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        let stream = try WAVOpusStream(input: input, settings: settings)
        let writer = try OpusFileSink(path: output, head: stream.head)
        var packets = 0
        while let packet = try stream.nextPacket() {
            try writer.write(packet: packet.bytes, samples48k: packet.samples48k)
            packets += 1
            if let progress, packets % 50 == 0 { progress(stream.fractionRead) }
        }
        try writer.finish(playableSamples48k: stream.playableSamples48k)
        progress?(1)
        return TranscodeSummary(
            kind: .audio, codec: .opus, input: input, output: output,
            durationSeconds: Double(stream.sourceFrames) / Double(stream.sourceSampleRate),
            frames: stream.playableEncoderFrames, sampleRate: stream.configuration.sampleRate,
            channelCount: stream.head.channelCount, compressedBytes: stream.packetBytes)
    }
}
