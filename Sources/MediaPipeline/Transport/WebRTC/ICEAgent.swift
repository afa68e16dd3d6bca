import CWebRTC

/// One full ICE agent (libnice, RFC 5245/8445 checks) for a WebRTC peer connection: one stream
/// with one component, as BUNDLE with rtcp-mux needs, over UDP.
///
/// The agent runs on a loop thread of its own, started by `init` and joined by ``close()``. The
/// state and receive callbacks, and the work given to ``schedule(afterMilliseconds:_:)`` and
/// ``perform(_:)``, all run on that thread, one at a time, so work serialized there (DTLS, its
/// timers) needs no lock of its own. The calls that change the agent hand their work to the loop
/// thread and wait for it; they may be made from any thread. ``send(_:)`` goes straight to the
/// socket from the calling thread.
///
/// libnice answers the peer's connectivity checks for as long as the agent is open, and resolves
/// a role conflict (both sides controlling, or both controlled) with a 487 error by itself.
final class ICEAgent: Sendable {
    /// Where the agent is in connecting to its peer.
    enum State: Sendable, Equatable {
        /// Created; nothing gathered yet.
        case new
        /// Gathering local candidates; also the state right after ``ICEAgent/restart()``.
        case gathering
        /// Connectivity checks are running and no pair works yet.
        case connecting
        /// A candidate pair works (libnice's connected and ready states): datagrams flow.
        case connected
        /// Every connectivity check failed.
        case failed
        /// ``ICEAgent/close()`` was called.
        case closed
    }

    /// The ICE username fragment and password of one side (`a=ice-ufrag`, `a=ice-pwd`).
    struct Credentials: Sendable, Equatable {
        /// The username fragment.
        var ufrag: String
        /// The password.
        var password: String
    }

    /// A piece of work scheduled on the loop thread, to cancel it.
    struct ScheduledWork: Sendable, Hashable {
        /// The loop's id of the work (nonzero).
        let id: UInt32
    }

    /// The C agent. The handle stays valid until `deinit`; the C side guards every call made after
    /// close (they fail, and `send` returns -1).
    private struct Handle: @unchecked Sendable {
        /// The `cwebrtc_ice_agent`.
        let pointer: OpaquePointer
    }

    /// The C agent, freed by `deinit`.
    private let handle: Handle
    /// The local credentials, read at creation and at each restart.
    private let credentials: LockedValue<Credentials>

    /// Creates an agent and starts its loop thread.
    ///
    /// - Parameters:
    ///   - controlling: Whether the agent starts controlling (it nominates) or controlled.
    ///   - localAddresses: The IP addresses to gather candidates on; empty for every interface.
    ///   - onStateChange: Called on the loop thread when ``state`` changes (not for ``State/closed``).
    ///   - onReceive: Called on the loop thread with each datagram from the peer; the bytes are valid
    ///     only during the call.
    ///   - onSelectedPair: Called on the loop thread with each newly selected pair, as
    ///     ``selectedPair`` gives it (local, remote).
    /// - Throws: ``MediaError`` (`invalidArgument`) naming an address that is not an IP address, or
    ///   when libnice or the thread cannot be set up.
    init(
        controlling: Bool, localAddresses: [String] = [],
        onStateChange: @escaping @Sendable (State) -> Void,
        onReceive: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
        onSelectedPair: (@Sendable (_ local: String, _ remote: String) -> Void)? = nil
    ) throws {
        for address in localAddresses
        where address.isEmpty || address.contains(where: { $0 == " " || $0 == "," || $0.isNewline || $0 == "\t" }) {
            throw MediaError.invalidArgument("local address '\(address)' is not an IP address")
        }
        let box = CallbackBox(onStateChange: onStateChange, onReceive: onReceive, onSelectedPair: onSelectedPair)
        var callbacks = cwebrtc_ice_callbacks(
            on_state: { context, state in
                guard let context else { return }
                Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue().stateChanged(Int(state))
            },
            on_receive: { context, bytes, length in
                guard let context, let bytes else { return }
                Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue()
                    .onReceive(UnsafeRawBufferPointer(start: bytes, count: length))
            },
            on_selected_pair: { context, local, remote in
                guard let context, let local, let remote else { return }
                Unmanaged<CallbackBox>.fromOpaque(context).takeUnretainedValue()
                    .onSelectedPair?(String(cString: local), String(cString: remote))
            },
            release: { context in
                guard let context else { return }
                Unmanaged<CallbackBox>.fromOpaque(context).release()
            },
            context: Unmanaged.passRetained(box).toOpaque()
        )
        var error = [CChar](repeating: 0, count: 256)
        let created = localAddresses.joined(separator: "\n").withCString { addresses in
            cwebrtc_ice_agent_create(controlling ? 1 : 0, addresses, &callbacks, &error, Int32(error.count))
        }
        guard let created else { throw MediaError.invalidArgument(Self.string(error)) }
        handle = Handle(pointer: created)
        credentials = LockedValue(Credentials(ufrag: "", password: ""))
        let current = try readCredentials()
        credentials.withLock { $0 = current }
    }

