import Foundation
import Testing

@testable import MediaPipeline

// Engine API that had no test (issue 22): auto-subscribe options, mute-all video, default mute,
// the channel mix switch, canvas lookup, clearing observers, and the engine after destroy().
// Media is judged by content: every sender has its own tone and its own pictures, so a stream
// that leaks or lands on the wrong user fails.

/// The amplitude of the `hz` tone in the left channel of 48 kHz interleaved stereo `samples`
/// (Goertzel over the whole buffer). Whole multiples of 100 Hz fall on a bin of any window of
/// whole 10 ms frames, so the other users' tones leak nothing into it.
private func toneAmplitude(_ samples: [Int16], hz: Double) -> Double {
    let count = samples.count / 2
    guard count > 0 else { return 0 }
    let coefficient = 2 * cos(2 * .pi * hz / 48_000)
    var (s1, s2) = (0.0, 0.0)
    for i in 0..<count {
        let s = Double(samples[2 * i]) + coefficient * s1 - s2
        s2 = s1
        s1 = s
    }
    let power = max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2)
    return 2 * power.squareRoot() / Double(count)
}

/// Samples of `ticks` 10 ms stereo frames at 48 kHz.
private func samples(ticks: Int) -> Int { ticks * 960 }

/// The last `ticks` 10 ms frames of `audio`.
private func last(_ ticks: Int, of audio: [Int16]) -> [Int16] { Array(audio.suffix(samples(ticks: ticks))) }

/// The best PSNR of `canvas`'s picture against each of `host`'s pictures so far, rendered into a
/// canvas of the same binding: high only when the canvas shows that host's video.
private func bestPSNR(_ canvas: CanvasBuffer, against host: TestUser) throws -> Double {
    let expected = try CanvasBuffer(canvas.canvas)
    var best = 0.0
    for frame in 0..<host.videoFrame {
        let source = try syntheticPicture(width: 160, height: 90, frame: frame + host.pictureOffset)
        source.withView { expected.render($0) }
        let psnr = expected.withLockedPicture { a in
            canvas.withLockedPicture { b in PictureQuality.psnr(reference: a, test: b) }
        }
        best = max(best, psnr)
    }
    return best
}

/// The best PSNR of `picture` (at the senders' 160×90) against each of `host`'s pictures so far.
private func bestPSNR(_ picture: I420Buffer, against host: TestUser) throws -> Double {
    var best = 0.0
    for frame in 0..<host.videoFrame {
        let source = try syntheticPicture(width: 160, height: 90, frame: frame + host.pictureOffset)
        let psnr = source.withView { a in picture.withView { b in PictureQuality.psnr(reference: a, test: b) } }
        best = max(best, psnr)
    }
    return best
}

/// The MD5 of what `canvas` shows now.
private func shown(_ canvas: CanvasBuffer) -> String { canvas.withLockedPicture { $0.md5() } }

/// A 160×90 canvas in fill mode (the senders' size) for `uid` in `channelId`.
private func canvasBinding(_ channelId: String, _ uid: UInt32) -> VideoCanvas {
    VideoCanvas(channelId: channelId, uid: uid, width: 160, height: 90, renderMode: .fill)
}

extension TestSession {
    /// Runs `ticks` as ``run(ticks:video:publishers:)`` does and returns what each of
    /// `listeners` played in them (interleaved stereo).
    fileprivate func played(
        _ ticks: Int, by listeners: [TestUser], video: Bool = false, publishers: [TestUser]
    ) throws -> [[Int16]] {
        var played = listeners.map { _ in [Int16]() }
        for _ in 0..<ticks {
            try run(ticks: 1, video: video, publishers: publishers)
            for (index, listener) in listeners.enumerated() { played[index] += listener.playout }
        }
        return played
    }

    fileprivate func played(
        _ ticks: Int, by listener: TestUser, video: Bool = false, publishers: [TestUser]
    ) throws -> [Int16] {
        try played(ticks, by: [listener], video: video, publishers: publishers)[0]
    }
}

/// Everything an audio observer is shown: each stream's samples, and the mixes counted.
private final class AudioObserverLog: AudioFrameObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var streams: [StreamKey: [Int16]] = [:]
    private var mixes = 0

    func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey) {
        lock.withLock { streams[stream, default: []].append(contentsOf: samples) }
    }

    func mixedAudioFrame(_ samples: UnsafeBufferPointer<Int16>) { lock.withLock { mixes += 1 } }

    /// The samples shown for `channelId`/`uid`.
    func samples(_ channelId: String, _ uid: UInt32) -> [Int16] {
        lock.withLock { streams[StreamKey(channelId: channelId, uid: uid)] ?? [] }
    }

    /// The 10 ms frames shown for `channelId`/`uid`.
    func frames(_ channelId: String, _ uid: UInt32) -> Int { samples(channelId, uid).count / 960 }

    /// Every remote frame shown, over all streams.
    var remoteFrames: Int { lock.withLock { streams.values.reduce(0) { $0 + $1.count / 960 } } }

    var mixedFrames: Int { lock.withLock { mixes } }
}

