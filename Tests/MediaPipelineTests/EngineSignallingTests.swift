import Foundation
import MediaPipelineTesting
import Testing

@testable import MediaPipeline

@Suite("Engine: asynchronous signalling and connection states")
struct EngineSignallingTests {
    @Test(
        "first remote frames: each stream's first decoded audio and picture are reported once, after the join and after the subscribe"
    )
    func firstRemoteFrames() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        try session.run(ticks: 100, video: true)
        func firsts() -> (audio: [(Int64, Int64)], video: [(Int, Int, Int64, Int64)]) {
            var audio: [(Int64, Int64)] = []
            var video: [(Int, Int, Int64, Int64)] = []
            for event in viewer.logs["a"]!.events {
                if case .firstRemoteAudioFrame(1, let elapsed, let since) = event { audio.append((elapsed, since)) }
                if case .firstRemoteVideoFrame(1, let width, let height, let elapsed, let since) = event {
                    video.append((width, height, elapsed, since))
                }
            }
            return (audio, video)
        }
        var (audio, video) = firsts()
        #expect(audio.count == 1 && video.count == 1, "\(audio) \(video)")
        // Both joined at the session's start: since-subscribe at most elapsed, within the 1 s run
        // (a picture can decode in the tick it was sent: the hub here has no delay; audio waits
        // for the jitter buffer's start delay).
        if let first = audio.first { #expect(first.0 > 0 && first.0 < 1000 && first.1 <= first.0) }
        if let first = video.first {
            #expect(first.0 == 160 && first.1 == 90 && first.2 >= 0 && first.2 < 1000 && first.3 <= first.2, "\(first)")
        }
        // Unsubscribed and subscribed again 1 s later: a second first picture, counted from the
        // new subscribe (well under the time since the join).
        let channel = try viewer.channel("a")
        try channel.muteRemoteVideoStream(1, mute: true)
        try session.run(ticks: 100, video: true)
        try channel.muteRemoteVideoStream(1, mute: false)
        try session.run(ticks: 100, video: true)
        (audio, video) = firsts()
        #expect(audio.count == 1 && video.count == 2, "\(audio) \(video)")
        if video.count == 2 { #expect(video[1].2 >= 2000 && video[1].3 < 1000, "\(video[1])") }
        _ = host
    }

    /// A host (uid 1, on the hub directly) publishing in "a", and a user whose transport is scripted.
    private func room() throws -> (TestSession, ScriptedTransport, host: TestUser, user: TestUser) {
        let session = TestSession()
        let scripted = ScriptedTransport(hub: session.hub)
        let host = try session.user(frequency: 440)
        try host.join("a", uid: 1)
        let user = try session.user(frequency: 700, transport: scripted)
        return (session, scripted, host, user)
    }

    @Test("a slow join returns at once; nothing is reported or sent until the answer, then everything is")
    func slowJoin() throws {
        let (session, scripted, host, user) = try room()
        scripted.scriptJoins(.hold)
        try user.join("a", uid: 2)
        let channel = try user.channel("a")
        #expect(!channel.isJoined)
        #expect(user.logs["a"]!.connectionStates.map(\.0) == [.connecting])
        // Joining twice is refused at once, as Agora refuses it.
        expectEngineError(.joinChannelRejected) { try channel.join(uid: 2) }
        try session.run(ticks: 20, publishers: [host, user])
        #expect(user.logs["a"]!.events.isEmpty)
        #expect(channel.statistics.txPackets == 0 && user.engine.statistics.audioFramesEncoded == 0)
        #expect(try host.channel("a").remoteUsers.isEmpty)

        scripted.releaseJoins()
        #expect(channel.isJoined)
        #expect(user.logs["a"]!.connectionStates.map(\.0) == [.connecting, .connected])
        #expect(user.logs["a"]!.connectionStates.last?.1 == .joinSuccess)
        let events = user.logs["a"]!.events
        #expect(events.first == .joinSuccess(uid: 2, elapsedMs: 200))
        #expect(events.contains(.userJoined(uid: 1, elapsedMs: 200)))  // learnt with the answer
        try session.run(ticks: 40, publishers: [host, user])
        #expect(try host.channel("a").remoteUsers == [2])
        // The user joined the host's stream mid-way, and its own pushes while its join was held
        // were not encoded: each hears the other's tone, not sample for sample.
        try expectHears(user, [host], minimumSNR: 30)
        try expectHears(host, [user], minimumSNR: 30)
    }

    @Test("a refused join reports FAILED and the error; the channel can be joined again")
    func refusedJoin() throws {
        let (session, scripted, host, user) = try room()
        scripted.scriptJoins(.refuse(EngineError(.joinChannelRejected, "uid 2 is banned")))
        try user.join("a", uid: 2)
        let channel = try user.channel("a")
        #expect(!channel.isJoined)
        #expect(user.logs["a"]!.connectionStates.map(\.0) == [.connecting, .failed])
        #expect(user.logs["a"]!.connectionStates.last?.1 == .joinFailed)
        #expect(user.logs["a"]!.events == [.error(code: .joinChannelRejected, message: "uid 2 is banned")])
        scripted.scriptJoins(.answerAtOnce)
        try channel.join(uid: 2)
        #expect(channel.isJoined)
        try session.run(ticks: 20, publishers: [host])
        try expectHears(user, [host], exact: true)
    }

    @Test("leaving before the answer gives the membership back when it comes")
    func leaveWhileJoining() throws {
        let (session, scripted, host, user) = try room()
        scripted.scriptJoins(.hold)
        try user.join("a", uid: 2)
        try user.channel("a").leave()
        #expect(user.logs["a"]!.connectionStates.map(\.0) == [.connecting, .disconnected])
        scripted.releaseJoins()
        #expect(session.hub.members(of: "a").map(\.uid) == [1])
        #expect(user.logs["a"]!.events.isEmpty)
        #expect(try !user.channel("a").isJoined)
        _ = host
    }

    @Test("interruptions and recovery the transport reports become connection state events")
    func interruption() throws {
        let (session, _, _, user) = try room()
        try user.join("a", uid: 2)
        session.hub.notifyConnectionState(.reconnecting, reason: .interrupted, channelId: "a", uid: 2)
        session.hub.notifyConnectionState(.connected, reason: .joinSuccess, channelId: "a", uid: 2)
        try user.channel("a").leave()
        #expect(
            user.logs["a"]!.connectionStates.map(\.0) == [
                .connecting, .connected, .reconnecting, .connected, .disconnected,
            ])
        #expect(user.logs["a"]!.connectionStates.map(\.1)[2] == .interrupted)
    }

