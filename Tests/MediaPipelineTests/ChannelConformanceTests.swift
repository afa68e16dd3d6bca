import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

// One behaviour on every transport: the channel scenarios that need a server (joins and uids,
// connection states, roles, the publishing rule, local and remote mutes, remote stream states,
// the media relay) are written once and run over LocalHub and over Janus, with the same Agora
// events expected in the same order.
//
// Engines in the test process cannot reach Janus's media (Janus's one ICE candidate is
// 127.0.0.2 inside a network namespace of the harness's), so the Janus variants run in a child
// copy of this test binary started inside the namespace with MP_CONFORMANCE_JANUS_URL set; the
// driver test at the end starts the server and that child and checks that every Janus scenario
// ran and passed. Both variants run in real time (a wall clock and a media pump thread per
// scenario), so they differ in the transport alone.

/// Where the conformance scenarios run.
enum ConformanceTransport: Sendable, CustomTestStringConvertible {
    /// The in-process hub.
    case localHub
    /// The Janus at `url`, reached from inside its namespace.
    case janus(url: String)

    /// The variable that names the Janus API to the child process (and makes it the child).
    static let janusURLVariable = "MP_CONFORMANCE_JANUS_URL"

    /// The Janus API this process runs the scenarios on; nil in an ordinary test run.
    static var janusURL: String? { ProcessInfo.processInfo.environment[janusURLVariable] }

    /// The transports this process runs the scenarios on: LocalHub in an ordinary test run; Janus
    /// alone in the child the driver starts (its parent ran the LocalHub variants already).
    static var all: [ConformanceTransport] { janusURL.map { [.janus(url: $0)] } ?? [.localHub] }

    var testDescription: String {
        switch self {
        case .localHub: "LocalHub"
        case .janus: "Janus"
        }
    }

    var isJanus: Bool { if case .janus = self { true } else { false } }
}

// MARK: - Scenarios

@Suite("Channel conformance: the same scenarios over LocalHub and Janus", .serialized)
struct ChannelConformanceTests {
    /// The scenarios, as each reports itself done (``ConformanceRoom/done(_:)``): the driver
    /// expects every one of them from the child.
    static let scenarios = [
        "joins", "connectionStates", "roles", "publishingRule", "localMutes", "remoteMutes", "silentBroadcaster",
        "relay",
    ]

    /// Each scenario's time limit is 2 minutes: alone one takes under a second on LocalHub, but
    /// it is async and its waits need a thread of the cooperative pool, which the synchronous
    /// tests beside it hold (the whole suite on 2 cores once left a LocalHub scenario 60 s).
    ///
    /// How long one condition may take to come true. Janus needs about a second from a join to
    /// decoded media; the bound leaves room for a loaded machine (other Janus suites run beside
    /// this one), not for another behaviour.
    static let bound = 15.0

