import Foundation
import Testing

@testable import MediaPipeline

/// SDP for the WebRTC transport: Janus's and Chrome's offers read, this side's answers and
/// publisher offers written, what both agreed, and malformed lines named.
@Suite("WebRTC SDP offer/answer")
struct WebRTCSDPTests {
    static let janusFingerprint =
        "sha-256 85:0C:A8:E0:EC:3F:21:06:B6:A2:30:CD:36:A8:6C:F1:63:B3:B0:05:DD:2B:6C:94:EA:FA:F6:04:CB:DF:03:A8"
    static let ourFingerprint =
        "sha-256 AE:0B:EC:9E:9D:33:C5:63:54:BD:61:2C:8A:60:10:84:03:24:FC:5B:97:86:CE:0A:18:B6:96:B3:04:B0:93:97"

    /// A Janus 1.1.2 VideoRoom subscriber offer for one publisher's Opus and VP8 (with RTX), as
    /// Janus writes it: the fingerprint at session level, its one host candidate in each section.
    static let janusOffer = """
        v=0\r
        o=- 1764060000123456 1 IN IP4 127.0.0.1\r
        s=VideoRoom 1234\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=ice-options:trickle\r
        a=fingerprint:\(janusFingerprint)\r
        a=extmap-allow-mixed\r
        a=msid-semantic: WMS *\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 127.0.0.2\r
        a=sendonly\r
        a=mid:0\r
        a=rtcp-mux\r
        a=ice-ufrag:Zq3v\r
        a=ice-pwd:pD5n2xqYwTt4kDZ8iA1r0F\r
        a=ice-options:trickle\r
        a=setup:actpass\r
        a=rtpmap:111 opus/48000/2\r
        a=fmtp:111 useinbandfec=1\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:4 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r
        a=msid:janus janusa0\r
        a=ssrc:1489217352 cname:janus\r
        a=ssrc:1489217352 msid:janus janusa0\r
        a=candidate:1 1 udp 2015363327 127.0.0.2 40001 typ host\r
        a=end-of-candidates\r
        m=video 9 UDP/TLS/RTP/SAVPF 96 97\r
        c=IN IP4 127.0.0.2\r
        a=sendonly\r
        a=mid:1\r
        a=rtcp-mux\r
        a=ice-ufrag:Zq3v\r
        a=ice-pwd:pD5n2xqYwTt4kDZ8iA1r0F\r
        a=ice-options:trickle\r
        a=setup:actpass\r
        a=rtpmap:96 VP8/90000\r
        a=rtcp-fb:96 ccm fir\r
        a=rtcp-fb:96 nack\r
        a=rtcp-fb:96 nack pli\r
        a=rtcp-fb:96 goog-remb\r
        a=rtcp-fb:96 transport-cc\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r
        a=extmap:6 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r
        a=rtpmap:97 rtx/90000\r
        a=fmtp:97 apt=96\r
        a=ssrc-group:FID 3210456789 987654321\r
        a=msid:janus janusv0\r
        a=ssrc:3210456789 cname:janus\r
        a=ssrc:3210456789 msid:janus janusv0\r
        a=ssrc:987654321 cname:janus\r
        a=ssrc:987654321 msid:janus janusv0\r
        a=candidate:1 1 udp 2015363327 127.0.0.2 40001 typ host\r
        a=end-of-candidates\r

        """

