import Testing

@testable import MediaPipeline

/// The control plane alone: inputs in, actions out, no engine, transport or thread.
@Suite("Control plane as a value: inputs in, actions out")
struct ControlPlaneTests {
    /// A plane with `channelIds` created; each joined (answered with uid 10, 11, ...) when `join`.
    private func plane(_ channelIds: [String], join: Bool = true) throws -> (ControlPlane, [ChannelRef]) {
        var plane = ControlPlane(configuration: EngineConfiguration())
        var refs: [ChannelRef] = []
        for (index, id) in channelIds.enumerated() {
            let ref = try plane.createChannel(id)
            refs.append(ref)
            guard join else { continue }
            let options = index == 0 ? ChannelMediaOptions() : .subscribeOnly
            let request = try plane.join(ref, options: options)
            plane.joinAnswered(ref, attempt: request.attempt, result: .success(UInt32(10 + index)))
        }
        _ = plane.drain()
        return (plane, refs)
    }

    @Test("every sequence of local mutes tells the transport the media last decided, in order")
    func muteSequences() throws {
        var (plane, refs) = try plane(["a"])
        var random = SplitMix64(seed: 7)
        // The test's own model of what a broadcaster publishing both kinds sends after its mutes.
        var muted = (audio: false, video: false)
        for step in 0..<2000 {
            let kind: MediaKind = random.next() & 1 == 0 ? .audio : .video
            let mute = random.next() & 2 == 0
            try plane.muteLocal(refs[0], kind, mute)
            if kind == .audio { muted.audio = mute } else { muted.video = mute }
            plane.now += 10_000
            let announced = plane.drain().compactMap { action -> PublishedMedia? in
                guard case .transport(.setMedia(let channelId, let uid, let media)) = action else { return nil }
                #expect(channelId == "a" && uid == 10)
                return media
            }
            var expected: PublishedMedia = []
            if !muted.audio { expected.insert(.audio) }
            if !muted.video { expected.insert(.video) }
            // One announcement per input, saying what the channel publishes after it.
            #expect(announced == [expected], "step \(step)")
        }
    }

    @Test("a second publishing channel is refused and the refused input decides nothing")
    func singlePublisher() throws {
        var (plane, refs) = try plane(["a", "b"])
        #expect(plane.publishingChannel() == 0)
        #expect(throws: EngineError.self) { try plane.muteLocal(refs[1], .audio, false) }
        #expect(plane.drain().isEmpty)
        #expect(plane.channels[1].publishedMedia.isEmpty)
        // Once the first channel stops publishing, the second may.
        try plane.muteLocal(refs[0], .audio, true)
        try plane.muteLocal(refs[0], .video, true)
        try plane.muteLocal(refs[1], .audio, false)
        #expect(plane.channels[1].publishedMedia == .audio)
        let last = plane.drain().last
        #expect(last == .transport(.setMedia(channelId: "b", uid: 11, media: .audio)))
    }

    @Test("a role set while the join is under way reaches the transport at the join's answer, as a change")
    func roleSetWhileJoining() throws {
        var (plane, refs) = try plane(["a", "b"], join: false)
        // A broadcaster publishing nothing joins, and becomes audience before the answer (as a
        // test over Janus did, once the room had announced it): the transport joined with
        // broadcaster, so it must hear of audience, or the others never learn it left.
        let request = try plane.join(
            refs[0], options: ChannelMediaOptions(publishLocalAudio: false, publishLocalVideo: false))
        #expect(request.role == .broadcaster)
        try plane.setRole(refs[0], .audience)
        #expect(!plane.drain().contains { if case .transport(.setRole) = $0 { true } else { false } })
        plane.joinAnswered(refs[0], attempt: request.attempt, result: .success(7))
        let actions = plane.drain()
        #expect(actions.contains(.transport(.setRole(channelId: "a", uid: 7, role: .audience))), "\(actions)")
        #expect(actions.contains(.event(refs[0], .clientRoleChanged(old: .broadcaster, new: .audience))), "\(actions)")
        #expect(plane.channels[0].role == .audience)
        // Set and set back within one join: the transport joined with the role it keeps.
        try plane.setRole(refs[1], .audience)
        let again = try plane.join(refs[1], options: .subscribeOnly)
        try plane.setRole(refs[1], .broadcaster)
        try plane.setRole(refs[1], .audience)
        _ = plane.drain()
        plane.joinAnswered(refs[1], attempt: again.attempt, result: .success(8))
        #expect(!plane.drain().contains { if case .transport(.setRole) = $0 { true } else { false } })
    }

    @Test("a local mute made while the join is under way reaches the transport at the join's answer")
    func muteWhileJoining() throws {
        var (plane, refs) = try plane(["a"], join: false)
        let request = try plane.join(refs[0], options: ChannelMediaOptions())
        #expect(request.media == [.audio, .video])
        try plane.muteLocal(refs[0], .audio, true)
        plane.joinAnswered(refs[0], attempt: request.attempt, result: .success(7))
        let actions = plane.drain()
        #expect(actions.contains(.transport(.setMedia(channelId: "a", uid: 7, media: .video))), "\(actions)")
        // Muted and unmuted within one join: nothing more to tell.
        var (other, otherRefs) = try self.plane(["a"], join: false)
        let again = try other.join(otherRefs[0], options: ChannelMediaOptions())
        try other.muteLocal(otherRefs[0], .audio, true)
        try other.muteLocal(otherRefs[0], .audio, false)
        _ = other.drain()
        other.joinAnswered(otherRefs[0], attempt: again.attempt, result: .success(7))
        #expect(!other.drain().contains { if case .transport(.setMedia) = $0 { true } else { false } })
    }

