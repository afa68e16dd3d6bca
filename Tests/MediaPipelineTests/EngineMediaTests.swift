import Testing

@testable import MediaPipeline

@Suite("Engine: media, events and state machines")
struct EngineMediaTests {
    @Test("join success comes first; remote audio and video go STARTING then DECODING; frames reach the canvas")
    func firstEvents() throws {
        let session = TestSession()
        let host = try session.user(frequency: 500)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let canvas = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "a", uid: 1, width: 160, height: 90, renderMode: .fill))
        try session.run(ticks: 30, video: true, publishers: [host])
        let events = viewer.logs["a"]!.events
        guard case .joinSuccess(uid: 2, _) = events.first else {
            Issue.record("first event is \(String(describing: events.first))")
            return
        }
        #expect(events.dropFirst().first == .userJoined(uid: 1, elapsedMs: 0))
        let audio = viewer.logs["a"]!.remoteStates(1, .audio)
        #expect(audio.map(\.0) == [.starting, .decoding])
        #expect(audio.allSatisfy { $0.1 == .internal })
        #expect(viewer.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting, .decoding])
        #expect(events.contains(.videoSizeChanged(uid: 1, width: 160, height: 90)))
        // One stream, no loss: the playout is the host's reference decode, sample for sample.
        try expectHears(viewer, [host], exact: true)
        // Pictures reach the canvas once lip sync has held them back to the audio's starting
        // delay (60 ms), 40 ms per 100 ms (seeded: 3 renders in these 300 ms).
        #expect(canvas.framesRendered >= 3)
        // The last picture is shown once its audio plays (lip sync holds it back as long).
        try session.run(ticks: 20, video: true, publishers: [])
        // The canvas shows the publisher's picture (fill mode, same size): compare with the source.
        let source = try syntheticPicture(width: 160, height: 90, frame: host.videoFrame - 1)
        let psnr = try canvas.snapshot().withView { shown in
            source.withView { PictureQuality.psnr(reference: $0, test: shown) }
        }
        #expect(psnr > 28, "canvas PSNR \(psnr) dB")
        // The publisher's own publish states.
        let hostEvents = host.logs["a"]!.events
        #expect(
            hostEvents.contains(.localPublishStateChanged(kind: .audio, old: .idle, new: .publishing, elapsedMs: 0)))
        #expect(
            hostEvents.contains {
                if case .localPublishStateChanged(.audio, .publishing, .published, _) = $0 { true } else { false }
            })
    }

    @Test("a remote mute stops the stream; the unmute reports STARTING and DECODING again with REMOTE_UNMUTED")
    func remoteMuteCycle() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.run(ticks: 10, publishers: [host])
        try host.channel("a").muteLocalAudioStream(true)
        try session.run(ticks: 10, publishers: [host])
        #expect(viewer.playoutPeak == 0)
        try host.channel("a").muteLocalAudioStream(false)
        try session.run(ticks: 20, publishers: [host])
        let states = viewer.logs["a"]!.remoteStates(1, .audio)
        let expected: [(RemoteStreamState, RemoteStreamStateReason)] = [
            (.starting, .internal), (.decoding, .internal), (.stopped, .remoteMuted), (.starting, .remoteUnmuted),
            (.decoding, .remoteUnmuted),
        ]
        #expect(states.map(\.0) == expected.map(\.0) && states.map(\.1) == expected.map(\.1), "\(states)")
        // The host's tone again (its encoder restarted after the mute: not sample for sample).
        try expectHears(viewer, [host], lastMilliseconds: 50)
    }

    @Test("no STOPPED is reported for a stream that never started")
    func noSpuriousStopped() throws {
        let session = TestSession()
        let host = try session.user()
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try host.channel("a").muteLocalAudioStream(true)
        try host.channel("a").muteLocalVideoStream(true)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try viewer.channel("a").muteRemoteAudioStream(1, mute: true)
        try viewer.channel("a").muteRemoteAudioStream(1, mute: false)
        try session.run(ticks: 5, publishers: [host])
        try host.channel("a").leave()
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).isEmpty)
        #expect(viewer.logs["a"]!.remoteStates(1, .video).isEmpty)
        #expect(viewer.logs["a"]!.events.last == .userOffline(uid: 1, reason: .quit))
    }

    @Test("a local mute takes effect within one frame and releases the decoder; the unmute brings it back")
    func localMuteAndRelease() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.run(ticks: 10, video: true, publishers: [host])
        #expect(viewer.engine.statistics.liveAudioDecoders == 1)
        #expect(viewer.engine.statistics.liveVideoDecoders == 1)
        try viewer.channel("a").muteRemoteAudioStream(1, mute: true)
        try viewer.channel("a").muteRemoteVideoStream(1, mute: true)
        try host.pushAudio()
        viewer.pull()  // the fade-out frame
        let fade = viewer.playout
        try host.pushAudio()
        viewer.pull()
        #expect(fade.last == 0 && fade.first != 0)
        #expect(viewer.playoutPeak == 0)
        #expect(viewer.engine.statistics.liveAudioDecoders == 0)
        #expect(viewer.engine.statistics.liveVideoDecoders == 0)
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).last! == (.stopped, .localMuted))
        // Unsubscribed streams are not even forwarded to the viewer.
        let received = try viewer.channel("a").statistics
        try session.run(ticks: 10, video: true, publishers: [host])
        #expect(try viewer.channel("a").statistics.rxAudioFrames == received.rxAudioFrames)
        #expect(try viewer.channel("a").statistics.rxVideoFrames == received.rxVideoFrames)
        try viewer.channel("a").muteRemoteAudioStream(1, mute: false)
        try session.run(ticks: 10, publishers: [host])  // the jitter buffer's start delay included
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).suffix(2).map(\.1) == [.localUnmuted, .localUnmuted])
        #expect(viewer.engine.statistics.liveAudioDecoders == 1)
        // A publisher's local mute stops sending from the next frame.
        let sent = host.engine.statistics.audioFramesSent
        try host.channel("a").muteLocalAudioStream(true)
        try session.run(ticks: 4, publishers: [host])
        #expect(host.engine.statistics.audioFramesSent == sent)
    }

    @Test("mute-all and default mute apply to users who join later")
    func muteAllAndDefaults() throws {
        let session = TestSession()
        let viewer = try session.user()
        try viewer.join("a", uid: 100, options: .subscribeOnly, role: .audience)
        try viewer.channel("a").muteAllRemoteAudioStreams(true)
        try viewer.channel("a").setDefaultMuteAllRemoteVideoStreams(true)
        let early = try session.user()
        try early.join("a", uid: 1)
        try session.run(ticks: 5, video: true, publishers: [early])
        #expect(viewer.engine.statistics.liveAudioDecoders == 0)
        #expect(viewer.engine.statistics.liveVideoDecoders == 0)
        try viewer.channel("a").muteAllRemoteAudioStreams(false)
        try viewer.channel("a").setDefaultMuteAllRemoteVideoStreams(false)
        let late = try session.user()
        try late.join("a", uid: 2)
        try session.run(ticks: 5, video: true, publishers: [early, late])
        #expect(viewer.engine.statistics.liveAudioDecoders == 2)
        #expect(viewer.engine.statistics.liveVideoDecoders == 1)  // uid 1 joined under the default mute
        try viewer.channel("a").muteRemoteVideoStream(1, mute: false)
        try session.run(ticks: 8, video: true, publishers: [early, late])
        #expect(viewer.engine.statistics.liveVideoDecoders == 2)
    }

    @Test("encode once: the same encoder calls with 1 and with 50 subscribers")
    func encodeOnce() throws {
        var encoded: [Int: (Int64, Int64)] = [:]
        for subscribers in [1, 50] {
            let session = TestSession()
            let host = try session.user()
            try host.join("a", uid: 1)
            for index in 0..<subscribers {
                let viewer = try session.user()
                try viewer.join("a", uid: UInt32(100 + index), options: .subscribeOnly, role: .audience)
            }
            try session.run(ticks: 20, video: true, publishers: [host])
            let stats = host.engine.statistics
            encoded[subscribers] = (stats.audioFramesEncoded, stats.videoFramesEncoded)
            #expect(session.hub.deliveries >= Int64(subscribers) * (stats.audioFramesSent + stats.videoFramesSent))
            for viewer in session.users.dropFirst() { try expectHears(viewer, [host], exact: true) }
        }
        #expect(encoded[1]! == (10, 3))
        #expect(encoded[50]! == encoded[1]!)
    }

    @Test("the local user's own stream is never in its playout, even relayed into a channel it subscribes to")
    func noSelfEcho() throws {
        let session = TestSession()
        let me = try session.user()
        try me.join("a", uid: 1)
        try me.join("b", uid: 1, options: .subscribeOnly, role: .audience)
        try me.channel("a").startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "b", uid: 77)])
        let other = try session.user()
        try other.join("b", uid: 5, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 20, publishers: [me])
        #expect(me.playoutPeak == 0)
        #expect(try me.channel("b").remoteUsers.isEmpty)
        #expect(try other.channel("b").remoteUsers == [77])
        try expectHears(other, [me], exact: true)
    }

    @Test("a subscriber arriving mid-stream gets a keyframe on request and stays STARTING until it decodes")
    func keyframeOnRequest() throws {
        let session = TestSession()
        let host = try session.user()
        try host.join("a", uid: 1)
        try session.run(ticks: 40, video: true, publishers: [host])
        let late = try session.user()
        try late.join("a", uid: 9, options: .subscribeOnly, role: .audience)
        let canvas = try late.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 1))
        // The next frame is not a keyframe: it is dropped, a request goes out, the state is STARTING.
        try host.pushVideo(timestamp: session.clock.nowMicroseconds)
        late.engine.renderVideo()
        #expect(late.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting])
        #expect(canvas.framesRendered == 0)
        #expect(late.engine.statistics.keyframeRequestsSent == 1)
        #expect(host.engine.statistics.keyframeRequestsReceived == 1)
        session.clock.advance(byMicroseconds: 66_000)
        try host.pushVideo(timestamp: session.clock.nowMicroseconds)
        late.engine.renderVideo()
        #expect(host.engine.statistics.keyframesForced == 1)
        #expect(late.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting, .decoding])
        #expect(canvas.framesRendered == 1)
    }

    @Test("a blocked link freezes the stream; recovery reports NETWORK_RECOVERY")
    func freezeAndRecovery() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.run(ticks: 10, video: true, publishers: [host])
        try session.hub.setLinkConditions(.init(blocked: true), channelId: "a", publisher: 1, receiver: 2)
        try session.run(ticks: 80, video: true, publishers: [host])
        try session.hub.setLinkConditions(.init(), channelId: "a", publisher: 1, receiver: 2)
        try session.run(ticks: 40, video: true, publishers: [host])
        let audio = viewer.logs["a"]!.remoteStates(1, .audio)
        #expect(audio.map(\.0) == [.starting, .decoding, .frozen, .decoding], "\(audio)")
        #expect(audio.map(\.1) == [.internal, .internal, .networkCongestion, .networkRecovery])
        let video = viewer.logs["a"]!.remoteStates(1, .video)
        #expect(video.map(\.0) == [.starting, .decoding, .frozen, .decoding], "\(video)")
        #expect(video.last!.1 == .networkRecovery)
    }
}