    @Test(
        "joins: uid 0 gets a uid; userJoined; STARTING then DECODING; userOffline quit on leave",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func joins(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let host = try room.user(frequency: 500)
            let viewer = try room.user()
            try host.join("channel-1", uid: 0)
            try await room.waitFor("the host joined") { try host.log("channel-1").joined }
            let hostUid = try host.channel("channel-1").localUid
            #expect(hostUid != 0)
            try viewer.join("channel-1", uid: 0, options: .subscribeOnly, role: .audience)
            try await room.waitFor("the viewer decodes the host's audio and video") {
                try viewer.log("channel-1").decoding(hostUid, .audio)
                    && viewer.log("channel-1").decoding(hostUid, .video) && viewer.loudTicks > 10
            }
            let viewerUid = try viewer.channel("channel-1").localUid
            #expect(viewerUid != 0 && viewerUid != hostUid)
            let log = try viewer.log("channel-1")
            #expect(log.membership == ["joinSuccess(\(viewerUid))", "userJoined(\(hostUid))"])
            #expect(log.states(hostUid, .audio) == ["starting/internal", "decoding/internal"])
            #expect(log.states(hostUid, .video) == ["starting/internal", "decoding/internal"])
            #expect(log.events.contains(.videoSizeChanged(uid: hostUid, width: 160, height: 90)))
            // The audience member is nobody's business: the host sees no one.
            #expect(try host.channel("channel-1").remoteUsers.isEmpty)

            try host.channel("channel-1").leave()
            try await room.waitFor("the viewer is told the host left") {
                try log.membership.contains("userOffline(\(hostUid), quit)")
                    && host.log("channel-1").membership.last == "leave"
            }
            #expect(
                log.membership == [
                    "joinSuccess(\(viewerUid))", "userJoined(\(hostUid))", "userOffline(\(hostUid), quit)",
                ])
            #expect(log.states(hostUid, .audio).last == "stopped/remoteOffline")
            #expect(log.states(hostUid, .video).last == "stopped/remoteOffline")
            #expect(try viewer.channel("channel-1").remoteUsers.isEmpty)
            #expect(try host.log("channel-1").membership == ["joinSuccess(\(hostUid))", "leave"])
            room.done("joins")
        }
    }

    @Test(
        "connection states: CONNECTED on join, FAILED for a uid taken, DISCONNECTED on leave",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func connectionStates(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let a = try room.user()
            let b = try room.user(frequency: 500)
            try a.join("channel-1", uid: 210)
            try await room.waitFor("a joined") { try a.log("channel-1").joined }
            #expect(try a.log("channel-1").connections == ["connecting/connecting", "connected/joinSuccess"])

            // uid 210 is taken: the join returns at once and is refused by the transport.
            try b.join("channel-1", uid: 210)
            try await room.waitFor("b's join is refused") { try b.log("channel-1").connections.count >= 2 }
            #expect(try b.log("channel-1").connections == ["connecting/connecting", "failed/joinFailed"])
            #expect(try b.log("channel-1").events.map(\.errorCode) == [.joinChannelRejected])
            #expect(try !b.channel("channel-1").isJoined)

            // A free uid joins, and a sees it come and go.
            try b.channel("channel-1").join(uid: 211)
            try await room.waitFor("b joined with a free uid and a decodes it") {
                try b.log("channel-1").joined && a.log("channel-1").decoding(211, .audio)
            }
            #expect(
                try b.log("channel-1").connections == [
                    "connecting/connecting", "failed/joinFailed", "connecting/connecting", "connected/joinSuccess",
                ])
            try b.channel("channel-1").leave()
            try await room.waitFor("a is told b left") {
                try a.log("channel-1").membership.contains("userOffline(211, quit)")
                    && b.log("channel-1").connections.count == 5
            }
            #expect(try b.log("channel-1").connections.last == "disconnected/leaveChannel")
            #expect(
                try a.log("channel-1").membership == ["joinSuccess(210)", "userJoined(211)", "userOffline(211, quit)"])
            try a.channel("channel-1").leave()
            try await room.waitFor("a left") { try a.log("channel-1").connections.count == 3 }
            #expect(
                try a.log("channel-1").connections == [
                    "connecting/connecting", "connected/joinSuccess", "disconnected/leaveChannel",
                ])
            room.done("connectionStates")
        }
    }

    @Test(
        "roles: the audience receives unseen; becoming broadcaster is announced, audience again is offline",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func roles(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            // channel-2: on Janus that room notifies every join, so an audience member's join
            // reaches the host's side and must be kept from it.
            let viewer = try room.user()
            let host = try room.user(frequency: 500)
            try viewer.join("channel-2", uid: 320, options: .subscribeOnly, role: .audience)
            try await room.waitFor("the viewer joined") { try viewer.log("channel-2").joined }
            try host.join("channel-2", uid: 310)
            try await room.waitFor("the viewer decodes the host") {
                try viewer.log("channel-2").decoding(310, .audio)
                    && viewer.log("channel-2").decoding(310, .video)
            }
            #expect(try host.channel("channel-2").remoteUsers.isEmpty)
            #expect(try host.log("channel-2").membership == ["joinSuccess(310)"])

            try viewer.channel("channel-2").setClientRole(.broadcaster)
            try await room.waitFor("the host sees the new broadcaster and decodes it") {
                try viewer.log("channel-2").membership.last == "clientRoleChanged(audience→broadcaster)"
                    && host.log("channel-2").decoding(320, .audio)
                    && host.log("channel-2").decoding(320, .video)
            }
            #expect(try host.log("channel-2").membership == ["joinSuccess(310)", "userJoined(320)"])
            #expect(try host.log("channel-2").states(320, .audio) == ["starting/internal", "decoding/internal"])

            try viewer.channel("channel-2").setClientRole(.audience)
            try await room.waitFor("the host is told 320 became audience") {
                try host.log("channel-2").membership.count >= 3 && viewer.log("channel-2").membership.count >= 4
            }
            #expect(
                try host.log("channel-2").membership == [
                    "joinSuccess(310)", "userJoined(320)", "userOffline(320, becomeAudience)",
                ])
            #expect(try host.log("channel-2").states(320, .audio).last == "stopped/remoteOffline")
            #expect(
                try viewer.log("channel-2").membership == [
                    "joinSuccess(320)", "userJoined(310)", "clientRoleChanged(audience→broadcaster)",
                    "clientRoleChanged(broadcaster→audience)",
                ])
            // Still receiving as audience.
            #expect(try viewer.log("channel-2").decoding(310, .audio))
            // Another user's role is not the host's connection.
            // (On Janus the publisher that unpublished stays listed for a grace period, without a
            // subscription: that is not a connection missing.)
            #expect(try host.log("channel-2").connections == ["connecting/connecting", "connected/joinSuccess"])
            room.done("roles")
        }
    }

    @Test(
        "the publishing rule: a second channel is refused while one publishes, and may publish after it",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func publishingRule(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let watcher = try room.user()
            let user = try room.user(frequency: 500)
            try watcher.join("channel-2", uid: 420, options: .subscribeOnly, role: .audience)
            try user.join("channel-1", uid: 410)
            try await room.waitFor("both joined") {
                try watcher.log("channel-2").joined && user.log("channel-1").joined
            }
            #expect(try user.channel("channel-1").publishedMedia == [.audio, .video])
            // Joining a second channel with the publishing options is refused before anything is asked.
            expectEngineError(.refused) { try user.join("channel-2", uid: 410) }
            #expect(try !user.channel("channel-2").isJoined)
            #expect(try user.log("channel-2").connections.isEmpty)
            // As audience it joins; becoming broadcaster there is refused while channel-1 publishes.
            try user.join("channel-2", uid: 410, options: .subscribeOnly, role: .audience)
            try await room.waitFor("the user joined channel-2 without publishing") {
                try user.log("channel-2").joined
            }
            // Unmuting is refused (an audience member's, whichever channel publishes).
            expectEngineError(.refused) { try user.channel("channel-2").muteLocalAudioStream(false) }
            let second = try user.channel("channel-2")
            expectEngineError(.refused) { try second.setClientRole(.broadcaster) }
            #expect(second.clientRole == .audience && second.publishedMedia.isEmpty)

            // channel-1 stops publishing: channel-2 may, and the watcher there sees it come.
            try user.channel("channel-1").setClientRole(.audience)
            try second.setClientRole(.broadcaster)
            #expect(second.publishedMedia == [.audio, .video])
            expectEngineError(.refused) { try user.channel("channel-1").setClientRole(.broadcaster) }
            try await room.waitFor("the watcher decodes the user in channel-2") {
                try watcher.log("channel-2").decoding(410, .audio)
                    && watcher.log("channel-2").decoding(410, .video)
            }
            #expect(try watcher.log("channel-2").membership == ["joinSuccess(420)", "userJoined(410)"])
            #expect(try watcher.log("channel-2").states(410, .audio) == ["starting/internal", "decoding/internal"])
            room.done("publishingRule")
        }
    }

    @Test(
        "local mutes: the subscriber sees STOPPED remoteMuted, then DECODING remoteUnmuted",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func localMutes(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let (host, viewer, log) = try await room.hostAndViewer(host: 510, viewer: 520)
            for kind in MediaKind.allCases {
                try host.channel("channel-1").mute(kind, true)
                try await room.waitFor("the viewer sees the host's \(kind) muted") {
                    log.states(510, kind).last == "stopped/remoteMuted"
                }
                if kind == .audio {
                    // Nothing more is heard (the tick after the state change may hold the fade).
                    let silentFrom = viewer.ticks + 2
                    let loud = try await room.loudTicks(of: viewer, from: silentFrom, over: 50)
                    #expect(loud == 0, "\(loud) loud playout ticks after the mute")
                }
                try host.channel("channel-1").mute(kind, false)
                try await room.waitFor("the viewer decodes the host's \(kind) again") {
                    log.states(510, kind).last == "decoding/remoteUnmuted"
                }
                #expect(
                    log.states(510, kind) == [
                        "starting/internal", "decoding/internal", "stopped/remoteMuted", "starting/remoteUnmuted",
                        "decoding/remoteUnmuted",
                    ])
            }
            // A mute is not a departure.
            #expect(log.membership == ["joinSuccess(520)", "userJoined(510)"])
            room.done("localMutes")
        }
    }

    @Test(
        "remote mutes: muteRemote stops that stream (STOPPED localMuted); the unmute brings it back",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func remoteMutes(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let (_, viewer, log) = try await room.hostAndViewer(host: 610, viewer: 620)
            let channel = try viewer.channel("channel-1")
            // Events are delivered after the call by whichever thread carries out the engine's
            // actions (the pump's, at times): waited for, as the decoder's release.
            try channel.muteRemoteAudioStream(610, mute: true)
            try await room.waitFor("the audio stopped and its decoder released") {
                log.states(610, .audio).last == "stopped/localMuted" && viewer.engine.statistics.liveAudioDecoders == 0
            }
            let loud = try await room.loudTicks(of: viewer, from: viewer.ticks + 2, over: 50)
            #expect(loud == 0, "\(loud) loud playout ticks after muting the host's audio")
            // The video goes on meanwhile.
            #expect(channel.remoteState(610, .video) == .decoding)
            try channel.muteRemoteVideoStream(610, mute: true)
            try await room.waitFor("the video stopped and its decoder released") {
                log.states(610, .video).last == "stopped/localMuted" && viewer.engine.statistics.liveVideoDecoders == 0
            }
            // Both muted: the host's packets stop coming to the viewer at all (Agora stops
            // receiving them; the transport contract: an unsubscribed stream is not forwarded).
            // Packets already on their way get 20 ticks (200 ms); then 50 ticks must bring none.
            _ = try await room.loudTicks(of: viewer, from: viewer.ticks, over: 20)
            let arrived = try viewer.packetsArriving("channel-1", from: 610)
            _ = try await room.loudTicks(of: viewer, from: viewer.ticks, over: 50)
            let arrivedLater = try viewer.packetsArriving("channel-1", from: 610)
            // On Janus: the subscription's streams are configured with send: false.
            #expect(arrivedLater == arrived, "\(arrivedLater - arrived) packets of muted streams arrived")

            try channel.muteRemoteAudioStream(610, mute: false)
            try channel.muteRemoteVideoStream(610, mute: false)
            try await room.waitFor("the viewer decodes the host again") {
                log.states(610, .audio).last == "decoding/localUnmuted"
                    && log.states(610, .video).last == "decoding/localUnmuted" && viewer.loudTicks > 0
            }
            for kind in MediaKind.allCases {
                #expect(
                    log.states(610, kind) == [
                        "starting/internal", "decoding/internal", "stopped/localMuted", "starting/localUnmuted",
                        "decoding/localUnmuted",
                    ])
            }
            #expect(
                log.subscribeStates(610, .audio) == [
                    "idle→subscribing", "subscribing→subscribed", "subscribed→noSubscribe", "noSubscribe→subscribing",
                    "subscribing→subscribed",
                ])
            room.done("remoteMutes")
        }
    }

    @Test(
        "a broadcaster that publishes nothing is a user: present at join, its first stream starts later",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func silentBroadcaster(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let host = try room.user(frequency: 500)
            let viewer = try room.user()
            try host.join(
                "channel-1", uid: 810, options: ChannelMediaOptions(publishLocalAudio: false, publishLocalVideo: false))
            try await room.waitFor("the host joined") { try host.log("channel-1").joined }
            #expect(try host.channel("channel-1").publishedMedia.isEmpty)
            // The broadcasters present are announced before the join's answer: no wait needed.
            try viewer.join("channel-1", uid: 820, options: .subscribeOnly, role: .audience)
            try await room.waitFor("the viewer joined") { try viewer.log("channel-1").joined }
            let log = try viewer.log("channel-1")
            // The channel's state (updated before the join's events are delivered) holds it.
            // (On Janus, where only publishers are announced, the broadcaster's display says it is
            // one: listed by listparticipants at the join, told to the room when it changes.)
            #expect(try viewer.channel("channel-1").remoteUsers == [810])
            try host.channel("channel-1").muteLocalAudioStream(false)
            try await room.waitFor("the viewer decodes the host's audio") {
                try viewer.log("channel-1").decoding(810, .audio)
            }
            #expect(log.membership == ["joinSuccess(820)", "userJoined(810)"])
            // A present user's stream that starts is an unmute, as for any remote mute.
            #expect(log.states(810, .audio) == ["starting/remoteUnmuted", "decoding/remoteUnmuted"])
            #expect(log.states(810, .video).isEmpty)

            // One that joins later without publishing is announced as it joins, and is offline
            // (become audience) when it becomes audience.
            let late = try room.user(frequency: 600)
            try late.join(
                "channel-1", uid: 830, options: ChannelMediaOptions(publishLocalAudio: false, publishLocalVideo: false))
            try await room.waitFor("the viewer sees the late broadcaster") {
                log.membership.contains("userJoined(830)")
            }
            try late.channel("channel-1").setClientRole(.audience)
            try await room.waitFor("the viewer is told the late broadcaster became audience") {
                log.membership.contains("userOffline(830, becomeAudience)")
            }
            #expect(
                log.membership == [
                    "joinSuccess(820)", "userJoined(810)", "userJoined(830)", "userOffline(830, becomeAudience)",
                ])
            #expect(log.states(830, .audio).isEmpty && log.states(830, .video).isEmpty)
            room.done("silentBroadcaster")
        }
    }

    @Test(
        "relay: the stream appears in the destination under the relay's uid; stopping it is userOffline",
        .timeLimit(.minutes(2)), arguments: ConformanceTransport.all)
    func relay(transport: ConformanceTransport) async throws {
        try await ConformanceRoom.run(transport) { room in
            let host = try room.user(frequency: 500)
            let watcher = try room.user()
            try watcher.join("channel-2", uid: 720, options: .subscribeOnly, role: .audience)
            try host.join("channel-1", uid: 710)
            try await room.waitFor("both joined") {
                try watcher.log("channel-2").joined && host.log("channel-1").joined
            }
            let source = try host.channel("channel-1")
            try source.startChannelMediaRelay([ChannelMediaRelayDestination(channelId: "channel-2", uid: 730)])
            try await room.waitFor("the watcher decodes the relayed stream") {
                try watcher.log("channel-2").decoding(730, .audio)
                    && watcher.log("channel-2").decoding(730, .video) && watcher.loudTicks > 10
            }
            let log = try host.log("channel-1")
            #expect(log.relayStates == [.connecting, .running])
            #expect(log.relayEvents == [.joinedDestinationChannel, .sentToDestinationChannel])
            let destination = try watcher.log("channel-2")
            #expect(destination.membership == ["joinSuccess(720)", "userJoined(730)"])
            #expect(destination.states(730, .video) == ["starting/internal", "decoding/internal"])
            #expect(destination.events.contains(.videoSizeChanged(uid: 730, width: 160, height: 90)))

            try source.stopChannelMediaRelay()
            try await room.waitFor("the relay stopped and the watcher is told it left") {
                log.relayStates.last == .idle && destination.membership.contains("userOffline(730, quit)")
            }
            #expect(destination.membership == ["joinSuccess(720)", "userJoined(730)", "userOffline(730, quit)"])
            room.done("relay")
        }
    }
}

