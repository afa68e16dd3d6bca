/// The picture behind a ``VideoCanvas``: the remote user's latest frame, fitted into the
/// canvas's size in its render mode.
///
/// ## Reading contract
/// The engine renders into the buffer while the app may read it. Reads go through
/// ``withLockedPicture(_:)`` (the renderer waits until `body` returns, so keep it short) or
/// ``snapshot()`` (a private copy). Pointers handed to `body` must not escape it.
public final class CanvasBuffer: @unchecked Sendable {
    private let lock = Lock()
    // Guarded by `lock`.
    private var _canvas: VideoCanvas
    private var picture: I420Buffer
    private var mirrorScratch: I420Buffer?
    private var _framesRendered = 0
    private var _sourceWidth = 0
    private var _sourceHeight = 0

    /// Creates a black canvas. (The engine makes one per ``MediaEngine/setupRemoteVideo(_:)``;
    /// a standalone one renders local previews or measures rendering.)
    /// - Throws: ``MediaError/Code/invalidArgument`` for a size outside 1...16384.
    public init(_ canvas: VideoCanvas) throws {
        _canvas = canvas
        picture = try I420Buffer(width: canvas.width, height: canvas.height)
        picture.withMutableView { $0.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v) }
    }

    /// The binding this buffer renders for.
    public var canvas: VideoCanvas { lock.withLock { _canvas } }
    /// Frames rendered into the canvas so far.
    public var framesRendered: Int { lock.withLock { _framesRendered } }
    /// Size of the last picture rendered, before fitting (0×0 before the first).
    public var sourceSize: (width: Int, height: Int) { lock.withLock { (_sourceWidth, _sourceHeight) } }

    /// Calls `body` with the canvas picture, holding the canvas lock.
    /// - Warning: the view must not escape `body`, and `body` must not call into the engine
    ///   (``MediaEngine/renderVideo()`` waits for this lock while holding the engine's).
    public func withLockedPicture<R>(_ body: (I420View) throws -> R) rethrows -> R {
        try lock.withLock { try picture.withView(body) }
    }

    /// A copy of the canvas picture, taken under the lock.
    public func snapshot() throws -> I420Buffer {
        try lock.withLock {
            let copy = try I420Buffer(width: picture.width, height: picture.height)
            picture.withView { copy.copy(from: $0) }
            return copy
        }
    }

    /// Changes size, render mode or mirroring. A new size starts black.
    func reconfigure(_ canvas: VideoCanvas) throws {
        try lock.withLock {
            if canvas.width != _canvas.width || canvas.height != _canvas.height {
                picture = try I420Buffer(width: canvas.width, height: canvas.height)
                picture.withMutableView { $0.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v) }
                mirrorScratch = nil
            }
            _canvas = canvas
        }
    }

    /// Fits `source` into the canvas in its render mode and mirroring (libyuv box scaling).
    /// - Complexity: allocates nothing once the canvas has rendered with its current settings.
    public func render(_ source: I420View) {
        lock.withLock {
            let layout = PictureScaler.layout(
                sourceWidth: source.width, sourceHeight: source.height, targetWidth: picture.width,
                targetHeight: picture.height, mode: _canvas.renderMode)
            let mirrored = _canvas.mirrorMode.mirrors
            if mirrored && mirrorScratch == nil {
                mirrorScratch = try? I420Buffer(width: picture.width, height: picture.height)
            }
            let target = mirrored ? (mirrorScratch ?? picture) : picture
            target.withMutableView { view in
                if layout.target.width != view.width || layout.target.height != view.height {
                    view.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v)
                }
                PictureScaler.scale(source, layout.source, into: view, layout.target)
            }
            if mirrored, let scratch = mirrorScratch {
                scratch.withView { mirroredSource in
                    picture.withMutableView { PictureScaler.mirror(mirroredSource, into: $0) }
                }
            }
            _framesRendered += 1
            _sourceWidth = source.width
            _sourceHeight = source.height
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
