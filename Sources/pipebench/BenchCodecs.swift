import CCodecBaseline
import Foundation
import MediaPipeline

/// The codec rows of `pipebench bench`: Opus and VP8/VP9 through MediaPipeline's types against
/// the same work in C (CCodecBaseline), on the same frames, runs alternating.
struct BenchCodecs {
    let samples: String
    let repeats: Int
    let progress: (String, Double) -> Void

    /// Median seconds of `repeats` runs of each closure, run alternately.
    private func medians(_ label: String, _ ours: () throws -> Void, _ c: () throws -> Void) rethrows -> (
        Double, Double
    ) {
        var oursTimes: [Double] = []
        var cTimes: [Double] = []
        for index in 0..<repeats {
            progress(label, Double(index) / Double(repeats))
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

    /// Allocations per frame of a second pass over `frames` frames (the first warms up).
    private func steadyAllocations(frames: Int, _ pass: () throws -> Void) rethrows -> Double {
        try pass()
        let before = BenchMeasure.allocations
        try pass()
        return Double(BenchMeasure.allocations - before) / Double(frames)
    }

    // MARK: - Opus

    func opusRows() throws -> [BenchRow] {
        let (source, format) = try SignalQuality.loadWAV("\(samples)/speech-48k-stereo.wav")
        guard format.sampleRate == 48000, format.channelCount == 2 else {
            throw MediaError(
                .invalidArgument,
                "\(samples)/speech-48k-stereo.wav: the speech sample must be 48 kHz stereo")
        }
        let frameSize = 960
        var pcm: [Int16] = []
        for _ in 0..<5 { pcm += source }
        let frameCount = pcm.count / (frameSize * 2)
        let maxPacket = 4000
        let settings = OpusEncoderConfiguration()

        var cPackets = [UInt8](repeating: 0, count: frameCount * maxPacket)
        var cSizes = [Int32](repeating: 0, count: frameCount)
        var ourSizes = [Int](repeating: 0, count: frameCount)
        var ourPackets = [UInt8](repeating: 0, count: frameCount * maxPacket)
        func runEncode(_ encoder: OpusEncoder) throws {
            try pcm.withUnsafeBufferPointer { input in
                try ourPackets.withUnsafeMutableBytes { out in
                    for i in 0..<frameCount {
                        let frame = UnsafeBufferPointer(
                            rebasing: input[(i * frameSize * 2)..<((i + 1) * frameSize * 2)])
                        ourSizes[i] = try encoder.encode(
                            frame,
                            into: UnsafeMutableRawBufferPointer(rebasing: out[(i * maxPacket)..<((i + 1) * maxPacket)]))
                    }
                }
            }
        }
        let (encodeOurs, encodeC) = try medians(
            "Opus encode", { try runEncode(try OpusEncoder(configuration: settings)) },
            {
                let total = mp_baseline_opus_encode(
                    pcm, Int32(frameCount), Int32(frameSize), 2, Int32(settings.bitrateBitsPerSecond),
                    Int32(settings.complexity), settings.constrainedVariableBitrate ? 1 : 0, &cPackets,
                    Int32(maxPacket), &cSizes)
                if total < 0 { throw MediaError(.codecFailure, "C Opus encode failed") }
            })
        let sameEncode = ourSizes.map(Int32.init) == cSizes && ourPackets == cPackets
        let encoder = try OpusEncoder(configuration: settings)
        let encodeAllocations = try steadyAllocations(frames: frameCount) { try runEncode(encoder) }

        var output = [Int16](repeating: 0, count: 5760 * 2)
        func runDecode(_ decoder: OpusDecoder) throws {
            try output.withUnsafeMutableBufferPointer { out in
                try cPackets.withUnsafeBytes { packets in
                    for i in 0..<frameCount {
                        _ = try decoder.decode(
                            UnsafeRawBufferPointer(
                                rebasing: packets[(i * maxPacket)..<(i * maxPacket + Int(cSizes[i]))]),
                            into: out)
                    }
                }
            }
        }
        let (decodeOurs, decodeC) = try medians(
            "Opus decode", { try runDecode(try OpusDecoder()) },
            {
                if mp_baseline_opus_decode(cPackets, Int32(maxPacket), cSizes, Int32(frameCount), 2, &output, 5760) < 0
                {
                    throw MediaError(.codecFailure, "C Opus decode failed")
                }
            })
        let decoder = try OpusDecoder()
        let decodeAllocations = try steadyAllocations(frames: frameCount) { try runDecode(decoder) }
        let perFrame = 1e6 / Double(frameCount)
        return [
            BenchRow(
                section: "codecs", path: "Opus encode 48k stereo 64k", unit: "20 ms",
                microsecondsPerUnit: encodeOurs * perFrame, cMicrosecondsPerUnit: encodeC * perFrame,
                speed: 20_000 / (encodeOurs * perFrame), speedUnit: "× rt", allocationsPerUnit: encodeAllocations,
                identicalOutput: sameEncode),
            BenchRow(
                section: "codecs", path: "Opus decode 48k stereo", unit: "20 ms",
                microsecondsPerUnit: decodeOurs * perFrame, cMicrosecondsPerUnit: decodeC * perFrame,
                speed: 20_000 / (decodeOurs * perFrame), speedUnit: "× rt", allocationsPerUnit: decodeAllocations,
                identicalOutput: true),
        ]
    }

    // MARK: - VP8 / VP9

    /// The 640x360 sample, decoded once into memory: the input of every video run.
    func samplePictures() throws -> [I420Buffer] {
        let reader = try IVFReader(path: "\(samples)/motion-640x360.ivf")
        let decoder = try VPXDecoder(codec: reader.header.codec, outputPoolCapacity: 128)
        var pictures: [I420Buffer] = []
        while let frame = try reader.readFrame() {
            if let picture = try decoder.decode(frame.bytes) {
                let copy = try I420Buffer(width: picture.width, height: picture.height)
                picture.withView { copy.copy(from: $0) }
                pictures.append(copy)
            }
        }
        guard !pictures.isEmpty else { throw MediaError(.invalidArgument, "\(samples)/motion-640x360.ivf: no picture") }
        return pictures
    }

    /// Encode and decode rows for `codec` on `pictures`; returns the rows and the decode cost
    /// in microseconds per frame.
    func vpxRows(_ codec: VideoCodec, pictures: [I420Buffer]) throws -> (rows: [BenchRow], decodeMicroseconds: Double) {
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
        let encoder = try VPXEncoder(configuration: settings)
        let encodeAllocations = try steadyAllocations(frames: pictures.count) {
            for picture in pictures { _ = try encoder.encode(picture) }
        }

        func runDecode(_ decoder: VPXDecoder) throws {
            for frame in encoded { try frame.bytes.withUnsafeBytes { _ = try decoder.decode($0) { _ in } } }
        }
        let (decodeOurs, decodeC) = try medians(
            "\(codec) decode", { try runDecode(try VPXDecoder(codec: codec)) },
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
        let decoder = try VPXDecoder(codec: codec)
        let decodeAllocations = try steadyAllocations(frames: encoded.count) { try runDecode(decoder) }
        let perFrame = 1e6 / Double(pictures.count)
        let size = "\(width)x\(height)"
        return (
            [
                BenchRow(
                    section: "codecs", path: "\(codec) encode \(size)", unit: "frame",
                    microsecondsPerUnit: encodeOurs * perFrame, cMicrosecondsPerUnit: encodeC * perFrame,
                    speed: 1 / encodeOurs * Double(pictures.count), speedUnit: "fps",
                    allocationsPerUnit: encodeAllocations, identicalOutput: sameEncode),
                BenchRow(
                    section: "codecs", path: "\(codec) decode \(size)", unit: "frame",
                    microsecondsPerUnit: decodeOurs * perFrame, cMicrosecondsPerUnit: decodeC * perFrame,
                    speed: 1 / decodeOurs * Double(pictures.count), speedUnit: "fps",
                    allocationsPerUnit: decodeAllocations, identicalOutput: true),
            ], decodeOurs * perFrame
        )
    }
}
