import Foundation

/// A client of the Janus API over HTTP long-poll: one Janus session, its plugin handles, its
/// event loop and its keepalives.
///
/// `create()` makes the session; `attach(plugin:)` gives a ``JanusHandle`` whose `events` carry
/// what Janus tells about it. Requests to a plugin (``JanusHandle/message(_:jsep:)``) are
/// answered by Janus with an `ack`, then by an event with the same transaction delivered through
/// the long-poll: the call returns that event, or throws the plugin's refusal
/// (``JanusError/plugin(code:message:)``). Every request ends within
/// ``Configuration/requestTimeout``. When Janus cannot be reached, ``sessionEvents`` says
/// ``JanusSessionEvent/interrupted`` and the event loop keeps trying (``JanusSessionEvent/restored``
/// when it answers again) until the server's session timeout has passed. When the session is
/// gone (Janus timed it out, forgot it, or was unreachable for longer than
/// ``Configuration/sessionTimeout``), ``sessionEvents`` says so and ends, pending requests throw
/// ``JanusError/sessionGone(_:)`` and the handles' event streams end: make a new client to join
/// again. Call ``close()`` (or ``destroy()``) when done: it ends the session and the HTTP client.
///
/// Signalling is not a per-packet path: the state lives in this actor.
actor JanusSignalling {
    /// Where Janus is and how long to wait for it.
    struct Configuration: Sendable {
        /// The Janus API base URL, e.g. `http://127.0.0.1:8088/janus`.
        var url: String
        /// A token, when Janus runs with token authentication.
        var token: String?
        /// The API secret, when Janus has one.
        var apiSecret: String?
        /// How long a request may take, its plugin event included.
        var requestTimeout: Duration = .seconds(10)
        /// How long connecting may take (a refused connection fails at once).
        var connectTimeout: Duration = .seconds(3)
        /// The certificate authorities an `https` server is checked against (PEM); nil: the system's.
        var trustedCertificatesPath: String?
        /// How often the session is kept alive; nil sends no keepalives (Janus's default
        /// `session_timeout` is 60 s; long-polls do not count as activity).
        var keepaliveInterval: Duration? = .seconds(25)
        /// The server's `session_timeout`: an unreachable Janus has dropped the session after this
        /// long without a request from us.
        var sessionTimeout: Duration = .seconds(60)
        /// The most events one long-poll returns (`maxev`).
        var eventsPerPoll = 10

        /// A configuration for the Janus API at `url`.
        init(url: String, token: String? = nil, apiSecret: String? = nil) {
            self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
            self.token = token
            self.apiSecret = apiSecret
        }
    }

    /// The configuration given.
    nonisolated let configuration: Configuration
    /// Session-level news: at most one event (timed out or lost), then the stream ends.
    nonisolated let sessionEvents: AsyncStream<JanusSessionEvent>
    private let sessionContinuation: AsyncStream<JanusSessionEvent>.Continuation
    private let http: JanusHTTP

    /// The session's id, once created.
    private(set) var sessionID: UInt64?
    private var handles: [UInt64: AsyncStream<JanusEvent>.Continuation] = [:]
    /// Transactions whose event we wait for; their event when it came first.
    private var expected: [String: JanusMessage?] = [:]
    private var waiters: [String: CheckedContinuation<JanusMessage, any Error>] = [:]
    private var pollTask: Task<Void, Never>?
    private var keepaliveTask: Task<Void, Never>?
    /// Why requests fail from now on (closed or session gone).
    private var ended: JanusError?
    /// Set once the session is being destroyed on purpose: the long-poll's 404 that may come
    /// before the destroy's answer is that destroy, not a lost session.
    private var destroying = false
    private var transactionSerial = 0
    private let transactionPrefix = String(UInt32.random(in: .min ... .max), radix: 36)

    /// A client for the Janus at `configuration.url`; no request is made yet.
    init(configuration: Configuration) {
        self.configuration = configuration
        (sessionEvents, sessionContinuation) = AsyncStream.makeStream(of: JanusSessionEvent.self)
        http = JanusHTTP(
            connectTimeout: configuration.connectTimeout, trustedCertificatesPath: configuration.trustedCertificatesPath
        )
    }

    // MARK: Session and handles

    /// Creates the Janus session and starts its event loop and keepalives. Returns its id.
    @discardableResult
    func create() async throws -> UInt64 {
        if let ended { throw ended }
        if let sessionID { return sessionID }
        // Callers that come while the session is being made wait for that one: two channels
        // joining at once share one session.
        if let creating { return try await creating.value }
        let making = Task { try await makeSession() }
        creating = making
        defer { creating = nil }
        return try await making.value
    }

    /// The in-flight `create` request, while there is one.
    private var creating: Task<UInt64, Error>?

    private func makeSession() async throws -> UInt64 {
        let reply = try await post("", ["janus": .string("create")], request: "create")
        guard reply.kind == "success", let id = reply.data?["id"]?.intValue else {
            throw JanusError.badResponse("create answered \(reply.raw)")
        }
        let session = UInt64(bitPattern: id)
        sessionID = session
        pollTask = Task { await self.pollLoop(session: session) }
        if let interval = configuration.keepaliveInterval {
            keepaliveTask = Task { await self.keepaliveLoop(session: session, every: interval) }
        }
        return session
    }

    /// Attaches to `plugin` (the VideoRoom by default) and returns the handle.
    func attach(plugin: String = "janus.plugin.videoroom") async throws -> JanusHandle {
        let session = try currentSession()
        let reply = try await post(
            "/\(session)", ["janus": .string("attach"), "plugin": .string(plugin)], request: "attach")
        guard reply.kind == "success", let id = reply.data?["id"]?.intValue else {
            throw JanusError.badResponse("attach answered \(reply.raw)")
        }
        let handle = UInt64(bitPattern: id)
        let (events, continuation) = AsyncStream.makeStream(of: JanusEvent.self)
        if let ended {
            continuation.finish()
            throw ended
        }
        handles[handle] = continuation
        return JanusHandle(id: handle, events: events, signalling: self)
    }

    /// Sends `body` (and `jsep`) to the plugin behind `handle`; returns the plugin's answer: the
    /// event Janus delivers for this transaction, or its synchronous `success`. Throws the
    /// plugin's refusal as ``JanusError/plugin(code:message:)``.
    func message(handle: UInt64, body: JSONValue, jsep: JanusJSEP? = nil) async throws -> JanusReply {
        let session = try currentSession()
        var members: [String: JSONValue] = ["janus": .string("message"), "body": body]
        if let jsep { members["jsep"] = jsep.json }
        let transaction = nextTransaction()
        let name = body["request"]?.stringValue ?? "message"
        expected[transaction] = .some(nil)
        defer { expected[transaction] = nil }
        let reply = try await post(
            "/\(session)/\(handle)", members, request: name, transaction: transaction)
        let answer: JanusMessage
        switch reply.kind {
        case "success": answer = reply
        case "ack": answer = try await event(for: transaction, request: name)
        default: throw JanusError.badResponse("\(name) answered \(reply.raw)")
        }
        if let refusal = answer.pluginError { throw refusal }
        guard let data = answer.pluginData else {
            throw JanusError.badResponse("\(name): no plugin data in \(answer.raw)")
        }
        return JanusReply(data: data, jsep: answer.jsep)
    }

    /// Sends a `keepalive` for the session now (the client also does it every
    /// ``Configuration/keepaliveInterval``).
    /// Keeps the session alive; with `timeout`, fails sooner than the request timeout (a
    /// liveness probe).
    func keepalive(timeout: Duration? = nil) async throws {
        let session = try currentSession()
        _ = try await post("/\(session)", ["janus": .string("keepalive")], request: "keepalive", timeout: timeout)
    }

    /// Detaches `handle` from its plugin; its event stream ends.
    func detach(handle: UInt64) async throws {
        let session = try currentSession()
        defer { handles.removeValue(forKey: handle)?.finish() }
        _ = try await post("/\(session)/\(handle)", ["janus": .string("detach")], request: "detach")
    }

    /// Destroys the session (Janus detaches its handles) and closes the client.
    func destroy() async throws {
        let session = try currentSession()
        destroying = true
        do {
            _ = try await post("/\(session)", ["janus": .string("destroy")], request: "destroy")
        } catch {
            end(with: .closed, notify: nil)
            await http.shutDown()
            throw error
        }
        end(with: .closed, notify: nil)
        await http.shutDown()
    }

    /// Ends everything: destroys the session if there is one (without waiting past a short
    /// time), stops the loops, fails pending requests with ``JanusError/closed`` and shuts the
    /// HTTP client down. Safe to call more than once.
    func close() async {
        if ended == nil, let sessionID {
            destroying = true
            _ = try? await post(
                "/\(sessionID)", ["janus": .string("destroy")], request: "destroy", timeout: .seconds(2))
        }
        end(with: .closed, notify: nil)
        await http.shutDown()
    }

    // MARK: Event routing

    private func currentSession() throws -> UInt64 {
        if let ended { throw ended }
        guard let sessionID else { throw JanusError.badResponse("no session: call create() first") }
        return sessionID
    }

    private func nextTransaction() -> String {
        transactionSerial += 1
        return "mp\(transactionPrefix)-\(transactionSerial)"
    }

    /// Waits for the event of `transaction` (which may have come already), up to the request
    /// timeout.
    private func event(for transaction: String, request: String) async throws -> JanusMessage {
        if let came = expected[transaction], let message = came { return message }
        if let ended { throw ended }
        let timeout = configuration.requestTimeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.expire(transaction, request: request)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            waiters[transaction] = continuation
        }
    }

    private func expire(_ transaction: String, request: String) {
        waiters.removeValue(forKey: transaction)?.resume(throwing: JanusError.timedOut(request: request))
    }

    /// Routes one message from the long-poll.
    func dispatch(_ message: JanusMessage) {
        if message.kind == "timeout" {
            end(with: .sessionGone("Janus timed the session out"), notify: .timedOut)
            return
        }
        if message.kind == "keepalive" || message.kind == "ack" { return }
        if let transaction = message.transaction, message.kind == "event" || message.kind == "error",
            expected[transaction] != nil
        {
            if let waiter = waiters.removeValue(forKey: transaction) {
                waiter.resume(returning: message)
            } else {
                expected[transaction] = .some(message)
            }
            return
        }
        guard let sender = message.sender, let event = message.handleEvent else { return }
        handles[sender]?.yield(event)
        if event == .detached { handles.removeValue(forKey: sender)?.finish() }
    }

    /// Stops the loops and fails what waits with `error`; tells `notify` to the session's owner.
    private func end(with error: JanusError, notify: JanusSessionEvent?) {
        guard ended == nil else { return }
        ended = error
        pollTask?.cancel()
        keepaliveTask?.cancel()
        for waiter in waiters.values { waiter.resume(throwing: error) }
        waiters.removeAll()
        for handle in handles.values { handle.finish() }
        handles.removeAll()
        if let notify { sessionContinuation.yield(notify) }
        sessionContinuation.finish()
    }

    private func pollLoop(session: UInt64) async {
        let clock = ContinuousClock()
        var lastAnswer = clock.now
        var interrupted = false
        var backoff = Duration.milliseconds(250)
        while !Task.isCancelled, ended == nil {
            var query = "?maxev=\(configuration.eventsPerPoll)&rid=\(UInt64(Date().timeIntervalSince1970 * 1000))"
            for (name, value) in [("token", configuration.token), ("apisecret", configuration.apiSecret)] {
                if let value, let escaped = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                    query += "&\(name)=\(escaped)"
                }
            }
            do {
                // Janus holds a long-poll up to 30 s when it has nothing to say.
                let (status, body) = try await http.perform(
                    method: "GET", url: configuration.url + "/\(session)" + query, body: nil, request: "poll",
                    timeout: .seconds(40))
                if status == 404 && destroying {
                    end(with: .closed, notify: nil)
                    return
                }
                if status == 404 {
                    end(
                        with: .sessionGone("Janus does not know session \(session)"),
                        notify: .lost(
                            .api(
                                code: JanusError.CoreCode.sessionNotFound, reason: "no such session \(session)")))
                    return
                }
                guard status == 200 else { throw JanusError.badResponse("poll: HTTP \(status)") }
                lastAnswer = clock.now
                backoff = .milliseconds(250)
                if interrupted {
                    interrupted = false
                    sessionContinuation.yield(.restored)
                }
                let value = try JSONValue.parse(body)
                for item in value.arrayValue ?? [value] { dispatch(try JanusMessage(item)) }
            } catch {
                if Task.isCancelled || ended != nil { return }
                if !interrupted {
                    interrupted = true
                    sessionContinuation.yield(.interrupted)
                }
                // The session outlives a short outage on the server: it is given up only once
                // the server's session timeout has passed without an answer.
                if clock.now - lastAnswer > configuration.sessionTimeout {
                    let failure = error as? JanusError ?? .unreachable("\(error)")
                    end(
                        with: .sessionGone("Janus unreachable for longer than its session timeout"),
                        notify: .lost(failure))
                    return
                }
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    private func keepaliveLoop(session: UInt64, every interval: Duration) async {
        while !Task.isCancelled, ended == nil {
            do {
                try await Task.sleep(for: interval)
                _ = try await post("/\(session)", ["janus": .string("keepalive")], request: "keepalive")
            } catch JanusError.api(let code, let reason) where code == JanusError.CoreCode.sessionNotFound {
                end(with: .sessionGone(reason), notify: .lost(.api(code: code, reason: reason)))
                return
            } catch {
                // Cancelled, or Janus unreachable for now: the event loop decides when it is lost.
                if Task.isCancelled { return }
            }
        }
    }

    // MARK: HTTP

    /// POSTs a Janus request to `url + path` and returns Janus's answer; a core `error` throws
    /// ``JanusError/api(code:reason:)`` (``JanusError/sessionGone(_:)`` for an unknown session).
    private func post(
        _ path: String, _ members: [String: JSONValue], request: String, transaction: String? = nil,
        timeout: Duration? = nil
    ) async throws -> JanusMessage {
        var members = members
        members["transaction"] = .string(transaction ?? nextTransaction())
        if let token = configuration.token { members["token"] = .string(token) }
        if let secret = configuration.apiSecret { members["apisecret"] = .string(secret) }
        let (status, body) = try await http.perform(
            method: "POST", url: configuration.url + path, body: try JSONValue.object(members).encoded(),
            request: request, timeout: timeout ?? configuration.requestTimeout)
        if status == 404 && path.isEmpty == false && body.isEmpty {
            throw JanusError.sessionGone("HTTP 404 for \(request)")
        }
        let message: JanusMessage
        do {
            message = try JanusMessage(try JSONValue.parse(body))
        } catch {
            throw JanusError.badResponse(
                "\(request): HTTP \(status), \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        if message.kind == "error", let error = message.error {
            throw JanusError.api(code: error.code, reason: error.reason)
        }
        return message
    }
}

/// A plugin's answer: its `plugindata.data` and the `jsep` that came with it.
struct JanusReply: Sendable, Equatable {
    /// The plugin's data (for the VideoRoom: `videoroom` says which answer it is).
    var data: JSONValue
    /// Janus's offer or answer, when one came.
    var jsep: JanusJSEP?
}

/// A handle attached to a Janus plugin within a ``JanusSignalling`` session.
struct JanusHandle: Sendable {
    /// Janus's id for the handle.
    let id: UInt64
    /// What Janus tells about this handle outside answers to our requests (others publishing
    /// or leaving, `webrtcup`, `media`, `hangup`, `slowlink`, `detached`). Ends when the handle
    /// or the session goes.
    let events: AsyncStream<JanusEvent>
    /// The session it belongs to.
    let signalling: JanusSignalling

    /// Sends `body` (and `jsep`) to the plugin; see ``JanusSignalling/message(handle:body:jsep:)``.
    func message(_ body: JSONValue, jsep: JanusJSEP? = nil) async throws -> JanusReply {
        try await signalling.message(handle: id, body: body, jsep: jsep)
    }

    /// Detaches from the plugin.
    func detach() async throws { try await signalling.detach(handle: id) }
}
