import Testing

@testable import MediaPipeline

/// The datagrams the Janus leg makes of the engine's RTCP, byte for byte: what Janus 1.1.2
/// needs to answer NACKs and PLIs (see `JanusChannelLeg.sendCompound`).
@Suite("Janus feedback: the datagrams the engine's RTCP becomes")
struct JanusFeedbackTests {
    private func datagrams(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        bytes.withUnsafeBytes { JanusChannelLeg.feedbackDatagrams($0) { out.append(Array($0)) } }
        return out
    }

    private func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private func block(ssrc: UInt32, lastSenderReport: UInt32, delay: UInt32) -> RTCPReportBlock {
        RTCPReportBlock(
            ssrc: ssrc, fractionLost: 3, cumulativeLost: 7, extendedHighestSequenceNumber: 1000, jitter: 12,
            lastSenderReport: lastSenderReport, delaySinceLastSenderReport: delay)
    }

    @Test(
        "a receiver report goes as one report per block, each DLSR 1 ms (66 units) short when it echoes a sender report"
    )
    func reportsApart() {
        let video = block(ssrc: 0x1111, lastSenderReport: 0xABCD_0000, delay: 6_553)
        let audio = block(ssrc: 0x2222, lastSenderReport: 0, delay: 0)
        let pli = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: 0x77, mediaSSRC: 0x1111)])
        let compound = RTCPCompound.serialize([.receiverReport(ssrc: 0x77, reports: [video, audio])]) + pli
        let out = datagrams(compound)
        #expect(out.count == 2)
        guard out.count == 2 else { return }
        // First: the video's block, then what followed the report (the PLI).
        #expect(out[0].count == 32 + pli.count)
        #expect(out[0][0] == 0x81 && out[0][1] == 201 && out[0][3] == 7)
        #expect(word(out[0], 4) == 0x77 && word(out[0], 8) == 0x1111)
        #expect(word(out[0], 24) == 0xABCD_0000)
        #expect(word(out[0], 28) == 6_553 - 66)
        #expect(Array(out[0][32...]) == pli)
        // Then the audio's, alone, its DLSR untouched (no sender report to echo).
        #expect(out[1].count == 32 && word(out[1], 8) == 0x2222 && word(out[1], 28) == 0)
    }

    @Test("a generic NACK goes twice, unchanged; a lone PLI gets a report block naming its stream first")
    func nackAndPli() {
        let lost: [UInt16] = [10, 12, 40]
        var recycler = ByteRecycler(slotCount: 1, capacity: 64)
        let nack = lost.withUnsafeBufferPointer {
            RTCPCompound.nack(senderSSRC: 0x77, mediaSSRC: 0x1111, lost: $0, in: &recycler)
        }
        #expect(datagrams(nack) == [nack, nack])
        let pli = RTCPCompound.serialize([.pictureLossIndication(senderSSRC: 0x77, mediaSSRC: 0x1111)])
        let out = datagrams(pli)
        #expect(out.count == 1)
        #expect(out.first?.count == 32 + pli.count)
        if let first = out.first {
            #expect(first[1] == 201 && word(first, 4) == 0x77 && word(first, 8) == 0x1111)
            #expect(Array(first[32...]) == pli)
        }
    }

    @Test("the answer to Janus's subscriber offer asks for NACK on Opus (Janus then resends audio), and only there")
    func subscriberAnswerAsksForAudioNack() throws {
        let offer = try SessionDescription(parsing: WebRTCSDPTests.janusOffer)
        let standard = SessionDescription.webRTCAnswer(to: offer, transport: WebRTCSDPTests.ours)
        #expect(standard.media[0].formats[0].feedback.isEmpty)  // nothing the offer lacks
        let answer = JanusSDP.subscriberAnswer(to: offer, transport: WebRTCSDPTests.ours)
        #expect(answer.media[0].formats.map(\.feedback) == [["nack"]])
        #expect(answer.media[1].formats.map(\.feedback) == standard.media[1].formats.map(\.feedback))
        #expect(answer.text.contains("a=rtcp-fb:111 nack\r\n"))
    }
}