    @Test("packets dropped, reordered and duplicated by the script: loss is counted, order restored, copies ignored")
    func scriptedPackets() throws {
        // Here the host sends through the script.
        let session = TestSession()
        let scripted = ScriptedTransport(hub: session.hub)
        let host = try session.user(transport: scripted)
        try host.join("a", uid: 1)
        let user = try session.user()
        try user.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 30, video: true, publishers: [host])
        // Duplicate every packet for a while: nothing is decoded twice.
        scripted.scriptPackets { _, _ in .duplicate }
        let before = try user.channel("a").statistics
        try session.run(ticks: 20, video: true, publishers: [host])
        let doubled = try user.channel("a").statistics
        #expect(doubled.rxAudioFrames - before.rxAudioFrames == 10)
        #expect(doubled.rxPacketsLost == 0)
        // Hold four audio packets and deliver them in reverse: all arrive, none counted lost.
        scripted.scriptPackets { packet, _ in packet.header.payloadType == RTPPayloadType.opus ? .hold : .deliver }
        for _ in 0..<8 { try host.pushAudio() }
        #expect(scripted.heldPacketCount == 4)
        scripted.scriptPackets { _, _ in .deliver }
        scripted.releasePackets(reversed: true)
        let reordered = try user.channel("a").statistics
        #expect(reordered.rxAudioFrames - doubled.rxAudioFrames == 4)
        #expect(reordered.rxPacketsLost == 0)
        // Drop one video packet: the loss is seen, the packet asked for (NACK) and resent, and
        // no keyframe is needed.
        let dropped = LockedValue(false)
        scripted.scriptPackets { packet, _ in
            guard packet.header.payloadType == RTPPayloadType.vp8 else { return .deliver }
            return dropped.withLock { done in
                defer { done = true }
                return done ? .deliver : .drop
            }
        }
        try session.run(ticks: 40, video: true, publishers: [host])
        #expect(dropped.withLock { $0 })
        let after = try user.channel("a").statistics
        #expect(after.nacksSent == 1)
        #expect(host.engine.statistics.packetsRetransmitted == 1)
        #expect(after.rxPacketsLost == 0 && after.videoFramesDroppedBeforeDecode == 0)
        #expect(after.keyframeRequestsSent == 0)
        #expect(user.logs["a"]!.remoteStates(1, .video).last?.0 == .decoding)
    }
}
