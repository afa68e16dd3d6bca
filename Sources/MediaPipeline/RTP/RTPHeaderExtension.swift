/// The RTP header extensions (RFC 8285) this side writes, by the URIs that name them in SDP
/// `a=extmap` lines.
public enum RTPHeaderExtensionURI {
    /// The media section a packet belongs to (RFC 8843 §15), its `a=mid`.
    public static let mid = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// The simulcast encoding a packet belongs to (RFC 8852), its `a=rid`.
    public static let streamID = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
    /// The encoding a retransmission repairs (RFC 8852).
    public static let repairedStreamID = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
}

/// A header extension block in the one-byte form (RFC 8285 §4.2), as it follows an RTP header's
/// CSRCs: the 0xBEDE profile, the length in 32-bit words, the elements, zero padding to a word.
struct RTPOneByteExtensionBlock: Sendable, Equatable {
    /// The block's bytes.
    let bytes: [UInt8]

    /// A block of text elements (a mid, an RTP stream ID), each its extension ID (1...14, as
    /// negotiated) and its value (1...16 bytes of UTF-8).
    /// - Throws: ``MediaError/Code/invalidArgument`` for an ID or a value out of range.
    init(_ elements: [(id: Int, value: String)]) throws {
        var bytes: [UInt8] = [0xBE, 0xDE, 0, 0]
        for (id, value) in elements {
            let text = Array(value.utf8)
            guard (1...14).contains(id) else {
                throw MediaError.invalidArgument("one-byte RTP header extension ID \(id) is outside 1...14")
            }
            guard (1...16).contains(text.count) else {
                throw MediaError.invalidArgument(
                    "RTP header extension value '\(value)' is \(text.count) bytes; the one-byte form holds 1...16")
            }
            bytes.append(UInt8(id) << 4 | UInt8(text.count - 1))
            bytes += text
        }
        while bytes.count % 4 != 0 { bytes.append(0) }
        let words = (bytes.count - 4) / 4
        bytes[2] = UInt8(words >> 8)
        bytes[3] = UInt8(words & 0xFF)
        self.bytes = bytes
    }
}
