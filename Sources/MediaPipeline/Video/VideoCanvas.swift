/// How a picture is fitted into a canvas of another shape (Agora's `VIDEO_RENDER_MODE`).
public enum RenderMode: Int, Sendable, CaseIterable {
    /// Scale uniformly until the canvas is covered; crop what overflows, centred.
    case hidden = 1
    /// Scale uniformly until the picture fits; fill the rest with black bars, centred.
    case fit = 2
    /// Stretch to the canvas size, ignoring the aspect ratio.
    case fill = 4
}

/// Whether a canvas shows the picture mirrored left to right (Agora's `VIDEO_MIRROR_MODE`).
public enum MirrorMode: Int, Sendable, CaseIterable {
    /// The default: remote video is not mirrored.
    case auto = 0
    /// Mirror left to right.
    case enabled = 1
    /// Never mirror.
    case disabled = 2

    var mirrors: Bool { self == .enabled }
}

/// Binds a remote user's video in one channel to a canvas buffer (Agora's `AgoraRtcVideoCanvas`
/// with the buffer's size in place of a view).
public struct VideoCanvas: Sendable, Equatable, Hashable {
    /// The channel the user is in.
    public var channelId: String
    /// The remote user.
    public var uid: UInt32
    /// Canvas width and height in pixels (even values keep chroma aligned; odd ones are allowed).
    public var width: Int, height: Int
    /// How the picture is fitted.
    public var renderMode: RenderMode
    /// Mirroring.
    public var mirrorMode: MirrorMode

    /// A canvas for `uid` in `channelId`.
    public init(
        channelId: String, uid: UInt32, width: Int = 320, height: Int = 180, renderMode: RenderMode = .hidden,
        mirrorMode: MirrorMode = .auto
    ) {
        self.channelId = channelId
        self.uid = uid
        self.width = width
        self.height = height
        self.renderMode = renderMode
        self.mirrorMode = mirrorMode
    }
}

/// The black that letterbox bars and empty canvases show: BT.601 limited-range black.
enum CanvasBlack {
    static let y: UInt8 = 16
    static let u: UInt8 = 128
    static let v: UInt8 = 128
}
