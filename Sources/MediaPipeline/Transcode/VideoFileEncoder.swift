/// Encodes a Y4M file into an IVF file with VP8 or VP9.
public enum VideoFileEncoder {
    /// Encodes `input` (Y4M) into `output` (IVF). The size and frame rate in `settings` are
    /// replaced by the file's; frame `n` gets timestamp `n` in a time base of one frame.
    @discardableResult
    public static func encode(
        input: String, output: String, settings: VPXEncoderConfiguration, progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        let reader = try Y4MReader(path: input, bufferCount: 2)
        let header = reader.header
        var configuration = settings
        configuration.width = header.width
        configuration.height = header.height
        configuration.frameRateNumerator = header.frameRateNumerator
        configuration.frameRateDenominator = header.frameRateDenominator
        let encoder = try VPXEncoder(configuration: configuration)
        let writer = try IVFWriter(
            path: output,
            header: IVFHeader(
                codec: configuration.codec, width: header.width, height: header.height,
                timebaseNumerator: header.frameRateDenominator, timebaseDenominator: header.frameRateNumerator))
        var index: Int64 = 0
        while let picture = try reader.readFrame() {
            let frame = try encoder.encode(picture)
            try writer.write(frame.bytes, timestamp: index)
            index += 1
            if let progress, reader.fileSize > 0, index % 8 == 0 {
                progress(Double(reader.bytesRead) / Double(reader.fileSize))
            }
        }
        guard index > 0 else { throw MediaError(.truncated, "Y4M file has no frame", file: input) }
        try writer.finish()
        progress?(1)
        return TranscodeSummary(
            kind: .video, codec: configuration.codec.mediaCodec, input: input, output: output,
            durationSeconds: Double(index) / header.framesPerSecond, frames: index, width: header.width,
            height: header.height, compressedBytes: writer.payloadBytes)
    }
}
