/// A channel's composite recording (room composite): the channel's grid of remote users and its
/// mix, encoded once into WebM by a ``CompositeWriter`` as the engine plays out and renders.
///
/// ``MediaEngine/pullPlayout(into:)-(UnsafeMutableBufferPointer<Int16>)`` hands it each 10 ms of the channel mix, and
/// ``MediaEngine/renderVideo()`` the grid when a picture is due; its own lock orders the two,
/// so the app may call them from different threads. A failure stops the writing and is kept
/// for the engine to report once.
final class ChannelRecorder: @unchecked Sendable {
    let channelId: String
    let path: String
    /// Whether grid tiles carry their uid.
    let labels: Bool
    private let state: LockedValue<State>
    /// The channel mix of one playout tick, copied there by the round's channel mixes
    /// (``ChannelMixRound``). Written and read by the playout round only (one at a time).
    let mixFrame: UnsafeMutableBufferPointer<Int16>

    private struct State: @unchecked Sendable {
        var writer: CompositeWriter?
        let grid: I420Buffer
        /// Engine clock times: when recording began, and when the next picture is due.
        let startedAt: Int64
        var nextPictureAt: Int64
        /// When a canvas of the channel last took a new picture, if after the last picture
        /// written, and the last picture's time in the file (microseconds).
        var changedAt: Int64?
        var lastPictureMicroseconds: Int64 = -1
        let pictureInterval: Int64
        var failure: String?
        var failureReported = false
    }

    init(
        channelId: String, path: String, width: Int, height: Int, framesPerSecond: Int, labels: Bool,
        videoSettings: VPXEncoderConfiguration, audioSettings: OpusEncoderConfiguration, mixSamples: Int, now: Int64
    ) throws {
        guard MediaFileKind.forOutput(path: path) == .webm else {
            throw MediaError.invalidArgument("\(path): a channel recording is written to .webm")
        }
        guard (1...120).contains(framesPerSecond) else {
            throw MediaError.invalidArgument("\(path): a frame rate of \(framesPerSecond) (1...120)")
        }
        guard (16...4096).contains(width), (16...4096).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw MediaError.invalidArgument("\(path): a grid of \(width)x\(height) (even, 16...4096)")
        }
        self.channelId = channelId
        self.path = path
        self.labels = labels
        let writer = try CompositeWriter(
            path: path, width: width, height: height, framesPerSecond: framesPerSecond, videoSettings: videoSettings,
            audioSettings: audioSettings)
        state = LockedValue(
            State(
                writer: writer, grid: try I420Buffer(width: width, height: height), startedAt: now, nextPictureAt: now,
                pictureInterval: 1_000_000 / Int64(framesPerSecond)))
        mixFrame = .allocate(capacity: mixSamples)
        mixFrame.initialize(repeating: 0)
    }

    deinit { mixFrame.deallocate() }

    /// Encodes the channel mix copied into ``mixFrame``.
    func addMix() {
        state.withLock { state in
            guard let writer = state.writer else { return }
            do {
                try writer.addAudio(UnsafeBufferPointer(mixFrame))
            } catch {
                fail(&state, error)
            }
        }
    }

    /// Notes that a canvas of the channel took a new picture at clock time `now` (the engine's
    /// render round).
    func canvasChanged(now: Int64) {
        state.withLock { $0.changedAt = now }
    }

    /// At clock time `now`: when a picture is due, `render` draws the grid and it is encoded.
    /// The picture is placed at the time its newest content reached the canvases (the last
    /// ``canvasChanged(now:)`` since the picture before), not at when it was taken: a change
    /// shows in the file when it showed on the canvases, not up to a picture interval later.
    func addPictureIfDue(now: Int64, render: (I420Buffer) -> Void) {
        state.withLock { state in
            guard let writer = state.writer, now >= state.nextPictureAt else { return }
            render(state.grid)
            let taken = state.changedAt ?? now
            state.changedAt = nil
            let time = max(state.lastPictureMicroseconds + 1_000, taken - state.startedAt)
            state.lastPictureMicroseconds = time
            do {
                try state.grid.withView {
                    try writer.addPicture($0, timestampMicroseconds: time)
                }
            } catch {
                fail(&state, error)
            }
            // The next picture a whole interval on, skipping any the renders were too rare for.
            state.nextPictureAt +=
                state.pictureInterval * max(1, (now - state.nextPictureAt) / state.pictureInterval + 1)
        }
    }

    private func fail(_ state: inout State, _ error: Error) {
        state.failure = "\(error)"
        state.writer = nil  // the file keeps its Clusters up to the failure
    }

    /// The failure, the first time it is asked for after writing failed.
    func takeFailureToReport() -> String? {
        state.withLock { state in
            guard let failure = state.failure, !state.failureReported else { return nil }
            state.failureReported = true
            return failure
        }
    }

    /// Finishes the file; returns the pictures and audio packets written.
    func finish() throws -> (pictures: Int64, audioPackets: Int64) {
        try state.withLock { state in
            if let failure = state.failure { throw MediaError(.io, "recording failed: \(failure)", file: path) }
            guard let writer = state.writer else { throw MediaError.invalidArgument("\(path): already finished") }
            state.writer = nil
            try writer.finish()
            return (writer.pictures, writer.audioPackets)
        }
    }
}
