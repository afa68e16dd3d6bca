import Foundation

@testable import MediaPipeline

/// Fixed master keys and salts for the srtp case (the seeds were protected with them): 30 bytes
/// for AES128_CM_SHA1_80, 28 for AEAD_AES_128_GCM.
func srtpKeys(_ profile: SRTPProfile) -> SRTPKeys {
    let key = (0..<(profile.keyLength + profile.saltLength)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
    return SRTPKeys(profile: profile, localMasterKeyAndSalt: key, remoteMasterKeyAndSalt: key)
}

/// The inbound contexts that unprotect arbitrary datagrams, one per profile, kept across inputs:
/// making a context derives its keys and runs libsrtp2's checks of the crypto types, and a datagram
/// that does not authenticate leaves no state behind (a seed that does is a replay the next
/// time, which only moves coverage).
let sharedInbound = (
    sha1: try! SRTPContext(keys: srtpKeys(.aes128CmSha1Tag80), direction: .inbound),
    gcm: try! SRTPContext(keys: srtpKeys(.aeadAes128Gcm), direction: .inbound)
)

/// The srtp case. The first byte picks what is done with the rest:
/// - bit 0: the profile (0: AES128_CM_SHA1_80, 1: AEAD_AES_128_GCM);
/// - bit 1 clear: the rest is a received datagram, unprotected as SRTP and (a copy) as SRTCP;
///   each must succeed or throw a ``MediaError`` carrying an ``SRTPContext/Failure``;
/// - bit 1 set: with fresh contexts (no replay state carries over), the rest, less its last
///   three bytes, is a plain packet (RTP, or RTCP when bit 2 is set) that is protected; the last three bytes change the protected packet (two bytes of
///   position, one of XOR mask; a zero mask cuts the packet at the position instead). The
///   changed packet must fail to unprotect; the original must unprotect to the plain packet
///   exactly, and a second time must fail as a replay.
///
/// A crash, a hang, an untyped error or a changed packet that unprotects is a bug.
func fuzzSRTP(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let profile: SRTPProfile = first & 1 == 0 ? .aes128CmSha1Tag80 : .aeadAes128Gcm
    let keys = srtpKeys(profile)
    let body = Array(bytes.dropFirst())
    if first & 2 == 0 {
        let inbound = profile == .aes128CmSha1Tag80 ? sharedInbound.sha1 : sharedInbound.gcm
        _ = unprotect(body, rtcp: false, with: inbound)
        _ = unprotect(body, rtcp: true, with: inbound)
        return
    }
    let inbound: SRTPContext
    do {
        inbound = try SRTPContext(keys: keys, direction: .inbound)
    } catch {
        fatalError("SRTP: the inbound context could not be made: \(error)")
    }
    guard body.count > 3 else { return }
    let rtcp = first & 4 != 0
    let plain = Array(body.dropLast(3))
    let position = Int(body[body.count - 3]) << 8 | Int(body[body.count - 2])
    let mask = body[body.count - 1]
    let outbound: SRTPContext
    do {
        outbound = try SRTPContext(keys: keys, direction: .outbound)
    } catch {
        fatalError("SRTP: the outbound context could not be made: \(error)")
    }
    guard let protected = protect(plain, rtcp: rtcp, with: outbound) else { return }
    var changed = protected
    if mask == 0 {
        changed = Array(protected.prefix(position % protected.count))
    } else {
        changed[position % protected.count] ^= mask
    }
    if case .success(let result) = unprotect(changed, rtcp: rtcp, with: inbound) {
        fatalError(
            "SRTP \(profile): a changed \(rtcp ? "SRTCP" : "SRTP") packet unprotected (\(result == plain ? "same" : "different") plain bytes)\n"
                + "protected \(protected)\nchanged \(changed)")
    }
    switch unprotect(protected, rtcp: rtcp, with: inbound) {
    case .success(let result):
        if result != plain { fatalError("SRTP \(profile): unprotect gave \(result), protected was \(plain)") }
    case .failure(let error):
        fatalError("SRTP \(profile): a packet just protected does not unprotect: \(error)")
    }
    if case .success = unprotect(protected, rtcp: rtcp, with: inbound) {
        fatalError("SRTP \(profile): a replayed \(rtcp ? "SRTCP" : "SRTP") packet unprotected again")
    }
}

/// Protects `plain` in an aligned buffer with room for the trailer; nil when the context refuses
/// it (a malformed header), which must be a typed error.
private func protect(_ plain: [UInt8], rtcp: Bool, with context: SRTPContext) -> [UInt8]? {
    guard !plain.isEmpty else { return nil }
    let capacity = plain.count + SRTPContext.maximumTrailerBytes
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
    defer { buffer.deallocate() }
    buffer.copyBytes(from: plain)
    do {
        let length =
            rtcp
            ? try context.protectRTCP(buffer.baseAddress!, length: plain.count, capacity: capacity)
            : try context.protectRTP(buffer.baseAddress!, length: plain.count, capacity: capacity)
        guard length >= plain.count, length <= capacity else {
            fatalError("SRTP: protecting \(plain.count) bytes gave \(length) in a buffer of \(capacity)")
        }
        return Array(buffer[..<length])
    } catch {
        guard SRTPContext.Failure(error) != nil || (error as? MediaError)?.code == .invalidFormat else {
            fatalError("SRTP: protecting gave an untyped error: \(error)")
        }
        return nil
    }
}

/// Unprotects a copy of `datagram` in an aligned buffer of exactly its size.
private func unprotect(_ datagram: [UInt8], rtcp: Bool, with context: SRTPContext) -> Result<[UInt8], MediaError> {
    guard !datagram.isEmpty else { return .failure(MediaError.invalidArgument("empty")) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: datagram.count, alignment: 16)
    defer { buffer.deallocate() }
    buffer.copyBytes(from: datagram)
    do {
        let length =
            rtcp
            ? try context.unprotectRTCP(buffer.baseAddress!, length: datagram.count)
            : try context.unprotectRTP(buffer.baseAddress!, length: datagram.count)
        guard length > 0, length <= datagram.count else {
            fatalError("SRTP: unprotecting \(datagram.count) bytes gave \(length)")
        }
        return .success(Array(buffer[..<length]))
    } catch let error as MediaError {
        guard SRTPContext.Failure(error) != nil else { fatalError("SRTP: an error without a failure status: \(error)") }
        return .failure(error)
    } catch {
        fatalError("SRTP: an error that is no MediaError: \(error)")
    }
}
