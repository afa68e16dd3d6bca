/// One WebRTC peer connection as this library makes it: one BUNDLE transport (full ICE with
/// one component and rtcp-mux) that carries DTLS-SRTP, this side always the DTLS client.
///
/// Datagrams are told apart by their first byte (RFC 7983): DTLS records (20–63) go to the
/// handshake, RTP and RTCP (128–191) are unprotected and handed on, anything else is counted
/// and dropped; libnice answers STUN itself. Everything that arrives is handled on the ICE
/// agent's loop thread, which owns the handshake, the inbound SRTP session and the receive
/// buffer. Sending may come from any thread: the outbound SRTP session and its buffer are under
/// their own lock, and the packet is protected in that buffer (the caller's bytes stay as
/// they are, so one encoded packet can go to several connections), with no allocation.
final class WebRTCConnection: Sendable {
    /// Where the connection stands.
    enum State: Sendable, Equatable {
        /// ICE checks or the DTLS handshake are running.
        case connecting
        /// SRTP keys are agreed: media flows.
        case connected
        /// ICE lost its pair (it may come back, or an ICE restart may bring it back).
        case disconnected
        /// ICE or DTLS failed for good, with the reason.
        case failed(String)
        /// Closed by this side or by the peer's close_notify.
        case closed
    }

    /// What the connection hands on, each on the ICE loop thread. The bytes are valid only
    /// during the call.
    struct Handlers: Sendable {
        /// An unprotected RTP packet.
        var rtp: @Sendable (UnsafeRawBufferPointer) -> Void
        /// An unprotected RTCP compound packet.
        var rtcp: @Sendable (UnsafeRawBufferPointer) -> Void
        /// A change of ``State``.
        var state: @Sendable (State) -> Void
    }

    /// Counts of what crossed the connection.
    struct Counters: Sendable, Equatable {
        /// RTP packets unprotected and handed on, and their bytes.
        var rtpReceived: Int64 = 0, bytesReceived: Int64 = 0
        /// RTCP compound packets unprotected and handed on.
        var rtcpReceived: Int64 = 0
        /// SRTP or SRTCP packets that failed authentication or replay checks, or came before
        /// the keys: dropped.
        var unprotectFailures: Int64 = 0
        /// Datagrams that were neither DTLS nor RTP/RTCP, or DTLS records the handshake refused.
        var ignored: Int64 = 0
        /// RTP packets and RTCP compound packets protected and sent.
        var rtpSent: Int64 = 0, rtcpSent: Int64 = 0
        /// Packets that could not be sent (no keys yet, no ICE pair, too large).
        var sendFailures: Int64 = 0
        /// When the last RTP or RTCP packet came, in microseconds of the connection's clock
        /// (0: when it was made).
        var lastReceiveAt: Int64 = 0
    }

    /// The largest datagram handled: a 1,200-byte payload with its header, extensions and
    /// SRTP trailer fits with room to spare.
    static let datagramCapacity = 1_500

    let agent: ICEAgent
    let certificate: DTLSCertificate
    let dtlsRole: DTLSAssociation.Role
    private let loop: LoopState
    private let outbound: LockedValue<Outbound>
    private let counters: LockedValue<Counters>

    /// Opens the ICE agent (controlling or controlled, on `localAddresses` or every interface)
    /// and waits for nothing: gather candidates next, then ``start(remoteCredentials:remoteCandidates:remoteFingerprint:)``.
    /// - Throws: ``MediaError`` when the agent cannot be made.
    /// `dtlsRole` is the client towards Janus and browsers (they answer `setup:passive` or
    /// offer `actpass`); the server role serves tests of two connections back to back.
    init(
        controllingICE: Bool, certificate: DTLSCertificate, localAddresses: [String] = [],
        dtlsRole: DTLSAssociation.Role = .client, handlers: Handlers
    ) throws {
        let counters = LockedValue(Counters())
        let loop = LoopState(handlers: handlers, counters: counters)
        self.loop = loop
        self.counters = counters
        self.certificate = certificate
        self.dtlsRole = dtlsRole
        outbound = LockedValue(Outbound())
        agent = try ICEAgent(
            controlling: controllingICE, localAddresses: localAddresses,
            onStateChange: { [weak loop] state in loop?.iceStateChanged(state) },
            onReceive: { [weak loop] datagram in loop?.received(datagram) })
        loop.agent = agent
        loop.outbound = outbound
    }

