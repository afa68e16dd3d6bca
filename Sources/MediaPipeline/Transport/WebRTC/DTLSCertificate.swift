import CWebRTC

/// A self-signed ECDSA P-256 certificate and its private key, for DTLS-SRTP.
///
/// Made fresh per session with ``generate()``: a random serial, valid from an hour ago for 30
/// days. Peers authenticate it by its ``fingerprint``, carried in SDP as `a=fingerprint:sha-256`.
/// Immutable once made; OpenSSL reference-counts the certificate and key, and associations take
/// their own references, so sharing it between threads is safe.
final class DTLSCertificate: @unchecked Sendable {
    /// The C certificate (OpenSSL's X509 and EVP_PKEY inside).
    let handle: OpaquePointer
    /// The SHA-256 fingerprint of the DER certificate, "AB:CD:…": 32 uppercase hex bytes joined by colons.
    let fingerprint: String

    private init(handle: OpaquePointer, fingerprint: String) {
        self.handle = handle
        self.fingerprint = fingerprint
    }

    deinit { cwebrtc_dtls_certificate_free(handle) }

    /// Generates a new key pair and self-signed certificate.
    ///
    /// - Throws: ``MediaError`` with code `codecFailure` when OpenSSL refuses, naming its reason.
    static func generate() throws -> DTLSCertificate {
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = cwebrtc_dtls_certificate_generate(&error, Int32(error.count)) else {
            throw MediaError(.codecFailure, "DTLS certificate: \(String(cBuffer: error))")
        }
        var buffer = [CChar](repeating: 0, count: Int(CWEBRTC_DTLS_FINGERPRINT_CAPACITY))
        let status = cwebrtc_dtls_certificate_fingerprint(handle, &buffer, Int32(buffer.count))
        guard Int(status) == CWEBRTC_DTLS_OK else {
            cwebrtc_dtls_certificate_free(handle)
            throw MediaError(.codecFailure, "DTLS certificate: could not hash it with SHA-256", codecStatus: status)
        }
        return DTLSCertificate(handle: handle, fingerprint: String(cBuffer: buffer))
    }
}

extension String {
    /// The UTF-8 text in `buffer` up to its first NUL, as C functions write it into a caller's array.
    init(cBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