    deinit {
        cwebrtc_ice_agent_free(handle.pointer)
    }

    /// The local ICE credentials: from creation, then from the last ``restart()``.
    var localCredentials: Credentials { credentials.withLock { $0 } }

    /// Where the agent is in connecting; ``State/closed`` after ``close()``.
    var state: State { Self.state(Int(cwebrtc_ice_agent_state(handle.pointer))) }

    /// The working candidate pair as "address:port" strings ("[address]:port" for IPv6), or nil
    /// before one is selected and after ``close()``.
    var selectedPair: (local: String, remote: String)? {
        var local = [CChar](repeating: 0, count: 64)
        var remote = [CChar](repeating: 0, count: 64)
        guard cwebrtc_ice_agent_selected_pair(handle.pointer, &local, 64, &remote, 64) == 1 else { return nil }
        return (Self.string(local), Self.string(remote))
    }

    /// Whether the checks concluded on a nominated pair (libnice's ready state, inside
    /// ``State/connected``). The controlling side nominates: when both sides are connected and
    /// nominated, a role conflict was resolved.
    var isNominated: Bool { Int(cwebrtc_ice_agent_state(handle.pointer)) == CWEBRTC_ICE_STATE_READY }

    /// Whether the calling thread is the agent's loop thread.
    var isOnLoopThread: Bool { cwebrtc_ice_agent_is_loop_thread(handle.pointer) == 1 }

    /// The Linux thread id of the loop thread (its entry in `/proc/self/task`).
    var loopThreadID: Int32 { cwebrtc_ice_agent_loop_thread_id(handle.pointer) }

    /// How many agents' loop threads run in this process.
    static var liveLoopThreads: Int { Int(cwebrtc_ice_live_loop_threads()) }

    /// Gathers local candidates (the first call starts gathering; later calls, also after
    /// ``restart()``, return the same candidates) and returns them as SDP attribute values without
    /// "a=", such as "candidate:1 1 UDP 2015363327 127.0.0.1 40001 typ host".
    ///
    /// - Throws: ``MediaError`` `io` when gathering does not finish within `timeoutMilliseconds` or
    ///   libnice cannot gather; `invalidArgument` after ``close()``, on the loop thread before
    ///   gathering finished, or for a negative timeout.
    /// Binds the candidates gathered later to a port in `ports` (firewall rules, tests that
    /// impair one agent's traffic). Call before ``gatherCandidates(timeoutMilliseconds:)``.
    /// - Throws: ``MediaError`` `invalidArgument` for ports outside 1...65535, after gathering
    ///   started or after ``close()``.
    func setPortRange(_ ports: ClosedRange<Int>) throws {
        guard ports.lowerBound >= 1, ports.upperBound <= 65535 else {
            throw MediaError.invalidArgument("ICE port range \(ports) is outside 1...65535")
        }
        guard cwebrtc_ice_agent_set_port_range(handle.pointer, Int32(ports.lowerBound), Int32(ports.upperBound)) == 0
        else { throw MediaError.invalidArgument("ICE port range \(ports) set after gathering or on a closed agent") }
    }

