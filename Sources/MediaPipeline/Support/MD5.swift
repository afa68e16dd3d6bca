import CCrypto

/// MD5 (RFC 1321), computed by OpenSSL's libcrypto, for the per-frame checksums that
/// `vpxdec --md5` prints, so decoded frames can be compared with the reference decoder bit for
/// bit. Not for security.
public struct MD5: ~Copyable, @unchecked Sendable {
    /// The digest context, owned by this value alone (it cannot be copied).
    private let context: OpaquePointer

    /// A fresh digest.
    public init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_md5(), nil) == 1 else {
            fatalError("libcrypto cannot start an MD5 digest (out of memory, or no default provider)")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest as 32 lowercase hex digits. The value is consumed.
    public consuming func finalize() -> String {
        var digest = (UInt64(0), UInt64(0))
        var length: UInt32 = 0
        withUnsafeMutableBytes(of: &digest) { raw in
            _ = EVP_DigestFinal_ex(context, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
        }
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(32)
        withUnsafeBytes(of: &digest) { raw in
            for byte in raw {
                hex.append(hexDigits[Int(byte >> 4)])
                hex.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
