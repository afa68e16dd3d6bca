import CWebRTC

/// The C libraries under the WebRTC transport.
public enum WebRTCLibraries {
    /// The versions of libsrtp2 and OpenSSL linked into this process, for logs and reports.
    public static var versions: String {
        var buffer = [CChar](repeating: 0, count: 256)
        cwebrtc_library_versions(&buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
