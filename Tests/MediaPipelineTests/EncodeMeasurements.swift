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

/// The bitrate of an IVF file's video in bits per second: its frames' bytes over their count
/// times the frame duration of the header's time base (one tick a frame, as pipebench writes).
func ivfBitrate(_ path: String) throws -> Double {
    let reader = try IVFReader(path: path)
    var bytes = 0
    var frames = 0
    while let frame = try reader.readFrame() {
        bytes += frame.bytes.count
        frames += 1
    }
    let seconds = Double(frames * reader.header.timebaseNumerator) / Double(reader.header.timebaseDenominator)
    #expect(seconds > 0, "\(path) holds no frame")
    return Double(bytes * 8) / seconds
}

/// The PSNR in dB of an IVF file's pictures, decoded here, against the Y4M file they were
/// encoded from: from the mean squared error over all frames (as ffmpeg's psnr filter's "average").
func ivfPSNR(_ ivf: String, reference y4m: String) throws -> Double {
    let reader = try IVFReader(path: ivf)
    let source = try Y4MReader(path: y4m, bufferCount: 2)
    let decoder = try VPXDecoder(codec: reader.header.codec)
    var total = 0.0
    var frames = 0
    while let frame = try reader.readFrame() {
        let original = try #require(try source.readFrame(), "\(y4m) has fewer frames than \(ivf)")
        let decoded = try #require(try decoder.decode(frame.bytes), "frame \(frames) of \(ivf) shows nothing")
        total += original.withView { a in decoded.withView { PictureQuality.meanSquaredError(reference: a, test: $0) } }
        frames += 1
    }
    #expect(try source.readFrame() == nil, "\(ivf) has fewer frames than \(y4m)")
    return 10 * log10(255 * 255 / (total / Double(max(frames, 1))))
}

/// A Y4M file of ffmpeg's testsrc2 pattern (moving, with detail everywhere), `seconds` long.
func testPatternY4M(_ path: String, width: Int, height: Int, framesPerSecond: Int, seconds: Int) throws {
    try reference(
        "ffmpeg",
        [
            "-nostdin", "-v", "error", "-f", "lavfi", "-i",
            "testsrc2=size=\(width)x\(height):rate=\(framesPerSecond)", "-frames:v",
            String(framesPerSecond * seconds), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", path,
        ])
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