    func gatherCandidates(timeoutMilliseconds: Int = 5000) throws -> [String] {
        guard timeoutMilliseconds >= 0, timeoutMilliseconds <= Int(Int32.max) else {
            throw MediaError.invalidArgument("ICE gathering timeout \(timeoutMilliseconds) ms is out of range")
        }
        let status = Int(cwebrtc_ice_agent_gather(handle.pointer, Int32(timeoutMilliseconds)))
        switch status {
        case 0: break
        case CWEBRTC_ICE_ERROR_TIMEOUT:
            throw MediaError(.io, "ICE gathering did not finish within \(timeoutMilliseconds) ms")
        case CWEBRTC_ICE_ERROR_FAILED:
            throw MediaError(.io, "libnice could not gather ICE candidates")
        default: throw Self.error(status, doing: "gather ICE candidates")
        }
        var capacity = 1024
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let length = Int(cwebrtc_ice_agent_local_candidates(handle.pointer, &buffer, Int32(capacity)))
            if length < 0 { throw Self.error(length, doing: "list the local ICE candidates") }
            if length < capacity {
                return Self.string(buffer).split(separator: "\n").map(String.init)
            }
            capacity = length + 1
        }
    }

    /// Sets the peer's credentials and adds its candidates (SDP attribute values, with or without
    /// "a="). Candidates of component 2 are skipped: RTCP shares component 1 (rtcp-mux). Every
    /// candidate is checked before any is used.
    ///
    /// - Throws: ``MediaError`` `invalidFormat` naming the first candidate that does not parse;
    ///   `invalidArgument` for empty credentials or after ``close()``.
    func setRemote(credentials remote: Credentials, candidates: [String]) throws {
        for candidate in candidates where candidate.contains(where: \.isNewline) {
            throw MediaError.invalidFormat("remote ICE candidate '\(candidate)' spans more than one line")
        }
        guard !remote.ufrag.isEmpty, !remote.password.isEmpty else {
            throw MediaError.invalidArgument(
                "remote ICE credentials need a ufrag and a password (ufrag '\(remote.ufrag)', "
                    + "password of \(remote.password.utf8.count) characters)")
        }
        var badLine: Int32 = -1
        let status = Int(
            cwebrtc_ice_agent_set_remote(
                handle.pointer, remote.ufrag, remote.password, candidates.joined(separator: "\n"), &badLine))
        switch status {
        case 0: return
        case CWEBRTC_ICE_ERROR_INVALID_FORMAT:
            let index = Int(badLine)
            let line = candidates.indices.contains(index) ? candidates[index] : "#\(index)"
            throw MediaError.invalidFormat("remote ICE candidate '\(line)' is not a valid candidate attribute")
        case CWEBRTC_ICE_ERROR_INVALID_ARGUMENT:
            throw MediaError.invalidArgument("libnice refused the remote ICE credentials (ufrag '\(remote.ufrag)')")
        default: throw Self.error(status, doing: "set the remote ICE description")
        }
    }

    /// Sends one datagram to the peer over the selected pair. Any thread; allocates nothing.
    ///
    /// - Returns: false when no pair is selected yet, after ``close()``, for an empty datagram, or
    ///   when the socket refused it.
    @discardableResult
    func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        return Int(cwebrtc_ice_agent_send(handle.pointer, base, bytes.count)) == bytes.count
    }

    /// Restarts ICE: new local credentials, the peer's candidates forgotten; the state goes back to
    /// ``State/gathering``. Local candidates stay the same. Connectivity checks start again once the
    /// peer's new credentials and candidates are set with ``setRemote(credentials:candidates:)``;
    /// until a new pair is selected, datagrams keep going over the old one.
    ///
    /// - Returns: The new local credentials, for the peer.
    /// - Throws: ``MediaError`` `invalidArgument` after ``close()``; `io` when libnice refuses.
    @discardableResult
    func restart() throws -> Credentials {
        let status = Int(cwebrtc_ice_agent_restart(handle.pointer))
        if status == CWEBRTC_ICE_ERROR_FAILED { throw MediaError(.io, "libnice could not restart ICE") }
        if status != 0 { throw Self.error(status, doing: "restart ICE") }
        let current = try readCredentials()
        credentials.withLock { $0 = current }
        return current
    }

    /// Runs `work` on the loop thread after `afterMilliseconds` (0: as soon as the loop gets to it).
    /// Work with equal delays runs in the order scheduled. Any thread.
    ///
    /// - Returns: The work's handle for ``cancel(_:)``, or nil when the agent is closed (the work
    ///   never runs then).
    @discardableResult
    func schedule(afterMilliseconds: Int, _ work: @escaping @Sendable () -> Void) -> ScheduledWork? {
        let delay = Int32(clamping: max(0, afterMilliseconds))
        let context = Unmanaged.passRetained(WorkBox(work)).toOpaque()
        let id = cwebrtc_ice_agent_schedule(
            handle.pointer, delay,
            { context in
                guard let context else { return }
                Unmanaged<WorkBox>.fromOpaque(context).takeUnretainedValue().work()
            },
            { context in
                guard let context else { return }
                Unmanaged<WorkBox>.fromOpaque(context).release()
            },
            context)
        return id == 0 ? nil : ScheduledWork(id: id)
    }

    /// Runs `work` on the loop thread as soon as the loop gets to it, after work handed over
    /// before it. Any thread.
    ///
    /// - Returns: false when the agent is closed (the work never runs then).
    @discardableResult
    func perform(_ work: @escaping @Sendable () -> Void) -> Bool {
        schedule(afterMilliseconds: 0, work) != nil
    }

    /// Cancels scheduled work. When this returns, the work either ran already or never will; a
    /// cancelled closure is released on the loop thread.
    ///
    /// - Returns: true when the work had not run and now will not.
    @discardableResult
    func cancel(_ work: ScheduledWork) -> Bool {
        cwebrtc_ice_agent_cancel(handle.pointer, work.id) == 1
    }

    /// Stops the agent: sends fail from now on, every socket is closed, pending work is dropped,
    /// and the loop thread is joined, so no callback runs once this returns. Idempotent; any thread.
    /// Called on the loop thread itself (from a callback), the agent stops the same way but the
    /// thread ends once that callback returns.
    func close() {
        cwebrtc_ice_agent_close(handle.pointer)
    }

    // MARK: - Private

    /// Reads the local credentials from libnice.
    private func readCredentials() throws -> Credentials {
        var ufrag = [CChar](repeating: 0, count: 257)
        var password = [CChar](repeating: 0, count: 257)
        let status = Int(cwebrtc_ice_agent_local_credentials(handle.pointer, &ufrag, 257, &password, 257))
        if status != 0 { throw Self.error(status, doing: "read the local ICE credentials") }
        return Credentials(ufrag: Self.string(ufrag), password: Self.string(password))
    }

    /// The error for a C status that is not specific to one call.
    private static func error(_ status: Int, doing action: String) -> MediaError {
        switch status {
        case CWEBRTC_ICE_ERROR_CLOSED: return .invalidArgument("cannot \(action): the ICE agent is closed")
        case CWEBRTC_ICE_ERROR_WRONG_THREAD:
            return .invalidArgument("cannot \(action) on the ICE agent's own loop thread: it would wait for itself")
        default: return MediaError(.io, "could not \(action) (libnice status \(status))")
        }
    }

    /// The state for a `CWEBRTC_ICE_STATE_*` value.
    private static func state(_ raw: Int) -> State {
        switch raw {
        case CWEBRTC_ICE_STATE_GATHERING: return .gathering
        case CWEBRTC_ICE_STATE_CONNECTING: return .connecting
        case CWEBRTC_ICE_STATE_CONNECTED, CWEBRTC_ICE_STATE_READY: return .connected
        case CWEBRTC_ICE_STATE_FAILED: return .failed
        case CWEBRTC_ICE_STATE_CLOSED: return .closed
        default: return .new
        }
    }

    /// The text of a NUL-terminated C buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The callbacks, kept alive by the C agent until its teardown (it releases the box then).
    private final class CallbackBox: Sendable {
        /// The state callback given to `init`.
        let onStateChange: @Sendable (State) -> Void
        /// The receive callback given to `init`.
        let onReceive: @Sendable (UnsafeRawBufferPointer) -> Void
        /// The selected-pair callback given to `init`.
        let onSelectedPair: (@Sendable (String, String) -> Void)?
        /// The last state reported: libnice's connected and ready are one state here.
        private let reported = LockedValue(State.new)

        /// A box for the three callbacks.
        init(
            onStateChange: @escaping @Sendable (State) -> Void,
            onReceive: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
            onSelectedPair: (@Sendable (String, String) -> Void)?
        ) {
            self.onStateChange = onStateChange
            self.onReceive = onReceive
            self.onSelectedPair = onSelectedPair
        }

        /// On the loop thread: reports a change of the mapped state.
        func stateChanged(_ raw: Int) {
            let state = ICEAgent.state(raw)
            let changed = reported.withLock { last in
                defer { last = state }
                return last != state
            }
            if changed { onStateChange(state) }
        }
    }

    /// Scheduled work, kept alive by the C agent until it ran or was dropped.
    private final class WorkBox: Sendable {
        /// The work to run.
        let work: @Sendable () -> Void
        /// A box for `work`.
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }
}
