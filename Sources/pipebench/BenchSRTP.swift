import CSrtp
import CWebRTC
import Foundation
import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// The SRTP rows of `pipebench bench` (`--only srtp`): protect and unprotect, from Swift through
/// the transport's C glue, of 1,200-byte RTP packets and 100-byte RTCP packets, in both profiles
/// (AES128_CM_SHA1_80, AEAD_AES_128_GCM), against stock libsrtp2 called directly in C
/// (`cwebrtc_srtp_baseline`) in the same run; the fastest of `repeats` passes of each is reported.
///
/// The floor is libsrtp2 as Debian ships it, on its own crypto (NSS). Our contexts run libsrtp2 on
/// our OpenSSL cipher and HMAC types (Sources/CWebRTC/srtp_crypto.c), which replace libsrtp2's
/// for the whole process when the first context is made, and a stream keeps the types it was made
/// with. So every floor pass runs first, before this process makes any context (checked: the bench
/// refuses to run otherwise), and then every pass of ours: the two are not interleaved.
///
/// `SRTPContext` is internal to MediaPipeline, so the Swift side here repeats its per-packet
/// path: the same buffer checks, a pthread mutex taken around the call (as its `Lock`), the
/// CWebRTC glue (header check, `srtp_protect`/`srtp_unprotect` and the RTCP twins, status
/// mapping). Both sides run the same loops: each packet copied from a template into its own slot
/// of a slab, given its sequence number (RTP) and protected; then every packet unprotected where
/// it lies.
///
/// Allocations are counted per packet on the Swift side, and on stock libsrtp2's
/// `srtp_protect`/`srtp_unprotect` (or the RTCP twins) called directly: NSS makes a context per
/// AES and HMAC call (14 allocations a packet with AES128_CM_SHA1_80, 5 with AES-GCM); our types
/// make none. The first packet of each pass is left out of the count: it makes libsrtp2's stream
/// for its SSRC (cloned from the session's template, with its replay window: 3 allocations), once
/// per SSRC and session, not per packet.
struct BenchSRTP {
    let repeats: Int
    let progress: (String, Double) -> Void
    var count = 5000

    /// One measured case: a profile, RTP or RTCP, a packet size.
    struct Case {
        let profile: Int32
        let rtcp: Bool
        let packetSize: Int