    /// A Chrome offer (sendrecv audio and video, every codec it has, RTX for each, header
    /// extensions, a data channel).
    static let chromeOffer = """
        v=0
        o=- 4611731400430051336 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1 2
        a=extmap-allow-mixed
        a=msid-semantic: WMS 5c0e1b2a-stream
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:8hhY
        a=ice-pwd:asd88fgpdd777uzjYhagZg
        a=ice-options:trickle
        a=fingerprint:sha-256 93:90:EF:32:AD:DF:32:BF:DE:A7:86:BC:1E:20:67:95:92:49:80:68:BC:BF:CD:35:7E:A1:0A:B6:4E:A3:5E:47
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:5c0e1b2a-stream 0f3c-audio-track
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:2718281828 cname:Qf3kL0pZ7rT1yW2e
        a=ssrc:2718281828 msid:5c0e1b2a-stream 0f3c-audio-track
        a=candidate:3108237374 1 udp 2122260223 127.0.0.3 51234 typ host generation 0 network-id 1
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 98 99 100 101 102 103 104 105 106 107 45 46 116 117 118
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:8hhY
        a=ice-pwd:asd88fgpdd777uzjYhagZg
        a=ice-options:trickle
        a=fingerprint:sha-256 93:90:EF:32:AD:DF:32:BF:DE:A7:86:BC:1E:20:67:95:92:49:80:68:BC:BF:CD:35:7E:A1:0A:B6:4E:A3:5E:47
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:13 urn:3gpp:video-orientation
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=sendrecv
        a=msid:5c0e1b2a-stream 7d21-video-track
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:98 VP9/90000
        a=rtcp-fb:98 goog-remb
        a=rtcp-fb:98 transport-cc
        a=rtcp-fb:98 ccm fir
        a=rtcp-fb:98 nack
        a=rtcp-fb:98 nack pli
        a=fmtp:98 profile-id=0
        a=rtpmap:99 rtx/90000
        a=fmtp:99 apt=98
        a=rtpmap:100 VP9/90000
        a=rtcp-fb:100 goog-remb
        a=rtcp-fb:100 nack
        a=rtcp-fb:100 nack pli
        a=fmtp:100 profile-id=2
        a=rtpmap:101 rtx/90000
        a=fmtp:101 apt=100
        a=rtpmap:102 H264/90000
        a=rtcp-fb:102 nack pli
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=rtpmap:104 H264/90000
        a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42001f
        a=rtpmap:105 rtx/90000
        a=fmtp:105 apt=104
        a=rtpmap:106 H264/90000
        a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640034
        a=rtpmap:107 rtx/90000
        a=fmtp:107 apt=106
        a=rtpmap:45 AV1/90000
        a=rtcp-fb:45 nack pli
        a=fmtp:45 level-idx=5;profile=0;tier=0
        a=rtpmap:46 rtx/90000
        a=fmtp:46 apt=45
        a=rtpmap:116 red/90000
        a=rtpmap:117 ulpfec/90000
        a=rtpmap:118 rtx/90000
        a=fmtp:118 apt=116
        a=ssrc-group:FID 1111111111 2222222222
        a=ssrc:1111111111 cname:Qf3kL0pZ7rT1yW2e
        a=ssrc:1111111111 msid:5c0e1b2a-stream 7d21-video-track
        a=ssrc:2222222222 cname:Qf3kL0pZ7rT1yW2e
        a=ssrc:2222222222 msid:5c0e1b2a-stream 7d21-video-track
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel
        c=IN IP4 0.0.0.0
        a=ice-ufrag:8hhY
        a=ice-pwd:asd88fgpdd777uzjYhagZg
        a=ice-options:trickle
        a=fingerprint:sha-256 93:90:EF:32:AD:DF:32:BF:DE:A7:86:BC:1E:20:67:95:92:49:80:68:BC:BF:CD:35:7E:A1:0A:B6:4E:A3:5E:47
        a=setup:actpass
        a=mid:2
        a=sctp-port:5000
        a=max-message-size:262144

        """

    static let ours = WebRTCLocalTransport(
        iceUfrag: "mpU1", icePassword: "mediapipelinepassword0",
        fingerprint: try! SessionDescription.Fingerprint(parsing: ourFingerprint),
        candidates: ["1 1 udp 2130706431 127.0.0.1 47000 typ host"])

    /// The lines of SDP text.
    static func lines(_ text: String) -> [String] { text.split(separator: "\r\n").map(String.init) }

