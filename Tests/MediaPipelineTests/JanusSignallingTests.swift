import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

/// What a stream delivered so far, drained by a task of its own.
private final class Collected<Element: Sendable>: Sendable {
    private final class Storage: Sendable {
        let items = LockedValue<[Element]>([])
    }
    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let storage = self.storage
        task = Task { for await item in stream { storage.items.withLock { $0.append(item) } } }
    }

    deinit { task.cancel() }

    var all: [Element] { storage.items.withLock { $0 } }

    /// Waits up to `seconds` for an item matching `test`.
    func first(within seconds: Double, where test: (Element) -> Bool) async -> Element? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let found = all.first(where: test) { return found }
            if Date() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// A client of `server` (or of `url`), with a short request timeout.
private func client(
    _ server: JanusServer? = nil, url: String? = nil, keepalive: Duration? = .seconds(25)
) -> JanusSignalling {
    var configuration = JanusSignalling.Configuration(url: url ?? server?.url ?? "")
    configuration.requestTimeout = .seconds(5)
    configuration.connectTimeout = .seconds(1)
    configuration.keepaliveInterval = keepalive
    return JanusSignalling(configuration: configuration)
}

private func pluginCode<T>(of operation: () async throws -> T) async -> Int? {
    do {
        _ = try await operation()
        return nil
    } catch let error as JanusError {
        return error.pluginCode
    } catch {
        return nil
    }
}

@Suite("Janus signalling", .serialized, .timeLimit(.minutes(5)))
struct JanusSignallingTests {
    @Test("Janus not running: a typed error at once", .timeLimit(.minutes(1)))
    func janusUnreachable() async throws {
        let signalling = client(url: "http://127.0.0.1:\(try kernelTCPPort())/janus")
        let started = Date()
        var caught: JanusError?
        do { try await signalling.create() } catch let error as JanusError { caught = error }
        let elapsed = Date().timeIntervalSince(started)
        await signalling.close()
        guard case .unreachable = caught else {
            Issue.record("expected unreachable, got \(String(describing: caught))")
            return
        }
        // A refused connection fails at once; a loaded machine adds to it, a hang would not end
        // within the request timeout (5 s here).
        #expect(elapsed < 4.5, "took \(elapsed) s")
    }

    @Test("join as publisher: joined with our id; others learn of us only when we publish", .timeLimit(.minutes(1)))
    func joinPublisher() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let alice = client(server)
        let bob = client(server)
        try await alice.create()
        let aliceHandle = try await alice.attach()
        let aliceEvents = Collected(aliceHandle.events)
        let joined = try await aliceHandle.joinAsPublisher(
            room: .string("channel-1"), id: .string("alice"), display: "Alice")
        #expect(joined.id == .string("alice"))
        #expect(joined.room == .string("channel-1"))
        #expect(joined.publishers.isEmpty)
        #expect(joined.privateID != nil)

        try await bob.create()
        let bobHandle = try await bob.attach()
        let bobJoined = try await bobHandle.joinAsPublisher(room: .string("channel-1"), display: "Bob")
        // Alice publishes nothing: Bob is not told of her, and she is not told of him.
        #expect(bobJoined.publishers.isEmpty)
        guard case .string(let bobID) = bobJoined.id else {
            Issue.record("a string id expected with string_ids: \(bobJoined.id)")
            return
        }
        #expect(!bobID.isEmpty)
        #expect(await aliceEvents.first(within: 1) { _ in true } == nil)

        // Subscribing to a participant that does not publish: no such feed.
        let subscriber = try await bob.attach()
        let code = await pluginCode {
            try await subscriber.joinAsSubscriber(
                room: .string("channel-1"), feeds: [VideoRoomFeed(.string("alice"))], privateID: bobJoined.privateID)
        }
        #expect(code == JanusError.VideoRoomCode.noSuchFeed)