        var profileName: String { profile == Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80) ? "AES_CM_SHA1_80" : "AES_128_GCM" }
        var label: String { "\(rtcp ? "SRTCP" : "SRTP") \(profileName) \(packetSize) B" }
    }

    static let cases = [
        Case(profile: Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80), rtcp: false, packetSize: 1200),
        Case(profile: Int32(CWEBRTC_SRTP_AEAD_AES_128_GCM), rtcp: false, packetSize: 1200),
        Case(profile: Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80), rtcp: true, packetSize: 100),
        Case(profile: Int32(CWEBRTC_SRTP_AEAD_AES_128_GCM), rtcp: true, packetSize: 100),
    ]

    /// The protect and unprotect rows of every case.
    func rows() throws -> [BenchRow] {
        guard cwebrtc_srtp_uses_openssl_crypto() == 0 else {
            throw MediaError(
                .unsupported,
                "SRTP bench: this process already runs libsrtp2 on our crypto types, so stock libsrtp2 cannot be "
                    + "measured as the floor (the srtp section must run before anything makes an SRTP context)")
        }
        let stride = baselineStride(Self.cases.map(\.packetSize).max() ?? 1200)
        let slab = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: 16)
        let template = UnsafeMutableRawPointer.allocate(byteCount: stride, alignment: 16)
        let lengths = UnsafeMutablePointer<Int>.allocate(capacity: count)
        defer {
            slab.deallocate()
            template.deallocate()
            lengths.deallocate()
        }
        slab.initializeMemory(as: UInt8.self, repeating: 0, count: stride * count)
        let steps = Double(2 * Self.cases.count * (repeats + 1))
        var step = 0.0

        // Stock libsrtp2 first, all of it: nothing in this process has replaced its types yet.
        var floors: [(protect: Double, unprotect: Double, protectAllocations: Double, unprotectAllocations: Double)] =
            []
        for item in Self.cases {
            var passes: [(protect: Double, unprotect: Double)] = []
            for _ in 0...repeats {
                progress("SRTP: stock libsrtp2, \(item.label)", step / steps)
                step += 1
                passes.append(try cPass(item))
            }
            passes.removeFirst()  // warm-up (library initialisation, page faults)
            fillTemplate(template, item)
            let allocations = try stockAllocationsPerPacket(item, slab: slab, template: template, stride: stride)
            floors.append(
                (
                    passes.map(\.protect).min() ?? 0, passes.map(\.unprotect).min() ?? 0, allocations.protect,
                    allocations.unprotect
                ))
        }

        // Then ours: the first context registers our types.
        var rows: [BenchRow] = []
        for (item, floor) in zip(Self.cases, floors) {
            fillTemplate(template, item)
            var passes: [(protect: Double, unprotect: Double, protectAllocations: Int, unprotectAllocations: Int)] = []
            for _ in 0...repeats {
                progress("SRTP: ours, \(item.label)", step / steps)
                step += 1
                passes.append(try swiftPass(item, slab: slab, template: template, lengths: lengths, stride: stride))
            }
            passes.removeFirst()
            guard cwebrtc_srtp_uses_openssl_crypto() == 1 else {
                throw MediaError(.codecFailure, "SRTP bench: our crypto types did not replace libsrtp2's")
            }
            // The fastest pass of each: a pass is 5,000 packets (a few ms), short enough that one
            // preemption on a shared machine moves a median.
            let size = item.packetSize
            func row(_ what: String, _ nanoseconds: Double, _ c: Double, _ allocations: Int, _ cAllocations: Double)
                -> BenchRow
            {
                BenchRow(
                    section: "srtp", path: "\(what) \(item.profileName) \(size) B", unit: "packet",
                    microsecondsPerUnit: nanoseconds / 1000, cMicrosecondsPerUnit: c / 1000,
                    speed: Double(size) * 8 / nanoseconds * 1000, speedUnit: "Mbit/s",
                    allocationsPerUnit: Double(allocations) / Double(count - 1), cAllocationsPerUnit: cAllocations)
            }
            let kind = item.rtcp ? "SRTCP" : "SRTP"
            rows.append(
                row(
                    "\(kind) protect", passes.map(\.protect).min() ?? 0, floor.protect,
                    passes.map(\.protectAllocations).min() ?? 0, floor.protectAllocations))
            rows.append(
                row(
                    "\(kind) unprotect", passes.map(\.unprotect).min() ?? 0, floor.unprotect,
                    passes.map(\.unprotectAllocations).min() ?? 0, floor.unprotectAllocations))
        }
        return rows
    }

    /// The packet every pass copies: RTP (payload type 96, SSRC 0x12345678) or an RTCP sender
    /// report of the case's size, the rest a byte pattern.
    private func fillTemplate(_ template: UnsafeMutableRawPointer, _ item: Case) {
        let bytes = template.assumingMemoryBound(to: UInt8.self)
        for index in 0..<item.packetSize { bytes[index] = UInt8(truncatingIfNeeded: index * 31 + 5) }
        if item.rtcp {
            let words = item.packetSize / 4 - 1
            (bytes[0], bytes[1], bytes[2], bytes[3]) = (0x80, 200, UInt8(words >> 8), UInt8(words & 0xff))
            (bytes[4], bytes[5], bytes[6], bytes[7]) = (0x12, 0x34, 0x56, 0x78)
        } else {
            (bytes[0], bytes[1], bytes[8], bytes[9], bytes[10], bytes[11]) = (0x80, 96, 0x12, 0x34, 0x56, 0x78)
        }
    }

    /// The same master key and salt on every side: index * 7 + 1.
    private func masterKey(_ item: Case) -> [UInt8] {
        (0..<Int(cwebrtc_srtp_key_and_salt_length(item.profile))).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
    }

    /// libsrtp2 directly: nanoseconds per packet of protect and of unprotect, on stock crypto.
    private func cPass(_ item: Case) throws -> (protect: Double, unprotect: Double) {
        var protect = 0.0
        var unprotect = 0.0
        var openSSL: Int32 = 0
        let status = cwebrtc_srtp_baseline(
            item.profile, item.rtcp ? 1 : 0, Int32(item.packetSize), Int32(count), &protect, &unprotect, &openSSL)
        guard Int(status) == CWEBRTC_SRTP_OK else {
            throw MediaError(.codecFailure, "SRTP baseline failed for \(item.label) (status \(status))")
        }
        guard openSSL == 0 else { throw MediaError(.codecFailure, "SRTP bench: the floor ran on our crypto types") }
        return (protect, unprotect)
    }

    /// Allocations per packet inside stock libsrtp2: `srtp_protect` and `srtp_unprotect` (or
    /// the RTCP twins) called directly (no glue, no lock) on the same packets, in steady state.
    private func stockAllocationsPerPacket(
        _ item: Case, slab: UnsafeMutableRawPointer, template: UnsafeMutableRawPointer, stride: Int
    ) throws -> (protect: Double, unprotect: Double) {
        var key = masterKey(item)
        var outbound: srtp_t?
        var inbound: srtp_t?
        let created = key.withUnsafeMutableBufferPointer { key -> Bool in
            var policy = srtp_policy_t()
            if item.profile == Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80) {
                srtp_crypto_policy_set_rtp_default(&policy.rtp)  // AES128_CM_SHA1_80 (the name is a macro)
                srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
            } else {
                srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
                srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
            }
            policy.key = key.baseAddress
            policy.window_size = 1024
            policy.allow_repeat_tx = 1
            policy.ssrc.type = ssrc_any_outbound
            guard srtp_create(&outbound, &policy) == srtp_err_status_ok else { return false }
            policy.ssrc.type = ssrc_any_inbound
            return srtp_create(&inbound, &policy) == srtp_err_status_ok
        }
        defer {
            if let outbound { srtp_dealloc(outbound) }
            if let inbound { srtp_dealloc(inbound) }
        }
        guard created, cwebrtc_srtp_uses_openssl_crypto() == 0 else {
            throw MediaError(.codecFailure, "SRTP bench: no stock libsrtp2 sessions for \(item.label)")
        }
        var lengths = [Int32](repeating: 0, count: count)
        var failed = false
        var before = 0
        for index in 0..<count {
            if index == 1 { before = BenchMeasure.allocations }  // after the stream's first packet
            let packet = slab + index * stride
            packet.copyMemory(from: template, byteCount: item.packetSize)
            lengths[index] = Int32(item.packetSize)
            if item.rtcp {
                failed = failed || srtp_protect_rtcp(outbound, packet, &lengths[index]) != srtp_err_status_ok
            } else {
                packet.storeBytes(of: UInt16(truncatingIfNeeded: index).bigEndian, toByteOffset: 2, as: UInt16.self)
                failed = failed || srtp_protect(outbound, packet, &lengths[index]) != srtp_err_status_ok
            }
        }
        let middle = BenchMeasure.allocations
        var unprotectBefore = 0
        for index in 0..<count {
            if index == 1 { unprotectBefore = BenchMeasure.allocations }
            let packet = slab + index * stride
            let status =
                item.rtcp
                ? srtp_unprotect_rtcp(inbound, packet, &lengths[index])
                : srtp_unprotect(inbound, packet, &lengths[index])
            failed = failed || status != srtp_err_status_ok
        }
        let after = BenchMeasure.allocations
        guard !failed else { throw MediaError(.codecFailure, "SRTP bench: libsrtp2 refused a packet of \(item.label)") }
        let steady = Double(count - 1)
        return (Double(middle - before) / steady, Double(after - unprotectBefore) / steady)
    }

    /// The Swift side: nanoseconds and allocations of `count` packets each way.
    private func swiftPass(
        _ item: Case, slab: UnsafeMutableRawPointer, template: UnsafeMutableRawPointer,
        lengths: UnsafeMutablePointer<Int>, stride: Int
    ) throws -> (protect: Double, unprotect: Double, protectAllocations: Int, unprotectAllocations: Int) {
        let key = masterKey(item)
        let outbound = try GlueContext(key: key, profile: item.profile, direction: Int32(CWEBRTC_SRTP_OUTBOUND))
        let inbound = try GlueContext(key: key, profile: item.profile, direction: Int32(CWEBRTC_SRTP_INBOUND))
        let protectFunction = item.rtcp ? cwebrtc_srtp_protect_rtcp : cwebrtc_srtp_protect_rtp
        let unprotectFunction = item.rtcp ? cwebrtc_srtp_unprotect_rtcp : cwebrtc_srtp_unprotect_rtp
        let packetSize = item.packetSize
        let clock = ContinuousClock()
        var allocations = 0
        var start = clock.now
        for index in 0..<count {
            if index == 1 { allocations = BenchMeasure.allocations }  // after the stream's first packet
            let packet = slab + index * stride
            packet.copyMemory(from: template, byteCount: packetSize)
            if !item.rtcp {
                packet.storeBytes(of: UInt16(truncatingIfNeeded: index).bigEndian, toByteOffset: 2, as: UInt16.self)
            }
            lengths[index] = try outbound.transform(
                packet, length: packetSize, capacity: stride, trailer: GlueContext.maximumTrailerBytes,
                protectFunction)
        }
        let protect = seconds(clock.now - start) * 1e9 / Double(count)
        let protectAllocations = BenchMeasure.allocations - allocations
        start = clock.now
        for index in 0..<count {
            if index == 1 { allocations = BenchMeasure.allocations }
            lengths[index] = try inbound.transform(
                slab + index * stride, length: lengths[index], capacity: lengths[index], trailer: 0, unprotectFunction)
        }
        let unprotect = seconds(clock.now - start) * 1e9 / Double(count)
        let unprotectAllocations = BenchMeasure.allocations - allocations
        guard lengths[count - 1] == packetSize else {
            throw MediaError(.codecFailure, "SRTP bench: unprotect gave \(lengths[count - 1]) bytes")
        }
        return (protect, unprotect, protectAllocations, unprotectAllocations)
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The bytes between packets in the slabs, as `CWEBRTC_SRTP_BASELINE_STRIDE` (a macro Swift
/// does not import).
private func baselineStride(_ packetSize: Int) -> Int {
    (packetSize + 148 + 15) / 16 * 16
}

/// One direction of SRTP through the CWebRTC glue, with `SRTPContext`'s per-packet work: the
/// buffer checks, a pthread mutex around the call, the status turned into an error.
private final class GlueContext {
    static let maximumTrailerBytes = Int(cwebrtc_srtp_maximum_trailer_bytes())
    private let handle: OpaquePointer
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(key: [UInt8], profile: Int32, direction: Int32) throws {
        var created: OpaquePointer?
        let status = cwebrtc_srtp_create(&created, profile, direction, key, key.count)
        guard Int(status) == CWEBRTC_SRTP_OK, let created else {
            throw MediaError(.codecFailure, "SRTP bench: libsrtp2 refused the context (status \(status))")
        }
        handle = created
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        cwebrtc_srtp_free(handle)
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    @inline(__always)
    func transform(
        _ packet: UnsafeMutableRawPointer, length: Int, capacity: Int, trailer: Int,
        _ function: (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> Int32
    ) throws -> Int {
        guard length > 0, length <= Int(Int32.max) - trailer, capacity >= length + trailer,
            UInt(bitPattern: packet) % 4 == 0
        else {
            throw MediaError(.invalidArgument, "SRTP bench: packet of \(length) bytes in a buffer of \(capacity)")
        }
        var inOut = Int32(length)
        pthread_mutex_lock(mutex)
        let status = function(handle, packet, &inOut)
        pthread_mutex_unlock(mutex)
        guard status == 0 else {
            throw MediaError(.codecFailure, "SRTP bench: packet of \(length) bytes refused (status \(status))")
        }
        return Int(inOut)
    }
}
