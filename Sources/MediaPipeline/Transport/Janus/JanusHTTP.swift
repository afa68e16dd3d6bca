import CCurl
import CWebRTC
import Foundation

/// The HTTP requests of one ``JanusSignalling`` session: JSON POSTs and long-poll GETs to the
/// Janus API, over libcurl (HTTP/1.1 with kept-alive connections; HTTPS through OpenSSL).
/// Redirects are not followed. Not a per-packet path.
///
/// One thread of its own runs the transfers (libcurl's multi interface): callers hand it
/// requests and cancellations through ``HTTPInbox`` and wait on a continuation, which that
/// thread resumes. A cancelled request ends at once, its connection closed.
final class JanusHTTP: Sendable {
    /// A request's outcome: the HTTP status and the whole body.
    typealias Response = (status: Int, body: Data)

    /// The largest body taken from Janus; a larger one fails the request.
    static let largestBodyBytes = 8 << 20

    private let inbox: HTTPInbox

    /// A client that gives up connecting after `connectTimeout` and allows up to
    /// `connectionsPerHost` connections to the Janus server at once (the long-poll, keepalives,
    /// liveness probes and several channels' requests). An `https` server's certificate must
    /// chain to an authority in `trustedCertificatesPath` (PEM), or the system's when nil, and
    /// name the URL's host.
    init(connectTimeout: Duration, trustedCertificatesPath: String? = nil, connectionsPerHost: Int = 32) {
        _ = HTTPInbox.globalInit
        let multi = curl_multi_init()
        inbox = HTTPInbox(multi: multi)
        guard let multi else { return }  // out of memory: every request fails (``perform``)
        _ = mp_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connectionsPerHost)
        let inbox = self.inbox
        let connectMs = Self.milliseconds(connectTimeout)
        let thread = Thread {
            defer { inbox.threadDidEnd() }
            guard let multi = inbox.multiHandle else { return }
            HTTPTransfers(
                inbox: inbox, multi: multi, connectMs: connectMs, trustedCertificatesPath: trustedCertificatesPath
            ).run()
        }
        thread.name = "janus-http"
        thread.start()
    }

    deinit { inbox.close() }

    /// Sends `method` to `url` with `body` (JSON) and returns Janus's status and body. Fails with
    /// ``JanusError/timedOut(request:)`` when the whole exchange takes longer than `timeout`,
    /// ``JanusError/closed`` when the calling task is cancelled or after ``shutDown()``, and
    /// ``JanusError/unreachable(_:)`` otherwise (a refused connection fails at once, an
    /// unanswered one after the connect timeout). `request` names the request in errors.
    func perform(method: String, url: String, body: Data?, request: String, timeout: Duration) async throws
        -> Response
    {
        guard inbox.started else { throw JanusError.unreachable("\(request): libcurl could not start") }
        guard let serial = inbox.open() else { throw JanusError.closed }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                inbox.add(
                    HTTPRequest(
                        serial: serial, method: method, url: url, body: body, name: request,
                        timeoutMs: Self.milliseconds(timeout), continuation: continuation))
            }
        } onCancel: {
            inbox.cancel(serial)
        }
    }

    /// Fails the requests under way with ``JanusError/closed``, refuses new ones, ends the
    /// thread and returns once it has let libcurl's handles go. Safe to call more than once.
    ///
    /// Once it returns, no transfer or connection of this client is left open, nor any TLS work
    /// running on its behalf.
    func shutDown() async {
        inbox.close()
        await inbox.waitUntilThreadEnded()
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

/// One request as handed to the transfer thread.
struct HTTPRequest: Sendable {
    let serial: Int
    let method: String
    let url: String
    let body: Data?
    /// Names the request in errors.
    let name: String
    let timeoutMs: Int
    let continuation: CheckedContinuation<JanusHTTP.Response, any Error>
}

/// What callers hand the transfer thread: requests to start and serials to cancel, under a
/// lock; and the multi handle, only to wake the thread (`curl_multi_wakeup` may be called from
/// any thread; everything else on the handle is the transfer thread's).
final class HTTPInbox: Sendable {
    /// Where a request opened and not finished stands.
    private enum Phase: Sendable {
        /// Opened; not handed to the transfer thread yet.
        case opened
        /// Cancelled before it was handed over: ``add(_:)`` refuses it.
        case cancelledBeforeAdd
        /// Handed to the transfer thread, which ends it on cancellation.
        case handed
    }

    private struct State: Sendable {
        var closed = false
        var serial = 0
        /// Requests opened and not finished, by serial.
        var live: [Int: Phase] = [:]
        /// Handed over since the transfer thread last looked.
        var added: [HTTPRequest] = []
        /// Handed-over requests cancelled since the transfer thread last looked.
        var cancelled: Set<Int> = []
        /// The transfer thread has let its handles go (or never ran).
        var threadEnded = false
        /// Who waits for the transfer thread to end.
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// libcurl's process-wide set-up, once, before the first handle.
    /// OpenSSL is told first to keep its state until the process ends (libcurl initialises it).
    static let globalInit: Void = {
        cwebrtc_keep_openssl_until_exit()
        _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    private let state = LockedValue(State())
    /// The transfer thread's multi handle, reached from here only by ``wake()``.
    private struct Multi: @unchecked Sendable { let handle: UnsafeMutableRawPointer? }
    private let multi: Multi

    init(multi: UnsafeMutableRawPointer?) {
        self.multi = Multi(handle: multi)
        if multi == nil { state.withLock { $0.threadEnded = true } }
    }

    /// Whether the transfer thread runs (libcurl gave a multi handle).
    var started: Bool { multi.handle != nil }

    /// A new request's serial, or nil once closed.
    func open() -> Int? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.serial += 1
            state.live[state.serial] = .opened
            return state.serial
        }
    }

    /// Hands `request` to the transfer thread, or fails it at once when it was cancelled first
    /// or the client is closed.
    func add(_ request: HTTPRequest) {
        let refused = state.withLock { state -> Bool in
            if state.closed || state.live[request.serial] == .cancelledBeforeAdd {
                state.live[request.serial] = nil
                return true
            }
            state.live[request.serial] = .handed
            state.added.append(request)
            return false
        }
        if refused { return request.continuation.resume(throwing: JanusError.closed) }
        wake()
    }

    /// Asks for request `serial` to end with ``JanusError/closed``, if it has not finished.
    func cancel(_ serial: Int) {
        let handed = state.withLock { state -> Bool in
            switch state.live[serial] {
            case .opened:
                state.live[serial] = .cancelledBeforeAdd
                return false
            case .handed:
                state.cancelled.insert(serial)
                return true
            case .cancelledBeforeAdd, nil:
                return false
            }
        }
        if handed { wake() }
    }

    func close() {
        state.withLock { $0.closed = true }
        wake()
    }

    /// For the transfer thread: what arrived since it last looked.
    func take() -> (added: [HTTPRequest], cancelled: Set<Int>, closed: Bool) {
        state.withLock { state in
            defer {
                state.added.removeAll()
                state.cancelled.removeAll()
            }
            return (state.added, state.cancelled, state.closed)
        }
    }

    /// Returns once the transfer thread has ended (at once when it never ran).
    func waitUntilThreadEnded() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                if !state.threadEnded { state.endWaiters.append(waiter) }
                return state.threadEnded
            }
            if ended { waiter.resume() }
        }
    }

    /// For the transfer thread, as it ends: its handles are gone. Waiters are resumed once.
    func threadDidEnd() {
        let waiters = state.withLock { state in
            state.threadEnded = true
            defer { state.endWaiters.removeAll() }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// For the transfer thread: request `serial` has finished.
    func finished(_ serial: Int) { state.withLock { $0.live[serial] = nil } }

    /// The multi handle, for the transfer thread only.
    var multiHandle: UnsafeMutableRawPointer? { multi.handle }

    private func wake() {
        if let handle = multi.handle { _ = curl_multi_wakeup(handle) }
    }
}

/// The transfer thread's state: libcurl's handles and the transfers under way. Made on that
/// thread and used there only.
private final class HTTPTransfers {
    private let inbox: HTTPInbox
    private let multi: UnsafeMutableRawPointer
    private let connectMs: Int
    private let trustedCertificatesPath: String?
    private var transfers: [UnsafeMutableRawPointer: HTTPTransfer] = [:]

    init(inbox: HTTPInbox, multi: UnsafeMutableRawPointer, connectMs: Int, trustedCertificatesPath: String?) {
        self.inbox = inbox
        self.multi = multi
        self.connectMs = connectMs
        self.trustedCertificatesPath = trustedCertificatesPath
    }

    /// Runs until the client is closed; then fails what is left and lets the handles go.
    func run() {
        while true {
            let (added, cancelled, closed) = inbox.take()
            for request in added { start(request) }
            if closed { break }
            for (easy, transfer) in transfers where cancelled.contains(transfer.request.serial) {
                end(easy, with: .failure(JanusError.closed))
            }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                var result = CURLE_OK
                guard let easy = mp_curl_message_done(message, &result), let transfer = transfers[easy] else {
                    continue
                }
                end(easy, with: transfer.outcome(result, easy: easy))
            }
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for easy in Array(transfers.keys) { end(easy, with: .failure(JanusError.closed)) }
        curl_multi_cleanup(multi)
    }

    private func start(_ request: HTTPRequest) {
        guard let easy = curl_easy_init() else {
            inbox.finished(request.serial)
            return request.continuation.resume(throwing: JanusError.unreachable("\(request.name): libcurl: no handle"))
        }
        let transfer = HTTPTransfer(request)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = mp_curl_set_string(easy, CURLOPT_URL, request.url)
        _ = mp_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = mp_curl_set_long(easy, CURLOPT_TIMEOUT_MS, request.timeoutMs)
        _ = mp_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(connectMs, request.timeoutMs))
        _ = mp_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        // Peer and host verification are libcurl's defaults (on); only the authorities change:
        // the file's alone (the system's folder of authorities, CAPATH, is turned off too).
        if let trustedCertificatesPath {
            _ = mp_curl_set_string(easy, CURLOPT_CAINFO, trustedCertificatesPath)
            _ = mp_curl_set_pointer(easy, CURLOPT_CAPATH, nil)
        }
        _ = mp_curl_set_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorText)
        _ = mp_curl_set_write_function(easy, HTTPTransfer.receive)
        _ = mp_curl_set_pointer(easy, CURLOPT_WRITEDATA, context)
        if request.method == "POST" {
            let body = request.body ?? Data()
            _ = mp_curl_set_long(easy, CURLOPT_POST, 1)
            _ = mp_curl_set_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
            _ = body.withUnsafeBytes { bytes in
                mp_curl_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            transfer.headers = curl_slist_append(nil, "Content-Type: application/json")
            transfer.headers = curl_slist_append(transfer.headers, "Expect:")
            _ = mp_curl_set_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(transfer.headers))
        } else if request.method != "GET" {
            _ = mp_curl_set_string(easy, CURLOPT_CUSTOMREQUEST, request.method)
        }
        transfers[easy] = transfer
        if curl_multi_add_handle(multi, easy) != CURLM_OK {
            end(easy, with: .failure(JanusError.unreachable("\(request.name): libcurl refused the transfer")))
        }
    }

    /// Ends `easy`'s transfer with `result` and lets its handle go (closing a connection cut
    /// short).
    private func end(_ easy: UnsafeMutableRawPointer, with result: Result<JanusHTTP.Response, any Error>) {
        guard let transfer = transfers.removeValue(forKey: easy) else { return }
        _ = curl_multi_remove_handle(multi, easy)
        curl_easy_cleanup(easy)
        inbox.finished(transfer.request.serial)
        transfer.request.continuation.resume(with: result)
    }
}

