#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The media file formats MediaPipeline reads and writes.
public enum MediaFileKind: String, Sendable, CaseIterable {
    /// RIFF/WAVE PCM audio.
    case wav
    /// Ogg Opus audio (RFC 7845).
    case oggOpus = "ogg-opus"
    /// YUV4MPEG2 raw video.
    case y4m
    /// IVF (VP8/VP9) video.
    case ivf
    /// WebM (VP8/VP9 video, Opus audio), or Matroska of the same codecs.
    case webm
    /// Packed raw I420 frames (output only).
    case rawI420 = "i420"

    /// Recognises a file by its first bytes.
    /// - Throws: ``MediaError`` naming the file when it cannot be opened or is none of these.
    public static func detect(path: String) throws -> MediaFileKind {
        let file = try FileByteReader(path: path)
        var magic = [UInt8](repeating: 0, count: 36)
        let count = try magic.withUnsafeMutableBytes { try file.read(into: $0) }
        magic.removeLast(36 - count)
        func starts(_ text: String, at offset: Int = 0) -> Bool {
            let bytes = Array(text.utf8)
            return magic.count >= offset + bytes.count && Array(magic[offset..<offset + bytes.count]) == bytes
        }
        if starts("RIFF") && starts("WAVE", at: 8) { return .wav }
        if starts("OggS") { return .oggOpus }
        if starts("YUV4MPEG2") { return .y4m }
        if starts("DKIF") { return .ivf }
        if magic.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return .webm }
        if count == 0 { throw MediaError(.truncated, "file is empty", file: path) }
        throw MediaError.unsupported(
            "unrecognised file format (first bytes '\(magic.printable(0..<min(8, magic.count)))'); expected WAV, Ogg Opus, Y4M, IVF or WebM",
            file: path)
    }

    /// The kind an output file name asks for, by its extension.
    public static func forOutput(path: String) -> MediaFileKind? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "wav", "wave": return .wav
        case "opus", "ogg", "oga": return .oggOpus
        case "y4m": return .y4m
        case "ivf": return .ivf
        case "webm": return .webm
        case "yuv", "i420": return .rawI420
        default: return nil
        }
    }
}
