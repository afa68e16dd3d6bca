import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// One input: the first byte picks the format (WAV, Ogg Opus, Y4M, IVF, WebM), the rest is the file.
/// Every parser must either read the file or throw a MediaError; a crash or hang is a bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let path = "/tmp/mediapipeline-fuzz-\(getpid())"
    guard let file = fopen(path, "wb") else { return 0 }
    fwrite(data + 1, 1, size - 1, file)
    fclose(file)
    defer { unlink(path) }
    do {
        switch data[0] % 5 {
        case 0:
            let reader = try WAVReader(path: path)
            var block: [Float] = []
            while try reader.read(into: &block, maxFrames: 4096) > 0 {}
        case 1:
            _ = try OggOpusReader(path: path).decode { _ in }
        case 2:
            let reader = try Y4MReader(path: path, bufferCount: 1)
            while try reader.readFrame() != nil {}
        case 3:
            _ = try VideoFileDecoder.decode(input: path, output: .none, computeMD5: true)
        default:
            let reader = try WebMReader(path: path)
            while try reader.readFrame() != nil {}
        }
    } catch {}
    return 0
}