    deinit { close() }

    /// This side's ICE credentials, for the SDP.
    var localCredentials: ICEAgent.Credentials { agent.localCredentials }

    /// Gathers this side's candidates (the agent's lines), on a port in `ports` when given.
    func gatherCandidates(ports: ClosedRange<Int>? = nil) throws -> [String] {
        if let ports { try agent.setPortRange(ports) }
        return try agent.gatherCandidates()
    }

    /// Starts connecting to the peer described: ICE checks now, then the DTLS handshake once a
    /// pair works (this side starts it as the client), checking the peer's certificate against `remoteFingerprint`
    /// ("AB:CD:…", SHA-256).
    /// - Throws: ``MediaError`` for a candidate or fingerprint that cannot be used.
    func start(remoteCredentials: ICEAgent.Credentials, remoteCandidates: [String], remoteFingerprint: String) throws {
        let certificate = self.certificate
        let association = try DTLSAssociation(
            role: dtlsRole, certificate: certificate, remoteFingerprint: remoteFingerprint,
            send: { [weak agent] record in _ = agent?.send(record) })
        loop.install(association)
        try agent.setRemote(credentials: remoteCredentials, candidates: remoteCandidates)
    }

    /// Protects `packet` with its payload type changed to `payloadType` and sends it; false
    /// when it could not go (no keys yet, no pair, too large). With `payload` (a range of the
    /// packet's bytes), only those bytes follow the header (without padding): a redundant audio
    /// packet goes out as its primary block to a peer that did not take RFC 2198. With
    /// `extensionBlock` (a one-byte-form block, ``RTPOneByteExtensionBlock``), a packet without
    /// a header extension gets it after its CSRCs (a simulcast encoding's mid and RTP stream
    /// ID); one that has an extension keeps its own. Any thread; allocates nothing.
    @discardableResult
    func sendRTP(
        _ packet: RTPPacket, payloadType: UInt8, payload: Range<Int>? = nil, extensionBlock: [UInt8]? = nil
    ) -> Bool {
        let headerBytes = packet.header.byteCount
        let body = payload ?? headerBytes..<packet.bytes.count
        let added = packet.bytes[0] & 0x10 == 0 ? extensionBlock : nil
        let addedBytes = added?.count ?? 0
        let length = headerBytes + addedBytes + body.count
        let sent = outbound.withLock { state -> Bool in
            guard let srtp = state.srtp, body.lowerBound >= headerBytes, body.upperBound <= packet.bytes.count,
                length + SRTPContext.maximumTrailerBytes <= state.buffer.count
            else { return false }
            return state.buffer.withUnsafeMutableBytes { buffer in
                packet.bytes.withUnsafeBytes { bytes in
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<headerBytes]))
                    if let added {
                        added.withUnsafeBytes {
                            UnsafeMutableRawBufferPointer(rebasing: buffer[headerBytes..<(headerBytes + addedBytes)])
                                .copyMemory(from: $0)
                        }
                        buffer[0] |= 0x10
                    }
                    UnsafeMutableRawBufferPointer(rebasing: buffer[(headerBytes + addedBytes)..<length]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: bytes[body]))
                }
                buffer[1] = buffer[1] & 0x80 | (payloadType & 0x7F)
                if payload != nil { buffer[0] &= ~0x20 }  // the padding is not copied
                guard let protected = try? srtp.protectRTP(buffer.baseAddress!, length: length, capacity: buffer.count)
                else { return false }
                return agent.send(UnsafeRawBufferPointer(rebasing: buffer[..<protected]))
            }
        }
        counters.withLock { counters in
            if sent { counters.rtpSent += 1 } else { counters.sendFailures += 1 }
        }
        return sent
    }

    /// Protects the RTCP compound packet `bytes` and sends it; false when it could not go.
    /// Any thread; allocates nothing.
    @discardableResult
    func sendRTCP(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let sent = outbound.withLock { state -> Bool in
            guard let srtp = state.srtp, bytes.count + SRTPContext.maximumTrailerBytes <= state.buffer.count
            else { return false }
            return state.buffer.withUnsafeMutableBytes { buffer in
                buffer.copyMemory(from: bytes)
                guard
                    let length = try? srtp.protectRTCP(buffer.baseAddress!, length: bytes.count, capacity: buffer.count)
                else { return false }
                return agent.send(UnsafeRawBufferPointer(rebasing: buffer[..<length]))
            }
        }
        counters.withLock { counters in
            if sent { counters.rtcpSent += 1 } else { counters.sendFailures += 1 }
        }
        return sent
    }

    /// What crossed the connection so far.
    var statistics: Counters { counters.withLock { $0 } }

    /// Microseconds since the last RTP or RTCP packet came (since the connection was made,
    /// before any): how long the peer has been silent.
    var microsecondsSinceLastReceive: Int64 { loop.clock.nowMicroseconds - counters.withLock { $0.lastReceiveAt } }

    /// Whether SRTP keys are agreed.
    var isConnected: Bool { outbound.withLock { $0.srtp != nil } }

    /// Sends close_notify (when the handshake is done) and closes the agent: no handler runs
    /// after this returns. Idempotent.
    func close() {
        if loop.closing() {
            _ = agent.perform { [loop] in loop.closeAssociation() }
        }
        agent.close()
        outbound.withLock { $0.srtp = nil }
    }
}