// MARK: - The driver of the Janus variants

extension ChannelConformanceTests {
    /// How long the child may run: eight scenarios of a few seconds each, and the binary's start.
    static let childBoundSeconds = 180.0

    @Test(
        "the conformance suite over Janus (a child copy of this binary inside the server's namespace)",
        .enabled(if: ConformanceTransport.janusURL == nil, "this is the child: it runs the Janus variants"),
        .timeLimit(.minutes(5)))
    func overJanus() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let folder = TemporaryFolder()
        let started = Date()
        let child = try server.start(
            [
                "/usr/bin/env", "\(ConformanceTransport.janusURLVariable)=\(server.insideURL)", Self.testBinary,
                "--testing-library", "swift-testing", "--filter", "ChannelConformanceTests",
            ], stdout: folder.file("stdout"), stderr: folder.file("stderr"))
        defer {
            if child.isRunning { kill(child.processIdentifier, SIGKILL) }
            child.waitUntilExit()
        }
        while child.isRunning && Date().timeIntervalSince(started) < Self.childBoundSeconds {
            try await Task.sleep(for: .milliseconds(100))
        }
        let timedOut = child.isRunning
        if timedOut { kill(child.processIdentifier, SIGKILL) }
        child.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        let stdout = (try? String(contentsOfFile: folder.file("stdout"), encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: folder.file("stderr"), encoding: .utf8)) ?? ""
        // The failing tests and issues, then the end of the output.
        // swift-testing writes its results to standard error; the scenarios' markers go to
        // standard output. The failing tests and issues first (each issue's details follow its
        // line), then the end of both.
        let lines = stderr.split(separator: "\n")
        var failures: [Substring] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("✘") {
            failures.append(line)
            failures += lines[(index + 1)...].prefix { $0.hasPrefix(" ") || $0.hasPrefix("↳") }.prefix(30)
        }
        let report =
            "child: \(timedOut ? "killed after \(Int(Self.childBoundSeconds)) s" : "exit \(child.terminationStatus)")"
            + " after \(String(format: "%.1f", elapsed)) s\n"
            + failures.joined(separator: "\n") + "\n--- stdout (end) ---\n" + String(stdout.suffix(2000))
            + "\n--- stderr (end) ---\n" + String(stderr.suffix(3000))
        #expect(!timedOut && child.terminationReason == .exit && child.terminationStatus == 0, "\(report)")
        // Every Janus scenario ran to its end: a child that ran nothing cannot pass.
        let done = Set(
            stdout.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix(ConformanceRoom.doneMarker + " Janus ") else { return nil }
                return String(line.dropFirst(ConformanceRoom.doneMarker.count + 7))
            })
        #expect(done == Set(Self.scenarios), "Janus scenarios done: \(done.sorted())\n\(report)")
        // The child's verdicts, known issues (Janus's differences) included, for the log.
        let verdicts = (stdout + stderr).split(separator: "\n").filter {
            ($0.hasPrefix("✔ Test") || $0.hasPrefix("━ Test") || $0.hasPrefix("✘ Test")) && $0.contains(" after ")
        }
        print(verdicts.map { "ChannelConformance over Janus: \($0)" }.joined(separator: "\n"))
        print("ChannelConformance: the Janus variants took \(String(format: "%.1f", elapsed)) s in the child")
        server.stop()
        #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())")
    }

    /// This test binary: the running one (`swift test` runs the `.xctest` itself), else the
    /// debug build's.
    static var testBinary: String {
        let running = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        if running.hasSuffix(".xctest") && FileManager.default.isExecutableFile(atPath: running) { return running }
        return Fixtures.packageRoot + "/.build/debug/MediaPipelinePackageTests.xctest"
    }
}

