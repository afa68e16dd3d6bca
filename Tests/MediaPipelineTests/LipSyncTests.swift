import Foundation
import Testing

@testable import MediaPipeline

/// A sender that marks one capture instant every 2 s in both of its streams: a 1 kHz beep
/// (100 ms, loud) over a quiet 200 Hz tone, and white pictures (three frames) among dark ones,
/// both starting at the same capture time. A viewer behind an impaired link plays and renders
/// every 10 ms; the test finds each beep's onset in the playout and each white picture's first
/// render on the canvas, and compares them. Measured audio and pixels, on the virtual clock.
final class LipSyncRoom {
    let session: TestSession
    let host: TestUser
    let viewer: TestUser
    let canvas: CanvasBuffer
    /// Capture times of the marks: 1 s, 3 s, 5 s, …
    static let markPeriodMicroseconds: Int64 = 2_000_000
    static let firstMarkMicroseconds: Int64 = 1_000_000
    static let beepMicroseconds: Int64 = 100_000
    static let videoPeriodTicks = 4  // 25 frames/s; marks fall on frames (multiples of 40 ms)
    static let width = 160, height = 96

    /// Playout start times (clock microseconds) of beep onsets, and render times of the first
    /// white picture of each mark.
    private(set) var beepOnsets: [Int64] = []
    private(set) var whiteOnsets: [Int64] = []
    private var tick = 0
    private var audioFrames = 0  // per channel, pushed so far
    private var quietSamples = 0  // playout samples in a row below the beep threshold
    private var canvasWasWhite = false
    private var lastRendered = 0
    private let dark: I420Buffer
    private let white: I420Buffer

    init(seed: UInt64 = 11, configuration: EngineConfiguration = .init()) throws {
        session = TestSession(seed: seed)
        host = try session.user(configuration: configuration)
        viewer = try session.user(configuration: configuration)
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        canvas = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "a", uid: 1, width: Self.width, height: Self.height, renderMode: .fit))
        dark = try Self.picture(luma: 40)
        white = try Self.picture(luma: 235)
    }

    static func picture(luma: UInt8) throws -> I420Buffer {
        let buffer = try I420Buffer(width: width, height: height)
        buffer.withMutableView { view in
            for y in 0..<view.height {
                for x in 0..<view.width {
                    // A little texture, so the encoder has something to code.
                    view.y[y * view.strideY + x] = luma &+ UInt8((x / 8 + y / 8) % 2 * 6)
                }
            }
            for y in 0..<view.chromaHeight {
                for x in 0..<view.chromaWidth {
                    view.u[y * view.strideU + x] = 128
                    view.v[y * view.strideV + x] = 128
                }
            }
        }
        return buffer
    }

    func impair(_ conditions: LinkConditions) throws {
        try session.hub.setLinkConditions(conditions, channelId: "a", publisher: 1, receiver: 2)
    }

    /// Whether capture time `t` (microseconds) falls in a mark lasting `length`.
    private static func inMark(_ t: Int64, length: Int64) -> Bool {
        guard t >= firstMarkMicroseconds else { return false }
        return (t - firstMarkMicroseconds) % markPeriodMicroseconds < length
    }

    /// Runs `ticks` × 10 ms.
    func run(ticks: Int) throws {
        let format = host.engine.configuration.audio
        let channels = format.channelCount
        var samples = [Int16](repeating: 0, count: format.sampleRate / 100 * channels)
        for _ in 0..<ticks {
            let now = session.clock.nowMicroseconds
            // The 10 ms pushed now was captured over the 10 ms before now.
            let frames = format.sampleRate / 100
            for i in 0..<frames {
                let n = audioFrames + i
                let captured = now - 10_000 + Int64(i) * 1_000_000 / Int64(format.sampleRate)
                let t = Double(n) / Double(format.sampleRate)
                var value = 800 * sin(2 * .pi * 200 * t)
                if Self.inMark(captured, length: Self.beepMicroseconds) { value += 12_000 * sin(2 * .pi * 1000 * t) }
                for c in 0..<channels { samples[i * channels + c] = Int16(value) }
            }
            audioFrames += frames
            try host.engine.pushAudio(
                AudioFrame(samples: samples, sampleRate: format.sampleRate, channelCount: channels))
            if tick % Self.videoPeriodTicks == 0 {
                let isWhite = Self.inMark(now, length: 3 * 40_000 - 1)
                try host.engine.pushVideo(isWhite ? white : dark, timestampMicroseconds: now)
            }
            viewer.pull()
            notePlayout(at: now)
            viewer.engine.renderVideo()
            noteCanvas(at: now)
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
            tick += 1
        }
    }

    /// Finds beep onsets in the 10 ms just pulled (playing from `now`): the first sample above
    /// 6,000 after at least 50 ms below it (the quiet tone peaks at 800).
    private func notePlayout(at now: Int64) {
        let channels = viewer.engine.configuration.playoutChannelCount
        let rate = Int64(viewer.engine.configuration.playoutSampleRate)
        for i in stride(from: 0, to: viewer.playout.count, by: channels) {
            if abs(Int(viewer.playout[i])) > 6_000 {
                if quietSamples >= Int(rate) / 20 { beepOnsets.append(now + Int64(i / channels) * 1_000_000 / rate) }
                quietSamples = 0
            } else {
                quietSamples += 1
            }
        }
    }

    /// Notes when the canvas turns white (its mean luma over a grid of pixels above 150).
    private func noteCanvas(at now: Int64) {
        guard canvas.framesRendered != lastRendered else { return }
        lastRendered = canvas.framesRendered
        let mean = canvas.withLockedPicture { view -> Int in
            var sum = 0
            var count = 0
            for y in stride(from: 4, to: view.height, by: 8) {
                for x in stride(from: 4, to: view.width, by: 8) {
                    sum += Int(view.y[y * view.strideY + x])
                    count += 1
                }
            }
            return sum / max(count, 1)
        }
        let isWhite = mean > 150
        if isWhite && !canvasWasWhite { whiteOnsets.append(now) }
        canvasWasWhite = isWhite
    }

    /// For each beep onset after `fromMicroseconds`, how much later it played than the white
    /// picture nearest to it (within 1 s), in milliseconds; nil where no picture is that near.
    func offsetsMs(from fromMicroseconds: Int64) -> [Int64?] {
        beepOnsets.filter { $0 >= fromMicroseconds }.map { beep in
            let nearest = whiteOnsets.min { abs($0 - beep) < abs($1 - beep) }
            return nearest.flatMap { abs($0 - beep) <= 1_000_000 ? (beep - $0) / 1000 : nil }
        }
    }
}

