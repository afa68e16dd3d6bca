import CWebRTC

/// One direction of SRTP and SRTCP (libsrtp2): an outbound context protects what this side
/// sends, an inbound one unprotects what the peer sends, for any SSRC.
///
/// Packets are transformed in place in the caller's buffer, with no allocation, on success or
/// failure: libsrtp2 keeps the protocol, but its AES-ICM, AES-GCM and HMAC-SHA1 run on our
/// OpenSSL implementations (Sources/CWebRTC/srtp_crypto.c), registered in place of Debian's NSS
/// ones (which allocate some 14 times a packet) before the first context is made.
/// Thread-safe: every call holds the context's own lock, so the context may be shared between a
/// sending and a receiving thread (each direction has its own context, so they do not contend).
final class SRTPContext: @unchecked Sendable {
    /// Which packets the context handles.
    enum Direction: Sendable {
        /// Protects RTP and RTCP with the local keys.
        case outbound
        /// Unprotects SRTP and SRTCP with the remote keys.
        case inbound
    }

    /// What went wrong, as carried in ``MediaError/codecStatus`` of the errors thrown.
    enum Failure: Int32, Sendable {
        /// The authentication tag did not verify: a tampered packet, a wrong key, a cut tag.
        case authentication = -1
        /// The packet's index was seen before, or is older than the 1,024-packet replay window.
        case replay = -2
        /// Too short, or a header whose CSRCs or extension run past the end.
        case malformed = -3
        /// A parameter libsrtp2 refused.
        case badParameter = -4
        /// Any other libsrtp2 failure (its own status in the message).
        case library = -5

        /// The failure an error thrown by a context reports, if it is one.
        init?(_ error: any Error) {
            guard let error = error as? MediaError, let status = error.codecStatus else { return nil }
            self.init(rawValue: status)
        }
    }

    /// Bytes a buffer must have free after a packet for protection to write its trailer (tag,
    /// MKI and SRTCP index): libsrtp2's SRTP_MAX_TRAILER_LEN + 4.
    static let maximumTrailerBytes = Int(cwebrtc_srtp_maximum_trailer_bytes())

    /// Whether libsrtp2 runs on our OpenSSL crypto types in this process (from the first context on).
    static var usesOpenSSLCrypto: Bool { cwebrtc_srtp_uses_openssl_crypto() == 1 }

    /// Runs libsrtp2's self test on our crypto types with their known-answer vectors (RFC 3711
    /// B.2, RFC 6188, GCM test case 4, RFC 2202) and RFC 3711 B.3's key derivation on our AES-ICM.
    ///
    /// - Returns: 0, or libsrtp2's status (srtp_err_status_t) of the first failure.
    static func cryptoSelfTest() -> Int32 { cwebrtc_srtp_crypto_self_test() }

    /// The direction of this context.
    let direction: Direction
    /// The protection profile.
    let profile: SRTPProfile
    private let handle: OpaquePointer
    private let lock = Lock()

    /// A context for one direction of `keys`: outbound uses the local key and salt, inbound the remote.
    ///
    /// - Throws: ``MediaError`` `invalidArgument` naming a key of the wrong length, or
    ///   `codecFailure` when libsrtp2 refuses.
    init(keys: SRTPKeys, direction: Direction) throws {
        let keyAndSalt = direction == .outbound ? keys.localMasterKeyAndSalt : keys.remoteMasterKeyAndSalt
        let expected = keys.profile.keyLength + keys.profile.saltLength
        guard keyAndSalt.count == expected else {
            throw MediaError.invalidArgument(
                "SRTP \(direction) master key and salt: \(keyAndSalt.count) bytes, \(keys.profile) needs \(expected)")
        }
        var created: OpaquePointer?
        let status = cwebrtc_srtp_create(
            &created, keys.profile.identifier,
            Int32(direction == .outbound ? CWEBRTC_SRTP_OUTBOUND : CWEBRTC_SRTP_INBOUND), keyAndSalt,
            keyAndSalt.count)
        guard Int(status) == CWEBRTC_SRTP_OK, let created else {
            throw MediaError(
                .codecFailure, "SRTP \(direction) context for \(keys.profile): libsrtp2 refused", codecStatus: status)
        }
        self.direction = direction
        self.profile = keys.profile
        self.handle = created
    }

