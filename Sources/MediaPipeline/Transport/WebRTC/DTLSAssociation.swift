import CWebRTC

/// An SRTP protection profile negotiated by DTLS-SRTP (RFC 5764, RFC 7714).
enum SRTPProfile: Sendable, Equatable, CustomStringConvertible {
    /// AES-128 counter mode with an 80-bit HMAC-SHA1 tag: 16-byte key, 14-byte salt.
    case aes128CmSha1Tag80
    /// AES-128 GCM with a 16-byte tag: 16-byte key, 12-byte salt.
    case aeadAes128Gcm

    /// The profile of a DTLS-SRTP identifier, nil for one this engine does not offer.
    init?(identifier: Int32) {
        switch Int(identifier) {
        case CWEBRTC_DTLS_SRTP_AES128_CM_SHA1_80: self = .aes128CmSha1Tag80
        case CWEBRTC_DTLS_SRTP_AEAD_AES_128_GCM: self = .aeadAes128Gcm
        default: return nil
        }
    }

    /// The DTLS-SRTP identifier (0x0001, 0x0007).
    var identifier: Int32 {
        switch self {
        case .aes128CmSha1Tag80: Int32(CWEBRTC_DTLS_SRTP_AES128_CM_SHA1_80)
        case .aeadAes128Gcm: Int32(CWEBRTC_DTLS_SRTP_AEAD_AES_128_GCM)
        }
    }

    /// Master key bytes.
    var keyLength: Int { 16 }

    /// Master salt bytes.
    var saltLength: Int {
        switch self {
        case .aes128CmSha1Tag80: 14
        case .aeadAes128Gcm: 12
        }
    }

    /// The profile's name as DTLS-SRTP spells it.
    var description: String {
        switch self {
        case .aes128CmSha1Tag80: "SRTP_AES128_CM_SHA1_80"
        case .aeadAes128Gcm: "SRTP_AEAD_AES_128_GCM"
        }
    }
}

/// The SRTP master keys and salts a DTLS handshake produced, split by role.
struct SRTPKeys: Sendable, Equatable {
    /// The negotiated profile.
    let profile: SRTPProfile
    /// Master key followed by master salt for what this side sends (a DTLS client's are the client's).
    let localMasterKeyAndSalt: [UInt8]
    /// Master key followed by master salt for what the peer sends.
    let remoteMasterKeyAndSalt: [UInt8]

    /// Splits RFC 5764 keying material (client key | server key | client salt | server salt).
    ///
    /// - Throws: ``MediaError`` `invalidArgument` when `material` is not 2 × (key + salt) bytes.
    init(profile: SRTPProfile, keyingMaterial material: [UInt8], role: DTLSAssociation.Role) throws {
        let key = profile.keyLength
        let salt = profile.saltLength
        guard material.count == 2 * (key + salt) else {
            throw MediaError.invalidArgument(
                "SRTP keying material: \(material.count) bytes, \(profile) needs \(2 * (key + salt))")
        }
        let client = Array(material[0..<key] + material[(2 * key)..<(2 * key + salt)])
        let server = Array(material[key..<(2 * key)] + material[(2 * key + salt)..<(2 * key + 2 * salt)])
        self.profile = profile
        localMasterKeyAndSalt = role == .client ? client : server
        remoteMasterKeyAndSalt = role == .client ? server : client
    }

    /// Keys given directly (tests, known vectors).
    init(profile: SRTPProfile, localMasterKeyAndSalt: [UInt8], remoteMasterKeyAndSalt: [UInt8]) {
        self.profile = profile
        self.localMasterKeyAndSalt = localMasterKeyAndSalt
        self.remoteMasterKeyAndSalt = remoteMasterKeyAndSalt
    }
}

/// One DTLS 1.2 association for DTLS-SRTP (OpenSSL), driven by datagrams its owner hands in.
///
/// Not thread-safe: one thread at a time drives it (the owner's, typically the transport's
/// network thread). The `send` closure runs synchronously inside ``start()``, ``receive(_:)``,
/// ``handleTimeout()`` and ``close()``, once per outgoing datagram (at most the MTU); it must not
/// call back into the association (queue the datagram or send it on a socket).
///
/// The peer is authenticated by its certificate's SHA-256 fingerprint only (from SDP): any
/// certificate passes OpenSSL's verification, and once the handshake completes its fingerprint
/// must equal `remoteFingerprint`, else the association fails.
final class DTLSAssociation {
    /// Which side of the handshake this association plays.
    enum Role: Sendable {
        /// Sends the ClientHello (`a=setup:active`; towards Janus, always).
        case client
        /// Waits for a ClientHello (`a=setup:passive`).
        case server
    }

