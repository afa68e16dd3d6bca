/// Writes a YUV4MPEG2 (Y4M) file of 8-bit 4:2:0 pictures, whole or not at all.
public final class Y4MWriter {
    /// The destination.
    public let path: String
    /// The stream header written.
    public let header: Y4MHeader
    private let output: AtomicFileWriter
    private static let frameMarker = Array("FRAME\n".utf8)
    /// Frames written so far.
    public private(set) var framesWritten = 0

    /// Starts a file with `header`.
    public init(path: String, header: Y4MHeader) throws {
        guard Y4MHeader.supportedColorspaces.contains(header.colorspace) else {
            throw MediaError.invalidArgument("Y4M colorspace C\(header.colorspace) is not a 4:2:0 tag")
        }
        self.path = path
        self.header = header
        output = try AtomicFileWriter(path: path)
        try output.write(Array(header.serialized().utf8))
    }

    /// Appends one picture of the header's size.
    public func write(_ picture: I420View) throws {
        guard picture.width == header.width, picture.height == header.height else {
            throw MediaError.invalidArgument(
                "\(path): picture is \(picture.width)x\(picture.height); the Y4M stream is \(header.width)x\(header.height)"
            )
        }
        try output.write(Y4MWriter.frameMarker)
        try picture.forEachPackedRow { try output.write($0) }
        framesWritten += 1
    }

    /// Moves the finished file into place.
    public func finish() throws { try output.commit() }
}

/// Writes raw packed I420 frames (as `vpxdec --i420` does), whole or not at all.
public final class RawI420Writer {
    /// The destination.
    public let path: String
    private let output: AtomicFileWriter

    /// Starts a raw file at `path`.
    public init(path: String) throws {
        self.path = path
        output = try AtomicFileWriter(path: path)
    }

    /// Appends one picture's visible planes.
    public func write(_ picture: I420View) throws { try picture.forEachPackedRow { try output.write($0) } }

    /// Moves the finished file into place.
    public func finish() throws { try output.commit() }
}
