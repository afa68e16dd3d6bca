import Testing

@testable import MediaPipeline

/// Collects what an audio observer sees (the last frames it was shown, and counts).
private final class RecordingObserver: AudioFrameObserver, @unchecked Sendable {
    var remote: [StreamKey: Int] = [:]
    var mixed = 0
    var lastRemote: [Int16] = []
    var lastMixed: [Int16] = []
    func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey) {
        remote[stream, default: 0] += 1
        lastRemote = Array(samples)
    }
    func mixedAudioFrame(_ samples: UnsafeBufferPointer<Int16>) {
        mixed += 1
        lastMixed = Array(samples)
    }
}

@Suite("Engine: relay, mixes, volume indication, canvases")
struct EngineFeatureTests {
    @Test("a relay carries the published stream to up to four channels; more are refused")
    func relay() throws {
        let session = TestSession()
        let host = try session.user()
        try host.join("main", uid: 1)
        let watchers = try (0..<4).map { index -> TestUser in
            let watcher = try session.user()
            try watcher.join("dest\(index)", uid: 50, options: .subscribeOnly, role: .audience)
            return watcher
        }
        let channel = try host.channel("main")
        expectEngineError(.invalidArgument) {
            try channel.startChannelMediaRelay((0..<5).map { ChannelMediaRelayDestination(channelId: "dest\($0)") })
        }
        expectEngineError(.invalidArgument) { try channel.startChannelMediaRelay([]) }
        expectEngineError(.invalidArgument) {
            try channel.startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "main")])
        }
        try channel.startChannelMediaRelay(
            (0..<4).map { ChannelMediaRelayDestination(channelId: "dest\($0)", uid: UInt32(200 + $0)) })
        let relayStates = host.logs["main"]!.events.filter {
            if case .channelMediaRelayStateChanged = $0 { true } else { false }
        }
        #expect(
            relayStates.suffix(2) == [
                .channelMediaRelayStateChanged(state: .connecting), .channelMediaRelayStateChanged(state: .running),
            ])
        try session.run(ticks: 20, video: true, publishers: [host])
        for (index, watcher) in watchers.enumerated() {
            #expect(try watcher.channel("dest\(index)").remoteUsers == [UInt32(200 + index)])
            try expectHears(watcher, [host], exact: true)
            #expect(watcher.logs["dest\(index)"]!.remoteStates(UInt32(200 + index), .video).last?.0 == .decoding)
        }
        // Encoded once, sent five times.
        #expect(host.engine.statistics.audioFramesEncoded == 10)
        #expect(host.engine.statistics.audioFramesSent == 50)
        try channel.stopChannelMediaRelay()
        #expect(watchers[0].logs["dest0"]!.events.last == .userOffline(uid: 200, reason: .quit))
        expectEngineError(.notReady) { try channel.stopChannelMediaRelay() }
        // An audience member cannot relay.
        let viewer = try session.user()
        try viewer.join("main", uid: 3, options: .subscribeOnly, role: .audience)
        expectEngineError(.refused) {
            try viewer.channel("main").startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "x")])
        }
    }

    @Test("the same uid in two channels is two streams with two canvases; the grid follows users")
    func sameUidTwoChannels() throws {
        let session = TestSession()
        let one = try session.user(frequency: 300)
        let two = try session.user(frequency: 700)
        // Each host sends its own pictures, so canvases that swapped streams would be seen.
        two.pictureOffset = 40
        try one.join("a", uid: 5)
        try two.join("b", uid: 5)
        let viewer = try session.user()
        try viewer.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.join("b", uid: 9, options: .subscribeOnly, role: .audience)
        let canvasA = try viewer.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 5, width: 64, height: 36))
        let canvasB = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "b", uid: 5, width: 96, height: 54, renderMode: .fit))
        #expect(canvasA !== canvasB)
        let observer = RecordingObserver()
        viewer.engine.setAudioFrameObserver(observer)
        try session.run(ticks: 15, video: true, publishers: [one, two])
        #expect(canvasA.framesRendered > 0 && canvasB.framesRendered > 0)
        // Each canvas shows its own host's picture: it matches one of that host's (rendered into
        // a canvas of the same binding) far better than any of the other's.
        func bestPSNR(_ canvas: CanvasBuffer, _ host: TestUser) throws -> Double {
            let expected = try CanvasBuffer(canvas.canvas)
            return try (0..<host.videoFrame).map { frame in
                let source = try syntheticPicture(width: 160, height: 90, frame: frame + host.pictureOffset)
                source.withView { expected.render($0) }
                return expected.withLockedPicture { a in
                    canvas.withLockedPicture { b in PictureQuality.psnr(reference: a, test: b) }
                }
            }.max() ?? 0
        }
        for (name, canvas, own, other) in [("a", canvasA, one, two), ("b", canvasB, two, one)] {
            let (ownPSNR, otherPSNR) = (try bestPSNR(canvas, own), try bestPSNR(canvas, other))
            #expect(
                ownPSNR >= 30 && otherPSNR < ownPSNR - 10, "canvas \(name): own \(ownPSNR) dB, other \(otherPSNR) dB")
        }
        #expect(observer.remote[StreamKey(channelId: "a", uid: 5)] ?? 0 > 5)
        #expect(observer.remote[StreamKey(channelId: "b", uid: 5)] ?? 0 > 5)
        #expect(observer.mixed == 15)
        // Rebinding changes the mode and size; unbinding stops rendering.
        _ = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "a", uid: 5, width: 32, height: 32, renderMode: .fill))
        #expect(canvasA.canvas.width == 32 && canvasA.canvas.renderMode == .fill)
        viewer.engine.removeRemoteVideo(channelId: "b", uid: 5)
        let rendered = canvasB.framesRendered
        try session.run(ticks: 15, video: true, publishers: [one, two])
        #expect(canvasB.framesRendered == rendered)
        #expect(viewer.engine.canvases(inChannel: "a").count == 1)
        let grid = try I420Buffer(width: 128, height: 128)
        viewer.engine.renderGrid(channelId: "a", into: grid)
        // One canvas: the whole grid shows it, so the picture is not uniformly black.
        grid.withView { view in
            let row = (0..<view.width).map { view.y[64 * view.strideY + $0] }
            #expect(row.contains { $0 != CanvasBlack.y })
        }
    }

    @Test("the audio observer sees each stream's decoded frame and the mix; one stream alone is the mix")
    func observerFrames() throws {
        let session = TestSession()
        let speaker = try session.user()
        try speaker.join("a", uid: 5)
        let listener = try session.user()
        try listener.join("a", uid: 6, options: .subscribeOnly, role: .audience)
        let observer = RecordingObserver()
        listener.engine.setAudioFrameObserver(observer)
        var equalTicks = 0
        for tick in 0..<30 {
            try session.run(ticks: 1, publishers: [speaker])
            // After the fade-in, one stream passes through the mixer bit for bit.
            guard tick >= 10 else { continue }
            #expect(observer.lastRemote.count == listener.engine.playoutFrameSampleCount)
            #expect(observer.lastRemote.contains { $0 != 0 }, "tick \(tick): the stream is silent")
            if observer.lastRemote == observer.lastMixed { equalTicks += 1 }
        }
        #expect(equalTicks == 20)
        #expect(observer.mixed == 30)
    }

    @Test("a channel mix holds that channel's users only; per-user volume scales it")
    func channelMix() throws {
        let session = TestSession()
        let loud = try session.user(frequency: 300)
        let other = try session.user(frequency: 900)
        try loud.join("a", uid: 1)
        try other.join("b", uid: 2)
        let viewer = try session.user()
        try viewer.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.join("b", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.channel("a").enableChannelMix(true)
        var mix = [Int16](repeating: 0, count: 960)
        expectEngineError(.notReady) {
            try mix.withUnsafeMutableBufferPointer { try viewer.channel("b").copyChannelMix(into: $0) }
        }
        try session.run(ticks: 40, publishers: [loud, other])
        try mix.withUnsafeMutableBufferPointer { try viewer.channel("a").copyChannelMix(into: $0) }
        let mixPeak = mix.map { abs(Int($0)) }.max()!
        #expect(mixPeak > 6000 && mixPeak < 9000)  // one 8000-amplitude tone, not two
        // The playout holds both, each at its own delay, summed sample for sample.
        try expectHears(viewer, [loud, other], exact: true)
        try viewer.channel("a").adjustUserPlaybackSignalVolume(1, volume: 50)
        try session.run(ticks: 5, publishers: [loud, other])
        try mix.withUnsafeMutableBufferPointer { try viewer.channel("a").copyChannelMix(into: $0) }
        let halved = mix.map { abs(Int($0)) }.max()!
        #expect(abs(halved - mixPeak / 2) < 600, "\(halved) vs \(mixPeak)")
        expectEngineError(.invalidArgument) { try viewer.channel("a").adjustUserPlaybackSignalVolume(1, volume: 401) }
    }

    @Test("volume indication reports the loudest speakers, loudest first")
    func volumeIndication() throws {
        let session = TestSession()
        let speakers = try (0..<4).map { _ in try session.user() }
        for (index, speaker) in speakers.enumerated() { try speaker.join("a", uid: UInt32(index + 1)) }
        let viewer = try session.user()
        try viewer.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        try viewer.channel("a").enableAudioVolumeIndication(intervalMs: 200)
        for tick in 0..<40 {
            for (index, speaker) in speakers.enumerated() {
                try speaker.pushAudio(amplitude: Double(2000 * (index + 1)))
            }
            viewer.pull()
            session.clock.advance(byMicroseconds: 10_000)
            _ = tick
        }
        let reports = viewer.logs["a"]!.events.compactMap { event -> ([AudioVolumeInfo], Int)? in
            if case .audioVolumeIndication(let speakers, let total) = event { return (speakers, total) }
            return nil
        }
        #expect(reports.count == 2)
        let last = try #require(reports.last)
        #expect(last.0.map(\.uid) == [4, 3, 2])
        #expect(last.0[0].volume > last.0[1].volume && last.0[1].volume > last.0[2].volume)
        #expect(last.1 >= last.0[0].volume)
        expectEngineError(.invalidArgument) { try viewer.channel("a").enableAudioVolumeIndication(intervalMs: 5) }
    }

    @Test("32 loud remote users never clip the playout")
    func loudRoom() throws {
        let session = TestSession()
        let viewer = try session.user()
        try viewer.join("room", uid: 999, options: .subscribeOnly, role: .audience)
        let speakers = try (0..<32).map { index -> TestUser in
            let speaker = try session.user(frequency: 220 + Double(index % 3))
            try speaker.join("room", uid: UInt32(index + 1))
            return speaker
        }
        var loudest = 0
        for _ in 0..<30 {
            for speaker in speakers { try speaker.pushAudio(amplitude: 30000) }
            viewer.pull()
            loudest = max(loudest, viewer.playoutPeak)
            session.clock.advance(byMicroseconds: 10_000)
        }
        #expect(loudest <= Int(PeakLimiter.threshold))
        #expect(loudest > 20000)
    }

    @Test("leave reports statistics; events are also an async sequence")
    func leaveStatsAndStream() async throws {
        let session = TestSession()
        let host = try session.user()
        let viewer = try session.user()
        let channel = try viewer.channel("a")
        let stream = channel.events
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 50, video: true, publishers: [host])
        // Frames received but held back to their audio (lip sync) when the channel is left.
        let video = try #require(viewer.engine.receiverStore.receivers(StreamKey(channelId: "a", uid: 1)).video)
        let held = video.inbox.withLock { $0.queue.count }
        try channel.leave()
        guard case .leave(let stats) = viewer.logs["a"]!.events.last else {
            Issue.record("no leave event")
            return
        }
        #expect(stats.durationMs == 500)
        #expect(stats.rxAudioFrames == 25 && stats.rxVideoFrames == 8)
        #expect(stats.videoFramesDecoded + Int64(held) == 8)
        #expect(stats.userCount == 1)
        var iterator = stream.makeAsyncIterator()
        // Connection state changes are compared apart (the log keeps them aside).
        var first = await iterator.next()
        while first?.isConnectionStateChange == true { first = await iterator.next() }
        guard case .joinSuccess(uid: 2, _) = first else {
            Issue.record("stream starts with \(String(describing: first))")
            return
        }
        // The sequence holds the same events as the handler saw, and ends when the channel is destroyed.
        channel.destroy()
        var rest: [ChannelEvent] = []
        while let event = await iterator.next() {
            if !event.isConnectionStateChange { rest.append(event) }
        }
        #expect([first!] + rest == viewer.logs["a"]!.events)
    }
}