    /// What went wrong, as carried in ``MediaError/codecStatus`` of the errors thrown.
    enum Failure: Int32, Sendable {
        /// The peer sent a fatal alert (named in the message).
        case alert = -1
        /// The peer's certificate does not have the expected fingerprint.
        case fingerprintMismatch = -2
        /// OpenSSL failed the handshake on our side.
        case handshake = -3
        /// A datagram that is not a sequence of DTLS records (dropped; the association carries on).
        case malformedDatagram = -4
        /// A call out of sequence.
        case outOfSequence = -5
        /// The peer agreed to no SRTP profile this engine offers.
        case noSRTPProfile = -6
        /// The peer did not answer within OpenSSL's retransmissions.
        case timeout = -7
        /// OpenSSL refused something that should not fail.
        case `internal` = -8

        /// The failure an error thrown by an association reports, if it is one.
        init?(_ error: any Error) {
            guard let error = error as? MediaError, let status = error.codecStatus else { return nil }
            self.init(rawValue: status)
        }
    }

    /// Holds the send closure at a stable address for the C callback.
    private final class Sender {
        let send: (UnsafeRawBufferPointer) -> Void
        init(_ send: @escaping (UnsafeRawBufferPointer) -> Void) { self.send = send }
    }

    /// This side's role.
    let role: Role
    /// The fingerprint the peer's certificate must have.
    let remoteFingerprint: String
    private let sender: Sender
    private let handle: OpaquePointer
    private var cachedKeys: SRTPKeys?

    /// Makes an association; nothing is sent until ``start()`` (client) or the first ``receive(_:)``.
    ///
    /// - Parameters:
    ///   - role: client or server.
    ///   - certificate: this side's certificate (its fingerprint goes into the local SDP).
    ///   - remoteFingerprint: the peer's `a=fingerprint:sha-256` value, "AB:CD:…" (any case).
    ///   - mtu: the largest datagram sent, 256…65507 bytes.
    ///   - firstRetransmitMilliseconds: the first retransmission timer, doubling after (OpenSSL's
    ///     default is 1 s; a first ClientHello is often lost while the peer's ICE is not ready).
    ///   - send: receives each outgoing datagram; must not call into the association.
    /// - Throws: ``MediaError`` `invalidArgument` naming a bad fingerprint, MTU or timer, or
    ///   `codecFailure` when OpenSSL refuses.
    init(
        role: Role, certificate: DTLSCertificate, remoteFingerprint: String, mtu: Int = 1200,
        firstRetransmitMilliseconds: Int = 150, send: @escaping (UnsafeRawBufferPointer) -> Void
    ) throws {
        guard Self.isFingerprint(remoteFingerprint) else {
            throw MediaError.invalidArgument(
                "DTLS remote fingerprint \"\(remoteFingerprint)\" is not 32 colon-separated hex bytes")
        }
        guard (256...65507).contains(mtu) else {
            throw MediaError.invalidArgument("DTLS MTU \(mtu) is outside 256…65507 bytes")
        }
        guard (10...60000).contains(firstRetransmitMilliseconds) else {
            throw MediaError.invalidArgument(
                "DTLS first retransmit \(firstRetransmitMilliseconds) ms is outside 10…60000 ms")
        }
        let sender = Sender(send)
        let callback: cwebrtc_dtls_send_fn = { context, datagram, length in
            guard let context else { return }
            let sender = Unmanaged<Sender>.fromOpaque(context).takeUnretainedValue()
            sender.send(UnsafeRawBufferPointer(start: datagram, count: length))
        }
        var error = [CChar](repeating: 0, count: 512)
        let created = cwebrtc_dtls_new(
            certificate.handle, Int32(role == .client ? CWEBRTC_DTLS_ROLE_CLIENT : CWEBRTC_DTLS_ROLE_SERVER),
            remoteFingerprint, Int32(mtu), Int32(firstRetransmitMilliseconds), callback,
            Unmanaged.passUnretained(sender).toOpaque(), &error, Int32(error.count))
        guard let created else {
            throw MediaError(.codecFailure, "DTLS association: \(String(cBuffer: error))")
        }
        self.role = role
        self.remoteFingerprint = remoteFingerprint
        self.sender = sender
        self.handle = created
    }

