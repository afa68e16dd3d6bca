/// The libvpx video codecs.
public enum VideoCodec: String, Sendable, CaseIterable, CustomStringConvertible {
    /// VP8 (RFC 6386); IVF fourcc `VP80`.
    case vp8
    /// VP9; IVF fourcc `VP90`.
    case vp9

    /// The matching ``MediaCodec``.
    public var mediaCodec: MediaCodec { self == .vp8 ? .vp8 : .vp9 }
    /// The video codec `codec` names (nil for Opus).
    public init?(mediaCodec codec: MediaCodec) {
        switch codec {
        case .vp8: self = .vp8
        case .vp9: self = .vp9
        case .opus: return nil
        }
    }
    /// The IVF fourcc (``MediaCodec/ivfFourCC``: every video codec has one).
    public var fourcc: String { mediaCodec.ivfFourCC! }
    public var description: String { rawValue.uppercased() }
}

/// Settings for a ``VPXEncoder``: realtime, one-pass CBR, one packet per input frame.
///
/// Defaults follow WebRTC's libvpx settings (speed -6, quantizer 2...56, a 1 s rate-control
/// buffer) except where noted.
public struct VPXEncoderConfiguration: Sendable, Equatable {
    /// VP8 or VP9.
    public var codec: VideoCodec = .vp8
    /// Picture width and height in pixels, 1...16384.
    public var width: Int
    /// Picture height in pixels, 1...16384.
    public var height: Int
    /// Frames per second as a fraction: `frameRateNumerator / frameRateDenominator`.
    public var frameRateNumerator: Int = 30
    /// See ``frameRateNumerator``.
    public var frameRateDenominator: Int = 1
    /// Target bitrate in bits per second (CBR), 1000...100_000_000.
    public var bitrateBitsPerSecond: Int = 500_000
    /// libvpx `cpu-used`, -16...16. Negative values are fixed speeds (realtime mode); positive
    /// values let libvpx adapt speed to the wall clock, which makes runs unrepeatable. WebRTC
    /// uses -6.
    public var speed: Int = -6
    /// The longest distance between keyframes, in frames (0 = every frame is a keyframe).
    /// WebRTC relies on keyframe requests and uses 3000.
    public var keyframeIntervalFrames: Int = 3000
    /// Encoder threads, 1...64.
    public var threads: Int = 1
    /// Error-resilient mode: frames do not depend on probability state that a loss breaks.
    public var errorResilient: Bool = false

    /// A configuration for `width` × `height` pictures.
    public init(codec: VideoCodec = .vp8, width: Int, height: Int) {
        self.codec = codec
        self.width = width
        self.height = height
    }

    /// Throws ``MediaError/Code/invalidArgument`` naming the first field out of range.
    public func validate() throws {
        let maximum = I420Buffer.maximumDimension
        guard (1...maximum).contains(width), (1...maximum).contains(height) else {
            throw MediaError.invalidArgument(
                "video size \(width)x\(height) is outside 1...\(maximum) in each dimension")
        }
        guard frameRateNumerator > 0, frameRateDenominator > 0, frameRateNumerator <= 1_000_000,
            frameRateDenominator <= 1_000_000
        else {
            throw MediaError.invalidArgument(
                "frame rate \(frameRateNumerator)/\(frameRateDenominator) is not a positive fraction")
        }
        guard (1000...100_000_000).contains(bitrateBitsPerSecond) else {
            throw MediaError.invalidArgument("video bitrate \(bitrateBitsPerSecond) bit/s is outside 1000...100000000")
        }
        guard (-16...16).contains(speed) else {
            throw MediaError.invalidArgument("VPX speed \(speed) is outside -16...16")
        }
        guard keyframeIntervalFrames >= 0 else {
            throw MediaError.invalidArgument("keyframe interval \(keyframeIntervalFrames) frames is negative")
        }
        guard (1...64).contains(threads) else {
            throw MediaError.invalidArgument("encoder threads \(threads) is outside 1...64")
        }
    }
}