/// A recording as ffmpeg and ffprobe (the reference tools) decode it: its audio as mono
/// 48 kHz samples on the file's time line, and every picture in gray with its time.
struct DecodedRecording {
    /// Sample i plays at i / 48,000 s of the file.
    let audio: [Int16]
    let width: Int, height: Int
    /// Each picture's time (seconds), and the pictures' luma, one after the other.
    let frameTimes: [Double]
    let pixels: [UInt8]

    init(path: String) throws {
        // Audio: resampled by the packets' times (silence where packets are missing, from time
        // 0 on).
        let folder = TemporaryFolder()
        let raw = folder.file("audio.s16")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", path, "-map", "0:a", "-af",
                "aresample=async=1:min_hard_comp=0.001:first_pts=0", "-ac", "1",
                "-ar", "48000", "-f", "s16le", raw,
            ])
        audio = try rawInt16(raw)
        let gray = folder.file("frames.gray")
        let size = try reference(
            "ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", path]
        ).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        (width, height) = (size[0], size[1])
        frameTimes = try reference(
            "ffprobe",
            ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path]
        ).split(separator: "\n").compactMap { Double(String($0).trimmingCharacters(in: .whitespaces)) }
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-pix_fmt", "gray",
                "-f", "rawvideo", gray,
            ])
        pixels = [UInt8](try Data(contentsOf: URL(fileURLWithPath: gray)))
    }

    /// The pictures decoded whole.
    var frameCount: Int { min(frameTimes.count, pixels.count / (width * height)) }

    /// The mean luma of picture `index` over the rectangle `x`, `y` (pixels), every 4th pixel.
    func meanLuma(_ index: Int, x: Range<Int>, y: Range<Int>) -> Int {
        let base = index * width * height
        var sum = 0
        var count = 0
        for row in stride(from: y.lowerBound, to: y.upperBound, by: 4) {
            for column in stride(from: x.lowerBound, to: x.upperBound, by: 4) {
                sum += Int(pixels[base + row * width + column])
                count += 1
            }
        }
        return sum / max(count, 1)
    }

    /// The times (seconds) at which the rectangle turns white (mean luma above 150).
    func whiteOnsets(x: Range<Int>, y: Range<Int>) -> [Double] {
        var onsets: [Double] = []
        var wasWhite = false
        for index in 0..<frameCount {
            let isWhite = meanLuma(index, x: x, y: y) > 150
            if isWhite && !wasWhite { onsets.append(frameTimes[index]) }
            wasWhite = isWhite
        }
        return onsets
    }
}

