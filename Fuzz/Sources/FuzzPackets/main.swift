import Foundation

@testable import MediaPipeline

/// One input: the first byte picks what is fed (an RTP packet with its VP8 and VP9 descriptors
/// and its payload read as redundant audio (RFC 2198), an RTCP datagram, a stream of packets
/// into the frame assemblers, or SDP text, read and written back, answered as a WebRTC offer
/// and negotiated, datagrams into a DTLS association, or a datagram through SRTP), the rest is
/// the data.
/// `FUZZ_CASE=rtp|rtcp|depacketizers|sdp|dtls|srtp` feeds every input, whole, to that reader alone (the CI
/// smoke runs give each its own minute). Every reader must either read it or throw a MediaError;
/// a crash or hang is a bug.
let fixedCase: Int? = ["rtp": 0, "rtcp": 1, "depacketizers": 2, "sdp": 3, "dtls": 4, "srtp": 5][
    ProcessInfo.processInfo.environment["FUZZ_CASE"] ?? ""]

/// The local transport the sdp case answers WebRTC offers with.
let fuzzTransport = WebRTCLocalTransport(
    iceUfrag: "fuzz", icePassword: "fuzzfuzzfuzzfuzzfuzzfu",
    fingerprint: SessionDescription.Fingerprint(algorithm: "sha-256", bytes: Array(repeating: 0xAB, count: 32)),
    candidates: ["1 1 udp 2130706431 127.0.0.1 47000 typ host"])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let skip = fixedCase == nil ? 1 : 0
    guard size > skip else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + skip, count: size - skip))
    switch fixedCase ?? Int(data[0] % 6) {
    case 4:
        fuzzDTLS(bytes)
    case 5:
        fuzzSRTP(bytes)
    case 3:
        if let sdp = try? SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) {
            _ = try? SessionDescription(parsing: sdp.text)
            // As a WebRTC offer: this side's answer must read back, and what the two agreed
            // either holds or is a MediaError.
            let answer = SessionDescription.webRTCAnswer(to: sdp, transport: fuzzTransport, sessionID: 1)
            guard (try? SessionDescription(parsing: answer.text)) != nil else {
                fatalError("the WebRTC answer does not read back:\n\(answer.text)")
            }
            _ = try? WebRTCNegotiation(local: answer, remote: sdp)
            _ = try? WebRTCNegotiation(local: sdp, remote: answer)
        }
    case 0:
        if let packet = try? RTPPacket(bytes) {
            packet.withUnsafePayload { payload in
                _ = try? VP8PayloadDescriptor(parsing: payload)
                _ = try? VP9PayloadDescriptor(parsing: payload)
                try? AudioRedundancy.forEachBlock(in: payload) { _ in }
            }
            // As a peer's RED packet: its block payload types mapped in a copy, then read.
            var copy = Array(packet.bytes[packet.header.byteCount...])
            var map = [UInt8](repeating: 0xFF, count: 128)
            map[100] = RTPPayloadType.opus
            copy.withUnsafeMutableBytes { AudioRedundancy.mapBlockPayloadTypes(in: $0, map) }
            try? copy.withUnsafeBytes { try AudioRedundancy.forEachBlock(in: $0) { _ in } }
        }
    case 1:
        _ = try? bytes.withUnsafeBytes { try RTCPCompound.parse($0) }
        var reader = FeedbackReader(
            audioSSRC: 1, videoSSRC: 2, lowVideoSSRC: 4, feedbackSSRC: 3, ntpNowMicroseconds: 1_000_000)
        _ = try? bytes.withUnsafeBytes { try RTCPCompound.visit($0, &reader) }
        // A subscriber's feedback as the hub says it again about a publisher's layers.
        _ = VideoLayerForwarder(target: .low).translateFeedback(bytes, highSSRC: 2, lowSSRC: 4)
    default:
        // Packets of two length bytes each, into every assembler, 1 ms apart.
        var assemblers = [MediaCodec.vp8, .vp9, .opus].map { RTPFrameAssembler(codec: $0, gapWaitMicroseconds: 5_000) }
        var statistics = ReceptionStatistics(clockRate: 90_000)
        // The receive pipelines' packet sides too: the video inbox (NACK list, render timing)
        // and the audio jitter buffer's decisions.
        var video = VideoReceiver.Inbox(retransmission: true, reorderWaitMicroseconds: 50_000, feedbackSSRC: 3)
        var audio = AudioReceiver.Inbox()
        var offset = 0
        var now: Int64 = 0
        while offset + 2 <= bytes.count {
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            let end = min(bytes.count, offset + length)
            if let packet = try? RTPPacket(Array(bytes[offset..<end])) {
                statistics.count(packet.header, arrivalMicroseconds: now)
                for index in assemblers.indices { assemblers[index].insert(packet, now: now) { _ in } }
                _ = video.receive(packet, now: now)
                _ = video.takeNack(now: now)
                _ = video.nextDue(now: now)
                _ = audio.receive(packet, now: now)
                for _ in 0..<3 {
                    if case .wait = audio.nextStep(now: now) { break }
                }
            }
            offset = end
            now += 1_000
        }
        for index in assemblers.indices { assemblers[index].poll(now: now + 1_000_000) { _ in } }
        _ = statistics.reportBlock(nowMicroseconds: now)
    }
    return 0
}
