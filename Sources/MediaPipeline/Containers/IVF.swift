/// The 32-byte header of an IVF file.
public struct IVFHeader: Sendable, Equatable {
    /// VP8 or VP9.
    public var codec: VideoCodec
    /// Picture width and height in pixels, as declared (frames may change size).
    public var width: Int, height: Int
    /// Time base: timestamps count units of `timebaseNumerator / timebaseDenominator` seconds.
    public var timebaseNumerator: Int, timebaseDenominator: Int
    /// The header's length field (bytes 24–27), as declared: libvpx's tools write the frame
    /// count, ffmpeg the duration in time-base units; with one unit per frame (vpxenc's time
    /// base) the two agree. Writers that cannot seek leave 0.
    public var frameCount: Int

    /// A header for `codec` at `width` × `height`, one timestamp unit per frame at `framesPerSecond`.
    public init(
        codec: VideoCodec, width: Int, height: Int, timebaseNumerator: Int = 1, timebaseDenominator: Int = 30,
        frameCount: Int = 0
    ) {
        self.codec = codec
        self.width = width
        self.height = height
        self.timebaseNumerator = timebaseNumerator
        self.timebaseDenominator = timebaseDenominator
        self.frameCount = frameCount
    }

    /// The time of `timestamp` (in this time base) in microseconds, rounded toward zero; nil
    /// beyond MediaTime's limit (which ``IVFReader`` refuses).
    func microseconds(timestamp: Int64) -> Int64? {
        guard timebaseDenominator > 0,
            let time = MediaTime.scaled(
                timestamp, by: Int64(timebaseNumerator) * 1_000_000, over: Int64(timebaseDenominator)),
            abs(time) <= MediaTime.limitMicroseconds
        else { return nil }
        return time
    }

    func serialized(lengthField: Int? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendASCII("DKIF")
        bytes.appendLE16(0)
        bytes.appendLE16(32)
        bytes.appendASCII(codec.fourcc)
        bytes.appendLE16(UInt16(width))
        bytes.appendLE16(UInt16(height))
        bytes.appendLE32(UInt32(timebaseDenominator))  // "rate"
        bytes.appendLE32(UInt32(timebaseNumerator))  // "scale"
        bytes.appendLE32(UInt32(clamping: lengthField ?? frameCount))
        bytes.appendLE32(0)
        return bytes
    }

    static func parse(_ bytes: [UInt8]) throws -> IVFHeader {
        guard bytes.printable(0..<4) == "DKIF" else {
            throw MediaError.invalidFormat("not an IVF file: expected 'DKIF', found '\(bytes.printable(0..<4))'")
        }
        guard bytes.le16(4) == 0 else {
            throw MediaError.unsupported("IVF version \(bytes.le16(4)) is not supported (0 only)")
        }
        guard bytes.le16(6) == 32 else {
            throw MediaError.invalidFormat("IVF header length is \(bytes.le16(6)); 32 expected")
        }
        let fourcc = bytes.printable(8..<12)
        guard let codec = MediaCodec(ivfFourCC: fourcc).flatMap(VideoCodec.init(mediaCodec:)) else {
            let known = VideoCodec.allCases.map(\.fourcc).joined(separator: " or ")
            throw MediaError.unsupported("IVF fourcc '\(fourcc)' is not \(known)")
        }
        let width = Int(bytes.le16(12))
        let height = Int(bytes.le16(14))
        guard width > 0, height > 0 else {
            throw MediaError.invalidFormat("IVF picture size \(width)x\(height) has a zero dimension")
        }
        let rate = Int(bytes.le32(16))
        let scale = Int(bytes.le32(20))
        guard rate > 0, scale > 0 else {
            throw MediaError.invalidFormat("IVF time base \(scale)/\(rate) has a zero term")
        }
        return IVFHeader(
            codec: codec, width: width, height: height, timebaseNumerator: scale, timebaseDenominator: rate,
            frameCount: Int(bytes.le32(24)))
    }
}

/// One frame read from an IVF file.
public struct IVFFrame: Sendable {
    /// The compressed frame.
    public var bytes: [UInt8]
    /// Timestamp in the header's time base units.
    public var timestamp: Int64
}

/// Reads an IVF file frame by frame.
public final class IVFReader {
    /// The file being read.
    public let path: String
    /// The file header.
    public let header: IVFHeader
    private let file: FileByteReader
    /// Frames read so far.
    public private(set) var framesRead = 0
    /// The first and last timestamps read.
    private var firstTimestamp: Int64?
    private var lastTimestamp: Int64 = 0
    /// The largest frame accepted, in bytes.
    public static let maximumFrameBytes = 64 << 20