    @Test("events decided while joining wait for the join's success and follow it in order")
    func deferredEvents() throws {
        var (plane, refs) = try plane(["a"], join: false)
        let request = try plane.join(refs[0], options: .subscribeOnly)
        plane.userJoined("a", 42, [])
        let early = plane.drain()
        #expect(early == [.event(refs[0], .connectionStateChanged(state: .connecting, reason: .connecting))])
        plane.joinAnswered(refs[0], attempt: request.attempt, result: .success(7))
        let events = plane.drain().compactMap { action -> ChannelEvent? in
            guard case .event(_, let event) = action else { return nil }
            return event
        }
        // Then the publish states the join settles (NO_PUBLISH for an audience member's options).
        #expect(
            events == [
                .connectionStateChanged(state: .connected, reason: .joinSuccess), .joinSuccess(uid: 7, elapsedMs: 0),
                .userJoined(uid: 42, elapsedMs: 0),
                .localPublishStateChanged(kind: .audio, old: .idle, new: .noPublish, elapsedMs: 0),
                .localPublishStateChanged(kind: .video, old: .idle, new: .noPublish, elapsedMs: 0),
            ])
    }

    @Test("an answer to a join abandoned by leaving gives the granted membership back")
    func abandonedJoin() throws {
        var (plane, refs) = try plane(["a"], join: false)
        let request = try plane.join(refs[0], options: .subscribeOnly)
        try plane.leave(refs[0])
        _ = plane.drain()
        plane.joinAnswered(refs[0], attempt: request.attempt, result: .success(9))
        #expect(plane.drain() == [.transport(.leave(channelId: "a", uid: 9))])
        #expect(!plane.channels[0].joined)
    }

    @Test("a channel destroyed and created again under its id ignores the old one's answers")
    func recreatedChannel() throws {
        var (plane, refs) = try plane(["a"], join: false)
        let old = try plane.join(refs[0], options: .subscribeOnly)
        plane.destroyChannel(refs[0])
        let again = try plane.createChannel("a")
        #expect(again != refs[0])
        _ = plane.drain()
        plane.joinAnswered(refs[0], attempt: old.attempt, result: .success(5))
        #expect(plane.drain() == [.transport(.leave(channelId: "a", uid: 5))])
        #expect(throws: EngineError.self) { try plane.muteLocal(refs[0], .audio, true) }
    }

    @Test("remote mutes: the stream stops with LOCAL_MUTED, the transport stops forwarding it, and resumes")
    func remoteMute() throws {
        var (plane, refs) = try plane(["a"])
        let key = StreamKey(channelId: "a", uid: 42)
        plane.userJoined("a", 42, [.audio])
        let first = plane.channels[0].users[0].receiving.audio
        #expect(first != nil)
        #expect(Self.started(plane.receiverChanges) == [key])
        plane.receiverChanges.removeAll()
        _ = plane.drain()
        try plane.muteRemote(refs[0], 42, .audio, true)
        #expect(plane.channels[0].users[0].receiving.audio == nil)
        // Played out at gain 0 by the next playout round.
        #expect(Self.stopped(plane.receiverChanges) == ["a/42 audio fade true"])
        plane.receiverChanges.removeAll()
        let muted = plane.drain()
        #expect(
            muted.contains(
                .transport(.setSubscribed(false, to: .audio(channelId: "a", uid: 42), subscriber: 10))))
        #expect(
            muted.contains(
                .event(
                    refs[0],
                    .remoteSubscribeStateChanged(
                        uid: 42, kind: .audio, old: .subscribing, new: .noSubscribe, elapsedMs: 0))))
        try plane.muteRemote(refs[0], 42, .audio, false)
        #expect(plane.channels[0].users[0].receiving.audio != nil)
        #expect(plane.channels[0].users[0].receiving.audio != first)  // a new receiver
        #expect(Self.started(plane.receiverChanges) == [key])
        #expect(plane.channels[0].users[0].trackers.audio.resumeReason == .localUnmuted)
    }

    @Test("leaving releases every receiver at once, without a fade, and forgets the users")
    func leaveReleasesReceivers() throws {
        var (plane, refs) = try plane(["a"])
        plane.userJoined("a", 42, [.audio, .video])
        plane.userJoined("a", 43, [.audio])
        #expect(Self.started(plane.receiverChanges).count == 3)
        plane.receiverChanges.removeAll()
        try plane.leave(refs[0])
        #expect(
            Self.stopped(plane.receiverChanges).sorted() == [
                "a/42 audio fade false", "a/42 video fade false", "a/43 audio fade false",
            ])
        #expect(plane.channels[0].users.isEmpty)
    }

    /// The users whose receivers `changes` start, in order.
    private static func started(_ changes: [ReceiverChange]) -> [StreamKey] {
        changes.compactMap { if case .start(let key, _, _) = $0 { key } else { nil } }
    }

    /// The receivers `changes` stop, as "channel/uid kind fade flag".
    private static func stopped(_ changes: [ReceiverChange]) -> [String] {
        changes.compactMap {
            if case .stop(let key, let kind, let fadeOut) = $0 {
                "\(key.channelId)/\(key.uid) \(kind.rawValue) fade \(fadeOut)"
            } else {
                nil
            }
        }
    }
}

extension ControlPlane {
    /// Every action decided so far, as the engine's delivering thread would take them.
    mutating func drain() -> [EngineAction] {
        var batch: [EngineAction] = []
        guard takeActions(into: &batch, continuing: false) else { return [] }
        let taken = batch
        _ = takeActions(into: &batch, continuing: true)
        return taken
    }
}
