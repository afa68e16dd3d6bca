import ArgumentParser
import CCodecBaseline
import Foundation
import MediaPipeline

/// `pipebench bench`: codec throughput through MediaPipeline's types against the same work
/// written directly in C (CCodecBaseline), on the same frames, in one run.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Opus and VP8/VP9 throughput through MediaPipeline against direct libopus/libvpx calls.",
        discussion: "Build with -c release for meaningful figures. Each path runs --repeats times, alternating "
            + "ours and C; the median is reported, and the ratio ours/C is the wrappers' cost.")

    @Option(help: "Folder with the bundled samples.") var samples = "samples"
    @Option(help: "Runs per measurement (median reported).") var repeats = 7
    @Flag(help: "Print JSON.") var json = false

    struct Row {
        var path: String
        var unit: String  // "frame" for video, "20 ms" for audio
        var oursMicroseconds: Double
        var cMicroseconds: Double
        var realtimeFactor: (Double) -> Double
        var identical: Bool
    }

    func run() throws {
        guard repeats > 0 else { throw ValidationError("--repeats must be at least 1") }
        #if DEBUG
            if !json { printError("note: a debug build; run `swift run -c release pipebench bench` for real figures") }
        #endif
        var rows: [Row] = []
        rows += try opusRows()
        for codec in VideoCodec.allCases { rows += try vpxRows(codec) }
        Terminal.clearProgress()
        if json {
            print(
                Report.json([
                    "paths": rows.map { row in
                        [
                            "path": row.path, "oursMicrosecondsPerFrame": row.oursMicroseconds,
                            "cMicrosecondsPerFrame": row.cMicroseconds,
                            "ratio": row.oursMicroseconds / row.cMicroseconds, "identicalOutput": row.identical,
                            (row.unit == "frame" ? "framesPerSecond" : "realtimeFactor"): row.realtimeFactor(
                                row.oursMicroseconds),
                        ] as [String: Any]
                    }
                ]))
            return
        }
        print("path                         ours µs/frame    C µs/frame   ours/C   speed (ours)   same output")
        for row in rows {
            let speed =
                row.unit == "frame"
                ? String(format: "%8.0f fps", row.realtimeFactor(row.oursMicroseconds))
                : String(format: "%8.0f× rt", row.realtimeFactor(row.oursMicroseconds))
            let name = row.path.padding(toLength: 28, withPad: " ", startingAt: 0)
            print(
                String(
                    format: "%@ %13.1f %13.1f %8.3f   %@   %@", name, row.oursMicroseconds, row.cMicroseconds,
                    row.oursMicroseconds / row.cMicroseconds, speed, row.identical ? "yes" : "NO"))
        }
    }

    /// Median seconds of `repeats` runs of each closure, run alternately.
    private func medians(_ label: String, _ ours: () throws -> Void, _ c: () throws -> Void) rethrows -> (
        Double, Double
    ) {
        var oursTimes: [Double] = []
        var cTimes: [Double] = []
        for index in 0..<repeats {
            if !json { Terminal.progress(label, Double(index) / Double(repeats)) }
            if index % 2 == 0 {
                oursTimes.append(try measure(ours).1)
                cTimes.append(try measure(c).1)
            } else {
                cTimes.append(try measure(c).1)
                oursTimes.append(try measure(ours).1)
            }
        }
        return (oursTimes.sorted()[repeats / 2], cTimes.sorted()[repeats / 2])
    }

    // MARK: - Opus

    private func opusRows() throws -> [Row] {
        let (source, format) = try SignalQuality.loadWAV("\(samples)/speech-48k-stereo.wav")
        guard format.sampleRate == 48000, format.channelCount == 2 else {
            throw ValidationError("the speech sample must be 48 kHz stereo")
        }
        let frameSize = 960
        let passes = 5
        var pcm: [Int16] = []
        for _ in 0..<passes { pcm += source }
        let frameCount = pcm.count / (frameSize * 2)
        let maxPacket = 4000
        let settings = OpusEncoderConfiguration()

        var cPackets = [UInt8](repeating: 0, count: frameCount * maxPacket)
        var cSizes = [Int32](repeating: 0, count: frameCount)
        var ourSizes = [Int](repeating: 0, count: frameCount)
        var ourPackets = [UInt8](repeating: 0, count: frameCount * maxPacket)
        let (encodeOurs, encodeC) = try medians(
            "opus encode",
            {
                let encoder = try OpusEncoder(configuration: settings)
                try pcm.withUnsafeBufferPointer { input in
                    try ourPackets.withUnsafeMutableBytes { out in
                        for i in 0..<frameCount {
                            let frame = UnsafeBufferPointer(
                                rebasing: input[(i * frameSize * 2)..<((i + 1) * frameSize * 2)])
                            ourSizes[i] = try encoder.encode(
                                frame,
                                into: UnsafeMutableRawBufferPointer(
                                    rebasing: out[(i * maxPacket)..<((i + 1) * maxPacket)]))
                        }
                    }
                }
            },
            {
                let total = mp_baseline_opus_encode(
                    pcm, Int32(frameCount), Int32(frameSize), 2, Int32(settings.bitrateBitsPerSecond),
                    Int32(settings.complexity),
                    settings.constrainedVariableBitrate ? 1 : 0, &cPackets, Int32(maxPacket), &cSizes)
                if total < 0 { throw MediaError(.codecFailure, "C Opus encode failed") }
            })
        let sameEncode = ourSizes.map(Int32.init) == cSizes && ourPackets == cPackets

        var output = [Int16](repeating: 0, count: 5760 * 2)
        let (decodeOurs, decodeC) = try medians(
            "opus decode",
            {
                let decoder = try OpusDecoder()
                try output.withUnsafeMutableBufferPointer { out in
                    try cPackets.withUnsafeBytes { packets in
                        for i in 0..<frameCount {
                            _ = try decoder.decode(
                                UnsafeRawBufferPointer(
                                    rebasing: packets[(i * maxPacket)..<(i * maxPacket + Int(cSizes[i]))]), into: out)
                        }
                    }
                }
            },
            {
                if mp_baseline_opus_decode(cPackets, Int32(maxPacket), cSizes, Int32(frameCount), 2, &output, 5760) < 0
                {
                    throw MediaError(.codecFailure, "C Opus decode failed")
                }
            })
        let perFrame = 1e6 / Double(frameCount)
        let realtime: (Double) -> Double = { 20_000 / $0 }
        return [
            Row(
                path: "Opus encode 48k stereo 64k", unit: "20 ms", oursMicroseconds: encodeOurs * perFrame,
                cMicroseconds: encodeC * perFrame, realtimeFactor: realtime, identical: sameEncode),
            Row(
                path: "Opus decode 48k stereo", unit: "20 ms", oursMicroseconds: decodeOurs * perFrame,
                cMicroseconds: decodeC * perFrame, realtimeFactor: realtime, identical: true),
        ]
    }

    // MARK: - VP8 / VP9

    private func vpxRows(_ codec: VideoCodec) throws -> [Row] {
        // The 640x360 sample, decoded once into memory, is the input of every run.
        let reader = try IVFReader(path: "\(samples)/motion-640x360.ivf")
        let sampleDecoder = try VPXDecoder(codec: reader.header.codec, outputPoolCapacity: 128)
        var pictures: [I420Buffer] = []
        while let frame = try reader.readFrame() {
            if let picture = try sampleDecoder.decode(frame.bytes) {
                let copy = try I420Buffer(width: picture.width, height: picture.height)
                picture.withView { copy.copy(from: $0) }
                pictures.append(copy)
            }
        }
        let width = pictures[0].width
        let height = pictures[0].height
        let packed: [[UInt8]] = pictures.map { picture in
            var bytes: [UInt8] = []
            picture.withView { view in view.forEachPackedRow { bytes.append(contentsOf: $0) } }
            return bytes
        }
        let settings = VPXEncoderConfiguration(codec: codec, width: width, height: height)
        var encoded: [EncodedFrame] = []
        var cTotal = 0
        let (encodeOurs, encodeC) = try medians(
            "\(codec) encode",
            {
                let encoder = try VPXEncoder(configuration: settings)
                encoded.removeAll(keepingCapacity: true)
                for picture in pictures { encoded.append(try encoder.encode(picture)) }
            },
            {
                let pointers = packed.map { $0.withUnsafeBufferPointer { $0.baseAddress } }
                let total = withExtendedLifetime(packed) {
                    pointers.withUnsafeBufferPointer { list in
                        mp_baseline_vpx_encode(
                            codec == .vp8 ? 8 : 9, list.baseAddress, Int32(pictures.count), Int32(width), Int32(height),
                            Int32(settings.frameRateNumerator), Int32(settings.bitrateBitsPerSecond),
                            Int32(settings.speed), 1)
                    }
                }
                if total < 0 { throw MediaError(.codecFailure, "C \(codec) encode failed") }
                cTotal = total
            })
        let sameEncode = encoded.reduce(0) { $0 + $1.byteCount } == cTotal

        let (decodeOurs, decodeC) = try medians(
            "\(codec) decode",
            {
                let decoder = try VPXDecoder(codec: codec)
                for frame in encoded { try frame.bytes.withUnsafeBytes { _ = try decoder.decode($0) { _ in } } }
            },
            {
                let pointers = encoded.map { $0.bytes.withUnsafeBufferPointer { $0.baseAddress } }
                let sizes = encoded.map(\.byteCount)
                let total = withExtendedLifetime(encoded) {
                    pointers.withUnsafeBufferPointer { list in
                        mp_baseline_vpx_decode(codec == .vp8 ? 8 : 9, list.baseAddress, sizes, Int32(encoded.count), 1)
                    }
                }
                if total != width * encoded.count { throw MediaError(.codecFailure, "C \(codec) decode failed") }
            })
        let perFrame = 1e6 / Double(pictures.count)
        let fps: (Double) -> Double = { 1e6 / $0 }
        let size = "\(width)x\(height)"
        return [
            Row(
                path: "\(codec) encode \(size)", unit: "frame", oursMicroseconds: encodeOurs * perFrame,
                cMicroseconds: encodeC * perFrame, realtimeFactor: fps, identical: sameEncode),
            Row(
                path: "\(codec) decode \(size)", unit: "frame", oursMicroseconds: decodeOurs * perFrame,
                cMicroseconds: decodeC * perFrame, realtimeFactor: fps, identical: true),
        ]
    }
}
