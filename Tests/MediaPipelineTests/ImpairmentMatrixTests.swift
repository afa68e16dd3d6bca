import MediaPipeline
import MediaPipelineTesting
import Testing

/// The impairment matrix's measures on short sessions (docs/impairment-matrix.md runs 2 channels × 4
/// users for 30 s per cell: `pipebench matrix`).
@Suite("Impairment matrix (short sessions)")
struct ImpairmentMatrixTests {
    private static let media = Result { try SampleMedia(speechWAV: Fixtures.speechWAV, videoIVF: Fixtures.motionIVF) }

    private func runner() throws -> ImpairmentRunner {
        try ImpairmentRunner(media: try Self.media.get(), channels: 1, usersPerChannel: 2, durationSeconds: 8)
    }

    @Test("no loss, 50 ms jitter: nothing concealed after the start, delay within 1.25 × jitter p95 + 20 ms")
    func jitterOnly() throws {
        let cell = ImpairmentCell(jitterMs: 50, roundTripMs: 50)
        let result = try runner().run(cell)
        #expect(result.audioConcealedPercent == 0)
        #expect(result.audioMeanDelayMs <= 1.25 * cell.jitterP95Ms + 20, "\(result.audioMeanDelayMs) ms")
        // Nothing lost: the audio is the lossless twin's, sample for sample, after the start.
        #expect(result.audioSNRdB >= 40, "\(result.audioSNRdB) dB")
        #expect(result.videoWrongPictures == 0 && result.videoFrozenPercent == 0)
        #expect(result.videoPSNRdB >= 35, "\(result.videoPSNRdB) dB")
        // Every stream's first audio and picture after the join, within the jitter buffers'
        // start and a keyframe's trip (the publishers' first frames are keyframes).
        #expect(result.firstAudioMsMax > 0 && result.firstAudioMsMax <= 1000, "\(result.firstAudioMsMax) ms")
        #expect(result.firstVideoMsMax >= 0 && result.firstVideoMsMax <= 1000, "\(result.firstVideoMsMax) ms")
    }

    @Test("10 % loss, 20 ms jitter, RTT 50 ms: audio concealed ≤ 1.5 %, video frozen ≤ 2 %, PSNR ≥ 35 dB")
    func moderateLoss() throws {
        let cell = ImpairmentCell(lossPercent: 10, jitterMs: 20, roundTripMs: 50)
        let result = try runner().run(cell)
        #expect(result.audioConcealedPercent <= 1.5, "\(result.audioConcealedPercent) %")
        #expect(result.videoFrozenPercent <= 2, "\(result.videoFrozenPercent) %")
        #expect(result.videoPSNRdB >= 35, "\(result.videoPSNRdB) dB")
        #expect(result.videoWrongPictures == 0)
        // Redundancy is at work: lost audio packets are rebuilt, lost video packets resent.
        #expect(result.audioPacketsRecoveredByFEC > 0 && result.bytesRetransmitted > 0)
    }

    @Test("30 % loss: no wrong picture, keyframe requests within one per 300 ms, recovery at work")
    func heavyLoss() throws {
        for burst in [1.0, 3.0] {
            let cell = ImpairmentCell(lossPercent: 30, meanBurstLength: burst, roundTripMs: 50)
            let result = try runner().run(cell)
            #expect(result.videoWrongPictures == 0)
            #expect(result.keyframeRequestsPerStreamMax <= Int64(8 / 0.3), "\(result.keyframeRequestsPerStreamMax)")
            #expect(result.nacksSent > 0 && result.bytesRetransmitted > 0)
            #expect(result.audioPacketsRecoveredByFEC > 0)
            // The links really lost about 30 %, both ways.
            let lost = Double(result.packetsLostByLinks) / Double(result.packetsOffered)
            #expect(lost > 0.25 && lost < 0.36, "\(lost)")
            // The bounds: audio concealed at most 15 %, video frozen at most 20 %.
            #expect(result.audioConcealedPercent <= 15, "\(result.audioConcealedPercent) %")
            #expect(result.videoFrozenPercent <= 20, "\(result.videoFrozenPercent) %")
        }
    }
}
