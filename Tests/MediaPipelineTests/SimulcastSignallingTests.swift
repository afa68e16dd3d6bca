import Foundation
import Testing

@testable import MediaPipeline

/// Simulcast as a WebRTC publisher signals it (RFC 8851 a=rid, RFC 8853 a=simulcast, RFC 8852
/// rtp-stream-id) and as its packets carry it (RFC 8285 one-byte header extensions).
@Suite("Simulcast signalling: the offer's rids, the answer's agreement, the packets' extension block")
struct SimulcastSignallingTests {
    static let ours = WebRTCLocalTransport(
        iceUfrag: "mpU1", icePassword: "mediapipelinepassword0",
        fingerprint: try! SessionDescription.Fingerprint(
            parsing:
                "sha-256 AE:0B:EC:9E:9D:33:C5:63:54:BD:61:2C:8A:60:10:84:03:24:FC:5B:97:86:CE:0A:18:B6:96:B3:04:B0:93:97"
        ),
        candidates: ["1 1 udp 2130706431 127.0.0.1 47000 typ host"])

    /// The answer Janus 1.1.2's VideoRoom writes to a simulcast publisher offer (its sdp.c
    /// merges back `a=rid:ID recv` in the offer's order and `a=simulcast:recv`, and accepts the
    /// mid, rid and repaired-rid extensions), with `extensions` as its video section's extmaps.
    static func janusAnswer(videoExtmaps: String, simulcast: Bool = true) -> String {
        """
        v=0\r
        o=- 1764060000999 1 IN IP4 127.0.0.1\r
        s=VideoRoom channel-1\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=fingerprint:sha-256 85:0C:A8:E0:EC:3F:21:06:B6:A2:30:CD:36:A8:6C:F1:63:B3:B0:05:DD:2B:6C:94:EA:FA:F6:04:CB:DF:03:A8\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 127.0.0.2\r
        a=recvonly\r
        a=mid:0\r
        a=rtcp-mux\r
        a=ice-ufrag:Ja1u\r
        a=ice-pwd:janusjanusjanusjanus00\r
        a=setup:passive\r
        a=rtpmap:111 opus/48000/2\r
        a=candidate:1 1 udp 2015363327 127.0.0.2 40002 typ host\r
        a=end-of-candidates\r
        m=video 9 UDP/TLS/RTP/SAVPF 96\r
        c=IN IP4 127.0.0.2\r
        a=recvonly\r
        a=mid:1\r
        a=rtcp-mux\r
        a=ice-ufrag:Ja1u\r
        a=ice-pwd:janusjanusjanusjanus00\r
        a=setup:passive\r
        a=rtpmap:96 VP8/90000\r
        a=rtcp-fb:96 nack\r
        a=rtcp-fb:96 nack pli\r
        \(videoExtmaps)\(simulcast ? "a=rid:h recv\r\na=rid:l recv\r\na=simulcast:recv h;l\r\n" : "")\
        a=candidate:1 1 udp 2015363327 127.0.0.2 40002 typ host\r
        a=end-of-candidates\r

        """
    }

