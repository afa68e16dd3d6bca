import Foundation
import Testing

@testable import MediaPipeline

/// Two hosts who clap at the same capture instant every 2 s (each a beep of its own pitch and a
/// white picture among dark ones of its own shade), behind links of different latency, and a
/// viewer that records the channel as a composite. Measured in the file, as ffmpeg decodes it.
final class ClapRoom {
    let session: TestSession
    let hosts: [TestUser]
    let viewer: TestUser
    /// Each host's beep pitch and dark shade (uid 1, then uid 2).
    static let beepHz: [Double] = [1_000, 2_500]
    static let darkLuma: [UInt8] = [40, 90]
    static let width = 160, height = 96
    private var tick = 0
    private var audioFrames = 0
    private let dark: [I420Buffer]
    private let white: I420Buffer

    init(seed: UInt64 = 17) throws {
        session = TestSession(seed: seed)
        hosts = [try session.user(), try session.user()]
        viewer = try session.user()
        for (index, host) in hosts.enumerated() { try host.join("a", uid: UInt32(index + 1)) }
        try viewer.join("a", uid: 3, options: .subscribeOnly, role: .audience)
        for uid: UInt32 in [1, 2] {
            _ = try viewer.engine.setupRemoteVideo(
                VideoCanvas(channelId: "a", uid: uid, width: Self.width, height: Self.height, renderMode: .fit))
        }
        dark = try Self.darkLuma.map { try LipSyncRoom.picture(luma: $0) }
        white = try LipSyncRoom.picture(luma: 235)
    }

    func impair(host uid: UInt32, _ conditions: LinkConditions) throws {
        try session.hub.setLinkConditions(conditions, channelId: "a", publisher: uid, receiver: 3)
    }

    /// Whether capture time `t` (microseconds) falls in a mark lasting `length`.
    private static func inMark(_ t: Int64, length: Int64) -> Bool {
        guard t >= LipSyncRoom.firstMarkMicroseconds else { return false }
        return (t - LipSyncRoom.firstMarkMicroseconds) % LipSyncRoom.markPeriodMicroseconds < length
    }

    /// Runs `ticks` × 10 ms: both hosts push what they captured, the viewer plays out and renders.
    func run(ticks: Int) throws {
        var samples = [Int16](repeating: 0, count: 960)
        for _ in 0..<ticks {
            let now = session.clock.nowMicroseconds
            for (index, host) in hosts.enumerated() {
                for i in 0..<480 {
                    let captured = now - 10_000 + Int64(i) * 1_000_000 / 48_000
                    let t = Double(audioFrames + i) / 48_000
                    var value = 800 * sin(2 * .pi * 200 * t)
                    if Self.inMark(captured, length: LipSyncRoom.beepMicroseconds) {
                        value += 12_000 * sin(2 * .pi * Self.beepHz[index] * t)
                    }
                    samples[2 * i] = Int16(value)
                    samples[2 * i + 1] = Int16(value)
                }
                try host.engine.pushAudio(AudioFrame(samples: samples, sampleRate: 48_000, channelCount: 2))
                if tick % LipSyncRoom.videoPeriodTicks == 0 {
                    let isWhite = Self.inMark(now, length: 3 * 40_000 - 1)
                    try host.engine.pushVideo(isWhite ? white : dark[index], timestampMicroseconds: now)
                }
            }
            audioFrames += 480
            viewer.pull()
            viewer.engine.renderVideo()
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
            tick += 1
        }
    }
}