// MARK: - Rooms, users and the media pump

/// The engines of one scenario on one transport, with a media pump: every 10 ms of wall-clock
/// time each user pushes 10 ms of its tone (and a 160x90 picture every 7th tick, about 15 fps),
/// pulls its playout and renders. The engines publish what their channels allow.
final class ConformanceRoom: @unchecked Sendable {
    /// What a Janus scenario prints when it ran to its end (then "Janus NAME").
    static let doneMarker = "conformance-scenario-done:"

    let transport: ConformanceTransport
    let clock = WallClock()
    private let hub: LocalHub?
    fileprivate let members = LockedValue<[ConformanceUser]>([])
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    /// The first error of a push, which the scenario fails on.
    private let pumpError = LockedValue<String?>(nil)

    private init(_ transport: ConformanceTransport) {
        self.transport = transport
        hub = transport.isJanus ? nil : LocalHub()
        let thread = Thread { [self] in pump() }
        thread.name = "conformance media pump"
        thread.start()
    }

    /// Runs `body` in a room of its own, then stops the pump and closes every engine, whatever
    /// way `body` ends.
    static func run(_ transport: ConformanceTransport, _ body: (ConformanceRoom) async throws -> Void) async throws {
        let room = ConformanceRoom(transport)
        do {
            try await body(room)
            // With a server that stays up, no channel ever reconnects: the connection state is
            // the local user's link to the server, whatever other users do. (On Janus a feed
            // announced before it can be subscribed to, error 428 "No such feed", is asked for
            // again shortly; it is not a connection missing.)
            for (index, user) in room.members.withLock({ $0 }).enumerated() {
                for (id, log) in user.logs where log.connections.contains(where: { $0.hasPrefix("reconnecting") }) {
                    Issue.record("user \(index) in \(id): \(log.connections)\n\(room.summary)")
                }
            }
        } catch {
            await room.close()
            throw error
        }
        await room.close()
        if let error = room.pumpError.withLock({ $0 }) { Issue.record("the media pump failed: \(error)") }
    }

