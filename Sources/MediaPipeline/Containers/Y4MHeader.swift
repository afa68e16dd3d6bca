/// The stream header of a YUV4MPEG2 (Y4M) file. Only 8-bit 4:2:0 content is handled.
public struct Y4MHeader: Sendable, Equatable {
    /// Picture width and height in pixels.
    public var width: Int, height: Int
    /// Frame rate as `frameRateNumerator / frameRateDenominator` frames per second.
    public var frameRateNumerator: Int = 30, frameRateDenominator: Int = 1
    /// Interlacing: `p` progressive, `t` top field first, `b` bottom first, `m` mixed, `?` unknown.
    public var interlace: Character = "p"
    /// Pixel aspect ratio; 0:0 means unknown.
    public var pixelAspectNumerator: Int = 1, pixelAspectDenominator: Int = 1
    /// The 4:2:0 chroma siting tag: `420jpeg` (default), `420paldv`, `420mpeg2` or `420`.
    public var colorspace: String = "420jpeg"
    /// `X` comment tokens, kept as they were (without the `X`).
    public var comments: [String] = []

    /// A progressive 4:2:0 header.
    public init(width: Int, height: Int, frameRateNumerator: Int = 30, frameRateDenominator: Int = 1) {
        self.width = width
        self.height = height
        self.frameRateNumerator = frameRateNumerator
        self.frameRateDenominator = frameRateDenominator
    }

    /// Frames per second.
    public var framesPerSecond: Double { Double(frameRateNumerator) / Double(frameRateDenominator) }

    /// Bytes of picture data in one frame.
    public var frameByteCount: Int { width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2) }

    static let supportedColorspaces = ["420jpeg", "420paldv", "420mpeg2", "420"]

    func serialized() -> String {
        var line = "YUV4MPEG2 W\(width) H\(height) F\(frameRateNumerator):\(frameRateDenominator) I\(interlace)"
        line += " A\(pixelAspectNumerator):\(pixelAspectDenominator) C\(colorspace)"
        for comment in comments { line += " X\(comment)" }
        return line + "\n"
    }

    static func parse(_ line: String) throws -> Y4MHeader {
        var tokens = line.split(separator: " ", omittingEmptySubsequences: true)
        guard tokens.first == "YUV4MPEG2" else {
            throw MediaError.invalidFormat("not a Y4M file: expected 'YUV4MPEG2', found '\(line.prefix(9))'")
        }
        tokens.removeFirst()
        var width: Int?
        var height: Int?
        var header = Y4MHeader(width: 0, height: 0, frameRateNumerator: 25, frameRateDenominator: 1)
        func ratio(_ token: Substring, _ name: String, allowZero: Bool) throws -> (Int, Int) {
            let parts = token.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n >= 0, d >= 0,
                allowZero ? (n == 0) == (d == 0) : (n > 0 && d > 0), n <= 1_000_000, d <= 1_000_000
            else { throw MediaError.invalidFormat("Y4M \(name) '\(token)' is not a valid ratio") }
            return (n, d)
        }
        func dimension(_ token: Substring, _ name: String) throws -> Int {
            guard let value = Int(token.dropFirst()), (1...I420Buffer.maximumDimension).contains(value) else {
                throw MediaError.invalidFormat("Y4M \(name) '\(token)' is not in 1...\(I420Buffer.maximumDimension)")
            }
            return value
        }
        for token in tokens {
            switch token.first {
            case "W": width = try dimension(token, "width")
            case "H": height = try dimension(token, "height")
            case "F":
                (header.frameRateNumerator, header.frameRateDenominator) = try ratio(
                    token, "frame rate", allowZero: false)
            case "A":
                (header.pixelAspectNumerator, header.pixelAspectDenominator) = try ratio(
                    token, "pixel aspect", allowZero: true)
            case "I":
                guard token.count == 2, let mode = token.last, "ptbm?".contains(mode) else {
                    throw MediaError.invalidFormat("Y4M interlace tag '\(token)' is not one of Ip, It, Ib, Im, I?")
                }
                header.interlace = mode
            case "C":
                let tag = String(token.dropFirst())
                guard supportedColorspaces.contains(tag) else {
                    throw MediaError.unsupported(
                        "Y4M colorspace C\(tag) is not supported; only 8-bit 4:2:0 (C420jpeg, C420paldv, C420mpeg2, C420)"
                    )
                }
                header.colorspace = tag
            case "X": header.comments.append(String(token.dropFirst()))
            default: throw MediaError.invalidFormat("Y4M header has an unknown tag '\(token.prefix(16))'")
            }
        }
        guard let width else { throw MediaError.invalidFormat("Y4M header has no width (W) tag") }
        guard let height else { throw MediaError.invalidFormat("Y4M header has no height (H) tag") }
        header.width = width
        header.height = height
        return header
    }
}