/// One transfer's buffers, owned by the transfer thread.
private final class HTTPTransfer {
    let request: HTTPRequest
    var body = Data()
    var bodyTooLarge = false
    var headers: UnsafeMutablePointer<curl_slist>?
    /// libcurl's words for a failure (CURLOPT_ERRORBUFFER).
    let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    init(_ request: HTTPRequest) {
        self.request = request
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_slist_free_all(headers)
        errorText.deallocate()
    }

    /// libcurl's write callback: appends to the body (a larger body than allowed ends the transfer).
    static let receive: mp_curl_write_function = { data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = size * count
        guard transfer.body.count + bytes <= JanusHTTP.largestBodyBytes else {
            transfer.bodyTooLarge = true
            return 0
        }
        data.withMemoryRebound(to: UInt8.self, capacity: bytes) { transfer.body.append($0, count: bytes) }
        return bytes
    }

    /// What a finished transfer means for its caller.
    func outcome(_ result: CURLcode, easy: UnsafeMutableRawPointer) -> Result<JanusHTTP.Response, any Error> {
        let name = request.name
        switch result {
        case CURLE_OK:
            var status = 0
            _ = mp_curl_response_code(easy, &status)
            return .success((status, body))
        // The whole exchange's limit ("Operation timed out after ..."); the connect timeout is
        // Janus not reached.
        case CURLE_OPERATION_TIMEDOUT where String(cString: errorText).hasPrefix("Operation"):
            return .failure(JanusError.timedOut(request: name))
        case CURLE_WRITE_ERROR where bodyTooLarge:
            return .failure(JanusError.badResponse("\(name): a body over \(JanusHTTP.largestBodyBytes) bytes"))
        default:
            let words = String(cString: errorText)
            return .failure(
                JanusError.unreachable(
                    "\(name): \(words.isEmpty ? String(cString: curl_easy_strerror(result)) : words)"))
        }
    }
}