    /// A user with an engine of its own (and, on Janus, a transport: one Janus session each).
    func user(frequency: Double = 440) throws -> ConformanceUser {
        let user: ConformanceUser
        switch transport {
        case .localHub:
            user = try ConformanceUser(transport: hub!, janus: nil, clock: clock, frequency: frequency)
        case .janus(let url):
            var settings = JanusTransportConfiguration(url: url)
            settings.localAddresses = [JanusServer.mediaAddress]
            let janus = try JanusTransport(configuration: settings)
            user = try ConformanceUser(transport: janus, janus: janus, clock: clock, frequency: frequency)
        }
        members.withLock { $0.append(user) }
        return user
    }

    /// A broadcaster `host` (500 Hz) and an audience member `viewer` in channel-1, once the
    /// viewer decodes the host's audio and video; with the viewer's channel-1 log.
    func hostAndViewer(host hostUid: UInt32, viewer viewerUid: UInt32) async throws -> (
        host: ConformanceUser, viewer: ConformanceUser, log: EventLog
    ) {
        let host = try user(frequency: 500)
        let viewer = try user()
        try host.join("channel-1", uid: hostUid)
        try viewer.join("channel-1", uid: viewerUid, options: .subscribeOnly, role: .audience)
        let log = try viewer.log("channel-1")
        try await waitFor("the viewer decodes the host") {
            log.decoding(hostUid, .audio) && log.decoding(hostUid, .video)
        }
        return (host, viewer, log)
    }

