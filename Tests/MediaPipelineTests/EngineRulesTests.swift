import Testing

@testable import MediaPipeline

@Suite("Engine: channels, roles and the single publishing channel")
struct EngineRulesTests {
    @Test("channel ids are validated and unique")
    func channelIds() throws {
        let session = TestSession()
        let user = try session.user()
        expectEngineError(.invalidChannelName) { _ = try user.engine.createChannel("") }
        expectEngineError(.invalidChannelName) { _ = try user.engine.createChannel(String(repeating: "a", count: 65)) }
        expectEngineError(.invalidChannelName) { _ = try user.engine.createChannel("caf\u{e9}") }
        expectEngineError(.invalidChannelName) { _ = try user.engine.createChannel("a/b") }
        _ = try user.engine.createChannel(String(repeating: "a", count: 64))
        _ = try user.engine.createChannel("Room 1: {ok}!")
        expectEngineError(.invalidArgument) { _ = try user.engine.createChannel("Room 1: {ok}!") }
    }

    @Test("joining twice, leaving unjoined and an audience member publishing are refused")
    func joinRules() throws {
        let session = TestSession()
        let user = try session.user()
        let channel = try user.channel("a")
        expectEngineError(.leaveChannelRejected) { try channel.leave() }
        try channel.join(uid: 7)
        expectEngineError(.joinChannelRejected) { try channel.join(uid: 7) }
        try channel.leave()
        try channel.setClientRole(.audience)
        expectEngineError(.refused) { try channel.join(uid: 7) }
        try channel.join(uid: 7, options: .subscribeOnly)
        expectEngineError(.refused) { try channel.muteLocalAudioStream(false) }
        #expect(channel.publishedMedia.isEmpty)
        channel.destroy()
        expectEngineError(.notReady) { try channel.join(uid: 7) }
    }

    @Test("a second channel cannot publish by joining, unmuting or becoming broadcaster")
    func secondPublisherRefused() throws {
        let session = TestSession()
        let user = try session.user()
        try user.join("a", uid: 1)
        #expect(try user.channel("a").publishedMedia == [.audio, .video])
        // Join with publish options.
        expectEngineError(.refused) { try user.join("b", uid: 1) }
        #expect(try !user.channel("b").isJoined)
        // Join without publishing, then try each way to start.
        try user.channel("b").join(uid: 1, options: .subscribeOnly)
        expectEngineError(.refused) { try user.channel("b").muteLocalAudioStream(false) }
        expectEngineError(.refused) { try user.channel("b").muteLocalVideoStream(false) }
        let c = try user.channel("c")
        try c.setClientRole(.audience)
        try c.join(uid: 1, options: ChannelMediaOptions(publishLocalAudio: true, publishLocalVideo: false).withAudience)
        expectEngineError(.refused) { try c.setClientRole(.broadcaster) }
        #expect(c.clientRole == .audience)
    }

    @Test("after the first channel stops publishing, the second may", arguments: ["mute", "audience", "leave"])
    func handOver(way: String) throws {
        let session = TestSession()
        let user = try session.user()
        try user.join("a", uid: 1)
        let b = try user.channel("b")
        try b.join(uid: 1, options: .subscribeOnly)
        switch way {
        case "mute":
            try user.channel("a").muteLocalAudioStream(true)
            expectEngineError(.refused) { try b.muteLocalAudioStream(false) }  // video still publishes in a
            try user.channel("a").muteLocalVideoStream(true)
        case "audience": try user.channel("a").setClientRole(.audience)
        default: try user.channel("a").leave()
        }
        try b.muteLocalAudioStream(false)
        #expect(b.publishedMedia == [.audio])
        // And now a is the one refused.
        if way != "leave" {
            expectEngineError(.refused) {
                if way == "mute" {
                    try user.channel("a").muteLocalAudioStream(false)
                } else {
                    try user.channel("a").setClientRole(.broadcaster)
                }
            }
        }
    }

    @Test("roles before and after joining; role changes are reported to everyone")
    func roles() throws {
        let session = TestSession()
        let host = try session.user()
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try host.join("a", uid: 1)
        // The audience member is invisible to the host; the host is visible to it.
        #expect(try host.channel("a").remoteUsers.isEmpty)
        #expect(try viewer.channel("a").remoteUsers == [1])
        try viewer.channel("a").setClientRole(.broadcaster)
        #expect(try host.channel("a").remoteUsers == [2])
        #expect(viewer.logs["a"]!.events.contains(.clientRoleChanged(old: .audience, new: .broadcaster)))
        try viewer.channel("a").setClientRole(.audience)
        #expect(host.logs["a"]!.events.last == .userOffline(uid: 2, reason: .becomeAudience))
        session.hub.drop(channelId: "a", uid: 1)
        #expect(viewer.logs["a"]!.events.contains(.userOffline(uid: 1, reason: .dropped)))
    }
}

extension ChannelMediaOptions {
    /// These options with publishing off (for an audience join in tests).
    fileprivate var withAudience: ChannelMediaOptions {
        ChannelMediaOptions(
            autoSubscribeAudio: autoSubscribeAudio, autoSubscribeVideo: autoSubscribeVideo,
            publishLocalAudio: false, publishLocalVideo: false)
    }
}