    deinit { cwebrtc_dtls_free(handle) }

    /// Whether `text` is 32 hex bytes joined by colons.
    private static func isFingerprint(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 95 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 3 == 2 {
                if byte != UInt8(ascii: ":") { return false }
            } else if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                && !(UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
            {
                return false
            }
        }
        return true
    }

    /// Starts the handshake: a client sends its ClientHello; a server does nothing.
    ///
    /// - Throws: ``MediaError`` when the client already started or OpenSSL fails.
    func start() throws {
        try check(cwebrtc_dtls_start(handle), doing: "starting")
    }

    /// Feeds one received datagram (first byte 20…63 by RFC 7983's demultiplexing).
    ///
    /// - Throws: ``MediaError`` with ``Failure`` as its status: `invalidFormat` for a datagram
    ///   that is not DTLS records (dropped, the association carries on); `codecFailure` for a
    ///   fatal alert, a fingerprint mismatch or a failed handshake (the association is over).
    func receive(_ datagram: UnsafeRawBufferPointer) throws {
        guard let base = datagram.baseAddress, !datagram.isEmpty else {
            throw MediaError(
                .invalidFormat, "DTLS: an empty datagram is no DTLS record",
                codecStatus: Failure.malformedDatagram.rawValue)
        }
        try check(
            cwebrtc_dtls_receive(handle, base.assumingMemoryBound(to: UInt8.self), datagram.count),
            doing: "receiving a datagram of \(datagram.count) bytes")
    }

    /// Whether the handshake completed and the peer's fingerprint matched.
    var isConnected: Bool { cwebrtc_dtls_is_connected(handle) != 0 }

    /// Whether the peer sent close_notify.
    var peerClosed: Bool { cwebrtc_dtls_peer_closed(handle) != 0 }

    /// The SRTP keys, once connected (exported on first use, then kept).
    var keys: SRTPKeys? {
        if let cachedKeys { return cachedKeys }
        guard isConnected, let profile = SRTPProfile(identifier: cwebrtc_dtls_srtp_profile(handle)) else { return nil }
        var material = [UInt8](repeating: 0, count: 2 * (profile.keyLength + profile.saltLength))
        let status = cwebrtc_dtls_export_srtp_keying_material(handle, &material, material.count)
        guard Int(status) == CWEBRTC_DTLS_OK else { return nil }
        cachedKeys = try? SRTPKeys(profile: profile, keyingMaterial: material, role: role)
        return cachedKeys
    }

    /// Milliseconds until ``handleTimeout()`` is due (a retransmission), nil when no timer runs.
    var nextTimeoutMilliseconds: Int? {
        let milliseconds = cwebrtc_dtls_timeout_ms(handle)
        return milliseconds < 0 ? nil : Int(milliseconds)
    }

    /// Retransmits the last flight if its timer has expired; call when ``nextTimeoutMilliseconds`` says.
    ///
    /// - Throws: ``MediaError`` with ``Failure/timeout`` once OpenSSL gives up on the peer.
    func handleTimeout() throws {
        try check(cwebrtc_dtls_handle_timeout(handle), doing: "retransmitting")
    }

    /// Sends close_notify (once, and only on a connected association).
    func close() {
        _ = cwebrtc_dtls_close(handle)
    }

    /// Throws the error a C status means.
    private func check(_ status: Int32, doing what: String) throws {
        guard let failure = Failure(rawValue: status) else { return }
        let message = "DTLS \(role) \(what): \(String(cString: cwebrtc_dtls_last_error(handle)))"
        switch failure {
        case .malformedDatagram: throw MediaError(.invalidFormat, message, codecStatus: status)
        case .outOfSequence: throw MediaError(.invalidArgument, message, codecStatus: status)
        case .noSRTPProfile: throw MediaError(.unsupported, message, codecStatus: status)
        default: throw MediaError(.codecFailure, message, codecStatus: status)
        }
    }
}