    /// Polls `condition` every 20 ms until it holds; throws (describing every user's channels)
    /// after ``ChannelConformanceTests/bound`` seconds.
    func waitFor(_ what: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(ChannelConformanceTests.bound)
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                throw ConformanceTimeout(
                    "\(transport.testDescription): \(what): not within \(ChannelConformanceTests.bound) s\n\(summary)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The playout ticks of `user` that were loud, among the `count` ticks from tick `first`
    /// (waited for as they come); throws when they do not come within the bound (a stalled
    /// pump would otherwise count as silence).
    func loudTicks(of user: ConformanceUser, from first: Int, over count: Int) async throws -> Int {
        try await waitFor("\(count) playout ticks from tick \(first)") { user.ticks >= first + count }
        return user.loudTicks(from: first, to: first + count)
    }

    /// Marks the scenario `name` done (the driver counts these lines from the child).
    func done(_ name: String) {
        print("\(Self.doneMarker) \(transport.testDescription) \(name)")
    }

    /// Every user's channels: membership, states and connection states.
    var summary: String {
        members.withLock { $0 }.enumerated().map { index, user in
            "user \(index):\n" + user.summary
        }.joined(separator: "\n")
    }

    // MARK: The pump

    private func pump() {
        let start = ContinuousClock.now
        var tick = 0
        while !stopping.load(ordering: .acquiring) {
            for user in members.withLock({ $0 }) {
                do {
                    try user.step(video: tick % 7 == 0, now: clock.nowMicroseconds)
                } catch {
                    pumpError.withLock { $0 = $0 ?? "\(error)" }
                }
            }
            tick += 1
            let ahead = start + .milliseconds(10 * tick) - ContinuousClock.now
            if ahead > .zero { Thread.sleep(forTimeInterval: ahead / .seconds(1)) }
        }
        stopped.store(true, ordering: .releasing)
    }

    /// Stops the pump, then destroys the engines and closes the Janus transports (which waits
    /// for Janus to acknowledge), off the concurrency pool.
    private func close() async {
        stopping.store(true, ordering: .releasing)
        while !stopped.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
        let users = members.withLock { $0 }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                for user in users { user.engine.destroy() }
                for user in users { user.janus?.close() }
                continuation.resume()
            }
            thread.start()
        }
    }
}