    @Test("Janus's subscriber offer reads whole; the answer receives Opus and VP8 with RTX; both agree")
    func janusSubscriberOffer() throws {
        let offer = try SessionDescription(parsing: Self.janusOffer)
        #expect(offer.sessionID == "1764060000123456" && offer.name == "VideoRoom 1234")
        #expect(offer.bundle == ["0", "1"] && offer.msidSemantic == "WMS *")
        #expect(offer.transportAttributes.fingerprint?.text == Self.janusFingerprint)
        #expect(offer.transportAttributes.iceOptions == ["trickle"] && offer.attributes == ["extmap-allow-mixed"])
        #expect(offer.media.map(\.mid) == ["0", "1"] && offer.media.map(\.direction) == [.sendonly, .sendonly])
        let audio = offer.media[0]
        let video = offer.media[1]
        #expect(audio.transport == "UDP/TLS/RTP/SAVPF" && audio.rtcpMux && audio.connectionAddress == "127.0.0.2")
        #expect(audio.transportAttributes.iceUfrag == "Zq3v" && audio.transportAttributes.setup == .actpass)
        #expect(audio.transportAttributes.candidates == ["1 1 udp 2015363327 127.0.0.2 40001 typ host"])
        #expect(audio.transportAttributes.endOfCandidates && audio.msid == "janus janusa0")
        #expect(audio.headerExtensions.map(\.uri).first == "urn:ietf:params:rtp-hdrext:sdes:mid")
        #expect(audio.sources == [.init(ssrc: 1_489_217_352, cname: "janus", msid: "janus janusa0")])
        #expect(video.sourceGroups == [.init(semantics: "FID", ssrcs: [3_210_456_789, 987_654_321])])
        #expect(video.ssrc == 3_210_456_789 && video.sources.count == 2)
        #expect(video.formats[0].feedback == ["ccm fir", "nack", "nack pli", "goog-remb", "transport-cc"])
        #expect(video.formats[1].retransmittedPayloadType == 96)
        #expect(offer.transportAttributes(of: video).fingerprint?.text == Self.janusFingerprint)
        #expect(try SessionDescription(parsing: offer.text) == offer)

        let answer = SessionDescription.webRTCAnswer(to: offer, transport: Self.ours, sessionID: 7)
        #expect(answer.bundle == ["0", "1"] && answer.media.map(\.mid) == ["0", "1"])
        #expect(answer.media.map(\.direction) == [.recvonly, .recvonly])
        #expect(answer.media.map { $0.formats.map(\.payloadType) } == [[111], [96, 97]])
        #expect(answer.media[1].formats[0].feedback == ["ccm fir", "nack", "nack pli", "goog-remb"])
        #expect(answer.media[1].formats[1].parameters == "apt=96")
        #expect(answer.media.allSatisfy { $0.headerExtensions.isEmpty && $0.rtcpMux && $0.port == 47000 })
        #expect(answer.media.allSatisfy { $0.transportAttributes.setup == .active })
        #expect(answer.media[0].transportAttributes.candidates == Self.ours.candidates)
        #expect(answer.media[1].transportAttributes.candidates.isEmpty)
        let text = answer.text
        #expect(try SessionDescription(parsing: text) == answer)
        for line in [
            "a=group:BUNDLE 0 1", "a=setup:active", "a=recvonly", "a=ice-ufrag:mpU1", "a=rtcp-mux",
            "a=fingerprint:\(Self.ourFingerprint)", "a=rtpmap:111 opus/48000/2",
            "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:97 rtx/90000", "a=end-of-candidates",
            "a=candidate:1 1 udp 2130706431 127.0.0.1 47000 typ host", "m=video 47000 UDP/TLS/RTP/SAVPF 96 97",
        ] {
            #expect(Self.lines(text).contains(line), "\(line)")
        }

        let agreed = try WebRTCNegotiation(local: answer, remote: offer)
        #expect(agreed.streams.map(\.mid) == ["0", "1"] && agreed.streams.map(\.kind) == [.audio, .video])
        #expect(agreed.streams.allSatisfy { $0.receives && !$0.sends })
        #expect(agreed.streams[0].payloadTypes.map(\.content) == [.media(.opus)])
        #expect(agreed.streams[0].remoteSources.map(\.ssrc) == [1_489_217_352])
        let vp8 = agreed.streams[1]
        #expect(vp8.payloadTypes.map(\.content) == [.media(.vp8), .retransmission(of: 96)])
        #expect(vp8.payloadType(96)?.enginePayloadType == RTPPayloadType.vp8)
        #expect(vp8.feedback == [.nack, .pli, .fir, .remb])
        #expect(
            vp8.remoteSources == [
                .init(ssrc: 3_210_456_789, retransmissionSSRC: 987_654_321, cname: "janus", msid: "janus janusv0")
            ])
        #expect(agreed.remoteICEUfrag == "Zq3v" && agreed.remoteICEPassword == "pD5n2xqYwTt4kDZ8iA1r0F")
        #expect(agreed.remoteCandidates == ["1 1 udp 2015363327 127.0.0.2 40001 typ host"])
        #expect(agreed.remoteFingerprint.text == Self.janusFingerprint && agreed.remoteSetup == .actpass)
        #expect(agreed.remoteEndOfCandidates)

