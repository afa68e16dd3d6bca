import Foundation
import Testing

@testable import MediaPipeline

// Measures of encoded files, for the tests that check an encoder option by its effect: packet
// sizes and bitrates read from the containers, quality against the source, CPU time.

/// The byte counts of the Opus packets in an Ogg Opus file, in order.
func oggOpusPacketSizes(_ path: String) throws -> [Int] {
    let reader = try OggOpusReader(path: path)
    var sizes: [Int] = []
    while let packet = try reader.nextPacket() { sizes.append(packet.bytes.count) }
    return sizes
}

/// The bitrate of an Ogg Opus file's audio in bits per second: its packets' bytes over the
/// duration its last granule position gives (less the pre-skip).
func oggOpusBitrate(_ path: String) throws -> Double {
    let reader = try OggOpusReader(path: path)
    var bytes = 0
    var end: Int64 = 0
    while let packet = try reader.nextPacket() {
        bytes += packet.bytes.count
        if packet.granulePosition >= 0 { end = packet.granulePosition }
    }
    let seconds = Double(end - Int64(reader.head.preSkip)) / 48000
    #expect(seconds > 0, "\(path) holds no audio")
    return Double(bytes * 8) / seconds
}

/// The CPU time (user and system, in seconds) a pipebench run of `arguments` takes, as bash's
/// `times` reports for its child; the least of `runs` runs. CPU time, unlike the time on the
/// clock, hardly grows when other processes share the cores; the least of a few runs drops
/// what is left of that (caches, frequency).
func pipebenchCPUSeconds(_ arguments: [String], runs: Int = 2) throws -> Double {
    var least = Double.infinity
    for _ in 0..<runs {
        let result = try runTool(
            "/bin/bash", ["-c", "\"$@\" >/dev/null || exit $?; times", "bash", Fixtures.pipebench] + arguments)
        #expect(result.status == 0, "pipebench \(arguments.joined(separator: " ")): \(result.stderr)")
        // `times` prints the shell's user and system time, then its children's: "0m1.234s 0m0.056s".
        let children = result.stdout.split(separator: "\n").last ?? ""
        let seconds = children.split(separator: " ").map { field -> Double in
            let parts = field.dropLast().split(separator: "m")
            return parts.count == 2 ? (Double(parts[0]) ?? .nan) * 60 + (Double(parts[1]) ?? .nan) : .nan
        }
        #expect(seconds.count == 2 && seconds.allSatisfy(\.isFinite), "times printed \(result.stdout)")
        least = min(least, seconds.reduce(0, +))
    }
    return least
}

/// The amplitude of the `frequency` component of `samples` (one channel of `channels`
/// interleaved, at 48 kHz), by the Goertzel algorithm: a sine of amplitude A measures A.
func toneAmplitude(_ samples: ArraySlice<Int16>, channel: Int, of channels: Int, frequency: Double) -> Double {
    let coefficient = 2 * cos(2 * .pi * frequency / 48000)
    var previous = 0.0
    var beforePrevious = 0.0
    var count = 0
    for index in stride(from: samples.startIndex + channel, to: samples.endIndex, by: channels) {
        let value = Double(samples[index]) + coefficient * previous - beforePrevious
        beforePrevious = previous
        previous = value
        count += 1
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return count > 0 ? 2 * power.squareRoot() / Double(count) : 0
}

/// The decoded audio of an Ogg Opus file (48 kHz, interleaved), by our decoder.
func oggOpusDecoded(_ path: String) throws -> [Int16] {
    var samples: [Int16] = []
    try OggOpusReader(path: path).decode { samples.append(contentsOf: $0) }
    return samples
}