struct ConformanceTimeout: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One user: an engine, its channels and their event logs, and what its playout sounded like.
final class ConformanceUser: @unchecked Sendable {
    let engine: MediaEngine
    /// The user's Janus transport (nil on LocalHub).
    let janus: JanusTransport?
    private let frequency: Double
    private let channels = LockedValue<[String: (MediaChannel, EventLog)]>([:])
    // The pump's state: touched by the pump thread only, but for the counters.
    private var audioPosition = 0
    private var videoFrame = 0
    private var playout: [Int16]
    private let tickCount = Atomic<Int>(0)
    /// The ticks whose playout was loud (peak above 1000), in order.
    private let loud = LockedValue<[Int]>([])

    init(transport: MediaTransport, janus: JanusTransport?, clock: MediaClock, frequency: Double) throws {
        engine = try MediaEngine(transport: transport, clock: clock)
        self.janus = janus
        self.frequency = frequency
        playout = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
    }

    /// The channel `id` (created on first use, its events logged from then on).
    func channel(_ id: String) throws -> MediaChannel { try entry(id).0 }

    /// The events of channel `id`.
    func log(_ id: String) throws -> EventLog { try entry(id).1 }

    /// The event logs of every channel, by id.
    var logs: [String: EventLog] { channels.withLock { $0.mapValues(\.1) } }

    private func entry(_ id: String) throws -> (MediaChannel, EventLog) {
        try channels.withLock { channels in
            if let entry = channels[id] { return entry }
            let channel = try engine.createChannel(id)
            channels[id] = (channel, EventLog(channel))
            return channels[id]!
        }
    }

    func join(_ id: String, uid: UInt32, options: ChannelMediaOptions = .init(), role: ClientRole = .broadcaster)
        throws
    {
        let channel = try self.channel(id)
        try channel.setClientRole(role)
        try channel.join(uid: uid, options: options)
    }

    /// The RTP packets from `uid` in channel `id` that reached this user so far: on LocalHub
    /// what the hub delivered to the engine (the hub is the server and the link in one), on
    /// Janus what arrived on the subscription's connection (before anything on this side
    /// filters it).
    func packetsArriving(_ id: String, from uid: UInt32) throws -> Int64 {
        if let janus {
            return janus.statistics.filter { $0.channelId == id && $0.publisher == uid }.map(\.rtpReceived).reduce(0, +)
        }
        // One remote user in the scenarios that ask: the channel's count is that user's.
        return try channel(id).statistics.rxPackets
    }

