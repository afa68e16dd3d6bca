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

@Suite("Engine: uids")
struct EngineUidTests {
    @Test("uid 0 is assigned a unique uid; a uid taken in the channel is rejected and leaves no trace")
    func uids() throws {
        let session = TestSession()
        let one = try session.user()
        let two = try session.user()
        try one.join("a", uid: 0)
        try two.join("a", uid: 0)
        let first = try one.channel("a").localUid
        let second = try two.channel("a").localUid
        #expect(first != 0 && second != 0 && first != second)
        #expect(one.logs["a"]!.events.first == .joinSuccess(uid: first, elapsedMs: 0))
        #expect(try one.channel("a").remoteUsers == [second])
        let three = try session.user()
        // The join returns at once; the transport's refusal arrives as an error event.
        try three.join("a", uid: first)
        #expect(try !three.channel("a").isJoined)
        #expect(three.logs["a"]!.events.map(\.errorCode) == [.joinChannelRejected])
        #expect(three.logs["a"]!.connectionStates.map(\.0) == [.connecting, .failed])
        #expect(three.logs["a"]!.connectionStates.last?.1 == .joinFailed)
        try three.join("a", uid: 77)  // and it can join with a free uid afterwards
        #expect(try three.channel("a").remoteUsers.sorted() == [first, second].sorted())
    }
}