    deinit { cwebrtc_srtp_free(handle) }

    /// Protects the RTP packet of `length` bytes at `packet` in place.
    ///
    /// - Parameters:
    ///   - packet: 32-bit aligned; `capacity` bytes writable.
    ///   - capacity: at least `length` + ``maximumTrailerBytes``.
    /// - Returns: the SRTP packet's length.
    /// - Throws: ``MediaError`` naming the packet: `invalidArgument` for a small buffer or an
    ///   inbound context, `invalidFormat` for a malformed header.
    func protectRTP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws -> Int {
        try checkBuffer(packet, length: length, capacity: capacity, trailer: Self.maximumTrailerBytes, what: "RTP")
        return try transform(packet, length: length, what: "protecting RTP", cwebrtc_srtp_protect_rtp)
    }

    /// Unprotects the SRTP packet of `length` bytes at `packet` in place (32-bit aligned).
    ///
    /// - Returns: the RTP packet's length.
    /// - Throws: ``MediaError`` with ``Failure/authentication`` or ``Failure/replay`` as its
    ///   status (code `codecFailure`), or `invalidFormat` for a malformed header.
    func unprotectRTP(_ packet: UnsafeMutableRawPointer, length: Int) throws -> Int {
        try checkBuffer(packet, length: length, capacity: length, trailer: 0, what: "SRTP")
        return try transform(packet, length: length, what: "unprotecting SRTP", cwebrtc_srtp_unprotect_rtp)
    }

    /// Protects the RTCP compound packet of `length` bytes at `packet` in place.
    ///
    /// - Parameter capacity: at least `length` + ``maximumTrailerBytes``.
    /// - Returns: the SRTCP packet's length.
    /// - Throws: ``MediaError`` as ``protectRTP(_:length:capacity:)``.
    func protectRTCP(_ packet: UnsafeMutableRawPointer, length: Int, capacity: Int) throws -> Int {
        try checkBuffer(packet, length: length, capacity: capacity, trailer: Self.maximumTrailerBytes, what: "RTCP")
        return try transform(packet, length: length, what: "protecting RTCP", cwebrtc_srtp_protect_rtcp)
    }

    /// Unprotects the SRTCP packet of `length` bytes at `packet` in place.
    ///
    /// - Returns: the RTCP packet's length.
    /// - Throws: ``MediaError`` as ``unprotectRTP(_:length:)``.
    func unprotectRTCP(_ packet: UnsafeMutableRawPointer, length: Int) throws -> Int {
        try checkBuffer(packet, length: length, capacity: length, trailer: 0, what: "SRTCP")
        return try transform(packet, length: length, what: "unprotecting SRTCP", cwebrtc_srtp_unprotect_rtcp)
    }

    /// Checks what libsrtp2 assumes of the buffer.
    @inline(__always)
    private func checkBuffer(
        _ packet: UnsafeMutableRawPointer, length: Int, capacity: Int, trailer: Int, what: StaticString
    ) throws {
        guard length > 0, length <= Int(Int32.max) - trailer, capacity >= length + trailer else {
            throw MediaError.invalidArgument(
                "\(what) packet of \(length) bytes in a buffer of \(capacity): \(trailer) bytes must stay free after it"
            )
        }
        guard UInt(bitPattern: packet) % 4 == 0 else {
            throw MediaError.invalidArgument("\(what) packet at \(packet) is not 32-bit aligned, as libsrtp2 needs")
        }
    }

