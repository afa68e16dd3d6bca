import Foundation
import MediaPipeline
import MediaPipelineTesting

/// The engine rows of `pipebench bench`: the mixer, fan-out, canvas rendering and the whole
/// subscriber tick, each with its cost per stream and its allocations in steady state.
struct BenchEngine {
    let repeats: Int
    let progress: (String, Double) -> Void

    // MARK: - Mixer

    /// Mixes `sources` 10 ms frames of 48 kHz stereo speech (each source at its own offset, all
    /// at unity gain after the first frame), limiter included.
    func mixerRow(sources: Int, speech: [Int16]) throws -> BenchRow {
        progress("mixer \(sources) sources", 0)
        let mixer = try AudioMixer(sampleRate: 48000, channelCount: 2)
        let frame = 960
        let frames = speech.count / frame
        // One contiguous block of frames per source, so every input is a distinct buffer.
        let block = UnsafeMutableBufferPointer<Int16>.allocate(capacity: sources * frame * 8)
        defer { block.deallocate() }
        for source in 0..<sources {
            for step in 0..<8 {
                let start = ((source * 7 + step) % frames) * frame
                for i in 0..<frame { block[(source * 8 + step) * frame + i] = speech[start + i] }
            }
        }
        let keys = (0..<sources).map { StreamKey(channelId: "mix", uid: UInt32($0)) }
        var inputs = keys.map { MixerInput(key: $0, samples: UnsafeBufferPointer(rebasing: block[0..<frame]), gain: 1) }
        let output = UnsafeMutableBufferPointer<Int16>.allocate(capacity: frame)
        defer { output.deallocate() }
        let iterations = max(20, 400_000 / sources)
        let (seconds, allocations) = BenchMeasure.perIteration(repeats: repeats, iterations: iterations) { index in
            let step = index % 8
            for source in 0..<sources {
                let start = (source * 8 + step) * frame
                inputs[source].samples = UnsafeBufferPointer(rebasing: block[start..<(start + frame)])
            }
            mixer.mix(inputs, into: output)
        }
        let microseconds = seconds * 1e6
        return BenchRow(
            section: "mixer", path: "mix \(sources) sources", unit: "10 ms mix", microsecondsPerUnit: microseconds,
            speed: Double(sources * frame) / seconds / 1e6, speedUnit: "Msamples/s",
            perStreamMicroseconds: microseconds / Double(sources), allocationsPerUnit: allocations)
    }

    // MARK: - Fan-out

    /// One publisher, `subscribers` subscribing engines in its channel (``FanOutLoad``); one Opus packet pushed
    /// (restamped, bytes shared) reaches every subscriber's receiver, timed on the sending thread. The
    /// subscribers' playout ticks, which take the packets into their jitter buffers, run between batches.
    func fanOutRow(subscribers: Int, packet: EncodedFrame) throws -> BenchRow {
        progress("fan-out to \(subscribers)", 0)
        let load = try FanOutLoad(subscribers: subscribers)
        let (hub, publisher) = (load.hub, load.publisher)
        let before = hub.deliveries
        let iterations = max(50, 200_000 / subscribers)
        // The subscribers' ticks take in what arrived every 16 packets, untimed: the fan-out
        // path hands each of them a reference, and their own threads do the buffering.
        let (seconds, allocations) = try BenchMeasure.perIteration(
            repeats: repeats, iterations: iterations, batch: 16, between: load.playOut
        ) { index in
            try publisher.pushEncodedFrame(packet.restamped(Int64(index) * 20_000))
        }
        let delivered = hub.deliveries - before
        let pushed = Int64(iterations * (repeats + 1))
        guard delivered == pushed * Int64(subscribers) else {
            throw MediaError(
                .codecFailure, "fan-out delivered \(delivered) frames; \(pushed * Int64(subscribers)) expected")
        }
        let microseconds = seconds * 1e6
        return BenchRow(
            section: "fan-out", path: "one Opus packet to \(subscribers)", unit: "frame",
            microsecondsPerUnit: microseconds, speed: 1 / seconds, speedUnit: "frames/s",
            perStreamMicroseconds: microseconds / Double(subscribers), allocationsPerUnit: allocations)
    }