/// The marks in a recording, as ffmpeg and ffprobe (the reference tools) read it: beep onsets
/// in the decoded audio and the first white picture of each mark (mean luma of the middle
/// half above 150), both in seconds of the file's time line.
struct RecordedMarks {
    var beeps: [Double] = []
    var whites: [Double] = []

    init(path: String) throws {
        let decoded = try DecodedRecording(path: path)
        var quiet = 0
        for i in 0..<decoded.audio.count {
            if abs(Int(decoded.audio[i])) > 6_000 {
                if quiet >= 2_400 { beeps.append(Double(i) / 48_000) }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        let (width, height) = (decoded.width, decoded.height)
        whites = decoded.whiteOnsets(x: width / 4..<(3 * width / 4), y: height / 4..<(3 * height / 4))
    }

    /// For each beep from `fromSeconds` on, how much later it is than the nearest white
    /// picture (within 1 s), in milliseconds; nil where none is that near.
    func offsetsMs(from fromSeconds: Double) -> [Int?] {
        beeps.filter { $0 >= fromSeconds }.map { beep in
            let nearest = whites.min { abs($0 - beep) < abs($1 - beep) }
            return nearest.flatMap { abs($0 - beep) <= 1 ? Int(((beep - $0) * 1000).rounded()) : nil }
        }
    }
}

@Suite("Lip sync: each user's audio and video aligned from its sender reports", .timeLimit(.minutes(5)))
struct LipSyncTests {
    /// Runs 17 s under `link` and checks every mark after the first 2 s (3, 5, …, 15 s): each
    /// beep is heard, its white picture shown, and the two within ±45 ms.
    ///
    /// Two runs: the first plays out, renders and records the user's tracks (its own audio and
    /// video aligned); the second records the channel as a composite, which aligns the channel's
    /// users with each other (one user here: the same alignment by another path).
    private func check(
        _ link: LinkConditions, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let folder = TemporaryFolder()
        let room = try LipSyncRoom()
        try room.impair(link)
        let engine = room.viewer.engine
        let track = try engine.startRecording(channelId: "a", uid: 1, path: folder.file("user-1.webm"))
        try room.run(ticks: 1_700)
        _ = try engine.stopRecording(track)
        let offsets = room.offsetsMs(from: 2_000_000)
        let name = "\(link.lossPercent) % loss, delay \(link.delayMs) ms, jitter \(link.jitterMs) ms"
        print("lip sync, \(name): audio after picture (ms) \(offsets)")
        #expect(offsets.count == 7, "beeps heard after 2 s: \(offsets.count)", sourceLocation: sourceLocation)
        let shown = offsets.compactMap { $0 }
        #expect(shown.count == 7, "marks shown: \(shown.count)", sourceLocation: sourceLocation)
        for offset in shown {
            #expect(abs(offset) <= 45, "audio \(offset) ms after its picture", sourceLocation: sourceLocation)
        }
        let stats = try #require(room.viewer.channels["a"]?.remoteVideoStats(1), sourceLocation: sourceLocation)
        #expect(stats.isAVSynced, sourceLocation: sourceLocation)
        #expect(abs(stats.avSyncOffsetMs) <= 30, "\(stats.avSyncOffsetMs) ms", sourceLocation: sourceLocation)
        // The video's jitter buffer: nothing to cover on a clean link; under heavy loss the waits
        // for retransmissions (a round trip of 200 ms, often two).
        print("lip sync, \(name): render delay \(stats.renderDelayMs) ms, sync delay \(stats.syncDelayMs) ms")
        if link.lossPercent == 0 && link.jitterMs == 0 {
            #expect(stats.renderDelayMs <= 20, "render delay \(stats.renderDelayMs) ms", sourceLocation: sourceLocation)
        } else if link.lossPercent >= 30 {
            #expect(
                stats.renderDelayMs >= 400, "render delay \(stats.renderDelayMs) ms", sourceLocation: sourceLocation)
        }

        let second = try LipSyncRoom()
        try second.impair(link)
        let composite = try second.viewer.engine.startChannelRecording(
            channelId: "a", path: folder.file("channel-a.webm"), width: 320, height: 192, framesPerSecond: 25,
            labels: false)
        try second.run(ticks: 1_700)
        _ = try second.viewer.engine.stopChannelRecording(composite)

        // The recordings, read by ffmpeg: the same marks, in sync on the file's time line.
        for file in ["user-1.webm", "channel-a.webm"] {
            let marks = try RecordedMarks(path: folder.file(file))
            // The file starts at the first keyframe decoded; marks from 3 s of capture on.
            let recorded = marks.offsetsMs(from: (marks.beeps.first ?? 0) + 1.5)
            print("lip sync, \(name), \(file): beeps \(marks.beeps.count), audio after picture (ms) \(recorded)")
            #expect(recorded.count >= 6, "\(file): beeps \(marks.beeps)", sourceLocation: sourceLocation)
            let inFile = recorded.compactMap { $0 }
            #expect(
                inFile.count == recorded.count, "\(file): marks shown \(inFile.count)", sourceLocation: sourceLocation
            )
            for offset in inFile {
                #expect(
                    abs(offset) <= 45, "\(file): audio \(offset) ms after its picture", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("no impairment: beep and white picture within ±45 ms")
    func clean() throws { try check(LinkConditions(delayMs: 20)) }

    @Test("50 ms jitter: beep and white picture within ±45 ms")
    func jitter() throws { try check(LinkConditions(delayMs: 20, jitterMs: 50)) }

    @Test("10 % loss, RTT 50 ms: beep and white picture within ±45 ms")
    func tenPercentLoss() throws { try check(LinkConditions(lossPercent: 10, delayMs: 25)) }

    @Test("30 % loss, RTT 200 ms: beep and white picture within ±45 ms")
    func thirtyPercentLoss() throws { try check(LinkConditions(lossPercent: 30, delayMs: 100)) }
}

/// A stream's timing whose whole latency is `latency` microseconds, `delay` of it its own delay.
private func timing(latency: Int64, delay: Int64 = 0) -> StreamPlayoutTiming {
    StreamPlayoutTiming(
        senderOffsetMicroseconds: latency - delay, minimumTransitMicroseconds: 0, delayMicroseconds: delay)
}

@Suite("Lip sync: the sender clock and the delay decisions", .timeLimit(.minutes(5)))
struct LipSyncUnitTests {
    @Test("NTP timestamps convert to microseconds and back, fractions included (RFC 3550 4)")
    func ntpMicroseconds() {
        // 2^31 / 2^32 s is half a second; 0x4000_0000 a quarter.
        #expect(NTPTime.microseconds(3 << 32 | 0x8000_0000) == 3_500_000)
        #expect(NTPTime.microseconds(0x4000_0000) == 250_000)
        for microseconds: Int64 in [0, 1, 999_999, 1_050_000, 12_345_678, 3_900_000_000_123_456] {
            let back = NTPTime.microseconds(NTPTime.timestamp(microseconds: microseconds))
            #expect(abs(back - microseconds) <= 1, "\(microseconds) → \(back)")
        }
    }

    @Test("a sender clock is trusted from its first report, not after a jump until confirmed, and waits for packets")
    func senderClock() {
        var clock = SenderClock(clockRate: 90_000)
        let media: (UInt32) -> Int64? = { Int64($0) * 1_000_000 / 90_000 }
        #expect(clock.trustedOffsetMicroseconds(media) == nil)
        // RTP 90,000 (1 s of media) at NTP 10.25 s: media − NTP = −9.25 s.
        clock.report(ntpTimestamp: NTPTime.timestamp(microseconds: 10_250_000), rtpTimestamp: 90_000)
        #expect(clock.trustedOffsetMicroseconds(media) == -9_250_000)
        // Before the stream's first packet there is no media time line to place it on.
        #expect(clock.trustedOffsetMicroseconds { _ in nil } == nil)
        // A second later, 1.03 s of media: within 50 ms, still trusted.
        clock.report(ntpTimestamp: NTPTime.timestamp(microseconds: 11_250_000), rtpTimestamp: 182_700)
        #expect(clock.trustedOffsetMicroseconds(media) == -9_220_000)
        // 2 s of media in 1 s: a jump, not trusted until the next report agrees with it.
        clock.report(ntpTimestamp: NTPTime.timestamp(microseconds: 12_250_000), rtpTimestamp: 362_700)
        #expect(clock.trustedOffsetMicroseconds(media) == nil && clock.jumps == 1)
        clock.report(ntpTimestamp: NTPTime.timestamp(microseconds: 13_250_000), rtpTimestamp: 452_700)
        #expect(clock.trustedOffsetMicroseconds(media) == -8_220_000)
    }

    @Test("the earlier stream is held back by the difference, in steps, at most 1.5 s; unsynced it returns to 0")
    func decisions() {
        var sync = LipSync()
        // Video 100 ms later than audio: the audio waits, 40 ms a step.
        var now: Int64 = 0
        for expected: Int64 in [40_000, 80_000, 100_000, 100_000] {
            #expect(sync.isDue(now: now))
            _ = sync.update(audio: timing(latency: 50_000), video: timing(latency: 150_000), now: now)
            #expect(sync.audioAddedMicroseconds == expected && sync.videoAddedMicroseconds == 0)
            #expect(!sync.isDue(now: now + LipSync.updateIntervalMicroseconds - 1))
            now += 100_000
        }
        #expect(sync.isSynced && sync.offsetMicroseconds == 0)
        // Audio 3 s later than video: the video waits, 40 ms a step, never more than 1.5 s; the
        // audio's added delay goes back down.
        for _ in 0..<200 {
            _ = sync.update(audio: timing(latency: 3_000_000), video: timing(latency: 0), now: now)
            now += 100_000
        }
        #expect(sync.audioAddedMicroseconds == 0 && sync.videoAddedMicroseconds == 1_500_000)
        #expect(sync.offsetMicroseconds == 1_500_000)
        // Without the video's clock: unsynced, back toward 0.
        let changed = sync.update(audio: timing(latency: 0), video: nil, now: now)
        #expect(changed)
        #expect(!sync.isSynced && sync.offsetMicroseconds == nil && sync.videoAddedMicroseconds == 1_460_000)
    }

    @Test("aligned to a group, each stream is held back to the group's latency, 40 ms a step, at most 1.5 s")
    func groupAlignment() {
        var sync = LipSync()
        var now: Int64 = 0
        // Audio 100 ms, video 150 ms, the group's slowest stream 250 ms: audio +150, video +100.
        for (audio, video): (Int64, Int64) in [
            (40_000, 40_000), (80_000, 80_000), (120_000, 100_000), (150_000, 100_000),
        ] {
            _ = sync.update(
                audio: timing(latency: 100_000), video: timing(latency: 150_000), alignedToLatencyMicroseconds: 250_000,
                now: now)
            #expect(sync.audioAddedMicroseconds == audio && sync.videoAddedMicroseconds == video)
            now += 100_000
        }
        #expect(sync.isSynced && sync.offsetMicroseconds == 0)
        // A group 3 s slower: capped at 1.5 s each.
        for _ in 0..<60 {
            _ = sync.update(
                audio: timing(latency: 100_000), video: timing(latency: 150_000),
                alignedToLatencyMicroseconds: 3_000_000, now: now)
            now += 100_000
        }
        #expect(sync.audioAddedMicroseconds == 1_500_000 && sync.videoAddedMicroseconds == 1_500_000)
        // A user without video is still aligned with the group; it has nothing to be in sync with.
        var audioOnly = LipSync()
        _ = audioOnly.update(audio: timing(latency: 0), video: nil, alignedToLatencyMicroseconds: 30_000, now: 0)
        #expect(audioOnly.audioAddedMicroseconds == 30_000 && !audioOnly.isSynced)
    }

    @Test(
        "a floor, not an added delay: a stream held back does not move when its own delay jumps below its floor; both come down together"
    )
    func floors() {
        var sync = LipSync()
        var now: Int64 = 0
        // Audio: 70 ms of transit and clocks, 30 ms of its own delay; video: 50 ms and 250 ms.
        let video = timing(latency: 300_000, delay: 250_000)
        for _ in 0..<10 {
            _ = sync.update(audio: timing(latency: 100_000, delay: 30_000), video: video, now: now)
            now += 100_000
        }
        #expect(sync.audio.floorMicroseconds == 230_000 && sync.video.floorMicroseconds == 250_000)
        #expect(sync.offsetMicroseconds == 0)
        // One late packet raises the audio's own delay to 200 ms for a while, and it drops back:
        // the audio already plays at 230 ms, so neither stream moves. (Added to its own delay,
        // the audio jumped to 400 ms and the video was a step a decision behind.)
        for own: Int64 in [200_000, 200_000, 30_000, 30_000] {
            let changed = sync.update(audio: timing(latency: 70_000 + own, delay: own), video: video, now: now)
            #expect(!changed && sync.audio.floorMicroseconds == 230_000 && sync.video.floorMicroseconds == 250_000)
            #expect(sync.offsetMicroseconds == 0)
            now += 100_000
        }
        // The video's own delay drops to 50 ms: nothing is held back any more. The later
        // stream's drop is taken 40 ms per 100 ms, and the audio comes down with it, in sync.
        for step: Int64 in 1...4 {
            _ = sync.update(
                audio: timing(latency: 100_000, delay: 30_000), video: timing(latency: 100_000, delay: 50_000),
                now: now)
            #expect(sync.video.floorMicroseconds == 250_000 - step * 40_000)
            #expect(sync.audio.floorMicroseconds == 230_000 - step * 40_000)
            #expect(sync.offsetMicroseconds == 0)
            now += 100_000
        }
        // Decided twice as often, the steps are half as long.
        _ = sync.update(
            audio: timing(latency: 100_000, delay: 30_000), video: timing(latency: 100_000, delay: 50_000),
            now: now - 50_000)
        #expect(sync.video.floorMicroseconds == 70_000 && sync.audio.floorMicroseconds == 50_000)
        // A user without audio: the video plays at its own delay, which counts at once when
        // it drops; nothing is added.
        var alone = LipSync()
        _ = alone.update(audio: nil, video: timing(latency: 900_000, delay: 800_000), now: 0)
        _ = alone.update(audio: nil, video: timing(latency: 300_000, delay: 200_000), now: 100_000)
        #expect(alone.video.floorMicroseconds <= 200_000 && alone.videoAddedMicroseconds == 0)
        // An audio held 200 ms above its own 30 ms loses its video's clock while its own delay
        // rises to 200 ms: the floor stays where it was (230 ms), not 200 + 160.
        var lost = LipSync()
        for step: Int64 in 0..<10 {
            _ = lost.update(
                audio: timing(latency: 100_000, delay: 30_000), video: timing(latency: 300_000, delay: 250_000),
                now: step * 100_000)
        }
        #expect(lost.audio.floorMicroseconds == 230_000)
        _ = lost.update(audio: timing(latency: 270_000, delay: 200_000), video: nil, now: 1_000_000)
        #expect(lost.audio.floorMicroseconds == 230_000 && lost.audioAddedMicroseconds == 30_000)
        // Its own delay drops back: alone, that counts at once; the 30 ms it held runs out.
        _ = lost.update(audio: timing(latency: 100_000, delay: 30_000), video: nil, now: 1_100_000)
        #expect(lost.audio.floorMicroseconds == 0 && lost.audioAddedMicroseconds == 0)
    }

    @Test(
        "the video's render delay takes its target at once in the first 2 s, then moves to it 40 ms per 100 ms, up or down"
    )
    func renderDelayPace() {
        var inbox = VideoReceiver.Inbox(retransmission: false, reorderWaitMicroseconds: 20_000, feedbackSSRC: 0)
        var now: Int64 = 0
        func frame(transit: Int64, fastest: Int64? = nil) {
            inbox.delays.add(transitMicroseconds: transit, fastestPathTransitMicroseconds: fastest ?? transit, now: now)
            inbox.updateRenderDelay(now: now)
        }
        // A second of a steady stream, then six frames held 300 ms behind a repaired one.
        for _ in 0..<25 {
            frame(transit: 0)
            now += 40_000
        }
        for held in 0..<6 { frame(transit: 300_000 - Int64(held) * 40_000, fastest: 0) }
        #expect(inbox.renderDelayMicroseconds >= 100_000, "\(inbox.renderDelayMicroseconds)")
        #expect(inbox.renderDelayMicroseconds == inbox.delays.targetDelayMicroseconds)
        // After the first 2 s, the next hold raises the target at once, the render delay 16 ms
        // per 40 ms frame.
        while now < 2_500_000 {
            frame(transit: 0)
            now += 40_000
        }
        frame(transit: 0)
        let before = inbox.renderDelayMicroseconds
        for held in 0..<12 { frame(transit: 700_000 - Int64(held) * 40_000, fastest: 0) }
        let target = inbox.delays.targetDelayMicroseconds
        #expect(target >= before + 200_000 && inbox.renderDelayMicroseconds == before, "\(target), \(before)")
        for step: Int64 in 1...5 {
            now += 40_000
            frame(transit: 0)
            #expect(inbox.renderDelayMicroseconds == before + step * 16_000)
        }
        // A frame 2 s later: at most 100 ms of clock counts, 40 ms of climb.
        now += 2_000_000
        frame(transit: 0)
        let climbed = before + 5 * 16_000 + 40_000
        #expect(inbox.renderDelayMicroseconds == min(inbox.delays.targetDelayMicroseconds, climbed))
        // It climbs on to the target; once the holds are forgotten the target drops, and the
        // render delay comes down at the same pace (not at once), to within 20 ms of it.
        var previous = inbox.renderDelayMicroseconds
        var fell = false
        for _ in 0..<2_000 {
            now += 40_000
            frame(transit: 0)
            let delay = inbox.renderDelayMicroseconds
            #expect(abs(delay - previous) <= 16_000, "\(previous) → \(delay)")
            fell = fell || delay < previous
            previous = delay
        }
        let settled = inbox.delays.targetDelayMicroseconds
        #expect(fell && previous >= settled && previous - settled <= 20_000, "\(previous), target \(settled)")
    }
}

/// Files with the marks of ``LipSyncRoom`` (a beep over a quiet tone, and three white pictures
/// among dark ones, every 2 s from 1 s), for senders outside the engine's test loop.
func writeMarkFiles(y4m: String, wav: String, seconds: Int) throws {
    let (width, height) = (160, 96)
    let writer = try Y4MWriter(path: y4m, header: Y4MHeader(width: width, height: height, frameRateNumerator: 25))
    let picture = try I420Buffer(width: width, height: height)
    for frame in 0..<(seconds * 25) {
        let t = Int64(frame) * 40_000
        let white = t >= 1_000_000 && (t - 1_000_000) % 2_000_000 < 120_000
        picture.withMutableView { view in
            for y in 0..<height {
                for x in 0..<width {
                    view.y[y * view.strideY + x] = (white ? 235 : 40) &+ UInt8((x / 8 + y / 8) % 2 * 6)
                }
            }
            for y in 0..<view.chromaHeight {
                for x in 0..<view.chromaWidth {
                    view.u[y * view.strideU + x] = 128
                    view.v[y * view.strideV + x] = 128
                }
            }
        }
        try picture.withView { try writer.write($0) }
    }
    try writer.finish()
    let audio = try WAVWriter(path: wav, sampleRate: 48_000, channelCount: 2)
    var samples = [Int16](repeating: 0, count: seconds * 48_000 * 2)
    for n in 0..<(seconds * 48_000) {
        let t = Double(n) / 48_000
        let micro = Int64(n) * 1_000_000 / 48_000
        var value = 800 * sin(2 * .pi * 200 * t)
        if micro >= 1_000_000 && (micro - 1_000_000) % 2_000_000 < 100_000 { value += 12_000 * sin(2 * .pi * 1000 * t) }
        samples[2 * n] = Int16(value)
        samples[2 * n + 1] = Int16(value)
    }
    try audio.write(samples)
    try audio.finish()
}

@Suite("Lip sync over plain RTP: the receiver's recording on the sender's time line", .timeLimit(.minutes(5)))
struct LipSyncRTPTests {
    /// Checks every mark of a recording (but one cut by the file's start: the recording begins
    /// at the first keyframe the receiver decoded): beep and white picture within ±45 ms.
    private func checkMarks(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let marks = try RecordedMarks(path: path)
        let offsets = marks.offsetsMs(from: 0.2)
        print(
            "lip sync over RTP, \(path.split(separator: "/").last ?? ""): beeps \(marks.beeps), audio after picture (ms) \(offsets)"
        )
        #expect(offsets.count >= 2, "beeps \(marks.beeps)", sourceLocation: sourceLocation)
        for offset in offsets {
            let value = try #require(offset, "a beep without its picture", sourceLocation: sourceLocation)
            #expect(abs(value) <= 45, "audio \(value) ms after its picture", sourceLocation: sourceLocation)
        }
    }

    @Test("pipebench send encodes Y4M and WAV live; pipebench receive records them in sync (±45 ms)")
    func ourSender() throws {
        let folder = TemporaryFolder()
        let (y4m, wav) = (folder.file("marks.y4m"), folder.file("marks.wav"))
        try writeMarkFiles(y4m: y4m, wav: wav, seconds: 8)
        let sdp = folder.file("ours.sdp")
        let sender = try RTPNetworkTests.startSend([y4m, wav, "--quiet"], sdp: sdp, startDelay: 1.5)
        defer { sender.finish(within: 0) }
        let recording = folder.file("received.webm")
        let received = try pipebench(["receive", sdp, recording, "--idle", "1.5", "--quiet"])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(received.status == 0, "\(received.stderr)")
        try checkMarks(recording)
    }

    @Test("ffmpeg encodes and sends the marks (its own sender reports); pipebench receive records them in sync")
    func ffmpegSender() throws {
        let folder = TemporaryFolder()
        let (y4m, wav) = (folder.file("marks.y4m"), folder.file("marks.wav"))
        try writeMarkFiles(y4m: y4m, wav: wav, seconds: 8)
        let port = try kernelUDPPorts(count: 4)
        func ffmpegArguments(_ extra: [String]) -> [String] {
            ["-nostdin", "-v", "error", "-re", "-i", y4m, "-re", "-i", wav]
                + [
                    "-map", "0:v", "-c:v", "libvpx", "-deadline", "realtime", "-g", "25", "-b:v", "300k",
                    "-payload_type", "96", "-ssrc", "1111", "-f", "rtp", "rtp://127.0.0.1:\(port)?pkt_size=1200",
                ]
                + [
                    "-map", "1:a", "-c:a", "libopus", "-payload_type", "111", "-ssrc", "2222", "-f", "rtp",
                    "rtp://127.0.0.1:\(port + 2)?pkt_size=1200",
                ] + extra
        }
        // ffmpeg's own SDP for these streams (a first run of a few milliseconds writes it).
        let sdp = folder.file("ffmpeg.sdp")
        try reference("ffmpeg", ffmpegArguments(["-sdp_file", sdp, "-t", "0.01"]))
        let recording = folder.file("received.webm")
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
        receiver.arguments = ["receive", sdp, recording, "--idle", "2", "--quiet"]
        receiver.standardOutput = FileHandle.nullDevice
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer {
            receiver.finish(within: 0)
        }
        try waitForUDPListeners([port, port + 2], upTo: 10)
        try reference("ffmpeg", ffmpegArguments([]))
        // It ends 2 s after the last packet; 20 s is the most it may take.
        let deadline = Date().addingTimeInterval(20)
        while receiver.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!receiver.isRunning, "pipebench receive did not end")
        guard !receiver.isRunning else { return }
        #expect(receiver.terminationStatus == 0)
        try checkMarks(recording)
    }
}
