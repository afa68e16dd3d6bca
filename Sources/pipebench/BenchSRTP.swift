import CSrtp
import CWebRTC
import Foundation
import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// The SRTP rows of `pipebench bench` (`--only srtp`): protect and unprotect of one 1,200-byte
/// RTP packet (AES128_CM_SHA1_80) from Swift through the transport's C glue, against libsrtp2
/// called directly in C (`cwebrtc_srtp_baseline`), in the same run, passes alternating (the
/// fastest of `repeats` passes of each is reported).
///
/// `SRTPContext` is internal to MediaPipeline, so the Swift side here repeats its per-packet
/// path: the same buffer checks, a pthread mutex taken around the call (as its `Lock`), the
/// CWebRTC glue (header check, `srtp_protect`/`srtp_unprotect`, status mapping). Both sides run
/// the same loops: each packet copied from a template into its own slot of a slab, given its
/// sequence number and protected; then every packet unprotected where it lies.
///
/// Allocations are counted per packet on the Swift side and on `srtp_protect`/`srtp_unprotect`
/// called directly: Debian's libsrtp2 is built on NSS, whose cipher and HMAC contexts allocate
/// on every call, so the direct count is libsrtp2's own and the difference is the wrappers'.
struct BenchSRTP {
    let repeats: Int
    let progress: (String, Double) -> Void
    var packetSize = 1200
    var count = 5000

    /// The protect and unprotect rows.
    func rows() throws -> [BenchRow] {
        let stride = baselineStride(packetSize)
        let slab = UnsafeMutableRawPointer.allocate(byteCount: stride * count, alignment: 16)
        let template = UnsafeMutableRawPointer.allocate(byteCount: stride, alignment: 16)
        let lengths = UnsafeMutablePointer<Int>.allocate(capacity: count)
        defer {
            slab.deallocate()
            template.deallocate()
            lengths.deallocate()
        }
        let bytes = template.assumingMemoryBound(to: UInt8.self)
        for index in 0..<packetSize { bytes[index] = UInt8(truncatingIfNeeded: index * 31 + 5) }
        (bytes[0], bytes[1], bytes[8], bytes[9], bytes[10], bytes[11]) = (0x80, 96, 0x12, 0x34, 0x56, 0x78)
        slab.initializeMemory(as: UInt8.self, repeating: 0, count: stride * count)

        var ours: [(protect: Double, unprotect: Double, protectAllocations: Int, unprotectAllocations: Int)] = []
        var baseline: [(protect: Double, unprotect: Double)] = []
        for index in 0...repeats {
            progress("SRTP protect/unprotect \(packetSize) B", Double(index) / Double(repeats + 1))
            if index % 2 == 0 {
                ours.append(try swiftPass(slab: slab, template: template, lengths: lengths, stride: stride))
                baseline.append(try cPass(count: count))
            } else {
                baseline.append(try cPass(count: count))
                ours.append(try swiftPass(slab: slab, template: template, lengths: lengths, stride: stride))
            }
        }
        // The first pass of each warms up (library initialisation, page faults).
        ours.removeFirst()
        baseline.removeFirst()
        // The fastest pass of each, as SRTPContext.measureCost reports: a pass is 5,000 packets
        // (some 25 ms), short enough that one preemption on a shared machine moves a median.
        func fastest(_ values: [Double]) -> Double { values.min() ?? 0 }
        let oursProtect = fastest(ours.map(\.protect))
        let oursUnprotect = fastest(ours.map(\.unprotect))
        let cProtect = fastest(baseline.map(\.protect))
        let cUnprotect = fastest(baseline.map(\.unprotect))
        let protectAllocations = Double(ours.map(\.protectAllocations).min() ?? 0) / Double(count)
        let unprotectAllocations = Double(ours.map(\.unprotectAllocations).min() ?? 0) / Double(count)
        let (cProtectAllocations, cUnprotectAllocations) = try baselineAllocationsPerPacket(
            slab: slab, template: template, stride: stride)
        let size = packetSize
        func row(_ what: String, _ nanoseconds: Double, _ c: Double, _ allocations: Double, _ cAllocations: Double)
            -> BenchRow
        {
            BenchRow(
                section: "srtp", path: "\(what) \(size) B", unit: "packet", microsecondsPerUnit: nanoseconds / 1000,
                cMicrosecondsPerUnit: c / 1000, speed: Double(size) * 8 / nanoseconds * 1000, speedUnit: "Mbit/s",
                allocationsPerUnit: allocations, cAllocationsPerUnit: cAllocations)
        }
        return [
            row("SRTP protect", oursProtect, cProtect, protectAllocations, cProtectAllocations),
            row("SRTP unprotect", oursUnprotect, cUnprotect, unprotectAllocations, cUnprotectAllocations),
        ]
    }