/// Onsets of a tone in mono 48 kHz audio: the centres (seconds) of the 5 ms windows, 1 ms apart,
/// where the tone's amplitude (Goertzel) first exceeds `threshold` after at least 50 ms below it.
func toneOnsets(_ audio: [Int16], hz: Double, threshold: Double = 6_000) -> [Double] {
    let window = 240
    let coefficient = 2 * cos(2 * .pi * hz / 48_000)
    var onsets: [Double] = []
    var quietWindows = 50
    for start in stride(from: 0, to: audio.count - window, by: 48) {
        var (s1, s2) = (0.0, 0.0)
        for i in start..<(start + window) {
            let s = Double(audio[i]) + coefficient * s1 - s2
            s2 = s1
            s1 = s
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        let amplitude = 2 * power.squareRoot() / Double(window)
        if amplitude > threshold {
            if quietWindows >= 50 { onsets.append(Double(start + window / 2) / 48_000) }
            quietWindows = 0
        } else {
            quietWindows += 1
        }
    }
    return onsets
}

@Suite("Channel composite: users aligned with each other on their senders' clocks", .timeLimit(.minutes(5)))
struct ChannelSyncTests {
    /// The nearest of `times` to `t` within 1 s, as milliseconds `t` is after it.
    private func offsetMs(_ t: Double, from times: [Double]) -> Int? {
        let nearest = times.min { abs($0 - t) < abs($1 - t) }
        return nearest.flatMap { abs($0 - t) <= 1 ? Int(((t - $0) * 1000).rounded()) : nil }
    }

    @Test(
        "two users who clap at once, one 100 ms and 10 % loss further away: both claps in one frame, each voice on its picture"
    )
    func twoUsersClap() throws {
        let folder = TemporaryFolder()
        let room = try ClapRoom()
        try room.impair(host: 1, LinkConditions(delayMs: 20))
        try room.impair(host: 2, LinkConditions(lossPercent: 10, delayMs: 120, jitterMs: 20))
        let path = folder.file("channel-a.webm")
        let recording = try room.viewer.engine.startChannelRecording(
            channelId: "a", path: path, width: 320, height: 192, framesPerSecond: 25, labels: false)
        try room.run(ticks: 1_700)
        try room.viewer.engine.stopChannelRecording(recording)

        let decoded = try DecodedRecording(path: path)
        #expect(decoded.width == 320 && decoded.height == 192)
        // The grid of two users: uid 1 in the top-left cell, uid 2 top-right (160x96 each). The
        // first picture after 0.5 s tells them apart by their dark shades.
        let cells = [0..<160, 160..<320]
        let rows = 0..<96
        let early = try #require(decoded.frameTimes.firstIndex { $0 >= 0.5 })
        for (index, cell) in cells.enumerated() {
            let luma = decoded.meanLuma(early, x: cell, y: rows)
            #expect(abs(luma - Int(ClapRoom.darkLuma[index])) <= 12, "cell \(index + 1): luma \(luma)")
        }
        let whites = cells.map { decoded.whiteOnsets(x: $0, y: rows) }
        let beeps = ClapRoom.beepHz.map { toneOnsets(decoded.audio, hz: $0) }
        print("channel sync: whites \(whites), beeps \(beeps)")
        // Every mark whose first white picture of uid 1 comes after 7 s of the file: by then the
        // alignment has moved the delays into place (40 ms per 100 ms at most).
        let marks = whites[0].filter { $0 >= 7 }
        #expect(marks.count == 5, "marks after 7 s: \(marks)")
        var report: [String] = []
        for mark in marks {
            let otherPicture = offsetMs(mark, from: whites[1])
            let voices = beeps.map { offsetMs(mark, from: $0) }
            let ownPicture = whites[1].min { abs($0 - mark) < abs($1 - mark) }
            let secondVoice = ownPicture.flatMap { offsetMs($0, from: beeps[1]) }
            report.append(
                "mark at \(mark) s: uid 2's picture \(String(describing: otherPicture)) ms, voices \(voices) ms, uid 2's voice on its picture \(String(describing: secondVoice)) ms"
            )
            let pictureOffset = try #require(otherPicture, "uid 2's picture of the mark at \(mark) s")
            #expect(abs(pictureOffset) <= 45, "uid 2's picture \(pictureOffset) ms from uid 1's")
            for (index, voice) in voices.enumerated() {
                let offset = try #require(voice, "uid \(index + 1)'s beep of the mark at \(mark) s")
                #expect(abs(offset) <= 45, "uid \(index + 1)'s beep \(offset) ms after uid 1's picture")
            }
            let offset = try #require(secondVoice, "uid 2's beep of its picture near \(mark) s")
            #expect(abs(offset) <= 45, "uid 2's beep \(offset) ms after its picture")
        }
        print("channel sync:\n" + report.joined(separator: "\n"))
    }
}
