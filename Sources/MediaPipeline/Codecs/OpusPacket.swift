/// Facts read from an Opus packet's bytes without decoding it (RFC 6716 section 3).
enum OpusPacket {
    /// Whether the packet carries in-band FEC for the packet before it: a SILK or hybrid mode
    /// packet whose first SILK frame has its LBRR flag set (RFC 6716 4.2.3 and 4.2.4: the
    /// first frame's VAD flags, then its LBRR flag, are its first bits, for the mid channel
    /// and then the side channel). CELT-only packets carry none.
    static func carriesRedundancy(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count >= 2 else { return false }
        let toc = packet[0]
        let configuration = Int(toc >> 3)
        guard configuration < 16 else { return false }  // CELT only
        let stereo = toc & 0x04 != 0
        // SILK frames of 20 ms per Opus frame: 1 for 10 and 20 ms, 2 for 40 ms, 3 for 60 ms
        // (hybrid frames are 10 or 20 ms).
        let silkFrames = configuration >= 12 ? 1 : [1, 1, 2, 3][configuration & 3]
        guard let start = firstFrameOffset(packet), start < packet.count else { return false }
        let bits = packet[start]
        if (bits >> (7 - silkFrames)) & 1 != 0 { return true }
        return stereo && (bits >> (6 - 2 * silkFrames)) & 1 != 0
    }

    /// Where the first frame's data starts, after the TOC byte and the framing of codes 2 and 3
    /// (RFC 6716 3.2); nil when the framing runs past the packet.
    private static func firstFrameOffset(_ packet: UnsafeRawBufferPointer) -> Int? {
        switch packet[0] & 3 {
        case 0, 1:
            return 1
        case 2:
            return packet[1] < 252 ? 2 : 3
        default:
            let header = packet[1]
            let count = Int(header & 0x3F)
            var offset = 2
            if header & 0x40 != 0 {
                // Padding length bytes: 255 means 254 and another byte follows.
                while offset < packet.count, packet[offset] == 255 { offset += 1 }
                offset += 1
            }
            if header & 0x80 != 0 {
                // VBR: the lengths of all frames but the last.
                for _ in 0..<max(0, count - 1) {
                    guard offset < packet.count else { return nil }
                    offset += packet[offset] < 252 ? 1 : 2
                }
            }
            return offset
        }
    }
}