    /// libsrtp2 directly: nanoseconds per packet of protect and of unprotect.
    private func cPass(count: Int) throws -> (protect: Double, unprotect: Double) {
        var protect = 0.0
        var unprotect = 0.0
        let status = cwebrtc_srtp_baseline(Int32(packetSize), Int32(count), &protect, &unprotect)
        guard Int(status) == CWEBRTC_SRTP_OK else {
            throw MediaError(.codecFailure, "SRTP baseline failed (status \(status))")
        }
        return (protect, unprotect)
    }

    /// Allocations per packet inside libsrtp2 itself: `srtp_protect` and `srtp_unprotect`
    /// called directly (no glue, no lock) on the same packets, in steady state.
    private func baselineAllocationsPerPacket(
        slab: UnsafeMutableRawPointer, template: UnsafeMutableRawPointer, stride: Int
    ) throws -> (protect: Double, unprotect: Double) {
        var key = [UInt8](repeating: 0, count: 30)
        for index in key.indices { key[index] = UInt8(truncatingIfNeeded: index * 7 + 1) }
        var outbound: srtp_t?
        var inbound: srtp_t?
        let created = key.withUnsafeMutableBufferPointer { key -> Bool in
            var policy = srtp_policy_t()
            srtp_crypto_policy_set_rtp_default(&policy.rtp)  // AES128_CM_SHA1_80 (the name is a macro)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
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
        guard created else { throw MediaError(.codecFailure, "SRTP bench: srtp_create failed") }
        var lengths = [Int32](repeating: 0, count: count)
        var failed = false
        let before = BenchMeasure.allocations
        for index in 0..<count {
            let packet = slab + index * stride
            packet.copyMemory(from: template, byteCount: packetSize)
            packet.storeBytes(of: UInt16(truncatingIfNeeded: index).bigEndian, toByteOffset: 2, as: UInt16.self)
            lengths[index] = Int32(packetSize)
            failed = failed || srtp_protect(outbound, packet, &lengths[index]) != srtp_err_status_ok
        }
        let middle = BenchMeasure.allocations
        for index in 0..<count {
            failed = failed || srtp_unprotect(inbound, slab + index * stride, &lengths[index]) != srtp_err_status_ok
        }
        let after = BenchMeasure.allocations
        guard !failed else { throw MediaError(.codecFailure, "SRTP bench: libsrtp2 refused a packet") }
        return (Double(middle - before) / Double(count), Double(after - middle) / Double(count))
    }

    /// The Swift side: nanoseconds and allocations of `count` packets each way.
    private func swiftPass(
        slab: UnsafeMutableRawPointer, template: UnsafeMutableRawPointer, lengths: UnsafeMutablePointer<Int>,
        stride: Int
    ) throws -> (protect: Double, unprotect: Double, protectAllocations: Int, unprotectAllocations: Int) {
        var key = [UInt8](repeating: 0, count: 30)
        for index in key.indices { key[index] = UInt8(truncatingIfNeeded: index * 7 + 1) }
        let outbound = try GlueContext(key: key, direction: Int32(CWEBRTC_SRTP_OUTBOUND))
        let inbound = try GlueContext(key: key, direction: Int32(CWEBRTC_SRTP_INBOUND))
        let clock = ContinuousClock()
        var allocations = BenchMeasure.allocations
        var start = clock.now
        for index in 0..<count {
            let packet = slab + index * stride
            packet.copyMemory(from: template, byteCount: packetSize)
            packet.storeBytes(of: UInt16(truncatingIfNeeded: index).bigEndian, toByteOffset: 2, as: UInt16.self)
            lengths[index] = try outbound.transform(
                packet, length: packetSize, capacity: stride, trailer: GlueContext.maximumTrailerBytes,
                cwebrtc_srtp_protect_rtp)
        }
        let protect = seconds(clock.now - start) * 1e9 / Double(count)
        let protectAllocations = BenchMeasure.allocations - allocations
        allocations = BenchMeasure.allocations
        start = clock.now
        for index in 0..<count {
            lengths[index] = try inbound.transform(
                slab + index * stride, length: lengths[index], capacity: lengths[index], trailer: 0,
                cwebrtc_srtp_unprotect_rtp)
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

    init(key: [UInt8], direction: Int32) throws {
        var created: OpaquePointer?
        let status = cwebrtc_srtp_create(
            &created, Int32(CWEBRTC_SRTP_AES128_CM_SHA1_80), direction, key, key.count)
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