    /// Runs one C transform under the lock and turns its status into an error.
    @inline(__always)
    private func transform(
        _ packet: UnsafeMutableRawPointer, length: Int, what: @autoclosure () -> String,
        _ function: (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> Int32
    ) throws -> Int {
        var inOut = Int32(length)
        let status = lock.withLock { function(handle, packet, &inOut) }
        if status == 0 { return Int(inOut) }
        throw error(status, packet: packet, length: length, what: what())
    }

    /// The error for a failed transform, naming the packet's SSRC and sequence number.
    private func error(_ status: Int32, packet: UnsafeMutableRawPointer, length: Int, what: String) -> MediaError {
        let bytes = packet.assumingMemoryBound(to: UInt8.self)
        var identity = ""
        if what.hasSuffix("RTP"), length >= 12 {
            let sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
            let ssrc = (8..<12).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[$1]) }
            identity = " (SSRC \(ssrc), sequence \(sequence))"
        } else if length >= 8 {
            let ssrc = (4..<8).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[$1]) }
            identity = " (SSRC \(ssrc), packet type \(bytes[1]))"
        }
        let reason: String
        let code: MediaError.Code
        switch Failure(rawValue: status) {
        case .authentication:
            (reason, code) = ("failed authentication", .codecFailure)
        case .replay:
            (reason, code) = ("is a replay or older than the replay window", .codecFailure)
        case .malformed:
            (reason, code) = ("has a malformed header", .invalidFormat)
        case .badParameter:
            (reason, code) = ("does not belong to an \(direction) context", .invalidArgument)
        case .library, nil:
            let library = cwebrtc_srtp_last_library_status(handle)
            (reason, code) = ("was refused by libsrtp2 (status \(library))", .codecFailure)
        }
        return MediaError(code, "\(what): the packet of \(length) bytes\(identity) \(reason)", codecStatus: status)
    }
}

/// Nanoseconds per packet of SRTP work, through ``SRTPContext`` and on libsrtp2 directly.
struct SRTPCostMeasurement: Sendable, CustomStringConvertible {
    /// Packet size measured (RTP bytes before protection).
    let packetSize: Int
    /// Whether the baseline ran libsrtp2 on our OpenSSL crypto types (true once a context exists in
    /// the process: the ratios are then the wrapper's cost alone) or on libsrtp2's own.
    let baselineUsesOpenSSLCrypto: Bool
    /// Protect, libsrtp2 called directly in C.
    let baselineProtectNanoseconds: Double
    /// Unprotect, libsrtp2 called directly in C.
    let baselineUnprotectNanoseconds: Double
    /// Protect through ``SRTPContext/protectRTP(_:length:capacity:)``.
    let protectNanoseconds: Double
    /// Unprotect through ``SRTPContext/unprotectRTP(_:length:)``.
    let unprotectNanoseconds: Double

    /// The wrapper's protect time over the baseline's.
    var protectRatio: Double { protectNanoseconds / baselineProtectNanoseconds }
    /// The wrapper's unprotect time over the baseline's.
    var unprotectRatio: Double { unprotectNanoseconds / baselineUnprotectNanoseconds }

    /// One line with the four figures and both ratios.
    var description: String {
        func format(_ value: Double) -> String { String(Int(value.rounded())) }
        func ratio(_ value: Double) -> String { String(Double(Int((value * 1000).rounded())) / 1000) }
        let crypto = baselineUsesOpenSSLCrypto ? "our OpenSSL crypto" : "its own crypto"
        return "SRTP \(packetSize)-byte RTP: protect \(format(protectNanoseconds)) ns (libsrtp2 direct on \(crypto) "
            + "\(format(baselineProtectNanoseconds)) ns, ×\(ratio(protectRatio))), unprotect "
            + "\(format(unprotectNanoseconds)) ns (direct \(format(baselineUnprotectNanoseconds)) ns, "
            + "×\(ratio(unprotectRatio)))"
    }
}

