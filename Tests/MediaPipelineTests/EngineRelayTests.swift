import Foundation
import Testing

@testable import MediaPipeline

/// The relay events a channel reported, in order.
private func relayEvents(_ log: EventLog) -> [ChannelMediaRelayEvent] {
    log.events.compactMap { if case .channelMediaRelayEvent(let event) = $0 { event } else { nil } }
}

@Suite("Channel media relay: update, pause, resume, assigned uids")
struct EngineRelayTests {
    /// A host publishing in "main" and a watcher (audience) in each of `destinations`.
    private func room(_ destinations: [String]) throws -> (TestSession, TestUser, [String: TestUser]) {
        let session = TestSession()
        let host = try session.user()
        try host.join("main", uid: 1)
        var watchers: [String: TestUser] = [:]
        for id in destinations {
            let watcher = try session.user()
            try watcher.join(id, uid: 50, options: .subscribeOnly, role: .audience)
            watchers[id] = watcher
        }
        return (session, host, watchers)
    }

    @Test("destination uid 0 lets the destination assign a free uid, even where the source's uid is taken")
    func assignedUid() throws {
        let (session, host, watchers) = try room(["d"])
        // uid 1 is taken in "d" by another broadcaster.
        let other = try session.user()
        try other.join("d", uid: 1)
        try host.channel("main").startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "d")])
        try session.run(ticks: 30, video: true, publishers: [host])
        let users = try watchers["d"]!.channel("d").remoteUsers
        #expect(users.count == 2 && users.contains(1))
        let relayed = try #require(users.first { $0 != 1 })
        #expect(watchers["d"]!.logs["d"]!.remoteStates(relayed, .video).last?.0 == .decoding)
        #expect(relayEvents(host.logs["main"]!) == [.joinedDestinationChannel, .sentToDestinationChannel])
    }

    @Test("updateChannelMediaRelay leaves dropped destinations, joins new ones and keeps the rest")
    func update() throws {
        let (session, host, watchers) = try room(["d0", "d1", "d2"])
        let channel = try host.channel("main")
        expectEngineError(.notReady) { try channel.updateChannelMediaRelay([.init(channelId: "d0")]) }
        try channel.startChannelMediaRelay([.init(channelId: "d0", uid: 100), .init(channelId: "d1", uid: 101)])
        try session.run(ticks: 20, video: true, publishers: [host])
        try channel.updateChannelMediaRelay([.init(channelId: "d1", uid: 101), .init(channelId: "d2", uid: 102)])
        try session.run(ticks: 30, video: true, publishers: [host])
        #expect(watchers["d0"]!.logs["d0"]!.events.contains(.userOffline(uid: 100, reason: .quit)))
        #expect(try watchers["d0"]!.channel("d0").remoteUsers.isEmpty)
        #expect(!watchers["d1"]!.logs["d1"]!.events.contains { if case .userOffline = $0 { true } else { false } })
        #expect(watchers["d2"]!.logs["d2"]!.remoteStates(102, .video).last?.0 == .decoding)
        // Joined mid-stream: its decoder starts on a later packet than the reference's.
        try expectHears(watchers["d2"]!, [host], minimumSNR: 30)
        #expect(relayEvents(host.logs["main"]!).contains(.updateDestinationChannel))
        // A bad list is refused before anything changes; a taken uid is refused with the event.
        expectEngineError(.invalidArgument) { try channel.updateChannelMediaRelay([.init(channelId: "main")]) }
        let squatter = try session.user()
        try squatter.join("d3", uid: 103)
        // The update returns at once; the refusal arrives as an event, and the old list stays.
        try channel.updateChannelMediaRelay([.init(channelId: "d2", uid: 102), .init(channelId: "d3", uid: 103)])
        #expect(relayEvents(host.logs["main"]!).last == .updateDestinationChannelRefused)
        #expect(try watchers["d2"]!.channel("d2").remoteUsers == [102])
    }

    @Test("pause stops media to every destination, resume starts it again from a keyframe")
    func pauseAndResume() throws {
        let (session, host, watchers) = try room(["d"])
        let channel = try host.channel("main")
        expectEngineError(.notReady) { try channel.pauseAllChannelMediaRelay() }
        try channel.startChannelMediaRelay([.init(channelId: "d", uid: 100)])
        try session.run(ticks: 30, video: true, publishers: [host])
        let watcher = try watchers["d"]!.channel("d")
        try channel.pauseAllChannelMediaRelay()
        expectEngineError(.notReady) { try channel.pauseAllChannelMediaRelay() }
        let received = watcher.statistics.rxPackets
        try session.run(ticks: 50, video: true, publishers: [host])
        #expect(watcher.statistics.rxPackets == received)
        #expect(watcher.remoteUsers == [100])  // still there, only silent
        let forced = host.engine.statistics.keyframesForced
        try channel.resumeAllChannelMediaRelay()
        expectEngineError(.notReady) { try channel.resumeAllChannelMediaRelay() }
        try session.run(ticks: 30, video: true, publishers: [host])
        #expect(watcher.statistics.rxPackets > received)
        #expect(host.engine.statistics.keyframesForced > forced)
        #expect(watchers["d"]!.logs["d"]!.remoteStates(100, .video).last?.0 == .decoding)
        #expect(
            relayEvents(host.logs["main"]!) == [
                .pauseSendPacketToDestinationChannelFailed,  // before the relay started
                .joinedDestinationChannel, .sentToDestinationChannel, .pauseSendPacketToDestinationChannelSuccess,
                .pauseSendPacketToDestinationChannelFailed, .resumeSendPacketToDestinationChannelSuccess,
                .resumeSendPacketToDestinationChannelFailed, .sentToDestinationChannel,
            ])
    }
}