    @Test("the one-byte extension block is RFC 8285's layout; IDs and values out of range are refused")
    func extensionBlock() throws {
        // mid "1" (ID 1) and rid "h" (ID 2): 0xBEDE, one word, then ID<<4 | length-1 and the byte.
        #expect(
            try RTPOneByteExtensionBlock([(1, "1"), (2, "h")]).bytes == [0xBE, 0xDE, 0, 1, 0x10, 0x31, 0x20, 0x68])
        // Padded with zeros to whole words: 2 + 3 bytes of elements take two words.
        #expect(
            try RTPOneByteExtensionBlock([(3, "ab"), (14, "c")]).bytes
                == [0xBE, 0xDE, 0, 2, 0x31, 0x61, 0x62, 0xE0, 0x63, 0, 0, 0])
        for (id, value) in [(0, "h"), (15, "h"), (2, ""), (2, String(repeating: "x", count: 17))] {
            #expect(throws: MediaError.self, "ID \(id), '\(value)'") { try RTPOneByteExtensionBlock([(id, value)]) }
        }
        // A value read back from a packet, padding bytes skipped; a block cut short reads nothing.
        var packet = [UInt8](repeating: 0, count: 12)
        packet[0] = 0x90
        packet += [0xBE, 0xDE, 0, 2, 0x10, 0x31, 0, 0, 0x20, 0x68, 0, 0] + [1, 2, 3]
        packet.withUnsafeBytes { bytes in
            #expect(oneByteExtensionValue(2, in: bytes) == [0x68])
            #expect(oneByteExtensionValue(2, in: UnsafeRawBufferPointer(rebasing: bytes[..<18])) == nil)
        }
    }

    @Test("a simulcast video section offers the rids highest first, a=simulcast and the three extensions")
    func offer() throws {
        let offer = try SessionDescription.webRTCOffer(
            publishing: WebRTCPublication(
                audio: .init(ssrc: 1001), video: .init(codec: .vp8, ssrc: 2001, simulcastStreamIDs: ["h", "l"]),
                transport: Self.ours))
        let video = offer.media[1]
        #expect(video.attributes == ["rid:h send", "rid:l send", "simulcast:send h;l"])
        #expect(
            video.headerExtensions.map { "\($0.id) \($0.uri)" } == [
                "1 urn:ietf:params:rtp-hdrext:sdes:mid", "2 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                "3 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
            ])
        let lines = offer.text.split(separator: "\r\n").map(String.init)
        for line in [
            "a=rid:h send", "a=rid:l send", "a=simulcast:send h;l",
            "a=extmap:2 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
            "a=ssrc:2001 cname:mediapipeline",
        ] {
            #expect(lines.filter { $0 == line }.count == 1, "\(line)")
        }
        #expect(try SessionDescription(parsing: offer.text) == offer)
        #expect(offer.media[0].attributes.isEmpty && offer.media[0].headerExtensions.isEmpty)
        for wrong in [["h"], ["h", "h"], ["h", "l-1"], ["h", String(repeating: "x", count: 17)], ["h", ""]] {
            #expect(throws: MediaError.self, "\(wrong)") {
                try SessionDescription.webRTCOffer(
                    publishing: WebRTCPublication(
                        audio: nil, video: .init(codec: .vp8, ssrc: 1, simulcastStreamIDs: wrong), transport: Self.ours)
                )
            }
        }
    }

    @Test("Janus's answer agrees the encodings; without the rid extension or a=simulcast, one encoding")
    func agreement() throws {
        let streams = LocalStreamDescription(
            audioSSRC: 1001, videoSSRC: 2001, feedbackSSRC: 3001, videoCodec: .vp8, audioRedundancy: false,
            lowVideoSSRC: 2002)
        let offer = try JanusSDP.publisherOffer(streams: streams, media: [.audio, .video], transport: Self.ours)
        #expect(offer.media[1].attributes == ["rid:h send", "rid:l send", "simulcast:send h;l"])
        let extmaps = """
            a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
            a=extmap:2 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id\r
            a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id\r

            """
        let agreed = try WebRTCNegotiation(
            local: offer, remote: SessionDescription(parsing: Self.janusAnswer(videoExtmaps: extmaps)))
        #expect(agreed.streams[1].sentSimulcastStreamIDs == ["h", "l"])
        #expect(agreed.streams[1].headerExtensionID(RTPHeaderExtensionURI.streamID) == 2)
        #expect(agreed.streams[0].sentSimulcastStreamIDs.isEmpty)
        let sending = try #require(try JanusSDP.simulcastSending(agreed, streams: streams))
        #expect(sending.highSSRC == 2001 && sending.lowSSRC == 2002)
        #expect(sending.highBlock == [0xBE, 0xDE, 0, 1, 0x10, 0x31, 0x20, 0x68])  // mid "1", rid "h"
        #expect(sending.lowBlock == [0xBE, 0xDE, 0, 1, 0x10, 0x31, 0x20, 0x6C])  // mid "1", rid "l"

        // Janus numbering the extensions its own way: the blocks use its IDs.
        let renumbered = """
            a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r
            a=extmap:9 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id\r

            """
        let other = try WebRTCNegotiation(
            local: offer, remote: SessionDescription(parsing: Self.janusAnswer(videoExtmaps: renumbered)))
        #expect(
            try JanusSDP.simulcastSending(other, streams: streams)?.lowBlock == [
                0xBE, 0xDE, 0, 1, 0x40, 0x31, 0x90, 0x6C,
            ])

        // No rid extension, or no a=simulcast: one encoding, the low layer not sent.
        let midOnly = "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\n"
        for answer in [
            Self.janusAnswer(videoExtmaps: midOnly), Self.janusAnswer(videoExtmaps: extmaps, simulcast: false),
        ] {
            let one = try WebRTCNegotiation(local: offer, remote: SessionDescription(parsing: answer))
            #expect(try JanusSDP.simulcastSending(one, streams: streams) == nil)
        }
        // VP9, or an endpoint without a low stream: no simulcast offered.
        var vp9 = streams
        vp9.videoCodec = .vp9
        var single = streams
        single.lowVideoSSRC = nil
        for plain in [vp9, single] {
            let offer = try JanusSDP.publisherOffer(streams: plain, media: [.audio, .video], transport: Self.ours)
            #expect(offer.media[1].attributes.isEmpty && offer.media[1].headerExtensions.isEmpty)
        }
    }
}

/// The value of element `id` in the one-byte-form header extension block of the RTP packet
/// `packet`, read by the RFC 8285 layout (padding bytes skipped, ID 15 ends the block); nil when
/// the packet has no such block or element.
func oneByteExtensionValue(_ id: Int, in packet: UnsafeRawBufferPointer) -> [UInt8]? {
    guard packet.count >= RTPHeader.fixedByteCount, packet[0] & 0x10 != 0 else { return nil }
    let start = RTPHeader.fixedByteCount + Int(packet[0] & 0x0F) * 4
    guard start + 4 <= packet.count, packet[start] == 0xBE, packet[start + 1] == 0xDE else { return nil }
    let end = start + 4 + (Int(packet[start + 2]) << 8 | Int(packet[start + 3])) * 4
    guard end <= packet.count else { return nil }
    var offset = start + 4
    while offset < end {
        let byte = packet[offset]
        if byte == 0 {
            offset += 1
            continue
        }
        let elementID = Int(byte >> 4)
        if elementID == 15 { return nil }
        let length = Int(byte & 0x0F) + 1
        guard offset + 1 + length <= end else { return nil }
        if elementID == id { return Array(packet[(offset + 1)..<(offset + 1 + length)]) }
        offset += 1 + length
    }
    return nil
}
