/// The compressed frames of a video file in decode order: an IVF file, or the first VP8 or VP9
/// track of a WebM file (its other tracks' frames are passed over).
final class VideoFileSource {
    /// VP8 or VP9.
    let codec: VideoCodec
    /// The declared picture size.
    let width: Int, height: Int
    /// Frames per second as a fraction: an IVF file's time base inverted when its frames step
    /// one unit at a time; otherwise (WebM, or IVF with millisecond timestamps) the track's
    /// DefaultDuration or the mean step between its first frames.
    private(set) var frameRateNumerator = 30, frameRateDenominator = 1
    /// Frames returned so far.
    private(set) var framesRead = 0
    private let reader: Reader
    /// Frames read ahead to find the frame rate, returned first. Times count ticks: IVF time
    /// base units, or WebM nanoseconds.
    private var lookahead: [(bytes: [UInt8], time: Int64)] = []
    /// A tick's length in seconds, as a fraction.
    private let tickNumerator: Int64, tickDenominator: Int64
    private var firstTime: Int64?
    private var lastTime: Int64 = 0

    private enum Reader {
        case ivf(IVFReader)
        case webm(WebMReader, track: Int)
    }

    /// How many frames are read ahead, at most, to find the frame rate.
    private static let lookaheadFrames = 16

    /// Opens `path`, IVF or WebM.
    /// - Throws: ``MediaError`` naming the file when it is neither, or a WebM file without a
    ///   VP8 or VP9 track.
    init(path: String) throws {
        var declaredStep: Int64?
        // Anything but WebM is read as IVF, whose reader names what is wrong with the header.
        if (try? MediaFileKind.detect(path: path)) == .webm {
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
            declaredStep = webm.tracks[index].defaultDurationNanoseconds
            (tickNumerator, tickDenominator) = (1, 1_000_000_000)
        } else {
            let ivf = try IVFReader(path: path)
            reader = .ivf(ivf)
            codec = ivf.header.codec
            width = ivf.header.width
            height = ivf.header.height
            (tickNumerator, tickDenominator) = (
                Int64(ivf.header.timebaseNumerator), Int64(ivf.header.timebaseDenominator)
            )
        }
        while lookahead.count < Self.lookaheadFrames, let frame = try read() { lookahead.append(frame) }
        if case .ivf(let ivf) = reader,
            lookahead.count < 2
                || zip(lookahead, lookahead.dropFirst()).allSatisfy({ $0.time < .max && $1.time == $0.time + 1 })
        {
            (frameRateNumerator, frameRateDenominator) = (ivf.header.timebaseDenominator, ivf.header.timebaseNumerator)
        } else if let declaredStep {
            (frameRateNumerator, frameRateDenominator) = try FrameRate.nearest(toStepNanoseconds: Double(declaredStep))
        } else if lookahead.count > 1, lookahead.last!.time > lookahead.first!.time {
            // In Double: timestamps read from a file may be anything, and their difference overflow.
            let step =
                (Double(lookahead.last!.time) - Double(lookahead.first!.time)) / Double(lookahead.count - 1)
                * Double(tickNumerator) * 1e9 / Double(tickDenominator)
            (frameRateNumerator, frameRateDenominator) = try FrameRate.nearest(toStepNanoseconds: step)
        }
        lookahead.reverse()  // returned from the end
    }

    /// The next frame from the file, its time in ticks.
    private func read() throws -> (bytes: [UInt8], time: Int64)? {
        switch reader {
        case .ivf(let ivf):
            guard let frame = try ivf.readFrame() else { return nil }
            return (frame.bytes, frame.timestamp)
        case .webm(let webm, let track):
            while let frame = try webm.readFrame() {
                if frame.track == track { return (frame.bytes, frame.timestampNanoseconds) }
            }
            return nil
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
    func next() throws -> [UInt8]? { try nextTimed()?.bytes }

    /// The next compressed frame and its time in seconds from the first frame's.
    func nextTimed() throws -> (bytes: [UInt8], seconds: Double)? {
        guard let frame = try lookahead.popLast() ?? read() else { return nil }
        if firstTime == nil { firstTime = frame.time }
        lastTime = frame.time
        framesRead += 1
        let ticks = Double(frame.time) - Double(firstTime!)  // no overflow whatever the file says
        return (frame.bytes, ticks * Double(tickNumerator) / Double(tickDenominator))
    }

    /// The duration of the frames read: the span of their times and one average step more
    /// (one frame at the frame rate when there is no span).
    var durationSeconds: Double {
        let first = firstTime ?? 0
        guard framesRead > 1, lastTime > first else {
            return Double(frameRateDenominator) / Double(frameRateNumerator) * Double(framesRead)
        }
        // In IVF's usual one-unit steps, exactly the frame count in units.
        let ticks = IVFTiming.durationUnits(first: first, last: lastTime, frames: framesRead)
        return Double(ticks) * Double(tickNumerator) / Double(tickDenominator)
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
    /// A step that is not a positive, finite duration (a DefaultDuration of 0, a time base of 0)
    /// is a typed error.
    static func nearest(toStepNanoseconds step: Double) throws -> (Int, Int) {
        guard step.isFinite, step >= 1 else {
            throw MediaError.invalidFormat("a frame step of \(step) ns gives no frame rate")
        }
        let rate = 1e9 / step
        if let match = common.min(by: {
            abs(Double($0.0) / Double($0.1) - rate) < abs(Double($1.0) / Double($1.1) - rate)
        }),
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
