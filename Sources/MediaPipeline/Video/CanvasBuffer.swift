/// The picture behind a ``VideoCanvas``: the remote user's latest frame, fitted into the
/// canvas's size in its render mode.
///
/// ## Reading contract
/// The engine renders into the buffer while the app may read it. Reads go through
/// ``withLockedPicture(_:)`` (the renderer waits until `body` returns, so keep it short) or
/// ``snapshot()`` (a private copy). Pointers handed to `body` must not escape it.
public final class CanvasBuffer: Sendable {
    /// The binding, the picture and its counters: one value behind the canvas lock.
    private struct State {
        var canvas: VideoCanvas
        var picture: I420Buffer
        var mirrorScratch: I420Buffer?
        var framesRendered = 0
        var sourceWidth = 0
        var sourceHeight = 0
        var rtpTimestamp: UInt32?
    }
    private let state: LockedValue<State>

    /// Creates a black canvas. (The engine makes one per ``MediaEngine/setupRemoteVideo(_:)``;
    /// a standalone one renders local previews or measures rendering.)
    /// - Throws: ``MediaError/Code/invalidArgument`` for a size outside 1...16384.
    public init(_ canvas: VideoCanvas) throws {
        let picture = try I420Buffer(width: canvas.width, height: canvas.height)
        picture.withMutableView { $0.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v) }
        state = LockedValue(State(canvas: canvas, picture: picture))
    }

    /// The binding this buffer renders for.
    public var canvas: VideoCanvas { state.withLock { $0.canvas } }
    /// Frames rendered into the canvas so far.
    public var framesRendered: Int { state.withLock { $0.framesRendered } }
    /// Size of the last picture rendered, before fitting (0×0 before the first).
    public var sourceSize: (width: Int, height: Int) { state.withLock { ($0.sourceWidth, $0.sourceHeight) } }
    /// The sender's RTP timestamp (90 kHz) of the picture shown: which of its frames this is,
    /// for synchronizing with audio or measuring delay. Nil before the engine rendered one, or
    /// after the app rendered a picture of its own.
    public var renderedRTPTimestamp: UInt32? { state.withLock { $0.rtpTimestamp } }

    /// Calls `body` with the canvas picture, holding the canvas lock.
    /// - Warning: the view must not escape `body`, and `body` must not call
    ///   ``MediaEngine/renderVideo()`` (its render round waits for this lock).
    public func withLockedPicture<R>(_ body: (I420View) throws -> R) rethrows -> R {
        try state.withLock { try $0.picture.withView(body) }
    }

    /// A copy of the canvas picture, taken under the lock.
    public func snapshot() throws -> I420Buffer {
        try state.withLock { state in
            let copy = try I420Buffer(width: state.picture.width, height: state.picture.height)
            state.picture.withView { copy.copy(from: $0) }
            return copy
        }
    }

    /// Changes size, render mode or mirroring. A new size starts black.
    func reconfigure(_ canvas: VideoCanvas) throws {
        try state.withLock { state in
            if canvas.width != state.canvas.width || canvas.height != state.canvas.height {
                state.picture = try I420Buffer(width: canvas.width, height: canvas.height)
                state.picture.withMutableView { $0.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v) }
                state.mirrorScratch = nil
            }
            state.canvas = canvas
        }
    }

    /// Fits `source` into the canvas in its render mode and mirroring (libyuv box scaling).
    /// - Complexity: allocates nothing once the canvas has rendered with its current settings.
    public func render(_ source: I420View) { render(source, rtpTimestamp: nil) }

    /// Renders a remote user's frame, noting its RTP timestamp.
    func render(_ source: I420View, rtpTimestamp: UInt32?) {
        state.withLock { state in
            state.rtpTimestamp = rtpTimestamp
            let picture = state.picture
            let layout = PictureScaler.layout(
                sourceWidth: source.width, sourceHeight: source.height, targetWidth: picture.width,
                targetHeight: picture.height, mode: state.canvas.renderMode)
            let mirrored = state.canvas.mirrorMode.mirrors
            if mirrored && state.mirrorScratch == nil {
                state.mirrorScratch = try? I420Buffer(width: picture.width, height: picture.height)
            }
            let target = mirrored ? (state.mirrorScratch ?? picture) : picture
            target.withMutableView { view in
                if layout.target.width != view.width || layout.target.height != view.height {
                    view.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v)
                }
                PictureScaler.scale(source, layout.source, into: view, layout.target)
            }
            if mirrored, let scratch = state.mirrorScratch {
                scratch.withView { mirroredSource in
                    picture.withMutableView { PictureScaler.mirror(mirroredSource, into: $0) }
                }
            }
            state.framesRendered += 1
            state.sourceWidth = source.width
            state.sourceHeight = source.height
        }
    }

    /// Writes the canvas picture as a one-frame Y4M file.
    public func writeY4M(path: String) throws {
        let copy = try snapshot()
        let writer = try Y4MWriter(path: path, header: Y4MHeader(width: copy.width, height: copy.height))
        try copy.withView { try writer.write($0) }
        try writer.finish()
    }

    /// Writes the canvas picture as an 8-bit RGB PNG file.
    public func writePNG(path: String) throws {
        let copy = try snapshot()
        try copy.withView { try PNGWriter.write($0, to: path) }
    }
}
