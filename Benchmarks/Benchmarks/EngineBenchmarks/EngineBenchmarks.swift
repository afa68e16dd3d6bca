import Benchmark
import BenchmarkFixtures
import MediaPipeline
import MediaPipelineTesting

// The engine's hot paths, one sample = one unit of its work: a 10 ms mix, one encoded frame
// fanned out, one picture rendered into a canvas, one 10 ms subscriber tick. Every path must
// allocate nothing in steady state: the committed thresholds hold each malloc count at 0.

/// Mutable state carried between samples.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .nanoseconds, warmupIterations: 20,
        maxDuration: .seconds(1), maxIterations: 5000)

    // MARK: Mixer: 10 ms of 48 kHz stereo from N sources, unity gain, limiter included

    let speech = Fixtures.speech
    let frame = 960
    let speechFrames = speech.count / frame
    for sources in [2, 8, 32, 256, 1024] {
        let block = UnsafeMutableBufferPointer<Int16>.allocate(capacity: sources * frame * 8)
        for source in 0..<sources {
            for step in 0..<8 {
                let start = ((source * 7 + step) % speechFrames) * frame
                for i in 0..<frame { block[(source * 8 + step) * frame + i] = speech[start + i] }
            }
        }
        let mixer = Box(try! AudioMixer(sampleRate: 48000, channelCount: 2))
        let inputs = Box(
            (0..<sources).map {
                MixerInput(
                    key: StreamKey(channelId: "mix", uid: UInt32($0)),
                    samples: UnsafeBufferPointer(rebasing: block[0..<frame]), gain: 1)
            })
        let output = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frame)
        let step = Box(0)
        Benchmark("mix \(sources) sources") { benchmark in
            for _ in benchmark.scaledIterations {
                step.value = (step.value + 1) % 8
                for source in 0..<sources {
                    let start = (source * 8 + step.value) * frame
                    inputs.value[source].samples = UnsafeBufferPointer(rebasing: block[start..<(start + frame)])
                }
                mixer.value.mix(inputs.value, into: output)
            }
        }
    }

    // MARK: Fan-out: one Opus packet from a publishing engine to N subscribing engines

    for subscribers in [1, 10, 100, 1000] {
        let load = try! FanOutLoad(subscribers: subscribers)
        let packet = Fixtures.media.opusPackets[0]
        let time = Box<Int64>(0)
        Benchmark("fan-out to \(subscribers)") { benchmark in
            for _ in benchmark.scaledIterations {
                time.value += 20_000
                try! load.publisher.pushEncodedFrame(packet.restamped(time.value))
            }
        }
    }

    // The same over lossy links (10 % loss, 5 % duplicates): the hub's per-link path.
    let lossy = try! FanOutLoad(subscribers: 10, link: LinkConditions(lossPercent: 10, duplicatePercent: 5))
    let lossyTime = Box<Int64>(0)
    Benchmark("fan-out to 10 over lossy links") { benchmark in
        for _ in benchmark.scaledIterations {
            lossyTime.value += 20_000
            try! lossy.publisher.pushEncodedFrame(Fixtures.media.opusPackets[0].restamped(lossyTime.value))
        }
    }

    // MARK: RTP: one VP8 360p frame packetized (several packets for keyframes)

    let packetizer = Box(try! RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: RTPPayloadType.vp8))
    let vp8Frames = Fixtures.media.vp8Frames
    let frameIndex = Box(0)
    let packetCount = Box(0)
    Benchmark("RTP packetize VP8 360p frame") { benchmark in
        for _ in benchmark.scaledIterations {
            frameIndex.value = (frameIndex.value + 1) % vp8Frames.count
            try packetizer.value.packetize(vp8Frames[frameIndex.value]) { _ in packetCount.value += 1 }
        }
    }

    // MARK: RTP over loopback UDP: one VP8 360p frame published through an RTPSession (packetized,
    // sent), and with a receiving session, received on its thread, depacketized and queued
    // (decoding stubbed out). Packets per second = frames per second × the packets per frame the
    // run prints (2 to 3 for these frames, 12 for a keyframe).

    let sendOnly = Box(try! RTPLoopbackLoad(receiving: false))
    let sendIndex = Box(0)
    Benchmark("RTP UDP send VP8 360p frame") { benchmark in
        for _ in benchmark.scaledIterations {
            sendIndex.value = (sendIndex.value + 1) % vp8Frames.count
            _ = try! sendOnly.value.push(vp8Frames[sendIndex.value])
        }
    }
    let loopback = Box(try! RTPLoopbackLoad(receiving: true))
    let loopIndex = Box(0)
    // Past start-up: the receiver's stream and its recycled storage exist.
    for index in 0..<300 { _ = try! loopback.value.push(vp8Frames[index % vp8Frames.count]) }
    print("RTP over loopback: \(loopback.value.packetsPerFrame) packets per VP8 360p frame")
    Benchmark("RTP UDP send and receive VP8 360p frame") { benchmark in
        for _ in benchmark.scaledIterations {
            loopIndex.value = (loopIndex.value + 1) % vp8Frames.count
            guard try! loopback.value.push(vp8Frames[loopIndex.value]) else { fatalError("packets lost on loopback") }
        }
    }

    // MARK: Canvas rendering: a 640x360 picture into a canvas, per render mode, down and up

    for mode in RenderMode.allCases {
        for (width, height) in [(320, 180), (1280, 720)] {
            let canvas = try! CanvasBuffer(
                VideoCanvas(channelId: "render", uid: 1, width: width, height: height, renderMode: mode))
            let pictures = Fixtures.pictures360
            let index = Box(0)
            Benchmark("render \(mode) \(width)x\(height)") { benchmark in
                for _ in benchmark.scaledIterations {
                    index.value = (index.value + 1) % pictures.count
                    pictures[index.value].withView { canvas.render($0) }
                }
            }
        }
    }

    // MARK: Full subscriber tick: N users' audio decoded and mixed, their video decoded and rendered

    for users in [1, 8, 32] {
        let load = Box(try! SubscriberLoad(media: Fixtures.media, users: users, decodeThreads: 2))
        // Past start-up: decoders made, canvases sized, first keyframes decoded.
        for _ in 0..<100 { load.value.advance() }
        Benchmark("subscriber tick \(users) users", configuration: .init(maxIterations: 1500)) { benchmark in
            for _ in benchmark.scaledIterations { load.value.advance() }
        }
    }
}