    /// Local audio encoded once and fanned out to `subscribers`: returns the encoder runs per
    /// 20 ms frame (1 whatever the count) and the row.
    func encodeOnceRow(subscribers: Int, audio: [AudioFrame]) throws -> (row: BenchRow, encodesPerFrame: Double) {
        progress("encode once, \(subscribers) subscribers", 0)
        let load = try FanOutLoad(subscribers: subscribers)
        let publisher = load.publisher
        // 200 packets a repeat: the warm-up alone outlasts what the subscribers hold at once
        // (100 queued and 32 pending each, as nothing plays out here), so the packetizer's
        // ring has settled before a repeat is counted.
        let iterations = 400
        let (seconds, allocations) = try BenchMeasure.perIteration(repeats: repeats, iterations: iterations) { index in
            try publisher.pushAudio(audio[index % audio.count])
        }
        let stats = publisher.statistics
        let encodes = Double(stats.audioFramesEncoded) / (Double(iterations * (repeats + 1)) / 2)
        let microseconds = seconds * 2e6  // two 10 ms pushes per encoded 20 ms frame
        return (
            BenchRow(
                section: "fan-out", path: "Opus encode + fan-out to \(subscribers)", unit: "20 ms",
                microsecondsPerUnit: microseconds, speed: 20_000 / microseconds, speedUnit: "× rt",
                perStreamMicroseconds: microseconds / Double(subscribers), allocationsPerUnit: allocations * 2),
            encodes
        )
    }

    // MARK: - Rendering

    /// A 640x360 picture rendered into a canvas of `width` × `height` in `mode`.
    func renderRow(pictures: [I420Buffer], width: Int, height: Int, mode: RenderMode) throws -> BenchRow {
        progress("render \(mode) \(width)x\(height)", 0)
        let canvas = try CanvasBuffer(
            VideoCanvas(channelId: "render", uid: 1, width: width, height: height, renderMode: mode))
        let (seconds, allocations) = BenchMeasure.perIteration(repeats: repeats, iterations: 200) { index in
            pictures[index % pictures.count].withView { canvas.render($0) }
        }
        let source = "\(pictures[0].width)x\(pictures[0].height)"
        return BenchRow(
            section: "render", path: "\(source) → \(width)x\(height) \(mode)", unit: "frame",
            microsecondsPerUnit: seconds * 1e6, speed: 1 / seconds, speedUnit: "fps", allocationsPerUnit: allocations)
    }

    // MARK: - Subscriber tick

    /// `users` remote users (Opus 32k + VP8 360p 15 fps) decoded, mixed and rendered into
    /// 320x180 canvases, per 10 ms tick, on `threads` decode threads.
    func tickRow(users: Int, media: SampleMedia, threads: Int) throws -> BenchRow {
        progress("subscriber tick, \(users) users", 0)
        let load = try SubscriberLoad(media: media, users: users, decodeThreads: threads)
        // 2.5 s of session (250 ticks) per repeat: a whole cycle of audio and video work, and a
        // statistics report (every 2 s), so the warm-up repeat has grown what reports use.
        let (seconds, allocations) = BenchMeasure.perIteration(repeats: repeats, iterations: 250) { _ in
            load.advance()
        }
        guard load.usersDecoding == users else {
            throw MediaError(.codecFailure, "only \(load.usersDecoding) of \(users) users are decoding")
        }
        let microseconds = seconds * 1e6
        return BenchRow(
            section: "subscriber tick", path: "\(users) user\(users == 1 ? "" : "s"), \(threads) threads",
            unit: "10 ms tick",
            microsecondsPerUnit: microseconds, speed: 10_000 / microseconds, speedUnit: "× rt",
            perStreamMicroseconds: microseconds / Double(users), allocationsPerUnit: allocations)
    }
}
