/// Writes the pictures a receiver decodes as it decodes them (a ``VideoFrameObserver``): into a
/// Y4M file, and their MD5s as `vpxdec --md5 --i420` computes them per frame.
///
/// The Y4M header needs a frame rate: it is read from the first two pictures' RTP timestamps
/// (90 kHz: 3,000 ticks apart is 30 fps, 3,003 is 30000/1001), so the first picture waits, as
/// a copy, for the second. One picture size throughout: a stream that changes size is an error
/// naming the file, reported by ``finish()``.
///
/// Pictures come from the engine's decode threads, one at a time for one stream; the state is
/// behind a lock so that ``finish()`` may come from another thread afterwards.
final class DecodedVideoWriter: VideoFrameObserver, @unchecked Sendable {
    private struct State: @unchecked Sendable {
        var y4m: Y4MWriter?
        /// The first picture and its RTP timestamp, until the second tells the frame rate.
        var first: (picture: I420Buffer, rtpTimestamp: UInt32)?
        var md5s: [String] = []
        var frames = 0
        var failure: MediaError?
    }

    private let path: String?
    private let computesMD5: Bool
    private let stream: StreamKey
    private let state = LockedValue(State())

    /// Writes `stream`'s pictures to the Y4M file at `path` (nil: none), and their MD5s with
    /// `computeMD5`.
    init(path: String?, computeMD5: Bool, stream: StreamKey) {
        self.path = path
        computesMD5 = computeMD5
        self.stream = stream
    }

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        guard stream == self.stream else { return }
        state.withLock { state in
            guard state.failure == nil else { return }
            if computesMD5 { state.md5s.append(picture.md5()) }
            state.frames += 1
            guard let path else { return }
            do {
                if let y4m = state.y4m {
                    try write(picture, to: y4m, frame: state.frames)
                } else if let first = state.first {
                    let y4m = try Y4MWriter(
                        path: path, header: Self.header(first.picture, first.rtpTimestamp, rtpTimestamp))
                    try first.picture.withView { try write($0, to: y4m, frame: 1) }
                    try write(picture, to: y4m, frame: state.frames)
                    state.first = nil
                    state.y4m = y4m
                } else {
                    let copy = try I420Buffer(width: picture.width, height: picture.height)
                    copy.copy(from: picture)
                    state.first = (copy, rtpTimestamp)
                }
            } catch let error as MediaError {
                state.failure = error.attributed(to: path)
            } catch {
                state.failure = MediaError(.io, "\(error)", file: path)
            }
        }
    }

    private func write(_ picture: I420View, to y4m: Y4MWriter, frame: Int) throws {
        guard picture.width == y4m.header.width, picture.height == y4m.header.height else {
            throw MediaError.unsupported(
                "the picture size changes from \(y4m.header.width)x\(y4m.header.height) to "
                    + "\(picture.width)x\(picture.height) at frame \(frame); Y4M holds one size")
        }
        try y4m.write(picture)
    }

    /// The Y4M header for pictures of `first`'s size whose first two RTP timestamps are `a`
    /// and `b`: the common rate within 0.5 % of 90,000 / (b - a) frames per second (senders
    /// round each frame's time to the tick, so a 30 fps stream steps 2,999 or 3,001 ticks at
    /// times), else that rate in thousandths; 30 fps when they are equal or more than a second
    /// apart.
    static func header(_ first: I420Buffer, _ a: UInt32, _ b: UInt32) -> Y4MHeader {
        let ticks = Int(b &- a)
        guard ticks > 0, ticks <= 90_000,
            let (numerator, denominator) = try? FrameRate.nearest(toStepNanoseconds: Double(ticks) * 1e9 / 90_000)
        else { return Y4MHeader(width: first.width, height: first.height) }
        return Y4MHeader(
            width: first.width, height: first.height, frameRateNumerator: numerator,
            frameRateDenominator: denominator)
    }

    /// Completes the file and returns the pictures seen and their MD5s (empty without
    /// `computeMD5`).
    /// - Throws: ``MediaError`` when a picture could not be written, or none came for a file.
    func finish() throws -> (frames: Int, md5s: [String]) {
        try state.withLock { state in
            if let failure = state.failure { throw failure }
            if let path {
                if let first = state.first {
                    // One picture only: no second timestamp to tell the rate.
                    let y4m = try Y4MWriter(
                        path: path, header: Y4MHeader(width: first.picture.width, height: first.picture.height))
                    try first.picture.withView { try y4m.write($0) }
                    state.y4m = y4m
                    state.first = nil
                }
                guard let y4m = state.y4m else {
                    throw MediaError(.truncated, "no picture was decoded for it", file: path)
                }
                try y4m.finish()
            }
            return (state.frames, state.md5s)
        }
    }
}
