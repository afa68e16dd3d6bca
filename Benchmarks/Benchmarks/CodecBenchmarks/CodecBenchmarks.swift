import Benchmark
import BenchmarkFixtures
import CCodecBaseline
import MediaPipeline

// One sample = one frame: a 20 ms Opus frame or one VP8/VP9 picture, the frames taken in turn
// from the bundled samples. Every path has a twin "(C)" that makes the same libopus/libvpx
// calls directly from C on the same frames, so ours/C is the wrappers' overhead.

/// Cycles through frames, keeping the codec alive between samples.
final class Cursor<Codec>: @unchecked Sendable {
    let codec: Codec
    private(set) var index = 0
    let count: Int
    init(_ codec: Codec, count: Int) {
        self.codec = codec
        self.count = count
    }
    /// The next frame's index.
    func next() -> Int {
        defer { index = index + 1 == count ? 0 : index + 1 }
        return index
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 20,
        maxDuration: .seconds(1), maxIterations: 3000)

    // MARK: Opus, 48 kHz stereo, 64 kbit/s, complexity 10, 20 ms

    let speech = Fixtures.speech
    let frameSamples = 1920
    let opusFrames = speech.count / frameSamples
    let settings = OpusEncoderConfiguration()
    let packets: [[UInt8]] = {
        let encoder = try! OpusEncoder(configuration: settings)
        var packet = [UInt8](repeating: 0, count: 4000)
        return speech.withUnsafeBufferPointer { pcm in
            (0..<opusFrames).map { i in
                let length = try! packet.withUnsafeMutableBytes {
                    try encoder.encode(
                        UnsafeBufferPointer(rebasing: pcm[(i * frameSamples)..<((i + 1) * frameSamples)]), into: $0)
                }
                return Array(packet[0..<length])
            }
        }
    }()

    let opusEncoder = Cursor(try! OpusEncoder(configuration: settings), count: opusFrames)
    Benchmark("Opus encode 20ms") { benchmark in
        for _ in benchmark.scaledIterations {
            let i = opusEncoder.next()
            speech.withUnsafeBufferPointer { pcm in
                let frame = UnsafeBufferPointer(rebasing: pcm[(i * frameSamples)..<((i + 1) * frameSamples)])
                blackHole(try! opusEncoder.codec.encode(frame, timestampMicroseconds: Int64(i) * 20_000))
            }
        }
    }
    let cOpusEncoder = Cursor(
        mp_twin_opus_encoder_create(
            2, Int32(settings.bitrateBitsPerSecond), Int32(settings.complexity),
            settings.constrainedVariableBitrate ? 1 : 0)!, count: opusFrames)
    let cPacket = UnsafeMutablePointer<UInt8>.allocate(capacity: 4000)
    Benchmark("Opus encode 20ms (C)") { benchmark in
        for _ in benchmark.scaledIterations {
            let i = cOpusEncoder.next()
            speech.withUnsafeBufferPointer { pcm in
                blackHole(
                    mp_twin_opus_encode(cOpusEncoder.codec, pcm.baseAddress! + i * frameSamples, 960, cPacket, 4000))
            }
        }
    }

    let opusDecoder = Cursor(try! OpusDecoder(), count: opusFrames)
    let pcmOut = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 5760 * 2)
    Benchmark("Opus decode 20ms") { benchmark in
        for _ in benchmark.scaledIterations {
            let i = opusDecoder.next()
            packets[i].withUnsafeBytes { blackHole(try! opusDecoder.codec.decode($0, into: pcmOut)) }
        }
    }
    let cOpusDecoder = Cursor(mp_twin_opus_decoder_create(2)!, count: opusFrames)
    Benchmark("Opus decode 20ms (C)") { benchmark in
        for _ in benchmark.scaledIterations {
            let i = cOpusDecoder.next()
            packets[i].withUnsafeBufferPointer {
                blackHole(
                    mp_twin_opus_decode(cOpusDecoder.codec, $0.baseAddress, Int32($0.count), pcmOut.baseAddress, 5760))
            }
        }
    }

    // MARK: VP8 and VP9, realtime speed -6, CBR; 360p at 500 kbit/s, 720p at 1.5 Mbit/s

    for codec in VideoCodec.allCases {
        for pictures in [Fixtures.pictures360, Fixtures.pictures720] {
            let (width, height) = (pictures[0].width, pictures[0].height)
            let size = "\(height)p"
            var configuration = VPXEncoderConfiguration(codec: codec, width: width, height: height)
            configuration.bitrateBitsPerSecond = Fixtures.bitrate(width: width)
            configuration.frameRateNumerator = 15
            let codecNumber: Int32 = codec == .vp8 ? 8 : 9

            let encoder = Cursor(try! VPXEncoder(configuration: configuration), count: pictures.count)
            Benchmark("\(codec) encode \(size)") { benchmark in
                for _ in benchmark.scaledIterations { blackHole(try! encoder.codec.encode(pictures[encoder.next()])) }
            }
            let cEncoder = Cursor(
                mp_twin_vpx_encoder_create(
                    codecNumber, Int32(width), Int32(height), 15, Int32(configuration.bitrateBitsPerSecond),
                    Int32(configuration.speed), 1)!, count: pictures.count)
            Benchmark("\(codec) encode \(size) (C)") { benchmark in
                for _ in benchmark.scaledIterations {
                    let i = cEncoder.next()
                    pictures[i].withView { view in
                        blackHole(
                            mp_twin_vpx_encode(
                                cEncoder.codec, view.y, view.u, view.v, Int32(view.strideY), Int32(view.strideU), i))
                    }
                }
            }

            let stream = Fixtures.encoded(pictures, codec: codec, bitrate: configuration.bitrateBitsPerSecond)
            let decoder = Cursor(try! VPXDecoder(codec: codec), count: stream.count)
            Benchmark("\(codec) decode \(size)") { benchmark in
                for _ in benchmark.scaledIterations {
                    stream[decoder.next()].bytes.withUnsafeBytes { bytes in
                        blackHole(try! decoder.codec.decode(bytes) { blackHole($0.width) })
                    }
                }
            }
            let cDecoder = Cursor(mp_twin_vpx_decoder_create(codecNumber, 1)!, count: stream.count)
            Benchmark("\(codec) decode \(size) (C)") { benchmark in
                for _ in benchmark.scaledIterations {
                    stream[cDecoder.next()].bytes.withUnsafeBufferPointer {
                        blackHole(mp_twin_vpx_decode(cDecoder.codec, $0.baseAddress, $0.count))
                    }
                }
            }
        }
    }
}
