/// The compressed frames of a video file in decode order: an IVF file, or the first VP8 or VP9
/// track of a WebM file (its other tracks' frames are passed over).
final class VideoFileSource {
    /// VP8 or VP9.
    let codec: VideoCodec
    /// The declared picture size.
    let width: Int, height: Int
    /// Frames per second as a fraction (IVF: its time base inverted; WebM: the track's
    /// DefaultDuration, or the step between its first frames).
    let frameRateNumerator: Int, frameRateDenominator: Int
    /// Frames returned so far.
    private(set) var framesRead = 0
    private let reader: Reader
    /// WebM frames read ahead to find the frame rate, returned first.
    private var lookahead: [WebMFrame] = []
    private var firstTime: Int64?
    private var lastTime: Int64 = 0

    private enum Reader {
        case ivf(IVFReader)
        case webm(WebMReader, track: Int)
    }

    /// How many WebM frames are read ahead, at most, to find the frame rate.
    private static let lookaheadFrames = 16

    /// Opens `path`, IVF or WebM.
    /// - Throws: ``MediaError`` naming the file when it is neither, or a WebM file without a
    ///   VP8 or VP9 track.
    init(path: String) throws {
        // Anything but WebM is read as IVF, whose reader names what is wrong with the header.
        switch try? MediaFileKind.detect(path: path) {
        case .webm:
            let webm = try WebMReader(path: path)
            guard let index = webm.tracks.firstIndex(where: { $0.codec?.kind == .video }),
                let codec = webm.tracks[index].codec.flatMap(VideoCodec.init(mediaCodec:))
            else {
                throw MediaError.unsupported(
                    "has no VP8 or VP9 track (tracks: \(webm.tracks.map(\.codecID).joined(separator: ", ")))",
                    file: path)
            }
            reader = .webm(webm, track: index)
            self.codec = codec
            width = webm.tracks[index].width
            height = webm.tracks[index].height
            while lookahead.count < Self.lookaheadFrames, let frame = try webm.readFrame() {
                if frame.track == index { lookahead.append(frame) }
            }
            let step: Double?
            if let duration = webm.tracks[index].defaultDurationNanoseconds {
                step = Double(duration)
            } else if lookahead.count > 1 {
                let span = lookahead.last!.timestampNanoseconds - lookahead.first!.timestampNanoseconds
                step = span > 0 ? Double(span) / Double(lookahead.count - 1) : nil
            } else {
                step = nil
            }
            (frameRateNumerator, frameRateDenominator) = FrameRate.nearest(toStepNanoseconds: step ?? 1e9 / 30)
            lookahead.reverse()  // returned from the end
        default:
            let ivf = try IVFReader(path: path)
            reader = .ivf(ivf)
            codec = ivf.header.codec
            width = ivf.header.width
            height = ivf.header.height
            frameRateNumerator = ivf.header.timebaseDenominator
            frameRateDenominator = ivf.header.timebaseNumerator
        }
    }

    /// The file's size in bytes (0 if unknown), and how far reading has got.
    var fileSize: Int64 {
        switch reader {
        case .ivf(let ivf): ivf.fileSize
        case .webm(let webm, _): webm.fileSize
        }
    }
    /// See ``fileSize``.
    var bytesRead: Int64 {
        switch reader {
        case .ivf(let ivf): ivf.bytesRead
        case .webm(let webm, _): webm.bytesRead
        }
    }

    /// The next compressed frame, or nil after the last.
    func next() throws -> [UInt8]? {
        switch reader {
        case .ivf(let ivf):
            guard let frame = try ivf.readFrame() else { return nil }
            note(frame.timestamp)
            return frame.bytes
        case .webm(let webm, let track):
            if let frame = lookahead.popLast() {
                note(frame.timestampNanoseconds)
                return frame.bytes
            }
            while let frame = try webm.readFrame() {
                guard frame.track == track else { continue }
                note(frame.timestampNanoseconds)
                return frame.bytes
            }
            return nil
        }
    }

    private func note(_ time: Int64) {
        if firstTime == nil { firstTime = time }
        lastTime = time
        framesRead += 1
    }

    /// The duration of the frames read: the span of their timestamps and one average step more.
    var durationSeconds: Double {
        let first = firstTime ?? 0
        switch reader {
        case .ivf(let ivf):
            let units = IVFTiming.durationUnits(first: first, last: lastTime, frames: framesRead)
            return Double(units) * Double(ivf.header.timebaseNumerator) / Double(ivf.header.timebaseDenominator)
        case .webm:
            guard framesRead > 1, lastTime > first else {
                return Double(frameRateDenominator) / Double(frameRateNumerator) * Double(framesRead)
            }
            let span = Double(lastTime - first)
            return (span + span / Double(framesRead - 1)) / 1e9
        }
    }
}

/// Frame rates as fractions.
enum FrameRate {
    /// The rates video is usually made at, as (numerator, denominator).
    private static let common: [(Int, Int)] = [
        (24000, 1001), (24, 1), (25, 1), (30000, 1001), (30, 1), (50, 1), (60000, 1001), (60, 1), (15, 1), (10, 1),
        (12, 1), (20, 1), (48, 1), (5, 1), (120, 1),
    ]

    /// The rate whose frame step is `step` nanoseconds: a common rate when within 0.5 % of
    /// one (millisecond timestamps round 30 fps steps to 33 and 34 ms), otherwise the rate in
    /// thousandths.
    static func nearest(toStepNanoseconds step: Double) -> (Int, Int) {
        let rate = 1e9 / step
        if let match = common.min(by: { abs(Double($0.0) / Double($0.1) - rate) < abs(Double($1.0) / Double($1.1) - rate) }),
            abs(Double(match.0) / Double(match.1) - rate) / rate < 0.005
        {
            return match
        }
        let thousandths = max(1, Int((rate * 1000).rounded()))
        var (numerator, denominator) = (thousandths, 1000)
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        numerator /= a
        denominator /= a
        return (numerator, denominator)
    }
}
