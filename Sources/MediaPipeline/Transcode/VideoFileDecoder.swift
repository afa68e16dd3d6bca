/// Decodes an IVF file, or a WebM file's first VP8 or VP9 track, into Y4M or raw I420,
/// optionally with per-frame MD5s.
public enum VideoFileDecoder {
    /// Where decoded pictures go.
    public enum Output: Sendable, Equatable {
        /// A Y4M file (one picture size throughout).
        case y4m(String)
        /// Packed I420 frames, as `vpxdec --i420` writes them (sizes may change).
        case rawI420(String)
        /// Nowhere: decode only (with `computeMD5`, to check frames).
        case none
    }

    /// Decodes `input` into `output`. With `computeMD5`, the summary lists each frame's MD5
    /// over its packed planes, as `vpxdec --md5 --i420` computes them.
    @discardableResult
    public static func decode(
        input: String, output: Output, computeMD5: Bool = false, progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        let source = try VideoFileSource(path: input)
        let decoder = try VPXDecoder(codec: source.codec)
        var y4m: Y4MWriter?
        var raw: RawI420Writer?
        if case .rawI420(let path) = output { raw = try RawI420Writer(path: path) }
        var summary = TranscodeSummary(
            kind: .video, codec: source.codec.mediaCodec, input: input, output: "", durationSeconds: 0, frames: 0,
            compressedBytes: 0)
        while let frame = try source.next() {
            summary.compressedBytes += Int64(frame.count)
            do {
                _ = try frame.withUnsafeBytes { bytes in
                    try decoder.decode(bytes) { picture in
                        if summary.frames == 0 {
                            summary.width = picture.width
                            summary.height = picture.height
                            if case .y4m(let path) = output {
                                y4m = try Y4MWriter(
                                    path: path,
                                    header: Y4MHeader(
                                        width: picture.width, height: picture.height,
                                        frameRateNumerator: source.frameRateNumerator,
                                        frameRateDenominator: source.frameRateDenominator))
                            }
                        }
                        if let y4m {
                            guard picture.width == y4m.header.width, picture.height == y4m.header.height else {
                                throw MediaError.unsupported(
                                    "picture size changes from \(y4m.header.width)x\(y4m.header.height) to "
                                        + "\(picture.width)x\(picture.height) at frame \(summary.frames); Y4M holds one size "
                                        + "(decode to raw I420 instead)")
                            }
                            try y4m.write(picture)
                        }
                        try raw?.write(picture)
                        if computeMD5 { summary.frameMD5s.append(picture.md5()) }
                        summary.frames += 1
                    }
                }
            } catch let error as MediaError {
                throw error.attributed(to: input)
            }
            if let progress, source.fileSize > 0, source.framesRead % 8 == 0 {
                progress(Double(source.bytesRead) / Double(source.fileSize))
            }
        }
        guard summary.frames > 0 else { throw MediaError(.truncated, "has no decodable frame", file: input) }
        try y4m?.finish()
        try raw?.finish()
        switch output {
        case .y4m(let path), .rawI420(let path): summary.output = path
        case .none: summary.output = ""
        }
        summary.durationSeconds = source.durationSeconds
        progress?(1)
        return summary
    }
}