    /// Playout ticks so far.
    var ticks: Int { tickCount.load(ordering: .acquiring) }
    /// Loud playout ticks so far.
    var loudTicks: Int { loud.withLock { $0.count } }
    /// Loud playout ticks in `first..<end`.
    func loudTicks(from first: Int, to end: Int) -> Int {
        loud.withLock { $0.filter { (first..<end).contains($0) }.count }
    }

    /// One 10 ms tick of the pump.
    fileprivate func step(video: Bool, now: Int64) throws {
        var samples = [Int16](repeating: 0, count: 960)
        for i in 0..<480 {
            let value = Int16(8000 * sin(2 * .pi * frequency * Double(audioPosition + i) / 48000))
            samples[2 * i] = value
            samples[2 * i + 1] = value
        }
        audioPosition += 480
        try engine.pushAudio(AudioFrame(samples: samples, sampleRate: 48000, channelCount: 2))
        if video {
            try engine.pushVideo(
                try syntheticPicture(width: 160, height: 90, frame: videoFrame), timestampMicroseconds: now)
            videoFrame += 1
        }
        playout.withUnsafeMutableBufferPointer { engine.pullPlayout(into: $0) }
        let tick = tickCount.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue
        if playout.contains(where: { abs(Int($0)) > 1000 }) { loud.withLock { $0.append(tick) } }
        if video { engine.renderVideo() }
    }

    var summary: String {
        channels.withLock { $0 }.sorted { $0.key < $1.key }.map { id, entry in
            let (channel, log) = entry
            var lines = ["  \(id) as \(channel.localUid): \(log.membership)", "    connection: \(log.connections)"]
            for uid in channel.remoteUsers {
                lines.append("    \(uid) audio: \(log.states(uid, .audio)) video: \(log.states(uid, .video))")
            }
            if !log.relayStates.isEmpty { lines.append("    relay: \(log.relayStates) \(log.relayEvents)") }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

extension MediaChannel {
    /// Mutes or unmutes the local `kind`.
    func mute(_ kind: MediaKind, _ mute: Bool) throws {
        if kind == .audio { try muteLocalAudioStream(mute) } else { try muteLocalVideoStream(mute) }
    }
}

extension EventLog {
    /// Membership and role events as text: `joinSuccess(7)`, `userJoined(1)`,
    /// `userOffline(1, quit)`, `clientRoleChanged(audience→broadcaster)`, `leave`.
    var membership: [String] {
        events.compactMap { event in
            switch event {
            case .joinSuccess(let uid, _): "joinSuccess(\(uid))"
            case .userJoined(let uid, _): "userJoined(\(uid))"
            case .userOffline(let uid, let reason): "userOffline(\(uid), \(reason))"
            case .clientRoleChanged(let old, let new): "clientRoleChanged(\(old)→\(new))"
            case .leave: "leave"
            default: nil
            }
        }
    }

    /// Whether the join succeeded: CONNECTED and the joinSuccess event delivered.
    var joined: Bool {
        connections.contains("connected/joinSuccess") && membership.contains { $0.hasPrefix("joinSuccess") }
    }

    /// Whether `uid`'s `kind` was last reported DECODING.
    func decoding(_ uid: UInt32, _ kind: MediaKind) -> Bool { states(uid, kind).last?.hasPrefix("decoding/") == true }

    /// The connection state changes as `state/reason`.
    var connections: [String] { connectionStates.map { "\($0.0)/\($0.1)" } }

    /// `uid`'s remote `kind` states as `state/reason`.
    func states(_ uid: UInt32, _ kind: MediaKind) -> [String] { remoteStates(uid, kind).map { "\($0.0)/\($0.1)" } }

    /// `uid`'s `kind` subscribe state changes as `old→new`.
    func subscribeStates(_ uid: UInt32, _ kind: MediaKind) -> [String] {
        events.compactMap { event in
            if case .remoteSubscribeStateChanged(uid, kind, let old, let new, _) = event {
                "\(old)→\(new)"
            } else {
                nil
            }
        }
    }

    var relayStates: [ChannelMediaRelayState] {
        events.compactMap { if case .channelMediaRelayStateChanged(let state) = $0 { state } else { nil } }
    }

    var relayEvents: [ChannelMediaRelayEvent] {
        events.compactMap { if case .channelMediaRelayEvent(let event) = $0 { event } else { nil } }
    }
}