@Suite("Engine: grid, keyframe rate limit, subscribe states")
struct EngineGridTests {
    /// The luma value at the centre of grid cell `index` of a `dimension`² grid in a 120×120 picture.
    private func cellCentre(_ grid: I420Buffer, _ index: Int, _ dimension: Int) -> UInt8 {
        let cell = 120 / dimension
        let x = (index % dimension) * cell + cell / 2
        let y = (index / dimension) * cell + cell / 2
        return grid.withView { $0.y[y * $0.strideY + x] }
    }

    @Test("the grid follows users as they come and go")
    func gridFollowsUsers() throws {
        let session = TestSession()
        let viewer = try session.user()
        try viewer.join("a", uid: 99, options: .subscribeOnly, role: .audience)
        var hosts: [TestUser] = []
        for index in 0..<5 {
            let host = try session.user()
            try host.join("a", uid: UInt32(index + 1))
            _ = try viewer.engine.setupRemoteVideo(
                VideoCanvas(channelId: "a", uid: UInt32(index + 1), width: 40, height: 40, renderMode: .fill))
            hosts.append(host)
        }
        try session.run(ticks: 8, video: true, publishers: hosts)
        let grid = try I420Buffer(width: 120, height: 120)
        viewer.engine.renderGrid(channelId: "a", into: grid)
        // Five users: a 3×3 grid, cells 0...4 filled, the rest black.
        #expect((0..<5).allSatisfy { cellCentre(grid, $0, 3) != CanvasBlack.y })
        #expect((5..<9).allSatisfy { cellCentre(grid, $0, 3) == CanvasBlack.y })
        try hosts[4].channel("a").leave()
        viewer.engine.renderGrid(channelId: "a", into: grid)
        // Four users: 2×2, all cells filled.
        #expect((0..<4).allSatisfy { cellCentre(grid, $0, 2) != CanvasBlack.y })
    }