        // Leaving is acknowledged with a plugin event.
        let left = try await bobHandle.leave()
        #expect(left.data["leaving"]?.stringValue == "ok")
        await alice.close()
        await bob.close()
    }

    @Test("notify_joining: others are told of a participant that joins", .timeLimit(.minutes(1)))
    func notifyJoining() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let alice = client(server)
        let bob = client(server)
        try await alice.create()
        let aliceHandle = try await alice.attach()
        let aliceEvents = Collected(aliceHandle.events)
        _ = try await aliceHandle.joinAsPublisher(room: .string("channel-2"), id: .string("alice"))
        try await bob.create()
        _ = try await bob.attach().joinAsPublisher(room: .string("channel-2"), id: .string("bob"), display: "Bob")
        let joining = await aliceEvents.first(within: 3) { event in
            if case .plugin(let data, _) = event { return data["joining"] != nil }
            return false
        }
        guard case .plugin(let data, _) = joining else {
            Issue.record("no joining event: \(aliceEvents.all)")
            await alice.close()
            await bob.close()
            return
        }
        #expect(JanusID(data["joining"]?["id"]) == .string("bob"))
        #expect(data["joining"]?["display"]?.stringValue == "Bob")
        await alice.close()
        await bob.close()
    }

    @Test("refusals carry the plugin's code: 426, 436, 433", .timeLimit(.minutes(1)))
    func refusals() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let first = client(server)
        let second = client(server)
        try await first.create()
        try await second.create()
        let a = try await first.attach()
        let b = try await second.attach()
        #expect(await pluginCode { try await a.joinAsPublisher(room: .string("no-such-room")) } == 426)
        _ = try await a.joinAsPublisher(room: .string("channel-1"), id: .string("carol"))
        #expect(
            await pluginCode { try await b.joinAsPublisher(room: .string("channel-1"), id: .string("carol")) } == 436)
        #expect(await pluginCode { try await b.joinAsPublisher(room: .string("pinned"), pin: "0000") } == 433)
        // No pin at all is a missing element (429), not unauthorized.
        #expect(await pluginCode { try await b.joinAsPublisher(room: .string("pinned")) } == 429)
        let joined = try await b.joinAsPublisher(room: .string("pinned"), id: .string("dave"), pin: "1234")
        #expect(joined.room == .string("pinned"))
        // A number where the room ids are strings.
        #expect(await pluginCode { try await b.joinAsPublisher(room: .number(1234)) } != nil)
        await first.close()
        await second.close()
    }

    @Test("numeric room and participant ids", .timeLimit(.minutes(1)))
    func numericIDs() async throws {
        let server = try JanusServer(stringIDs: false)
        defer { server.stop() }
        let signalling = client(server)
        try await signalling.create()
        let joined = try await signalling.attach().joinAsPublisher(room: .number(1001), id: .number(42))
        #expect(joined.id == .number(42))
        #expect(joined.room == .number(1001))
        await signalling.close()
    }

    @Test("keepalives keep a session past session_timeout; without them Janus times it out", .timeLimit(.minutes(1)))
    func keepalive() async throws {
        let server = try JanusServer(sessionTimeout: 5)
        defer { server.stop() }
        let kept = client(server, keepalive: .seconds(2))
        let left = client(server, keepalive: nil)
        try await kept.create()
        try await left.create()
        let keptNews = Collected(kept.sessionEvents)
        let leftNews = Collected(left.sessionEvents)
        let leftHandle = try await left.attach()
        let leftEvents = Collected(leftHandle.events)
        let started = Date()
        // The long-poll runs all along on both: it does not count as activity.
        let news = await leftNews.first(within: 15) { _ in true }
        // Janus tells a timeout on the long-poll waiting at that moment; when the poll is between
        // two requests then (a slow client: ThreadSanitizer), the event goes with the session and
        // the next poll is answered 458, "no such session". Either way the session ended.
        switch news {
        case .timedOut: break
        case .lost(.api(code: 458, _)): break
        default: Issue.record("session news: \(leftNews.all)")
        }
        #expect(Date().timeIntervalSince(started) > 4)
        var afterwards: JanusError?
        do { _ = try await leftHandle.joinAsPublisher(room: .string("channel-1")) } catch let error as JanusError {
            afterwards = error
        }
        if case .sessionGone = afterwards {
        } else {
            Issue.record("after the timeout: \(String(describing: afterwards))")
        }
        // The handle is told nothing, or that Janus detached it with the session.
        #expect(leftEvents.all.allSatisfy { $0 == .detached }, "handle events: \(leftEvents.all)")

        try await Task.sleep(for: .seconds(max(0, 8 - Date().timeIntervalSince(started))))
        #expect(keptNews.all.isEmpty)
        let joined = try await kept.attach().joinAsPublisher(room: .string("channel-1"), id: .string("kept"))
        #expect(joined.id == .string("kept"))
        await kept.close()
        await left.close()
    }

    @Test("destroy ends the session at Janus and closes the client", .timeLimit(.minutes(1)))
    func destroy() async throws {
        let server = try JanusServer()
        defer { server.stop() }
        let signalling = client(server)
        let session = try await signalling.create()
        let handle = try await signalling.attach()
        let events = Collected(handle.events)
        _ = try await handle.joinAsPublisher(room: .string("channel-1"))
        try await signalling.destroy()
        var after: JanusError?
        do { _ = try await signalling.attach() } catch let error as JanusError { after = error }
        #expect(after == .closed)
        // Janus no longer knows the session (asked from inside the namespace).
        let poll = try server.run([
            "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "\(server.insideURL)/\(session)?maxev=1",
        ])
        #expect(poll.stdout == "404")
        _ = events.all
        await signalling.close()
    }

    @Test("the harness leaves no namespace behind", .timeLimit(.minutes(1)))
    func harnessCleansUp() throws {
        var server: JanusServer? = try JanusServer()
        let name = server!.namespace
        #expect(JanusServer.existingNamespaces().contains(name))
        #expect(try server!.run(["ip", "-4", "-o", "addr", "show", "jv0"]).stdout.contains(JanusServer.mediaAddress))
        server = nil
        #expect(!JanusServer.existingNamespaces().contains(name))
    }
}