/// The sending side: the outbound SRTP session and the buffer packets are protected in.
/// Guarded by its lock in ``WebRTCConnection``.
private struct Outbound {
    var srtp: SRTPContext?
    var buffer = [UInt8](repeating: 0, count: WebRTCConnection.datagramCapacity)
}

/// What only the ICE loop thread touches (`@unchecked Sendable`: handed to the agent's
/// callbacks, which all run on that thread; ``install(_:)`` and ``closing()`` hop there or take
/// the lock).
private final class LoopState: @unchecked Sendable {
    let handlers: WebRTCConnection.Handlers
    let counters: LockedValue<WebRTCConnection.Counters>
    /// The monotonic clock receptions are timed by (0 when the connection was made).
    let clock = WallClock()
    /// Set once, right after the agent is made, before any datagram can arrive.
    var agent: ICEAgent?
    var outbound: LockedValue<Outbound>?
    private var association: DTLSAssociation?
    private var inbound: SRTPContext?
    private var buffer = [UInt8](repeating: 0, count: WebRTCConnection.datagramCapacity)
    private var iceConnected = false
    private var handshakeStarted = false
    private var timerArmed = false
    private let closed = LockedValue(false)

    init(handlers: WebRTCConnection.Handlers, counters: LockedValue<WebRTCConnection.Counters>) {
        self.handlers = handlers
        self.counters = counters
    }

    /// Hands the association to the loop thread.
    func install(_ association: DTLSAssociation) {
        let box = UncheckedBox(association)
        _ = agent?.perform { [weak self] in
            guard let self else { return }
            self.association = box.value
            self.startHandshakeIfReady()
        }
    }

    /// Marks the connection closed; true the first time.
    func closing() -> Bool {
        closed.withLock { was in
            defer { was = true }
            return !was
        }
    }

    func closeAssociation() { association?.close() }

    func iceStateChanged(_ state: ICEAgent.State) {
        switch state {
        case .connected:
            iceConnected = true
            if association?.isConnected == true {
                handlers.state(.connected)
            } else {
                handlers.state(.connecting)
                startHandshakeIfReady()
            }
        case .failed:
            iceConnected = false
            handlers.state(.failed("ICE found no working candidate pair"))
        case .connecting, .gathering, .new:
            if iceConnected {
                iceConnected = false
                handlers.state(.disconnected)
            }
        case .closed:
            break
        }
    }