@Suite("Engine: remote packet durations")
struct EnginePacketDurationTests {
    @Test("remote Opus packets of any duration play without gaps", arguments: [2500, 5000, 10000, 40000, 60000])
    func packetDurations(microseconds: Int) throws {
        let session = TestSession()
        var configuration = EngineConfiguration()
        configuration.audio.frameDurationMicroseconds = microseconds
        let host = try session.user(configuration: configuration)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        var silentAfterStart = 0
        var started = false
        for _ in 0..<60 {
            try host.pushAudio()
            viewer.pull()
            if viewer.playoutPeak > 2000 { started = true } else if started { silentAfterStart += 1 }
            session.clock.advance(byMicroseconds: 10_000)
        }
        #expect(started)
        #expect(silentAfterStart == 0)
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).map(\.0) == [.starting, .decoding])
    }
}

@Suite("Engine: failures")
struct EngineFailureTests {
    @Test("undecodable remote media reports FAILED with reason INTERNAL")
    func failedStreams() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        // A publisher whose "encoder" emits garbage: an invalid Opus packet and an invalid VP8 keyframe.
        try host.engine.pushEncodedFrame(
            EncodedFrame(
                bytes: [0xFF, 0xFF, 0xFF, 0xFF], codec: .opus, isKeyframe: true, timestampMicroseconds: 0,
                durationMicroseconds: 20_000))
        try host.engine.pushEncodedFrame(
            EncodedFrame(
                bytes: [UInt8](repeating: 0x5A, count: 64), codec: .vp8, isKeyframe: true, timestampMicroseconds: 0,
                durationMicroseconds: 66_000))
        // The audio plays (and fails) once its jitter buffer's start delay has passed.
        for _ in 0..<10 {
            viewer.pull()
            session.clock.advance(byMicroseconds: 10_000)
        }
        viewer.engine.renderVideo()
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).map(\.0) == [.starting, .failed])
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).last!.1 == .internal)
        #expect(viewer.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting, .failed])
        #expect(viewer.playoutPeak == 0)
        // Good media afterwards recovers the streams, and idle ticks are not failures.
        try session.run(ticks: 20, video: true, publishers: [host])
        #expect(viewer.logs["a"]!.remoteStates(1, .audio).map(\.0) == [.starting, .failed, .decoding])
        #expect(viewer.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting, .failed, .decoding])
        try expectHears(viewer, [host])
    }
}
