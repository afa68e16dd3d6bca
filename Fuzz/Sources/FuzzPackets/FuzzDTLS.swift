import Foundation

@testable import MediaPipeline

/// The certificates the dtls case's associations use: made once (key generation is slow), so
/// every input meets the same peer fingerprints and the seeds' captured flights stay relevant.
let dtlsLocalCertificate = try! DTLSCertificate.generate()
let dtlsPeerCertificate = try! DTLSCertificate.generate()

/// The dtls case: the first byte's low bit picks the role (0: a server waiting for a
/// ClientHello, 1: a client that has sent its ClientHello), the rest is datagrams of two length
/// bytes each (big-endian; the last one takes what is left), fed to one association in order.
/// Every call must return or throw a ``MediaError`` carrying a ``DTLSAssociation/Failure``;
/// nothing sent may exceed the MTU. A crash, a hang or another error is a bug.
func fuzzDTLS(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let role: DTLSAssociation.Role = first & 1 == 0 ? .server : .client
    let mtu = 1200
    let association: DTLSAssociation
    do {
        association = try DTLSAssociation(
            role: role, certificate: dtlsLocalCertificate, remoteFingerprint: dtlsPeerCertificate.fingerprint,
            mtu: mtu
        ) { datagram in
            if datagram.count > mtu { fatalError("DTLS \(role) sent \(datagram.count) bytes over the MTU \(mtu)") }
        }
    } catch {
        fatalError("DTLS \(role): the association could not be made: \(error)")
    }
    func expectTyped(_ work: () throws -> Void) {
        do {
            try work()
        } catch {
            guard DTLSAssociation.Failure(error) != nil else {
                fatalError("DTLS \(role): an error without a DTLS failure status: \(error)")
            }
        }
    }
    if role == .client {
        do { try association.start() } catch { fatalError("DTLS client: start failed: \(error)") }
    }
    var offset = 1
    while offset < bytes.count {
        var end = bytes.count
        if offset + 2 <= bytes.count {
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            end = min(bytes.count, offset + length)
        } else {
            offset = bytes.count
        }
        bytes[offset..<end].withUnsafeBytes { datagram in expectTyped { try association.receive(datagram) } }
        // What the owner would do next: ask for the timer, the keys, and run an expired timer
        // (OpenSSL does nothing when none expired).
        _ = association.nextTimeoutMilliseconds
        _ = association.keys
        _ = association.peerClosed
        expectTyped { try association.handleTimeout() }
        offset = end
    }
    if association.isConnected, association.keys == nil {
        fatalError("DTLS \(role): connected without SRTP keys")
    }
    association.close()
}
