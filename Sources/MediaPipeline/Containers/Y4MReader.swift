/// Reads frames from a YUV4MPEG2 (Y4M) file of 8-bit 4:2:0 pictures. Streams: each frame goes
/// into a buffer from a small pool, so memory does not grow with the file.
public final class Y4MReader {
    /// The file being read.
    public let path: String
    /// The stream header.
    public let header: Y4MHeader
    private let file: FileByteReader
    private let pool: I420BufferPool
    /// Frames read so far.
    public private(set) var framesRead = 0

    /// Opens `path` and reads its header.
    /// - Parameter path: the Y4M file.
    /// - Parameter bufferCount: how many frames returned by ``readFrame()`` may be held at once.
    public init(path: String, bufferCount: Int = 4) throws {
        self.path = path
        do {
            file = try FileByteReader(path: path)
            let line = try Y4MReader.readLine(file, limit: 4096, what: "Y4M stream header")
            header = try Y4MHeader.parse(line)
            pool = try I420BufferPool(width: header.width, height: header.height, capacity: bufferCount)
            if let remaining = file.remaining, remaining == 0 {
                throw MediaError(.truncated, "Y4M file has a header but no frame")
            }
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    /// The file's size in bytes (0 if unknown) and bytes consumed, for progress display.
    public var fileSize: Int64 { file.size }
    /// Bytes consumed so far.
    public var bytesRead: Int64 { file.offset }

    /// The next frame, or nil at the end of the file.
    public func readFrame() throws -> I420Buffer? {
        do {
            guard !(try file.atEnd()) else { return nil }
            let start = file.offset
            let line = try Y4MReader.readLine(file, limit: 1024, what: "frame \(framesRead) header")
            guard line == "FRAME" || line.hasPrefix("FRAME ") else {
                throw MediaError.invalidFormat(
                    "expected 'FRAME' at byte \(start) (frame \(framesRead)), found '\(line.prefix(16))'")
            }
            if let remaining = file.remaining, remaining < header.frameByteCount {
                throw MediaError(
                    .truncated,
                    "frame \(framesRead) needs \(header.frameByteCount) bytes but only \(remaining) remain (truncated file)"
                )
            }
            let buffer = try pool.acquire()
            let frameIndex = framesRead
            try buffer.withMutableView { view in
                func readPlane(
                    _ base: UnsafeMutablePointer<UInt8>, _ stride: Int, _ width: Int, _ height: Int, _ name: String
                )
                    throws
                {
                    for row in 0..<height {
                        try file.readExactly(
                            into: UnsafeMutableRawBufferPointer(start: base + row * stride, count: width),
                            what: "frame \(frameIndex) \(name) plane")
                    }
                }
                try readPlane(view.y, view.strideY, view.width, view.height, "Y")
                try readPlane(view.u, view.strideU, view.chromaWidth, view.chromaHeight, "U")
                try readPlane(view.v, view.strideV, view.chromaWidth, view.chromaHeight, "V")
            }
            framesRead += 1
            return buffer
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    static func readLine(_ file: FileByteReader, limit: Int, what: String) throws -> String {
        var bytes: [UInt8] = []
        let start = file.offset
        while true {
            guard let byte = try file.readByte() else {
                throw MediaError(.truncated, "file ends inside the \(what) at byte \(start)")
            }
            if byte == 0x0A { break }
            bytes.append(byte)
            guard bytes.count <= limit else {
                throw MediaError.invalidFormat("\(what) at byte \(start) has no line end within \(limit) bytes")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