    @Test("keyframe requests from many late subscribers force one keyframe per interval")
    func keyframeRateLimit() throws {
        let session = TestSession()
        let host = try session.user()
        try host.join("a", uid: 1)
        try session.run(ticks: 30, video: true, publishers: [host])
        let late = try (0..<5).map { index -> TestUser in
            let user = try session.user()
            try user.join("a", uid: UInt32(10 + index), options: .subscribeOnly, role: .audience)
            return user
        }
        for round in 0..<6 {
            try host.pushVideo(timestamp: session.clock.nowMicroseconds)
            for user in late { user.engine.renderVideo() }
            session.clock.advance(byMicroseconds: 66_000)
            _ = round
        }
        // Five requests arrive together; the publisher forces one keyframe, and all five decode.
        #expect(host.engine.statistics.keyframeRequestsReceived == 5)
        #expect(host.engine.statistics.keyframesForced == 1)
        #expect(late.allSatisfy { $0.logs["a"]!.remoteStates(1, .video).last?.0 == .decoding })
    }

    @Test("subscribe states follow subscription and mutes")
    func subscribeStates() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.run(ticks: 4, publishers: [host])
        try viewer.channel("a").muteRemoteAudioStream(1, mute: true)
        let transitions = viewer.logs["a"]!.events.compactMap { event -> (SubscribeState, SubscribeState)? in
            if case .remoteSubscribeStateChanged(1, .audio, let old, let new, _) = event { return (old, new) }
            return nil
        }
        #expect(transitions.map(\.0) == [.idle, .subscribing, .subscribed])
        #expect(transitions.map(\.1) == [.subscribing, .subscribed, .noSubscribe])
        // The host leaving reports no further subscribe change for the muted audio, and video ends in NO_SUBSCRIBE.
        try host.channel("a").leave()
        let video = viewer.logs["a"]!.events.compactMap { event -> SubscribeState? in
            if case .remoteSubscribeStateChanged(1, .video, _, let new, _) = event { return new }
            return nil
        }
        #expect(video.last == .noSubscribe)
        let audioAfter = viewer.logs["a"]!.events.filter {
            if case .remoteSubscribeStateChanged(1, .audio, _, _, _) = $0 { true } else { false }
        }
        #expect(audioAfter.count == 3)
    }
}