    /// Opens `path` and reads its header.
    public init(path: String) throws {
        self.path = path
        do {
            file = try FileByteReader(path: path)
            header = try IVFHeader.parse(try file.readBytes(32, what: "IVF header"))
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    /// The file's size in bytes (0 if unknown), for progress display.
    public var fileSize: Int64 { file.size }
    /// Bytes consumed so far.
    public var bytesRead: Int64 { file.offset }

    /// The next frame, or nil at the end of the file.
    public func readFrame() throws -> IVFFrame? {
        do {
            guard !(try file.atEnd()) else {
                // 0 and 0xFFFFFFFF mean "unknown" (writers that cannot seek back).
                // The length is a frame count (libvpx) or a duration in units (ffmpeg): the file
                // is short when it has fewer frames and covers less time than declared.
                let declared = header.frameCount
                let covered = IVFTiming.durationUnits(
                    first: firstTimestamp ?? 0, last: lastTimestamp, frames: framesRead)
                if declared != 0, declared != 0xFFFF_FFFF, framesRead < declared, covered < declared {
                    throw MediaError(
                        .truncated,
                        "file ends after \(framesRead) frames (\(covered) time units); the header declares "
                            + "\(declared) (truncated file)")
                }
                return nil
            }
            let frameHeader = try file.readBytes(12, what: "frame \(framesRead) header")
            let size = Int(frameHeader.le32(0))
            guard size > 0 else { throw MediaError.invalidFormat("frame \(framesRead) has size 0") }
            guard size <= IVFReader.maximumFrameBytes else {
                throw MediaError.invalidFormat(
                    "frame \(framesRead) declares \(size) bytes, above the \(IVFReader.maximumFrameBytes)-byte limit")
            }
            if let remaining = file.remaining, Int64(size) > remaining {
                throw MediaError(
                    .truncated,
                    "frame \(framesRead) declares \(size) bytes but only \(remaining) remain (truncated file)")
            }
            let bytes = try file.readBytes(size, what: "frame \(framesRead) data")
            framesRead += 1
            let timestamp = Int64(bitPattern: frameHeader.le64(4))
            guard header.microseconds(timestamp: timestamp) != nil else {
                throw MediaError.invalidFormat(
                    "frame \(framesRead - 1)'s timestamp \(timestamp) in units of \(header.timebaseNumerator)/"
                        + "\(header.timebaseDenominator) s is beyond the \(MediaTime.limitMicroseconds) µs a media time may have"
                )
            }
            if firstTimestamp == nil { firstTimestamp = timestamp }
            lastTimestamp = timestamp
            return IVFFrame(bytes: bytes, timestamp: timestamp)
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }
}

/// Writes an IVF file, whole or not at all; the header's frame count is filled in at the end.
public final class IVFWriter {
    /// The destination.
    public let path: String
    /// The header as written (its frame count is updated by ``finish()``).
    public private(set) var header: IVFHeader
    private let output: AtomicFileWriter
    private var frameHeader = [UInt8]()
    /// Bytes of compressed frames written (without headers).
    public private(set) var payloadBytes: Int64 = 0
    private var firstTimestamp: Int64?
    private var lastTimestamp: Int64 = 0

    /// Starts a file with `header`.
    public init(path: String, header: IVFHeader) throws {
        guard (1...65535).contains(header.width), (1...65535).contains(header.height) else {
            throw MediaError.invalidArgument("IVF picture size \(header.width)x\(header.height) is outside 1...65535")
        }
        self.path = path
        self.header = header
        output = try AtomicFileWriter(path: path)
        try output.write(header.serialized())
    }

    /// Appends one compressed frame with its timestamp in the header's time base.
    public func write(_ frame: [UInt8], timestamp: Int64) throws {
        guard !frame.isEmpty, frame.count <= Int(UInt32.max) else {
            throw MediaError.invalidArgument("\(path): IVF frame of \(frame.count) bytes")
        }
        frameHeader.removeAll(keepingCapacity: true)
        frameHeader.appendLE32(UInt32(frame.count))
        frameHeader.appendLE64(UInt64(bitPattern: timestamp))
        try output.write(frameHeader)
        try output.write(frame)
        header.frameCount += 1
        payloadBytes += Int64(frame.count)
        if firstTimestamp == nil { firstTimestamp = timestamp }
        lastTimestamp = timestamp
    }

    /// Writes the header's length and moves the file into place. The length is the duration in
    /// time-base units (the last frame's step counted), which ffmpeg reads as the duration and
    /// which is the frame count when each frame takes one unit, as libvpx's tools write it.
    public func finish() throws {
        try output.seek(to: 0)
        let units = IVFTiming.durationUnits(
            first: firstTimestamp ?? 0, last: lastTimestamp, frames: header.frameCount)
        try output.write(header.serialized(lengthField: Int(clamping: max(units, Int64(header.frameCount)))))
        try output.commit()
    }
}
