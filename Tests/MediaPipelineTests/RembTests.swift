import Testing

@testable import MediaPipeline

/// A REMB message (payload-specific feedback 15, "REMB") for `ssrcs` with `mantissa` ×
/// 2^`exponent` bit/s, as libwebrtc and Janus write it.
private func remb(exponent: UInt8, mantissa: UInt32, ssrcs: [UInt32]) -> [UInt8] {
    var bytes: [UInt8] = [0x8F, 206, 0, UInt8(4 + ssrcs.count)]
    bytes += [0, 0, 0, 1, 0, 0, 0, 0] + Array("REMB".utf8)
    bytes += [
        UInt8(ssrcs.count), exponent << 2 | UInt8(mantissa >> 16 & 0x03), UInt8(mantissa >> 8 & 0xFF),
        UInt8(mantissa & 0xFF),
    ]
    for ssrc in ssrcs {
        bytes += [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
    }
    return bytes
}

@Suite("REMB: an SFU's receiver estimated maximum bitrate caps the local video")
struct RembTests {
    @Test("the walker reads the bitrate (mantissa × 2^exponent) and the SSRCs; the reader takes it for the video")
    func reads() throws {
        // 300,000 bit/s = 150,000 × 2^1 (a mantissa of 18 bits).
        let message = remb(exponent: 1, mantissa: 150_000, ssrcs: [0xAAAA, 0xBBBB])
        var reader = FeedbackReader(
            audioSSRC: 0xAAAA, videoSSRC: 0xBBBB, lowVideoSSRC: 0xCCCC, feedbackSSRC: 1, ntpNowMicroseconds: 0)
        try message.withUnsafeBytes { try RTCPCompound.visit($0, &reader) }
        #expect(reader.maximumBitrate == 300_000)
        // A REMB about other streams leaves the local video alone.
        var other = FeedbackReader(audioSSRC: 1, videoSSRC: 2, lowVideoSSRC: 4, feedbackSSRC: 3, ntpNowMicroseconds: 0)
        try message.withUnsafeBytes { try RTCPCompound.visit($0, &other) }
        #expect(other.maximumBitrate == nil)
        // A message that claims more SSRCs than it holds is refused, naming it.
        var truncated = message
        truncated[16] = 9  // the SSRC count (after the 4-byte header, two SSRCs and "REMB")
        let error = #expect(throws: MediaError.self) {
            try truncated.withUnsafeBytes { try RTCPCompound.visit($0, &reader) }
        }
        #expect(error?.message.contains("REMB with 9 SSRCs") == true)
    }

    @Test("the cap holds the video bitrate down at once, and lapses 5 s after the last REMB")
    func caps() {
        var control = LossBasedRateController(
            startBitsPerSecond: 800_000, minimumBitsPerSecond: 100_000, maximumBitsPerSecond: 1_500_000)
        control.cap(bitsPerSecond: 300_000, now: 0)
        #expect(control.videoBitsPerSecond == 300_000)
        // No loss for seconds: the bitrate would rise 8 % a second, but stays capped.
        for second in 1...4 {
            control.report(fractionLost: 0, roundTripMicroseconds: 50_000, now: Int64(second) * 1_000_000)
        }
        #expect(control.videoBitsPerSecond == 300_000)
        // A cap below the minimum stops at the minimum.
        control.cap(bitsPerSecond: 10_000, now: 4_000_000)
        #expect(control.videoBitsPerSecond == 100_000)
        // Not renewed: after 5 s it lapses and the bitrate climbs again.
        for second in 10...12 {
            control.report(fractionLost: 0, roundTripMicroseconds: 50_000, now: Int64(second) * 1_000_000)
        }
        #expect(control.videoBitsPerSecond > 100_000)
    }
}