    private func startHandshakeIfReady() {
        guard iceConnected, !handshakeStarted, let association else { return }
        handshakeStarted = true
        do {
            if association.role == .client { try association.start() }
        } catch {
            handlers.state(.failed("DTLS: \(error)"))
        }
        armTimer()
    }

    /// Keeps one timer for the handshake's retransmissions while it runs.
    private func armTimer() {
        guard !timerArmed, let association, !association.isConnected,
            let due = association.nextTimeoutMilliseconds
        else { return }
        timerArmed = true
        let scheduled = agent?.schedule(afterMilliseconds: max(1, due)) { [weak self] in
            guard let self else { return }
            self.timerArmed = false
            guard let association = self.association, !association.isConnected else { return }
            do {
                try association.handleTimeout()
            } catch {
                self.handlers.state(.failed("DTLS: \(error)"))
                return
            }
            self.armTimer()
        }
        if scheduled == nil { timerArmed = false }
    }

    func received(_ datagram: UnsafeRawBufferPointer) {
        guard let first = datagram.first else { return }
        switch first {
        case 20...63: receivedDTLS(datagram)
        case 128...191: receivedSRTP(datagram)
        default: counters.withLock { $0.ignored += 1 }
        }
    }

    private func receivedDTLS(_ datagram: UnsafeRawBufferPointer) {
        guard let association else {
            counters.withLock { $0.ignored += 1 }
            return
        }
        let wasConnected = association.isConnected
        do {
            try association.receive(datagram)
        } catch {
            counters.withLock { $0.ignored += 1 }
            // A datagram that is no DTLS record is dropped and the handshake carries on (a
            // stray or forged one must not end it); an alert, a wrong fingerprint or a failed
            // handshake ends it.
            let fatal: [DTLSAssociation.Failure] = [.alert, .fingerprintMismatch, .handshake, .noSRTPProfile]
            if !wasConnected, let failure = DTLSAssociation.Failure(error), fatal.contains(failure) {
                handlers.state(.failed("DTLS: \(error)"))
            }
            return
        }
        if !wasConnected && association.isConnected, let keys = association.keys {
            do {
                inbound = try SRTPContext(keys: keys, direction: .inbound)
                let sending = try SRTPContext(keys: keys, direction: .outbound)
                outbound?.withLock { $0.srtp = sending }
            } catch {
                handlers.state(.failed("SRTP: \(error)"))
                return
            }
            handlers.state(.connected)
        } else if association.peerClosed {
            outbound?.withLock { $0.srtp = nil }
            inbound = nil
            handlers.state(.closed)
        } else {
            armTimer()
        }
    }

    private func receivedSRTP(_ datagram: UnsafeRawBufferPointer) {
        guard let inbound, datagram.count >= 12, datagram.count <= buffer.count else {
            counters.withLock { $0.unprotectFailures += 1 }
            return
        }
        // RTCP when the second byte is a payload type of 64…95 with the marker bit (RFC 5761 §4).
        let isRTCP = (192...223).contains(datagram[1])
        let handed: Int? = buffer.withUnsafeMutableBytes { storage in
            storage.copyMemory(from: datagram)
            let length =
                isRTCP
                ? try? inbound.unprotectRTCP(storage.baseAddress!, length: datagram.count)
                : try? inbound.unprotectRTP(storage.baseAddress!, length: datagram.count)
            guard let length else { return nil }
            let plain = UnsafeRawBufferPointer(rebasing: storage[..<length])
            isRTCP ? handlers.rtcp(plain) : handlers.rtp(plain)
            return length
        }
        counters.withLock { counters in
            guard let handed else {
                counters.unprotectFailures += 1
                return
            }
            if isRTCP {
                counters.rtcpReceived += 1
            } else {
                counters.rtpReceived += 1
                counters.bytesReceived += Int64(handed)
            }
        }
    }
}

/// Carries a value that is handed to exactly one other thread and used only there.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