extension SRTPContext {
    /// Measures protect and unprotect per packet through ``SRTPContext`` and, in the same run, on
    /// libsrtp2 directly (`cwebrtc_srtp_baseline`: after the first context, on the same crypto
    /// types as the contexts), with the same loops: `count` AES128_CM_SHA1_80 packets, each
    /// copied from a template into its own slot of a slab, given its sequence number and
    /// protected; then all unprotected where they lie. The two paths alternate for `rounds`
    /// rounds and the best round of each counts.
    ///
    /// - Throws: ``MediaError`` `invalidArgument` for a size outside 12…1500 or a count outside
    ///   1…30000, or a failure of either path.
    static func measureCost(packetSize: Int = 1200, count: Int = 5000, rounds: Int = 5) throws -> SRTPCostMeasurement {
        guard (12...1500).contains(packetSize), (1...30000).contains(count), rounds >= 1 else {
            throw MediaError.invalidArgument(
                "SRTP measurement: packet size \(packetSize) (12…1500) or count \(count) (1…30000) out of range")
        }
        var key = [UInt8](repeating: 0, count: 30)
        for index in key.indices { key[index] = UInt8(truncatingIfNeeded: index * 7 + 1) }
        let stride = (packetSize + maximumTrailerBytes + 15) / 16 * 16
        let template = UnsafeMutableRawPointer.allocate(byteCount: stride, alignment: 16)
        let slab = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: 16)
        let lengths = UnsafeMutablePointer<Int>.allocate(capacity: count)
        defer {
            template.deallocate()
            slab.deallocate()
            lengths.deallocate()
        }
        let bytes = template.assumingMemoryBound(to: UInt8.self)
        for index in 0..<packetSize { bytes[index] = UInt8(truncatingIfNeeded: index * 31 + 5) }
        (bytes[0], bytes[1], bytes[8], bytes[9], bytes[10], bytes[11]) = (0x80, 96, 0x12, 0x34, 0x56, 0x78)
        slab.initializeMemory(as: UInt8.self, repeating: 0, count: stride * count)
        let capacity = stride

        // A first context registers our crypto types, so that every round's baseline runs on them.
        let keys = SRTPKeys(profile: .aes128CmSha1Tag80, localMasterKeyAndSalt: key, remoteMasterKeyAndSalt: key)
        _ = try SRTPContext(keys: keys, direction: .outbound)
        var best = (baseProtect: Double.infinity, baseUnprotect: Double.infinity)
        var baselineOpenSSL = false
        var wrapped = (protect: Double.infinity, unprotect: Double.infinity)
        for _ in 0..<rounds {
            var protectNs = 0.0
            var unprotectNs = 0.0
            var openSSL: Int32 = 0
            let status = cwebrtc_srtp_baseline(
                Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80), 0, Int32(packetSize), Int32(count), &protectNs, &unprotectNs,
                &openSSL)
            guard Int(status) == CWEBRTC_SRTP_OK else {
                throw MediaError(.codecFailure, "SRTP measurement: the libsrtp2 baseline failed", codecStatus: status)
            }
            baselineOpenSSL = openSSL == 1
            best.baseProtect = min(best.baseProtect, protectNs)
            best.baseUnprotect = min(best.baseUnprotect, unprotectNs)

            let outbound = try SRTPContext(keys: keys, direction: .outbound)
            let inbound = try SRTPContext(keys: keys, direction: .inbound)
            var start = ContinuousClock.now
            for index in 0..<count {
                let packet = slab + index * stride
                packet.copyMemory(from: template, byteCount: packetSize)
                packet.storeBytes(of: UInt16(truncatingIfNeeded: index).bigEndian, toByteOffset: 2, as: UInt16.self)
                lengths[index] = try outbound.protectRTP(packet, length: packetSize, capacity: capacity)
            }
            wrapped.protect = min(wrapped.protect, nanoseconds(ContinuousClock.now - start) / Double(count))
            start = ContinuousClock.now
            for index in 0..<count {
                lengths[index] = try inbound.unprotectRTP(slab + index * stride, length: lengths[index])
            }
            wrapped.unprotect = min(wrapped.unprotect, nanoseconds(ContinuousClock.now - start) / Double(count))
            guard lengths[count - 1] == packetSize else {
                throw MediaError(.codecFailure, "SRTP measurement: unprotect gave \(lengths[count - 1]) bytes")
            }
        }
        return SRTPCostMeasurement(
            packetSize: packetSize, baselineUsesOpenSSLCrypto: baselineOpenSSL,
            baselineProtectNanoseconds: best.baseProtect,
            baselineUnprotectNanoseconds: best.baseUnprotect, protectNanoseconds: wrapped.protect,
            unprotectNanoseconds: wrapped.unprotect)
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    }
}