/// Every picture a video observer is shown, counted per stream, with the last one kept.
private final class VideoObserverLog: VideoFrameObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [StreamKey: Int] = [:]
    private var lastPictures: [StreamKey: I420Buffer] = [:]

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        let copy = try? I420Buffer(width: picture.width, height: picture.height)
        copy?.copy(from: picture)
        lock.withLock {
            counts[stream, default: 0] += 1
            lastPictures[stream] = copy
        }
    }

    func frames(_ channelId: String, _ uid: UInt32) -> Int {
        lock.withLock { counts[StreamKey(channelId: channelId, uid: uid)] ?? 0 }
    }

    func lastPicture(_ channelId: String, _ uid: UInt32) -> I420Buffer? {
        lock.withLock { lastPictures[StreamKey(channelId: channelId, uid: uid)] }
    }
}

/// The events of `stream` up to its end, or nil if it has not ended after `timeout` of wall
/// time (a sequence that never ends fails the check instead of hanging the test).
private func drain(_ stream: AsyncStream<ChannelEvent>, timeout: Duration = .seconds(10)) async -> [ChannelEvent]? {
    await withTaskGroup(of: [ChannelEvent]?.self) { group in
        group.addTask {
            var events: [ChannelEvent] = []
            for await event in stream { events.append(event) }
            return Task.isCancelled ? nil : events
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

@Suite("Engine API gaps: subscribing, mutes, mixes, canvases, observers, destroy")
struct EngineAPIGapTests {
    @Test(
        "autoSubscribe off: nothing of that kind arrives until the app subscribes a user, then that user's does; the other kind flows",
        arguments: MediaKind.allCases)
    func autoSubscribeOff(kind: MediaKind) throws {
        let session = TestSession()
        let wanted = try session.user(frequency: 400)
        let ignored = try session.user(frequency: 1000)
        ignored.pictureOffset = 40
        try wanted.join("a", uid: 1)
        try ignored.join("a", uid: 3)
        let viewer = try session.user()
        let options = ChannelMediaOptions(
            autoSubscribeAudio: kind != .audio, autoSubscribeVideo: kind != .video, publishLocalAudio: false,
            publishLocalVideo: false)
        try viewer.join("a", uid: 2, options: options, role: .audience)
        let channel = try viewer.channel("a")
        let canvases = try [1, 3].map { try viewer.engine.setupRemoteVideo(canvasBinding("a", $0)) }
        let hosts = [wanted, ignored]

        let unsubscribed = try session.played(40, by: viewer, video: true, publishers: hosts)
        let before = channel.statistics
        let log = try #require(viewer.logs["a"])
        for uid: UInt32 in [1, 3] {
            #expect(log.remoteStates(uid, kind).isEmpty, "uid \(uid): \(log.remoteStates(uid, kind))")
            #expect(channel.remoteState(uid, kind) == .stopped)
        }
        let subscribeStates = log.events.compactMap { event -> SubscribeState? in
            if case .remoteSubscribeStateChanged(1, kind, _, let new, _) = event { new } else { nil }
        }
        #expect(subscribeStates == [.noSubscribe])
        switch kind {
        case .audio:
            // Not forwarded, not decoded, not played.
            #expect(before.rxAudioFrames == 0 && before.audioFramesDecoded == 0)
            #expect(viewer.engine.statistics.liveAudioDecoders == 0)
            #expect(unsubscribed.allSatisfy { $0 == 0 }, "peak \(unsubscribed.map { abs(Int($0)) }.max() ?? 0)")
            // The video plays: each canvas shows its own host.
            for (index, canvas) in canvases.enumerated() {
                let (own, other) = (
                    try bestPSNR(canvas, against: hosts[index]), try bestPSNR(canvas, against: hosts[1 - index])
                )
                #expect(
                    canvas.framesRendered >= 3 && own >= 30 && own > other + 10,
                    "canvas \(index): \(own) vs \(other) dB")
            }
        case .video:
            #expect(before.rxVideoFrames == 0 && before.videoFramesDecoded == 0)
            #expect(viewer.engine.statistics.liveVideoDecoders == 0)
            #expect(canvases.allSatisfy { $0.framesRendered == 0 })
            // The audio plays: both tones.
            let (low, high) = (
                toneAmplitude(last(20, of: unsubscribed), hz: 400), toneAmplitude(last(20, of: unsubscribed), hz: 1000)
            )
            #expect(low > 4000 && high > 4000, "400 Hz \(low), 1000 Hz \(high)")
        }
        print(
            "autoSubscribe off (\(kind)): before subscribing rx audio \(before.rxAudioFrames) video \(before.rxVideoFrames)"
        )

        // Subscribing uid 1 explicitly: its stream of that kind arrives; uid 3's does not.
        if kind == .audio {
            try channel.muteRemoteAudioStream(1, mute: false)
        } else {
            try channel.muteRemoteVideoStream(1, mute: false)
        }
        let renderedBefore = canvases[0].framesRendered
        let subscribed = try session.played(40, by: viewer, video: true, publishers: hosts)
        let states = log.remoteStates(1, kind)
        #expect(states.map(\.0) == [.starting, .decoding] && states.allSatisfy { $0.1 == .localUnmuted }, "\(states)")
        #expect(log.remoteStates(3, kind).isEmpty)
        let (low, high) = (
            toneAmplitude(last(20, of: subscribed), hz: 400), toneAmplitude(last(20, of: subscribed), hz: 1000)
        )
        switch kind {
        case .audio:
            #expect(low > 4000 && high < 40, "400 Hz (subscribed) \(low), 1000 Hz (not) \(high)")
            #expect(viewer.engine.statistics.liveAudioDecoders == 1)
            // The video carried on.
            #expect(canvases[0].framesRendered >= renderedBefore + 3)
            #expect(try bestPSNR(canvases[0], against: wanted) >= 30)
        case .video:
            let (own, other) = (try bestPSNR(canvases[0], against: wanted), try bestPSNR(canvases[0], against: ignored))
            #expect(canvases[0].framesRendered >= 2 && own >= 30 && own > other + 10, "\(own) vs \(other) dB")
            #expect(canvases[1].framesRendered == 0)
            #expect(viewer.engine.statistics.liveVideoDecoders == 1)
            // The audio carried on.
            #expect(low > 4000 && high > 4000, "400 Hz \(low), 1000 Hz \(high)")
        }
        print(
            "autoSubscribe off (\(kind)): after subscribing uid 1: 400 Hz \(low), 1000 Hz \(high); canvases \(canvases.map(\.framesRendered))"
        )
    }

    @Test(
        "muteAllRemoteVideoStreams: no video decoded or rendered while muted (STOPPED, LOCAL_MUTED), users who join meanwhile included; unmute resumes it; audio plays throughout"
    )
    func muteAllRemoteVideo() throws {
        let session = TestSession()
        let one = try session.user(frequency: 400)
        let two = try session.user(frequency: 1000)
        let late = try session.user(frequency: 1600)
        // Picture offsets far apart in the sequence's luma cycle (about 85 frames).
        two.pictureOffset = 28
        late.pictureOffset = 56
        try one.join("a", uid: 1)
        try two.join("a", uid: 3)
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let channel = try viewer.channel("a")
        let hosts = [one, two, late]
        let canvases = try [1, 3, 4].map { try viewer.engine.setupRemoteVideo(canvasBinding("a", $0)) }
        let log = try #require(viewer.logs["a"])
        try session.run(ticks: 30, video: true, publishers: [one, two])
        #expect(canvases[0].framesRendered >= 3 && canvases[1].framesRendered >= 3)

        try channel.muteAllRemoteVideoStreams(true)
        for uid: UInt32 in [1, 3] {
            #expect(log.remoteStates(uid, .video).last.map { $0 == (.stopped, .localMuted) } == true)
        }
        try late.join("a", uid: 4)
        let rendered = canvases.map(\.framesRendered)
        let pictures = canvases.map(shown)
        let received = channel.statistics
        let audioEvents = log.events.filter {
            if case .remoteAudioStateChanged = $0 { true } else { false }
        }.count
        let muted = try session.played(40, by: viewer, video: true, publishers: hosts)
        #expect(canvases.map(\.framesRendered) == rendered)
        #expect(canvases.map(shown) == pictures)
        #expect(channel.statistics.rxVideoFrames == received.rxVideoFrames)
        #expect(channel.statistics.videoFramesDecoded == received.videoFramesDecoded)
        #expect(viewer.engine.statistics.liveVideoDecoders == 0)
        #expect(log.remoteStates(4, .video).isEmpty)
        // Every user's audio plays on, with no audio state change but the newcomer's start.
        let tones = [400.0, 1000, 1600].map { toneAmplitude(last(20, of: muted), hz: $0) }
        #expect(tones.allSatisfy { $0 > 3000 }, "tones while video is muted: \(tones)")
        let newAudioEvents = log.events.filter {
            if case .remoteAudioStateChanged(let uid, _, _, _) = $0 { uid != 4 } else { false }
        }.count
        #expect(newAudioEvents == audioEvents)

        try channel.muteAllRemoteVideoStreams(false)
        try session.run(ticks: 40, video: true, publishers: hosts)
        for uid: UInt32 in [1, 3] {
            let states = log.remoteStates(uid, .video)
            #expect(
                states.suffix(3).map(\.0) == [.stopped, .starting, .decoding]
                    && states.suffix(2).allSatisfy { $0.1 == .localUnmuted }, "uid \(uid): \(states)")
        }
        // The newcomer was muted from its start: its first states are those of the unmute.
        #expect(log.remoteStates(4, .video).map(\.0) == [.starting, .decoding])
        for (index, canvas) in canvases.enumerated() {
            let own = try bestPSNR(canvas, against: hosts[index])
            let others = try hosts.indices.filter { $0 != index }.map { try bestPSNR(canvas, against: hosts[$0]) }
            #expect(canvas.framesRendered > rendered[index], "canvas \(index)")
            #expect(shown(canvas) != pictures[index], "canvas \(index) did not change")
            #expect(
                own >= 30 && others.allSatisfy { own > $0 + 10 }, "canvas \(index): own \(own), others \(others) dB")
        }
        #expect(viewer.engine.statistics.liveVideoDecoders == 3)
        print(
            "mute all video: rendered \(rendered) while muted, \(canvases.map(\.framesRendered)) after; tones \(tones)")
    }

    @Test(
        "setDefaultMuteAllRemoteAudioStreams(true): users who join afterwards are not heard, those present are; muteRemoteAudioStream(uid, false) brings one back; false again lets the next newcomer in"
    )
    func defaultMuteAudio() throws {
        let session = TestSession()
        let early = try session.user(frequency: 400)
        let late = try session.user(frequency: 1000)
        let third = try session.user(frequency: 1600)
        late.pictureOffset = 40
        try early.join("a", uid: 1)
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let channel = try viewer.channel("a")
        let observer = AudioObserverLog()
        viewer.engine.setAudioFrameObserver(observer)
        let lateCanvas = try viewer.engine.setupRemoteVideo(canvasBinding("a", 3))
        let log = try #require(viewer.logs["a"])
        try session.run(ticks: 10, publishers: [early])

        channel.setDefaultMuteAllRemoteAudioStreams(true)
        try late.join("a", uid: 3)
        let muted = try session.played(40, by: viewer, video: true, publishers: [early, late])
        let (earlyTone, lateTone) = (
            toneAmplitude(last(20, of: muted), hz: 400), toneAmplitude(last(20, of: muted), hz: 1000)
        )
        #expect(earlyTone > 4000 && lateTone < 40, "present user \(earlyTone), newcomer \(lateTone)")
        #expect(channel.remoteUsers == [1, 3])
        #expect(observer.frames("a", 3) == 0)
        #expect(toneAmplitude(last(20, of: observer.samples("a", 1)), hz: 400) > 4000)
        #expect(log.remoteStates(3, .audio).isEmpty)
        #expect(
            log.events.contains { event in
                if case .remoteSubscribeStateChanged(3, .audio, .idle, .noSubscribe, _) = event { true } else { false }
            })
        // The newcomer's video is not concerned.
        let own = try bestPSNR(lateCanvas, against: late)
        #expect(lateCanvas.framesRendered >= 3 && own >= 30, "newcomer's canvas \(own) dB")

        // Agora's way back for one user: muteRemoteAudioStream(uid, false).
        try channel.muteRemoteAudioStream(3, mute: false)
        let unmuted = try session.played(40, by: viewer, publishers: [early, late])
        let both = (toneAmplitude(last(20, of: unmuted), hz: 400), toneAmplitude(last(20, of: unmuted), hz: 1000))
        #expect(both.0 > 4000 && both.1 > 4000, "after unmuting uid 3: \(both)")
        #expect(log.remoteStates(3, .audio).map(\.0) == [.starting, .decoding])
        #expect(observer.frames("a", 3) > 10)

        // The default off: the next newcomer is heard from its start.
        channel.setDefaultMuteAllRemoteAudioStreams(false)
        try third.join("a", uid: 4)
        let all = try session.played(40, by: viewer, publishers: [early, late, third])
        let tones = [400.0, 1000, 1600].map { toneAmplitude(last(20, of: all), hz: $0) }
        #expect(tones.allSatisfy { $0 > 3000 }, "\(tones)")
        print(
            "default mute: present \(earlyTone), newcomer \(lateTone) while default-muted; then \(both); then \(tones)")
    }

    @Test(
        "enableChannelMix: the channel's mix holds its own users only; turned off, copies are refused while the channel still plays in the playout mix and reaches the observer; left, it is silence"
    )
    func channelMixSwitch() throws {
        let session = TestSession()
        let hostA = try session.user(frequency: 400)
        let hostB = try session.user(frequency: 1000)
        try hostA.join("a", uid: 1)
        try hostB.join("b", uid: 1)
        let viewer = try session.user()
        try viewer.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.join("b", uid: 9, options: .subscribeOnly, role: .audience)
        let channelA = try viewer.channel("a")
        let observer = AudioObserverLog()
        viewer.engine.setAudioFrameObserver(observer)
        var frame = [Int16](repeating: 0, count: viewer.engine.playoutFrameSampleCount)

        /// Runs `ticks` and returns the playout and, while enabled, channel a's mix.
        func run(_ ticks: Int, mixing: Bool) throws -> (playout: [Int16], mix: [Int16]) {
            var (playout, mix) = ([Int16](), [Int16]())
            for _ in 0..<ticks {
                try session.run(ticks: 1, publishers: [hostA, hostB])
                playout += viewer.playout
                if mixing {
                    try frame.withUnsafeMutableBufferPointer { try channelA.copyChannelMix(into: $0) }
                    mix += frame
                }
            }
            return (playout, mix)
        }

        try channelA.enableChannelMix(true)
        let on = try run(40, mixing: true)
        let mixOn = (toneAmplitude(last(20, of: on.mix), hz: 400), toneAmplitude(last(20, of: on.mix), hz: 1000))
        let playoutOn = (
            toneAmplitude(last(20, of: on.playout), hz: 400), toneAmplitude(last(20, of: on.playout), hz: 1000)
        )
        #expect(mixOn.0 > 4000 && mixOn.1 < 40, "channel a's mix: a \(mixOn.0), b \(mixOn.1)")
        #expect(playoutOn.0 > 4000 && playoutOn.1 > 4000, "playout: \(playoutOn)")

        try channelA.enableChannelMix(false)
        expectEngineError(.notReady) {
            try frame.withUnsafeMutableBufferPointer { try channelA.copyChannelMix(into: $0) }
        }
        let observedBefore = observer.frames("a", 1)
        let off = try run(40, mixing: false)
        let playoutOff = (
            toneAmplitude(last(20, of: off.playout), hz: 400), toneAmplitude(last(20, of: off.playout), hz: 1000)
        )
        // The mix is a copy kept next to the playout mix: channel a still plays and is observed.
        #expect(playoutOff.0 > 4000 && playoutOff.1 > 4000, "playout with the mix off: \(playoutOff)")
        #expect(observer.frames("a", 1) - observedBefore == 40)
        #expect(toneAmplitude(last(20, of: observer.samples("a", 1)), hz: 400) > 4000)
        #expect(try viewer.channel("b").statistics.audioFramesDecoded > 60)

        // On again: the mix follows channel a again.
        try channelA.enableChannelMix(true)
        let again = try run(10, mixing: true)
        let mixAgain = (toneAmplitude(last(5, of: again.mix), hz: 400), toneAmplitude(last(5, of: again.mix), hz: 1000))
        #expect(mixAgain.0 > 4000 && mixAgain.1 < 40, "channel a's mix again: \(mixAgain)")

        // Left: channel a's mix is silence from the next tick, not its last frame held.
        try channelA.leave()
        let left = try run(2, mixing: true)
        #expect(last(1, of: left.mix).allSatisfy { $0 == 0 }, "channel a's mix after leaving")
        print("channel mix: on \(mixOn) (playout \(playoutOn)); off, playout \(playoutOff); on again \(mixAgain)")
    }

    @Test(
        "canvas(channelId:uid:) returns the buffer bound to exactly that (channel, uid), nil otherwise; each shows its own user's pictures"
    )
    func canvasLookup() throws {
        let session = TestSession()
        let a1 = try session.user(frequency: 400)
        let a2 = try session.user(frequency: 1000)
        let b1 = try session.user(frequency: 1600)
        a2.pictureOffset = 28
        b1.pictureOffset = 56
        try a1.join("a", uid: 1)
        try a2.join("a", uid: 2)
        try b1.join("b", uid: 1)
        let viewer = try session.user()
        try viewer.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.join("b", uid: 9, options: .subscribeOnly, role: .audience)
        let engine = viewer.engine
        let bound = try [("a", UInt32(1)), ("a", 2), ("b", 1)].map {
            try engine.setupRemoteVideo(canvasBinding($0, $1))
        }
        let hosts = [a1, a2, b1]
        #expect(engine.canvas(channelId: "a", uid: 1) === bound[0])
        #expect(engine.canvas(channelId: "a", uid: 2) === bound[1])
        #expect(engine.canvas(channelId: "b", uid: 1) === bound[2])
        #expect(engine.canvas(channelId: "b", uid: 2) == nil)
        #expect(engine.canvas(channelId: "a", uid: 3) == nil)
        #expect(engine.canvas(channelId: "c", uid: 1) == nil)
        // Binding again reconfigures the same buffer.
        #expect(try engine.setupRemoteVideo(canvasBinding("a", 2)) === bound[1])

        try session.run(ticks: 30, video: true, publishers: hosts)
        var figures: [String] = []
        for (index, key) in [("a", UInt32(1)), ("a", 2), ("b", 1)].enumerated() {
            let canvas = try #require(engine.canvas(channelId: key.0, uid: key.1))
            let own = try bestPSNR(canvas, against: hosts[index])
            let others = try hosts.indices.filter { $0 != index }.map { try bestPSNR(canvas, against: hosts[$0]) }
            #expect(canvas.framesRendered >= 3)
            #expect(
                own >= 30 && others.allSatisfy { own > $0 + 10 },
                "canvas \(key.0)/\(key.1): own \(own) dB, others \(others) dB")
            figures.append("\(key.0)/\(key.1): own \(Int(own)) dB, others \(others.map { Int($0) })")
        }
        // Unbinding forgets the canvas; the others stay.
        engine.removeRemoteVideo(channelId: "a", uid: 2)
        #expect(engine.canvas(channelId: "a", uid: 2) == nil)
        #expect(engine.canvas(channelId: "a", uid: 1) === bound[0])
        #expect(engine.canvas(channelId: "b", uid: 1) === bound[2])
        print("canvas lookup: \(figures)")
    }

    @Test(
        "setAudioFrameObserver(nil) and setVideoFrameObserver(nil): no callback once the call returned, while playout and canvases go on"
    )
    func clearingObservers() throws {
        let session = TestSession()
        let host = try session.user(frequency: 400)
        try host.join("a", uid: 1)
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let canvas = try viewer.engine.setupRemoteVideo(canvasBinding("a", 1))
        let audio = AudioObserverLog()
        let video = VideoObserverLog()
        viewer.engine.setAudioFrameObserver(audio)
        viewer.engine.setVideoFrameObserver(video)
        try session.run(ticks: 40, video: true, publishers: [host])
        // Both observers see the host's media.
        #expect(audio.mixedFrames == 40)
        #expect(audio.frames("a", 1) >= 30)
        let observedTone = toneAmplitude(last(20, of: audio.samples("a", 1)), hz: 400)
        #expect(observedTone > 4000)
        let picture = try #require(video.lastPicture("a", 1))
        let observedPSNR = try bestPSNR(picture, against: host)
        #expect(video.frames("a", 1) >= 3 && observedPSNR >= 30, "observed picture \(observedPSNR) dB")

        viewer.engine.setAudioFrameObserver(nil)
        let (remote, mixed) = (audio.remoteFrames, audio.mixedFrames)
        let played = try session.played(20, by: viewer, video: true, publishers: [host])
        #expect(audio.remoteFrames == remote && audio.mixedFrames == mixed)
        let playedTone = toneAmplitude(last(10, of: played), hz: 400)
        #expect(playedTone > 4000, "the playout went on: \(playedTone)")
        // The video observer, still set, still sees pictures.
        let pictures = video.frames("a", 1)
        try session.run(ticks: 20, video: true, publishers: [host])
        #expect(video.frames("a", 1) > pictures)

        viewer.engine.setVideoFrameObserver(nil)
        let (observedPictures, rendered) = (video.frames("a", 1), canvas.framesRendered)
        try session.run(ticks: 40, video: true, publishers: [host])
        #expect(video.frames("a", 1) == observedPictures)
        #expect(canvas.framesRendered >= rendered + 3, "the canvas went on: \(rendered) → \(canvas.framesRendered)")
        print(
            "observers: audio \(remote) remote / \(mixed) mixed frames then none (playout 400 Hz \(playedTone)); video \(observedPictures) pictures then none (canvas \(rendered) → \(canvas.framesRendered))"
        )
    }

    @Test(
        "destroy() leaves every channel and relay (the hub and the others see it go), releases decoders and canvases and ends event sequences; every later call is refused or does nothing"
    )
    func destroyAndAfter() async throws {
        let folder = TemporaryFolder()
        let session = TestSession()
        let me = try session.user(frequency: 400)
        let other = try session.user(frequency: 1000)
        other.pictureOffset = 40
        try me.join("a", uid: 1)
        let channelA = try me.channel("a")
        try channelA.startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "b", uid: 201)])
        try me.join("c", uid: 5, options: .subscribeOnly, role: .audience)
        let channelC = try me.channel("c")
        try other.join("c", uid: 7)
        let viewerA = try session.user()
        try viewerA.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let viewerB = try session.user()
        try viewerB.join("b", uid: 3, options: .subscribeOnly, role: .audience)
        let canvas = try me.engine.setupRemoteVideo(canvasBinding("c", 7))
        let sequence = channelA.events
        let audio = AudioObserverLog()
        let video = VideoObserverLog()
        me.engine.setAudioFrameObserver(audio)
        me.engine.setVideoFrameObserver(video)
        let heard = try session.played(40, by: [viewerA, viewerB, me], video: true, publishers: [me, other])

        // Before: my stream reaches a and, relayed, b; I receive uid 7 in c.
        let before = heard.map { toneAmplitude(last(20, of: $0), hz: 400) }
        #expect(before[0] > 4000 && before[1] > 4000, "my tone at the viewers of a and b: \(before)")
        #expect(toneAmplitude(last(20, of: heard[2]), hz: 1000) > 4000)
        #expect(try bestPSNR(canvas, against: other) >= 30)
        #expect(me.engine.statistics.liveAudioDecoders == 1 && me.engine.statistics.liveVideoDecoders == 1)
        #expect(session.hub.members(of: "a").map(\.uid) == [1, 2])
        #expect(session.hub.members(of: "b").map(\.uid) == [201, 3])
        #expect(session.hub.members(of: "c").map(\.uid) == [5, 7])

        me.engine.destroy()

        // Every channel was left, with its events, and the relay's membership given back.
        for id in ["a", "c"] {
            let log = try #require(me.logs[id])
            #expect(log.events.contains { if case .leave = $0 { true } else { false } }, "channel \(id)")
            #expect(log.connectionStates.last.map { $0 == (.disconnected, .leaveChannel) } == true)
        }
        #expect(session.hub.members(of: "a").map(\.uid) == [2])
        #expect(session.hub.members(of: "b").map(\.uid) == [3])
        #expect(session.hub.members(of: "c").map(\.uid) == [7])
        #expect(viewerA.logs["a"]?.events.last == .userOffline(uid: 1, reason: .quit))
        #expect(viewerB.logs["b"]?.events.last == .userOffline(uid: 201, reason: .quit))
        #expect(me.engine.statistics.liveAudioDecoders == 0 && me.engine.statistics.liveVideoDecoders == 0)
        #expect(me.engine.canvas(channelId: "c", uid: 7) == nil)
        #expect(me.engine.canvases(inChannel: "c").isEmpty)
        // The sequence taken before ends after the leave; one asked for now ends at once.
        let drained = await drain(sequence)
        #expect(drained?.contains { if case .leave = $0 { true } else { false } } == true)
        let lateSequence = await drain(channelA.events)
        #expect(lateSequence == [], "a sequence asked for after destroy(): \(String(describing: lateSequence))")

        // Later calls: refused with ERR_NOT_READY naming the destruction ...
        for log in me.logs.values { _ = log.take() }
        let (audioObserved, videoObserved) = (audio.mixedFrames, video.frames("c", 7))
        func refused(_ code: EngineError.Code = .notReady, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("a call after destroy() succeeded")
            } catch let error as EngineError {
                #expect(error.code == code, "\(error)")
                #expect(!error.message.isEmpty)
            } catch {
                Issue.record("a call after destroy() threw \(error)")
            }
        }
        expectEngineError(.notReady) { _ = try me.engine.createChannel("d") }
        expectEngineError(.notReady) { _ = try me.engine.createChannel("a") }
        expectEngineError(.notReady) { _ = try me.engine.setupRemoteVideo(canvasBinding("c", 7)) }
        expectEngineError(.notReady) {
            _ = try me.engine.startRecording(channelId: "c", uid: 7, path: folder.file("user.webm"))
        }
        expectEngineError(.notReady) {
            _ = try me.engine.startChannelRecording(channelId: "c", path: folder.file("channel.webm"))
        }
        do {
            _ = try me.engine.createChannel("e")
        } catch let error as EngineError {
            #expect(error.message.contains("destroyed"), "\(error)")
        }
        var mix = [Int16](repeating: 0, count: me.engine.playoutFrameSampleCount)
        for channel in [channelA, channelC] {
            do {
                try channel.muteAllRemoteAudioStreams(true)
            } catch let error as EngineError {
                #expect(error.message.contains("destroyed"), "\(error)")
            }
            refused { try channel.join(uid: 9) }
            refused { try channel.join(token: "pin", uid: 9) }
            refused(.leaveChannelRejected) { try channel.leave() }
            refused { try channel.setClientRole(.audience) }
            refused { try channel.setClientRole(.broadcaster) }
            for mute in [true, false] {
                refused { try channel.muteLocalAudioStream(mute) }
                refused { try channel.muteLocalVideoStream(mute) }
                refused { try channel.muteRemoteAudioStream(7, mute: mute) }
                refused { try channel.muteRemoteVideoStream(7, mute: mute) }
                refused { try channel.muteAllRemoteAudioStreams(mute) }
                refused { try channel.muteAllRemoteVideoStreams(mute) }
                refused { try channel.enableChannelMix(mute) }
            }
            refused { try channel.adjustUserPlaybackSignalVolume(7, volume: 100) }
            refused { try channel.enableAudioVolumeIndication(intervalMs: 200) }
            refused { try mix.withUnsafeMutableBufferPointer { try channel.copyChannelMix(into: $0) } }
            refused { try channel.startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "b", uid: 202)]) }
            refused { try channel.updateChannelMediaRelay([ChannelMediaRelayDestination(channelId: "b", uid: 202)]) }
            refused { try channel.pauseAllChannelMediaRelay() }
            refused { try channel.resumeAllChannelMediaRelay() }
            refused { try channel.stopChannelMediaRelay() }
            // ... or doing nothing: the calls that return nothing, and the reads.
            channel.setDefaultMuteAllRemoteAudioStreams(true)
            channel.setDefaultMuteAllRemoteVideoStreams(true)
            channel.destroy()
            #expect(!channel.isJoined && channel.localUid == 0)
            #expect(channel.remoteUsers.isEmpty && channel.publishedMedia.isEmpty)
            #expect(channel.remoteState(7, .audio) == .stopped && channel.remoteState(7, .video) == .stopped)
            #expect(channel.remoteAudioStats(7) == nil && channel.remoteVideoStats(7) == nil)
            #expect(channel.remoteStreamTotals(7) == nil)
            #expect(channel.statistics == ChannelStats())
        }
        me.engine.destroy()
        me.engine.removeRemoteVideo(channelId: "c", uid: 7)
        #expect(me.engine.canvas(channelId: "c", uid: 7) == nil)

        // Observers set again after destroy() are ignored (the checks after the ticks below).
        me.engine.setAudioFrameObserver(audio)
        me.engine.setVideoFrameObserver(video)

        // Media calls do nothing: nothing encoded, nothing sent, silence played.
        let statistics = me.engine.statistics
        let deliveries = session.hub.deliveries
        for tick in 0..<20 {
            try me.pushAudio()
            if tick % 7 == 0 { try me.pushVideo(timestamp: session.clock.nowMicroseconds) }
            me.pull()
            #expect(me.playout.allSatisfy { $0 == 0 })
            me.engine.renderVideo()
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
        }
        try me.engine.pushEncodedFrame(
            EncodedFrame(
                bytes: [0xFC, 0xFF, 0xFE], codec: .opus, isKeyframe: true, timestampMicroseconds: 0,
                durationMicroseconds: 20_000))
        let after = me.engine.statistics
        #expect(after.audioFramesEncoded == statistics.audioFramesEncoded)
        #expect(after.videoFramesEncoded == statistics.videoFramesEncoded)
        #expect(after.audioFramesSent == statistics.audioFramesSent)
        #expect(after.videoFramesSent == statistics.videoFramesSent)
        #expect(session.hub.deliveries == deliveries)
        #expect(session.hub.members(of: "a").map(\.uid) == [2])
        // No event reached the channels' handlers after destroy().
        #expect(me.logs.values.allSatisfy { $0.events.isEmpty && $0.connectionStates.isEmpty })
        #expect(viewerA.logs["a"]?.events.last == .userOffline(uid: 1, reason: .quit))
        // The observers were dropped, and not taken again: the pulls and renders above called neither.
        #expect(audioObserved >= 40 && videoObserved >= 3)
        #expect(audio.mixedFrames == audioObserved && video.frames("c", 7) == videoObserved)
        print(
            "destroy: my tone at the viewers of a and b \(before[0]), \(before[1]) before; hub a \(session.hub.members(of: "a").map(\.uid)), b \(session.hub.members(of: "b").map(\.uid)), c \(session.hub.members(of: "c").map(\.uid)) after; observers \(audioObserved) mixes, \(videoObserved) pictures, none after"
        )
    }

    @Test(
        "destroy() with recordings running: the user's recording holds what was decoded before and can still be finished; the channel composite stops growing"
    )
    func destroyWithRecordings() throws {
        let folder = TemporaryFolder()
        let session = TestSession()
        let host = try session.user(frequency: 400)
        try host.join("c", uid: 7)
        let me = try session.user()
        try me.join("c", uid: 5, options: .subscribeOnly, role: .audience)
        _ = try me.engine.setupRemoteVideo(canvasBinding("c", 7))
        let user = try me.engine.startRecording(channelId: "c", uid: 7, path: folder.file("user.webm"))
        let room = try me.engine.startChannelRecording(
            channelId: "c", path: folder.file("room.webm"), width: 160, height: 96, framesPerSecond: 15)
        // One second recorded (50 Opus packets of 20 ms, 15 pictures), then two after destroy().
        try session.run(ticks: 100, video: true, publishers: [host])
        me.engine.destroy()
        try session.run(ticks: 200, video: true, publishers: [host])
        let written = try me.engine.stopRecording(user)
        #expect((40...50).contains(written.audio) && (10...15).contains(written.video), "user recording \(written)")
        let composite = try me.engine.stopChannelRecording(room)
        print(
            "destroy with recordings: user \(written), composite \(composite) after 1 s before and 2 s after destroy()")
        // Nothing after destroy(): before the fix its encoders went on with silence and empty
        // grids (151 packets and 45 pictures, three seconds' worth).
        #expect(composite.audioPackets <= 51 && composite.pictures <= 16, "\(composite)")
    }
}
