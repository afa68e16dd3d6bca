import Foundation
import MediaPipelineTesting
import Synchronization
import Testing

@testable import MediaPipeline

// End-to-end: engines in separate `pipebench join` processes meet in one Janus (the harness's,
// in a namespace of its own), publish the bundled samples and decode each other. What a process
// tells is read from its `--events-json` lines on standard output.

/// After a server stopped: its namespace is gone and so is every process it started.
private func expectNothingLeft(_ server: JanusServer, _ sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(server.leftovers().isEmpty, "left behind: \(server.leftovers())", sourceLocation: sourceLocation)
}

/// Seconds since `date`, as text with one decimal.
private func seconds(since date: Date) -> String { String(format: "%.1f", Date().timeIntervalSince(date)) }

@Suite("Janus channels: engines in separate processes through one Janus", .serialized)
struct JanusChannelTests {
    /// A, B and C of the first test: uids and variants.
    static let a: (uid: UInt32, variant: Int) = (11, 1)
    static let b: (uid: UInt32, variant: Int) = (22, 2)
    static let c: (uid: UInt32, variant: Int) = (33, 3)

    @Test(
        "three engines, two channels: joins, announcements, decoded pictures of the right user, mixes of the right voices, leave",
        .timeLimit(.minutes(2)))
    func threeEnginesTwoChannels() async throws {
        let references = try [Self.a.variant, Self.b.variant, Self.c.variant].reduce(into: [Int: Set<String>]()) {
            $0[$1] = try Reference.md5s(variant: $1)
        }
        let server = try JanusServer()
        defer { server.stop() }
        // Long durations: the processes end when the test has seen enough (SIGINT: a clean leave).
        let a = try JoinRun(
            "A", on: server,
            [
                "--uid", "11", "--variant", "1", "--publish", "channel-1", "--subscribe", "channel-2", "--duration",
                "60", "--md5",
            ])
        defer { a.stop() }
        let b = try JoinRun(
            "B", on: server, ["--uid", "22", "--variant", "2", "--publish", "channel-2", "--duration", "60", "--md5"])
        defer { b.stop() }
        let started = Date()
        let aJoined = await a.waitFor(within: 40) { $0.joined("channel-1") && $0.joined("channel-2") }
        let bJoined = await b.waitFor(within: 40) { $0.joined("channel-2") }
        try #require(aJoined && bJoined, "A and B joined:\n\(a.summary)\n\(b.summary)")
        print("JanusChannel: A and B joined \(seconds(since: started)) s after they started")

        let c = try JoinRun(
            "C", on: server,
            ["--uid", "33", "--variant", "3", "--subscribe", "channel-1,channel-2", "--duration", "60", "--md5"])
        defer { c.stop() }
        let cStarted = Date()
        let cJoined = await c.waitFor(within: 40) { $0.joined("channel-1") && $0.joined("channel-2") }
        try #require(cJoined, "C joined:\n\(c.summary)")
        let cJoinedAt = Date()
        print("JanusChannel: C joined both \(seconds(since: cStarted)) s after it started")

        // Enough pictures at both subscribers (15 fps: 60 pictures are 4 s of decoding).
        let enough = 60
        let cDecoding = await c.waitFor(within: 30) {
            $0.pictures(in: "channel-1", uid: 11).count >= enough
                && $0.pictures(in: "channel-2", uid: 22).count >= enough
        }
        let firstFramesAfter = Date().timeIntervalSince(cJoinedAt)
        let aDecoding = await a.waitFor(within: 10) { $0.pictures(in: "channel-2", uid: 22).count >= enough }
        #expect(cDecoding, "C decoded \(enough) pictures of each:\n\(c.summary)")
        #expect(aDecoding, "A decoded \(enough) pictures of B:\n\(a.summary)")
        print(
            "JanusChannel: C had \(enough) pictures of each publisher \(String(format: "%.1f", firstFramesAfter)) s after joining"
        )

        // A leaves (SIGINT: leaves its channels, exit 0): C is told 11 quit in channel-1.
        a.signal(SIGINT)
        let aStatus = await a.waitForExit(within: 15)
        #expect(aStatus == 0, "A's exit:\n\(a.summary)")
        let offline11 = await c.waitFor(within: 15) { !$0.events("userOffline", in: "channel-1", uid: 11).isEmpty }
        #expect(offline11, "C told that 11 left:\n\(c.summary)")
        b.signal(SIGINT)
        let bStatus = await b.waitForExit(within: 15)
        #expect(bStatus == 0, "B's exit:\n\(b.summary)")
        let offline22 = await c.waitFor(within: 15) { !$0.events("userOffline", in: "channel-2", uid: 22).isEmpty }
        #expect(offline22, "C told that 22 left:\n\(c.summary)")
        c.signal(SIGINT)
        let cStatus = await c.waitForExit(within: 15)
        #expect(cStatus == 0, "C's exit:\n\(c.summary)")

        // Joins with our uid, in the channels asked for only.
        for (run, uid, channels) in [
            (a, 11, ["channel-1", "channel-2"]), (b, 22, ["channel-2"]), (c, 33, ["channel-1", "channel-2"]),
        ] {
            let joins = run.events("joinSuccess")
            #expect(Set(joins.map(\.channel)) == Set(channels), "\(run.name)'s joins: \(joins.map(\.text))")
            #expect(joins.count == channels.count, "\(run.name)'s joins: \(joins.map(\.text))")
            #expect(joins.allSatisfy { $0.uid == UInt32(uid) }, "\(run.name)'s joins: \(joins.map(\.text))")
            #expect(run.events("error").isEmpty, "\(run.name)'s errors: \(run.events("error").map(\.text))")
            #expect(Set(run.events("leave").map(\.channel)) == Set(channels), "\(run.name) left: \(run.summary)")
        }

        // Announcements: publishers only, in their channel; nobody hears of itself or of the
        // audience (B is in channel-2 with A as audience there: not announced, although the
        // room notifies joins).
        let cJoins = c.events("userJoined").map { "\($0.channel)/\($0.uid ?? 0)" }
        #expect(Set(cJoins) == ["channel-1/11", "channel-2/22"], "C's userJoined: \(cJoins)")
        let aJoins = a.events("userJoined").map { "\($0.channel)/\($0.uid ?? 0)" }
        #expect(Set(aJoins) == ["channel-2/22"], "A's userJoined: \(aJoins)")
        let bJoins = b.events("userJoined").map { "\($0.channel)/\($0.uid ?? 0)" }
        #expect(bJoins.isEmpty, "B's userJoined: \(bJoins)")

        // Pictures: every MD5 is one of the publisher's own pictures and none of another's.
        func checkPictures(_ run: JoinRun, channel: String, uid: UInt32, variant: Int) {
            let pictures = run.pictures(in: channel, uid: uid)
            let digests = pictures.compactMap(\.md5)
            let own = references[variant]!
            let strangers = digests.filter { !own.contains($0) }
            #expect(
                strangers.isEmpty,
                "\(run.name), \(channel), uid \(uid): \(strangers.count) of \(digests.count) pictures are not variant \(variant)'s"
            )
            for (other, set) in references where other != variant {
                let swapped = digests.filter { set.contains($0) }
                #expect(
                    swapped.isEmpty,
                    "\(run.name), \(channel), uid \(uid): \(swapped.count) pictures are variant \(other)'s")
            }
            #expect(digests.count >= 40, "\(run.name), \(channel), uid \(uid): \(digests.count) pictures")
            print(
                "JanusChannel: \(run.name) decoded \(digests.count) pictures of \(uid) in \(channel), \(Set(digests).count) distinct"
            )
        }
        checkPictures(c, channel: "channel-1", uid: 11, variant: Self.a.variant)
        checkPictures(c, channel: "channel-2", uid: 22, variant: Self.b.variant)
        checkPictures(a, channel: "channel-2", uid: 22, variant: Self.b.variant)
        let cOthers = c.pictures().filter {
            !($0.channel == "channel-1" && $0.uid == 11) && !($0.channel == "channel-2" && $0.uid == 22)
        }
        #expect(cOthers.isEmpty, "C's other pictures: \(Set(cOthers.map { "\($0.channel)/\($0.uid ?? 0)" }))")
        let aOthers = a.pictures().filter { !($0.channel == "channel-2" && $0.uid == 22) }
        #expect(aOthers.isEmpty, "A's other pictures: \(Set(aOthers.map { "\($0.channel)/\($0.uid ?? 0)" }))")
        #expect(b.pictures().isEmpty, "B decoded pictures: \(b.pictures().count)")

        // Audio decoding and the order of events, per subscriber and channel.
        for (run, channel, uid) in [(c, "channel-1", UInt32(11)), (c, "channel-2", 22), (a, "channel-2", 22)] {
            let audio = run.events("remoteAudioStateChanged", in: channel, uid: uid).filter { $0.hasState("decoding") }
            #expect(!audio.isEmpty, "\(run.name), \(channel): no audio decoding for \(uid):\n\(run.summary)")
            let join = run.events("joinSuccess", in: channel).first
            let announced = run.events("userJoined", in: channel, uid: uid).first
            let video = run.events("remoteVideoStateChanged", in: channel, uid: uid).first { $0.hasState("decoding") }
            guard let join, let announced, let video else {
                Issue.record(
                    "\(run.name), \(channel): join, userJoined \(uid) and video decoding expected:\n\(run.summary)")
                continue
            }
            #expect(join.index < announced.index && announced.index < video.index, "\(run.name), \(channel) order")
            #expect(join.ms <= announced.ms && announced.ms <= video.ms, "\(run.name), \(channel) order (ms)")
            let firstPicture = run.pictures(in: channel, uid: uid).first
            #expect(
                firstPicture.map { $0.index > announced.index } ?? false,
                "\(run.name), \(channel): a picture before userJoined")
            print(
                "JanusChannel: \(run.name) in \(channel): userJoined \(uid) \(announced.ms - join.ms) ms after joinSuccess, "
                    + "video decoding \(video.ms - join.ms) ms, audio decoding \((audio.first?.ms ?? 0) - join.ms) ms"
            )
        }
        // The leave's reason.
        let quit = c.events("userOffline", in: "channel-1", uid: 11)
        #expect(
            quit.count == 1 && quit.allSatisfy { $0.text.contains("quit") }, "C's userOffline 11: \(quit.map(\.text))")
        #expect(c.events("userOffline", in: "channel-2", uid: 11).isEmpty)
        #expect(a.events("userOffline").isEmpty, "A's userOffline: \(a.events("userOffline").map(\.text))")

        // Every channel's mix (pipebench's channel WebM) holds the voices of that channel's
        // publishers and no other, and nobody hears itself: A's channel-1 and B's channel-2,
        // where each is the only publisher, are silent.
        let voices = try [Self.a.variant, Self.b.variant].reduce(into: [Int: [Double]]()) {
            $0[$1] = try Reference.speech(variant: $1)
        }
        let voiceRMS = voices.values.map { voice in
            (voice.reduce(0) { $0 + $1 * $1 } / Double(voice.count)).squareRoot()
        }
        for (run, channel, voice) in [
            (c, "channel-1", Optional(Self.a.variant)), (c, "channel-2", Self.b.variant),
            (a, "channel-2", Self.b.variant),
            (a, "channel-1", nil), (b, "channel-2", nil),
        ] {
            let mix = try channelMix(run, channel)
            let level = rms(mix[...])
            guard let voice else {
                #expect(
                    mix.count >= 48_000 && level < 0.01 * (voiceRMS.min() ?? 0),
                    "\(run.name) hears something in \(channel), where it is the only publisher: RMS \(level)")
                print(
                    "JanusChannel: \(run.name)'s \(channel) mix: \(mix.count) samples, RMS \(String(format: "%.1f", level))"
                )
                continue
            }
            // Three seconds from the second second of the mix on, located in each voice.
            let window = mix.dropFirst(48_000).prefix(3 * 48_000).map(Double.init)
            #expect(window.count == 3 * 48_000, "\(run.name)'s \(channel) mix: \(mix.count) samples")
            guard window.count == 3 * 48_000 else { continue }
            // Located in one-second pieces that may drift 60 ms from each other: the receiver's
            // jitter buffer stretches time while its delay settles (most under a loaded CI host).
            let own = envelopeCorrelationAllowingDrift(window, in: voices[voice]!)
            let other =
                voices.filter { $0.key != voice }.map { envelopeCorrelationAllowingDrift(window, in: $0.value) }
                .max() ?? 0
            #expect(own >= 0.8, "\(run.name)'s \(channel) mix against variant \(voice)'s speech: \(own)")
            #expect(
                other <= own - 0.3, "\(run.name)'s \(channel) mix is as close to another voice: \(other) (own \(own))")
            print(
                "JanusChannel: \(run.name)'s \(channel) mix: envelope correlation \(String(format: "%.3f", own)) with "
                    + "variant \(voice)'s speech, \(String(format: "%.3f", other)) with the other's")
        }

        server.stop()
        a.stop()
        b.stop()
        c.stop()
        expectNothingLeft(server)
    }

    /// Janus notices a publisher killed without a word only when its session times out (no
    /// ICE consent freshness in Debian's 1.1.2 configuration; the long-poll does not count as
    /// activity): measured 61.5 s with the default 60 s. The server here times sessions out after
    /// 30 s, the shortest that outlives pipebench's 25 s keepalives.
    static let killSessionTimeout = 30

    @Test("kill -9 of a publisher: the subscriber is told it went offline (dropped)", .timeLimit(.minutes(2)))
    func killedPublisher() async throws {
        let server = try JanusServer(sessionTimeout: Self.killSessionTimeout)
        defer { server.stop() }
        let b = try JoinRun(
            "B", on: server, ["--uid", "22", "--variant", "2", "--publish", "channel-2", "--duration", "100"])
        defer { b.stop() }
        let bJoined = await b.waitFor(within: 20) { $0.joined("channel-2") }
        try #require(bJoined, "B joined:\n\(b.summary)")
        let c = try JoinRun(
            "C", on: server,
            ["--uid", "33", "--variant", "3", "--subscribe", "channel-2", "--duration", "100", "--md5"])
        defer { c.stop() }
        let decoding = await c.waitFor(within: 20) { $0.pictures(in: "channel-2", uid: 22).count >= 15 }
        try #require(decoding, "C decodes B:\n\(c.summary)")

        kill(b.pid, SIGKILL)
        let killedAt = Date()
        let status = await b.waitForExit(within: 5)
        #expect(status == SIGKILL, "B's end: \(String(describing: status))")
        #expect(b.process.terminationReason == .uncaughtSignal)
        let bound = Double(Self.killSessionTimeout) + 10
        let offline = await c.waitFor(within: bound) { !$0.events("userOffline", in: "channel-2", uid: 22).isEmpty }
        let detection = Date().timeIntervalSince(killedAt)
        #expect(offline, "C told that 22 went within \(bound) s:\n\(c.summary)")
        #expect(detection > 2, "told after \(detection) s")
        let frozen = c.events("remoteVideoStateChanged", in: "channel-2", uid: 22).first { $0.hasState("frozen") }
        #expect(frozen != nil, "C's video of 22 froze")
        print(
            "JanusChannel: kill -9: C told userOffline 22 \(String(format: "%.1f", detection)) s after the kill "
                + "(session_timeout \(Self.killSessionTimeout) s); video frozen event: \(frozen?.text ?? "none")")
        let reasons = c.events("userOffline", in: "channel-2", uid: 22).map(\.text)
        #expect(reasons.count == 1, "C's userOffline 22: \(reasons)")
        // Its media had stopped long before Janus saw it go: dropped, not quit.
        #expect(reasons.allSatisfy { $0.contains("dropped") }, "C's userOffline 22: \(reasons)")

        c.signal(SIGINT)
        let cStatus = await c.waitForExit(within: 15)
        #expect(cStatus == 0, "C's exit:\n\(c.summary)")
        server.stop()
        b.stop()
        c.stop()
        expectNothingLeft(server)
    }

    @Test(
        "HTTPS: a Janus serving its API over TLS is joined when its authority is trusted; with the system's authorities alone the join fails in one line naming the certificate",
        .timeLimit(.minutes(2)))
    func https() async throws {
        let server = try JanusServer(https: true)
        defer { server.stop() }
        let authority = try #require(server.authorityCertificatePath)
        #expect(server.insideURL.hasPrefix("https://"))
        let trusted = try JoinRun(
            "trusted", on: server,
            ["--uid", "61", "--publish", "channel-1", "--trusted-certificates", authority, "--duration", "3"])
        defer { trusted.stop() }
        let untrusted = try JoinRun(
            "untrusted", on: server, ["--uid", "62", "--publish", "channel-1", "--duration", "30"])
        defer { untrusted.stop() }
        let missing = try JoinRun(
            "missing file", on: server,
            ["--publish", "channel-1", "--trusted-certificates", authority + ".absent", "--duration", "30"])
        defer { missing.stop() }

        let trustedStatus = await trusted.waitForExit(within: 20)
        #expect(trustedStatus == 0, "trusted:\n\(trusted.summary)")
        #expect(trusted.events("joinSuccess", in: "channel-1", uid: 61).count == 1, "trusted:\n\(trusted.summary)")
        #expect(trusted.events("leave", in: "channel-1").count == 1, "trusted:\n\(trusted.summary)")
        #expect(trusted.events("error").isEmpty, "trusted:\n\(trusted.summary)")

        for (run, words) in [(untrusted, "SSL certificate problem"), (missing, "trustedCertificatesPath")] {
            let status = await run.waitForExit(within: 10)
            #expect(status == 1, "\(run.name): exit \(String(describing: status)):\n\(run.summary)")
            let final = run.stderr.split(separator: "\n").filter { $0.hasPrefix("pipebench: error:") }
            #expect(final.count == 1 && final[0].contains(words), "\(run.name): \(run.stderr)")
            #expect(run.events("joinSuccess").isEmpty, "\(run.name) joined")
            print("JanusChannel: https \(run.name): \(final.first ?? "no error line")")
        }
        server.stop()
        for run in [trusted, untrusted, missing] { run.stop() }
        expectNothingLeft(server)
    }

    @Test("faults: Janus not running, no such room, pins, a uid taken", .timeLimit(.minutes(2)))
    func faults() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        // All at once (they do not meet: different rooms, or refused).
        let unreachable = try JoinRun(
            "unreachable", on: server, url: "http://127.0.0.1:\(JanusServer.port + 1)/janus",
            ["--publish", "channel-1", "--duration", "30"])
        defer { unreachable.stop() }
        let noRoom = try JoinRun("no room", on: server, ["--subscribe", "no-such-room", "--duration", "30"])
        defer { noRoom.stop() }
        let noPin = try JoinRun("no pin", on: server, ["--subscribe", "pinned", "--duration", "30"])
        defer { noPin.stop() }
        let wrongPin = try JoinRun(
            "wrong pin", on: server, ["--subscribe", "pinned", "--pin", "4321", "--duration", "30"])
        defer { wrongPin.stop() }
        let rightPin = try JoinRun(
            "right pin", on: server, ["--uid", "55", "--publish", "pinned", "--pin", "1234", "--duration", "3"])
        defer { rightPin.stop() }
        let first = try JoinRun("first 44", on: server, ["--uid", "44", "--publish", "channel-1", "--duration", "30"])
        defer { first.stop() }

        /// Exit 1 within `seconds` with one error line naming `channel` and `code`.
        func expectFailure(_ run: JoinRun, within seconds: Double, channel: String, code: String) async {
            let status = await run.waitForExit(within: seconds)
            let elapsed = Date().timeIntervalSince(run.startedAt)
            #expect(status == 1, "\(run.name): exit \(String(describing: status)) after \(elapsed) s:\n\(run.summary)")
            let stderr = run.stderr
            let final = stderr.split(separator: "\n").filter { $0.hasPrefix("pipebench: error:") }
            #expect(final.count == 1, "\(run.name): stderr \(stderr)")
            #expect(
                final.first.map { $0.contains("'\(channel)'") && (code.isEmpty || $0.contains(code)) } ?? false,
                "\(run.name): \(stderr)")
            #expect(run.events("joinSuccess").isEmpty, "\(run.name) joined")
            print(
                "JanusChannel: \(run.name): exit \(status.map(String.init) ?? "none") after \(String(format: "%.1f", elapsed)) s: \(final.first ?? "")"
            )
        }
        await expectFailure(noRoom, within: 6, channel: "no-such-room", code: "ERR_JOIN_CHANNEL_REJECTED (-17)")
        // A missing pin (Janus's 429, missing element) is a missing token: -110, as a wrong one.
        await expectFailure(noPin, within: 6, channel: "pinned", code: "ERR_INVALID_TOKEN (-110)")
        await expectFailure(wrongPin, within: 6, channel: "pinned", code: "ERR_INVALID_TOKEN (-110)")
        // Connection refused: the client retries for about 3 s, then gives up.
        await expectFailure(unreachable, within: 6, channel: "channel-1", code: "")

        // The right pin joins, publishes, and ends at --duration with a clean leave.
        let rightStatus = await rightPin.waitForExit(within: 15)
        #expect(rightStatus == 0, "right pin:\n\(rightPin.summary)")
        #expect(rightPin.events("joinSuccess", in: "pinned", uid: 55).count == 1, "right pin:\n\(rightPin.summary)")
        #expect(rightPin.events("leave", in: "pinned").count == 1, "right pin:\n\(rightPin.summary)")
        #expect(rightPin.events("error").isEmpty, "right pin:\n\(rightPin.summary)")

        // A uid taken in the room: the second publisher is refused, the first stays.
        let firstJoined = await first.waitFor(within: 20) { $0.joined("channel-1") }
        try #require(firstJoined, "first 44:\n\(first.summary)")
        let second = try JoinRun(
            "second 44", on: server, ["--uid", "44", "--publish", "channel-1", "--duration", "30"])
        defer { second.stop() }
        await expectFailure(second, within: 6, channel: "channel-1", code: "ERR_JOIN_CHANNEL_REJECTED (-17)")
        #expect(first.isRunning && first.events("error").isEmpty, "first 44:\n\(first.summary)")
        first.signal(SIGINT)
        let firstStatus = await first.waitForExit(within: 15)
        #expect(firstStatus == 0, "first 44:\n\(first.summary)")

        server.stop()
        for run in [unreachable, noRoom, noPin, wrongPin, rightPin, first, second] { run.stop() }
        expectNothingLeft(server)
    }

    @Test(
        "mutes through Janus: a publisher's local mutes reach the subscriber as remote mutes, then unmutes, in order",
        .timeLimit(.minutes(2)))
    func mutes() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let c = try JoinRun("C", on: server, ["--uid", "33", "--subscribe", "channel-1", "--duration", "60"])
        defer { c.stop() }
        try #require(await c.waitFor(within: 40) { $0.joined("channel-1") }, "C joined:\n\(c.summary)")
        // Live encoding: an unmuted video comes back at the next keyframe asked for.
        let a = try JoinRun(
            "A", on: server,
            [
                "--uid", "11", "--publish", "channel-1", "--encode", "--duration", "60", "--at", "3:mute-audio",
                "--at", "5:unmute-audio", "--at", "6:mute-video", "--at", "8:unmute-video",
            ])
        defer { a.stop() }
        func states(_ kind: String) -> [String] {
            c.events("remote\(kind)StateChanged", in: "channel-1", uid: 11).map(\.text)
        }
        // Audio: decoding, stopped for the mute, decoding again after the unmute; then video.
        let seen = await c.waitFor(within: 40) { _ in
            let audio = states("Audio")
            let video = states("Video")
            return audio.contains { $0.contains("remoteUnmuted") && $0.contains("decoding") }
                && video.contains { $0.contains("remoteUnmuted") && $0.contains("decoding") }
        }
        #expect(seen, "C's states of 11:\n\(c.summary)")
        for kind in ["Audio", "Video"] {
            let texts = states(kind)
            let firstDecoding = texts.firstIndex { $0.contains("decoding") }
            let muted = texts.firstIndex { $0.contains("stopped") && $0.contains("remoteMuted") }
            let unmuted = texts.lastIndex { $0.contains("decoding") && $0.contains("remoteUnmuted") }
            #expect(firstDecoding != nil && muted != nil && unmuted != nil, "\(kind) states: \(texts)")
            if let firstDecoding, let muted, let unmuted {
                #expect(firstDecoding < muted && muted < unmuted, "\(kind) states in order: \(texts)")
            }
        }
        // The mutes are not a departure.
        #expect(c.events("userOffline", in: "channel-1", uid: 11).isEmpty, "\(c.summary)")
        a.signal(SIGINT)
        _ = await a.waitForExit(within: 15)
        c.signal(SIGINT)
        _ = await c.waitForExit(within: 15)
        server.stop()
        a.stop()
        c.stop()
        expectNothingLeft(server)
    }

    @Test(
        "relay through Janus: the published stream reaches another room, each picture the publisher's own",
        .timeLimit(.minutes(2)))
    func relay() async throws {
        let reference = try Reference.md5s(variant: Self.a.variant)
        let server = try JanusServer()
        defer { server.stop() }
        let c = try JoinRun("C", on: server, ["--uid", "33", "--subscribe", "channel-2", "--duration", "60", "--md5"])
        defer { c.stop() }
        try #require(await c.waitFor(within: 40) { $0.joined("channel-2") }, "C joined:\n\(c.summary)")
        let a = try JoinRun(
            "A", on: server,
            [
                "--uid", "11", "--variant", "\(Self.a.variant)", "--publish", "channel-1", "--relay", "channel-2",
                "--duration", "60",
            ])
        defer { a.stop() }
        // The relay joins channel-2 with a uid of its own (0: drawn), and C subscribes to it.
        let decoded = await c.waitFor(within: 40) { $0.pictures(in: "channel-2").count >= 45 }
        #expect(decoded, "C decoded the relayed pictures:\n\(c.summary)")
        let relayed = c.events("userJoined", in: "channel-2").compactMap(\.uid)
        #expect(relayed.count == 1, "one relayed user in channel-2: \(relayed)")
        let pictures = c.pictures(in: "channel-2")
        let foreign = pictures.filter { !reference.contains($0.md5 ?? "") }
        #expect(foreign.isEmpty, "\(foreign.count) of \(pictures.count) relayed pictures are not the publisher's")
        #expect(
            a.events("channelMediaRelayStateChanged").contains { $0.text.contains("running") },
            "A's relay states: \(a.events("channelMediaRelayStateChanged").map(\.text))")
        a.signal(SIGINT)
        _ = await a.waitForExit(within: 15)
        c.signal(SIGINT)
        _ = await c.waitForExit(within: 15)
        server.stop()
        a.stop()
        c.stop()
        expectNothingLeft(server)
    }

    /// The uid the engine whose link is cut runs as.
    static let cutUser: UInt32 = 4242

    @Test(
        "an outage of the engine's link: RECONNECTING, then CONNECTED and frames again within 2 s of the link's return",
        .timeLimit(.minutes(2)), arguments: [10.0, 30.0])
    func outage(outageSeconds: Double) async throws {
        let server = try JanusServer()
        defer { server.stop() }
        // Live encoding: after the outage a keyframe is asked for and sent at once.
        let a = try JoinRun("A", on: server, ["--uid", "11", "--publish", "channel-1", "--encode", "--duration", "90"])
        defer { a.stop() }
        try #require(await a.waitFor(within: 40) { $0.joined("channel-1") }, "A joined:\n\(a.summary)")
        let b = try JoinRun(
            "B", on: server, asUser: Self.cutUser,
            [
                "--uid", "22", "--subscribe", "channel-1", "--duration", "90", "--md5",
            ])
        defer { b.stop() }
        let flowing = await b.waitFor(within: 40) { $0.pictures(in: "channel-1", uid: 11).count >= 15 }
        try #require(flowing, "B decoding A:\n\(b.summary)\n\(b.stderr)")
        func states() -> [String] { b.events("connectionStateChanged", in: "channel-1").map(\.text) }
        // The cut: all that B sends (its uid), and what comes to its media ports (the kernel
        // chose them).
        let ports = try await PortLoss(server: server, run: b).ports.map(String.init).joined(separator: ",")
        for rule in [
            ["-A", "OUTPUT", "-m", "owner", "--uid-owner", "\(Self.cutUser)", "-j", "DROP"],
            ["-A", "INPUT", "-p", "udp", "-m", "multiport", "--dports", ports, "-j", "DROP"],
        ] {
            let result = try server.run(["iptables"] + rule)
            try #require(result.status == 0, "iptables \(rule): \(result.stderr)")
        }
        let cutAt = Date()
        let reconnecting = await b.waitFor(within: 8) { _ in states().contains { $0.contains("reconnecting") } }
        #expect(reconnecting, "B's states: \(states())")
        print("JanusChannel: outage \(Int(outageSeconds)) s: RECONNECTING \(seconds(since: cutAt)) s after the cut")
        // The outage lasts its length: a wait on the clock is the scenario here, not a guess.
        try await Task.sleep(
            for: .milliseconds(Int64(outageSeconds * 1000) - Int64(Date().timeIntervalSince(cutAt) * 1000)))
        let before = b.pictures(in: "channel-1", uid: 11).count
        let flush = try server.run(["iptables", "-F"])
        try #require(flush.status == 0, "iptables -F: \(flush.stderr)")
        let restoredAt = Date()
        let back = await b.waitFor(within: 10) { $0.pictures(in: "channel-1", uid: 11).count > before }
        let frameAfter = Date().timeIntervalSince(restoredAt)
        let connected = await b.waitFor(within: 10) { _ in
            states().last?.contains("connected") == true && states().last?.contains("reconnecting") == false
        }
        print(
            "JanusChannel: outage \(Int(outageSeconds)) s: a frame \(String(format: "%.2f", frameAfter)) s after the link "
                + "returned; states \(states().map { $0.prefix(70) })")
        #expect(back && frameAfter <= 2.0, "a frame \(frameAfter) s after the link returned:\n\(b.summary)")
        #expect(connected, "CONNECTED again: \(states())")
        #expect(b.events("userOffline").isEmpty, "B's userOffline: \(b.events("userOffline").map(\.text))")
        #expect(!states().contains { $0.contains("failed") }, "\(states())")
        b.signal(SIGINT)
        #expect(await b.waitForExit(within: 15) == 0, "B's exit:\n\(b.summary)")
        a.signal(SIGINT)
        _ = await a.waitForExit(within: 15)
        server.stop()
        a.stop()
        b.stop()
        expectNothingLeft(server)
    }

    @Test(
        "Janus killed for good: RECONNECTING at once, then FAILED after the reconnect timeout, and the client ends",
        .timeLimit(.minutes(2)))
    func janusKilled() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let a = try JoinRun(
            "A", on: server,
            ["--uid", "11", "--publish", "channel-1", "--encode", "--reconnect-timeout", "6", "--duration", "90"])
        defer { a.stop() }
        // Killed once A publishes both streams: its offer answered, no request of its own pending.
        // (Once in a CI run, killed right after the join, RECONNECTING came 10 s late: a request
        // waiting for its answer may hold the detection back. Not reproduced in 5 runs since.)
        let publishing = await a.waitFor(within: 40) { run in
            run.events("localPublishStateChanged", in: "channel-1").filter {
                $0.text.contains("new: PublishState.published")
            }
            .count >= 2
        }
        try #require(publishing, "A publishes:\n\(a.summary)")
        func states() -> [String] { a.events("connectionStateChanged", in: "channel-1").map(\.text) }
        server.killJanus()
        let killedAt = Date()
        let reconnecting = await a.waitFor(within: 6, failingOnError: false) { _ in
            states().contains { $0.contains("reconnecting") }
        }
        let reconnectingAfter = Date().timeIntervalSince(killedAt)
        let failed = await a.waitFor(within: 20, failingOnError: false) { _ in
            states().contains { $0.contains("failed") }
        }
        let failedAfter = Date().timeIntervalSince(killedAt)
        print(
            "JanusChannel: Janus killed: RECONNECTING after \(String(format: "%.1f", reconnectingAfter)) s, FAILED after "
                + "\(String(format: "%.1f", failedAfter)) s (timeout 6 s)")
        #expect(reconnecting, "\(states())")
        #expect(failed && failedAfter >= 6 && failedAfter <= 12, "FAILED after \(failedAfter) s: \(states())")
        // The client gives up: it exits with the channel's failure.
        let status = await a.waitForExit(within: 15)
        #expect(status == 1, "A's exit \(String(describing: status)):\n\(a.stderr)")
        #expect(a.stderr.contains("channel 'channel-1'"), "\(a.stderr)")
        server.stop()
        a.stop()
        expectNothingLeft(server)
    }
}

/// The mix of `channel` in `run`'s channel WebM (`pipebench join` writes one per joined
/// channel), decoded by ffmpeg to mono 48 kHz.
private func channelMix(_ run: JoinRun, _ channel: String) throws -> [Int16] {
    let webm = run.folder.file("\(channel).webm")
    let pcm = run.folder.file("mix-\(channel).pcm")
    try reference(
        "ffmpeg",
        ["-nostdin", "-v", "error", "-y", "-i", webm, "-map", "0:a", "-f", "s16le", "-ac", "1", "-ar", "48000", pcm])
    return try rawInt16(pcm)
}