/// Decoding and encoding of Janus messages, from fixtures (no server).
@Suite("Janus messages", .timeLimit(.minutes(5)))
struct JanusMessageTests {
    private func message(_ text: String) throws -> JanusMessage { try JanusMessage(JSONValue.parse(Data(text.utf8))) }

    @Test func joinedWithStringIDs() throws {
        let event = try message(
            """
            {"janus": "event", "session_id": 1116809066343116, "transaction": "c", "sender": 2818121613381980,
             "plugindata": {"plugin": "janus.plugin.videoroom", "data": {"videoroom": "joined", "room": "channel-1",
             "description": "channel-1", "id": "alice", "private_id": 1862164739, "publishers": [
             {"id": "bob", "display": "Bob", "streams": [{"type": "audio", "mindex": 0, "mid": "0", "codec": "opus"},
             {"type": "video", "mindex": 1, "mid": "1", "codec": "vp8", "disabled": true}]}]}}}
            """)
        #expect(event.kind == "event")
        #expect(event.transaction == "c")
        #expect(event.sender == 2_818_121_613_381_980)
        #expect(event.pluginError == nil)
        let joined = try VideoRoomJoined(try #require(event.pluginData))
        #expect(joined.room == .string("channel-1"))
        #expect(joined.id == .string("alice"))
        #expect(joined.privateID == 1_862_164_739)
        #expect(joined.publishers.count == 1)
        #expect(joined.publishers.first?.id == .string("bob"))
        #expect(joined.publishers.first?.display == "Bob")
        #expect(joined.publishers.first?.streams.map(\.codec) == ["opus", "vp8"])
        #expect(joined.publishers.first?.streams.map(\.disabled) == [false, true])
    }

    @Test func joinedWithNumericIDsAndJSEP() throws {
        let event = try message(
            """
            {"janus":"event","sender":7,"transaction":"t","plugindata":{"plugin":"janus.plugin.videoroom",
             "data":{"videoroom":"joined","room":1234,"id":9007199254740991,"private_id":5,"publishers":[]}},
             "jsep":{"type":"answer","sdp":"v=0\\r\\n"}}
            """)
        let joined = try VideoRoomJoined(try #require(event.pluginData))
        #expect(joined.room == .number(1234))
        #expect(joined.id == .number(9_007_199_254_740_991))
        #expect(event.jsep == JanusJSEP(type: "answer", sdp: "v=0\r\n"))
    }

    @Test func pluginErrors() throws {
        let event = try message(
            """
            {"janus":"event","sender":1,"transaction":"d","plugindata":{"plugin":"janus.plugin.videoroom",
             "data":{"videoroom":"event","error_code":426,"error":"No such room (nope)"}}}
            """)
        #expect(event.pluginError == .plugin(code: 426, message: "No such room (nope)"))
        let core = try message(
            #"{"janus": "error", "session_id": 9999, "transaction": "x", "error": {"code": 458, "reason": "No such session 9999"}}"#
        )
        #expect(core.error?.code == 458)
        #expect(core.error?.reason == "No such session 9999")
    }

    @Test func coreEvents() throws {
        #expect(try message(#"{"janus":"webrtcup","session_id":1,"sender":2}"#).handleEvent == .webrtcUp)
        #expect(
            try message(#"{"janus":"media","session_id":1,"sender":2,"mid":"1","type":"video","receiving":true}"#)
                .handleEvent == .media(type: "video", mid: "1", receiving: true))
        #expect(
            try message(#"{"janus":"hangup","session_id":1,"sender":2,"reason":"DTLS alert"}"#).handleEvent
                == .hangup(reason: "DTLS alert"))
        #expect(
            try message(
                #"{"janus":"slowlink","session_id":1,"sender":2,"mid":"0","media":"audio","uplink":true,"lost":12}"#
            )
            .handleEvent == .slowLink(uplink: true, mid: "0", lost: 12))
        #expect(try message(#"{"janus":"detached","session_id":1,"sender":2}"#).handleEvent == .detached)
        #expect(try message(#"{"janus":"timeout","session_id":1}"#).handleEvent == nil)
        #expect(throws: JanusError.self) { try message(#"{"nothing": 1}"#) }
    }

    @Test func valuesRoundTrip() throws {
        let value: JSONValue = .object([
            "request": .string("join"), "room": .string("channel-1"), "ptype": .string("subscriber"),
            "streams": .array([VideoRoomFeed(.number(7), mid: "1").json]), "private_id": .int(5), "audio": .bool(true),
            "ratio": .double(0.5), "none": .null,
        ])
        let text = String(decoding: try value.encoded(), as: UTF8.self)
        #expect(text.contains(#""streams":[{"feed":7,"mid":"1"}]"#))
        #expect(try JSONValue.parse(Data(text.utf8)) == value)
        #expect(JanusID(.string("x")) == .string("x"))
        #expect(JanusID(.int(3)) == .number(3))
        #expect(JanusID(.bool(true)) == nil)
    }
}