        // An FID group whose SSRCs have no a=ssrc lines still names the media and RTX SSRCs.
        var groupOnly = offer
        groupOnly.media[1].sources = []
        let fromGroup = try WebRTCNegotiation(local: answer, remote: groupOnly).streams[1].remoteSources
        #expect(
            fromGroup == [
                .init(ssrc: 3_210_456_789, retransmissionSSRC: 987_654_321, cname: nil, msid: "janus janusv0")
            ])
    }

    @Test("Chrome's offer: the answer takes Opus, RED, VP8, VP9 profile 0 and their RTX, declines the rest")
    func chromeOffer() throws {
        let offer = try SessionDescription(parsing: Self.chromeOffer)
        #expect(offer.media.map(\.kind) == ["audio", "video", "application"])
        #expect(offer.media[2].otherFormats == ["webrtc-datachannel"] && offer.media[2].formats.isEmpty)
        #expect(offer.media[2].attributes == ["sctp-port:5000", "max-message-size:262144"])
        #expect(offer.media[0].rtcpPort == 9 && offer.media[0].direction == .sendrecv)
        #expect(offer.media[1].formats.count == 17 && offer.media[1].headerExtensions.count == 8)
        #expect(try SessionDescription(parsing: offer.text) == offer)

        let answer = SessionDescription.webRTCAnswer(to: offer, transport: Self.ours)
        #expect(answer.media.count == 3 && answer.media.map(\.mid) == ["0", "1", "2"])
        #expect(answer.bundle == ["0", "1"])
        #expect(answer.media.map { $0.formats.map(\.payloadType) }.prefix(2) == [[111, 63], [96, 97, 98, 99]])
        #expect(answer.media[0].formats[1].parameters == "111/111")
        #expect(answer.media[0].formats[0].feedback.isEmpty)  // transport-cc is not taken
        #expect(answer.media[1].formats[2].parameters == "profile-id=0")
        #expect(answer.media.prefix(2).allSatisfy { $0.direction == .recvonly && $0.rtcpReducedSize })
        let data = answer.media[2]
        #expect(data.port == 0 && data.otherFormats == ["webrtc-datachannel"] && data.transport == "UDP/DTLS/SCTP")
        let text = answer.text
        #expect(Self.lines(text).contains("m=application 0 UDP/DTLS/SCTP webrtc-datachannel"))
        #expect(!text.contains("H264") && !text.contains("AV1") && !text.contains("ulpfec") && !text.contains("G722"))
        #expect(try SessionDescription(parsing: text) == answer)

        let agreed = try WebRTCNegotiation(local: answer, remote: offer)
        #expect(agreed.streams.map(\.index) == [0, 1] && agreed.streams.allSatisfy { $0.receives && !$0.sends })
        #expect(agreed.streams[0].payloadTypes.map(\.content) == [.media(.opus), .redundantAudio(primary: 111)])
        #expect(agreed.streams[0].payloadTypes.map(\.enginePayloadType) == [111, 63])
        #expect(
            agreed.streams[1].payloadTypes.map(\.content) == [
                .media(.vp8), .retransmission(of: 96), .media(.vp9), .retransmission(of: 98),
            ])
        #expect(agreed.streams[1].remoteSources.first?.retransmissionSSRC == 2_222_222_222)
        #expect(agreed.remoteCandidates.count == 1 && !agreed.remoteEndOfCandidates)

        // A section the offer declined, one outside BUNDLE and one without rtcp-mux are declined too.
        var odd = offer
        odd.media[0].port = 0
        odd.media[1].rtcpMux = false
        let none = SessionDescription.webRTCAnswer(to: odd, transport: Self.ours)
        #expect(
            none.media.allSatisfy { $0.port == 0 } && none.groups.isEmpty && none.media.map(\.mid) == ["0", "1", "2"])
        #expect(try SessionDescription(parsing: none.text) == none)
        #expect(throws: MediaError.self) { try WebRTCNegotiation(local: none, remote: odd) }
        odd = offer
        odd.groups = [.init(semantics: "BUNDLE", mids: ["1"])]
        #expect(SessionDescription.webRTCAnswer(to: odd, transport: Self.ours).media.map(\.port) == [0, 47000, 0])
    }

    @Test("the publisher offer has the lines Janus needs; its answer, with other numbers, maps them")
    func publisherOffer() throws {
        let publication = WebRTCPublication(
            audio: .init(ssrc: 1001, redundancy: true), video: .init(codec: .vp8, ssrc: 2001, retransmissionSSRC: 2002),
            cname: "mp-cname", streamID: "mp", transport: Self.ours, sessionID: 42)
        let offer = try SessionDescription.webRTCOffer(publishing: publication)
        let text = offer.text
        let lines = Self.lines(text)
        for line in [
            "o=- 42 2 IN IP4 127.0.0.1", "a=group:BUNDLE 0 1", "a=msid-semantic: WMS mp",
            "m=audio 47000 UDP/TLS/RTP/SAVPF 111 63", "m=video 47000 UDP/TLS/RTP/SAVPF 96 97",
            "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:63 red/48000/2",
            "a=fmtp:63 111/111", "a=rtpmap:96 VP8/90000", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
            "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 ccm fir", "a=rtcp-fb:96 goog-remb",
            "a=ssrc:1001 cname:mp-cname", "a=ssrc:1001 msid:mp audio", "a=ssrc-group:FID 2001 2002",
            "a=ssrc:2001 cname:mp-cname", "a=ssrc:2001 msid:mp video", "a=ssrc:2002 cname:mp-cname",
            "a=ssrc:2002 msid:mp video", "a=msid:mp video", "a=mid:0", "a=mid:1",
        ] {
            #expect(lines.filter { $0 == line }.count == 1, "\(line)")
        }
        for line in [
            "a=setup:active", "a=rtcp-mux", "a=rtcp-rsize", "a=sendonly", "a=ice-ufrag:mpU1",
            "a=ice-pwd:mediapipelinepassword0", "a=fingerprint:\(Self.ourFingerprint)",
        ] {
            #expect(lines.filter { $0 == line }.count == 2, "\(line)")
        }
        #expect(lines.filter { $0.hasPrefix("a=candidate:") }.count == 1)
        #expect(lines.filter { $0 == "a=end-of-candidates" }.count == 1)
        #expect(!lines.contains { $0.hasPrefix("a=setup:") && $0 != "a=setup:active" })
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed == offer)
        #expect(parsed.media[1].ssrc == 2001 && parsed.media.map(\.direction) == [.sendonly, .sendonly])

        // Janus's answer, numbering VP8 100 and its RTX 101, dropping RED.
        let answerText = """
            v=0\r
            o=- 1764060000999 1 IN IP4 127.0.0.1\r
            s=VideoRoom 1234\r
            t=0 0\r
            a=group:BUNDLE 0 1\r
            a=fingerprint:\(Self.janusFingerprint)\r
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
            m=video 9 UDP/TLS/RTP/SAVPF 100 101\r
            c=IN IP4 127.0.0.2\r
            a=recvonly\r
            a=mid:1\r
            a=rtcp-mux\r
            a=ice-ufrag:Ja1u\r
            a=ice-pwd:janusjanusjanusjanus00\r
            a=setup:passive\r
            a=rtpmap:100 VP8/90000\r
            a=rtcp-fb:100 nack\r
            a=rtcp-fb:100 nack pli\r
            a=rtcp-fb:100 goog-remb\r
            a=rtpmap:101 rtx/90000\r
            a=fmtp:101 apt=100\r
            a=candidate:1 1 udp 2015363327 127.0.0.2 40002 typ host\r
            a=end-of-candidates\r

            """
        let agreed = try WebRTCNegotiation(local: offer, remote: SessionDescription(parsing: answerText))
        #expect(agreed.streams.allSatisfy { $0.sends && !$0.receives })
        #expect(agreed.streams[0].payloadTypes.map(\.content) == [.media(.opus)])
        let video = agreed.streams[1]
        #expect(video.payloadTypes.map(\.number) == [100, 101])
        #expect(video.payloadTypes.map(\.content) == [.media(.vp8), .retransmission(of: 100)])
        #expect(video.payloadTypes.map(\.enginePayloadType) == [RTPPayloadType.vp8, nil])
        #expect(video.feedback == [.nack, .pli, .remb])  // no ccm fir in the answer
        #expect(agreed.remoteSetup == .passive && agreed.remoteICEUfrag == "Ja1u")
        #expect(agreed.remoteCandidates == ["1 1 udp 2015363327 127.0.0.2 40002 typ host"])

        // Audio only, video only (VP9, mid "0"), and what is refused.
        let audioOnly = try SessionDescription.webRTCOffer(
            publishing: .init(audio: .init(ssrc: 5), video: nil, transport: Self.ours))
        #expect(audioOnly.bundle == ["0"] && audioOnly.media.map { $0.formats.map(\.payloadType) } == [[111]])
        let vp9 = try SessionDescription.webRTCOffer(
            publishing: .init(
                audio: nil, video: .init(codec: .vp9, ssrc: 6, retransmissionSSRC: 7), transport: Self.ours))
        #expect(vp9.media.map(\.mid) == ["0"] && vp9.media[0].formats.map(\.payloadType) == [98, 99])
        #expect(vp9.media[0].formats.map(\.parameters) == ["profile-id=0", "apt=98"])
        #expect(vp9.media[0].transportAttributes.candidates == Self.ours.candidates)
        let noRTX = try SessionDescription.webRTCOffer(
            publishing: .init(audio: nil, video: .init(codec: .vp8, ssrc: 6), transport: Self.ours))
        #expect(noRTX.media[0].formats.count == 1 && noRTX.media[0].sourceGroups.isEmpty)
        for wrong in [
            WebRTCPublication(audio: nil, video: nil, transport: Self.ours),
            WebRTCPublication(audio: .init(ssrc: 1), video: .init(codec: .vp8, ssrc: 1), transport: Self.ours),
            WebRTCPublication(audio: nil, video: .init(codec: .opus, ssrc: 1), transport: Self.ours),
        ] {
            #expect(throws: MediaError.self) { try SessionDescription.webRTCOffer(publishing: wrong) }
        }
    }

    @Test("malformed WebRTC lines are MediaErrors naming the line; unknown attributes are kept")
    func malformed() throws {
        let head = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
        let section = "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n"
        for (text, words) in [
            (head + "m=video 9\r\n", "line 5 'm=video 9'"),
            (head + "m=audio nine UDP/TLS/RTP/SAVPF 111\r\n", "line 5 'm=audio nine"),
            (head + "a=fingerprint:sha-256 ZZ:11\r\n", "line 5 'a=fingerprint:sha-256 ZZ:11': the digest"),
            (head + "a=fingerprint:sha-256 AB:CD\r\n", "sha-256 digest has 32 bytes, not 2"),
            (head + "a=fingerprint:AB:CD\r\n", "line 5"),
            (head + section + "a=ssrc-group:FID 1 x\r\n", "line 7 'a=ssrc-group:FID 1 x'"),
            (head + section + "a=ssrc-group:FID\r\n", "line 7"),
            (head + section + "a=ssrc:abc cname:x\r\n", "line 7 'a=ssrc:abc"),
            (head + section + "a=setup:client\r\n", "line 7 'a=setup:client'"),
            (head + section + "a=candidate:1 1 udp 2130706431 127.0.0.1 port typ host\r\n", "line 7"),
            (head + section + "a=extmap:x urn:ietf:params:rtp-hdrext:sdes:mid\r\n", "line 7 'a=extmap:x"),
            (head + section + "a=extmap:1/sideways urn:x\r\n", "line 7"),
            (head + section + "a=mid:\r\n", "line 7 'a=mid:'"),
            (head + section + "a=msid:a b c\r\n", "line 7"),
            (head + "a=ice-ufrag:\r\n", "line 5"),
        ] {
            do {
                _ = try SessionDescription(parsing: text)
                Issue.record("accepted: \(text)")
            } catch let error as MediaError {
                #expect(error.code == .invalidFormat && error.message.contains(words), "\(error)")
            }
        }

        // Unknown attributes are kept and written back; a declined section needs no rtpmap.
        let kept = try SessionDescription(
            parsing: head
                + "a=foo:bar baz\r\nm=video 0 UDP/TLS/RTP/SAVPF 96\r\na=mid:1\r\na=x-google-flag:conference\r\n"
                + "a=ssrc:9\r\na=bundle-only\r\n")
        #expect(
            kept.attributes == ["foo:bar baz"]
                && kept.media[0].attributes == ["x-google-flag:conference", "bundle-only"])
        #expect(kept.media[0].sources == [.init(ssrc: 9)])
        #expect(try SessionDescription(parsing: kept.text) == kept)

        // What the negotiation refuses: a remote that would be the DTLS client, or lacks a fingerprint.
        let offer = try SessionDescription(parsing: Self.janusOffer)
        let answer = SessionDescription.webRTCAnswer(to: offer, transport: Self.ours)
        var active = offer
        active.media[0].transportAttributes.setup = .active
        do {
            _ = try WebRTCNegotiation(local: answer, remote: active)
            Issue.record("a remote setup:active was accepted")
        } catch let error as MediaError {
            #expect(error.code == .unsupported && error.message.contains("setup:active"), "\(error)")
        }
        var bare = offer
        bare.transportAttributes.fingerprints = []
        #expect(throws: MediaError.self) { try WebRTCNegotiation(local: answer, remote: bare) }
        #expect(throws: MediaError.self) {
            try WebRTCNegotiation(local: answer, remote: SessionDescription(parsing: Self.chromeOffer))
        }
    }
}
