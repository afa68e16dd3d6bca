import ArgumentParser
import MediaPipeline

/// A bitrate in bits per second, written as `64000`, `64k`, `1.5M`.
struct Bitrate: ExpressibleByArgument, Sendable {
    let bitsPerSecond: Int

    init?(argument: String) {
        var text = argument.lowercased()
        if text.hasSuffix("bps") { text.removeLast(3) }
        var multiplier = 1.0
        if text.hasSuffix("k") {
            multiplier = 1000
            text.removeLast()
        } else if text.hasSuffix("m") {
            multiplier = 1_000_000
            text.removeLast()
        }
        guard let value = Double(text), value.isFinite, value > 0, value * multiplier < Double(Int32.max) else {
            return nil
        }
        bitsPerSecond = Int((value * multiplier).rounded())
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

extension VideoCodec: ExpressibleByArgument {}
extension OpusApplication: ExpressibleByArgument {}

/// A duration in milliseconds, written as `40`, `40ms` or `0.04s`.
struct Milliseconds: ExpressibleByArgument, Sendable {
    let value: Double

    init?(argument: String) {
        var text = argument.lowercased()
        var scale = 1.0
        if text.hasSuffix("ms") {
            text.removeLast(2)
        } else if text.hasSuffix("s") {
            text.removeLast()
            scale = 1000
        }
        guard let number = Double(text), number.isFinite, number >= 0 else { return nil }
        value = number * scale
    }
}

/// A share in percent, written as `10` or `10%`.
struct Percent: ExpressibleByArgument, Sendable {
    let value: Double

    init?(argument: String) {
        var text = argument
        if text.hasSuffix("%") { text.removeLast() }
        guard let number = Double(text), number.isFinite, (0...100).contains(number) else { return nil }
        value = number
    }
}
