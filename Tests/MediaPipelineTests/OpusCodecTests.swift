import Testing

@testable import MediaPipeline

@Suite("Opus codec")
struct OpusCodecTests {
    @Test("every setter is read back from libopus")
    func settersReadBack() throws {
        let encoder = try OpusEncoder()
        try encoder.setBitrate(32000)
        #expect(encoder.bitrateBitsPerSecond == 32000)
        try encoder.setComplexity(3)
        #expect(encoder.complexity == 3)
        try encoder.setVariableBitrate(false)
        #expect(encoder.variableBitrate == false)
        try encoder.setInbandForwardErrorCorrection(true)
        #expect(encoder.inbandForwardErrorCorrection == true)
        try encoder.setExpectedPacketLossPercent(17)
        #expect(encoder.expectedPacketLossPercent == 17)
        try encoder.setDiscontinuousTransmission(true)
        #expect(encoder.discontinuousTransmission == true)

        var configuration = OpusEncoderConfiguration()
        configuration.constrainedVariableBitrate = true
        configuration.inbandForwardErrorCorrection = true
        configuration.expectedPacketLossPercent = 9
        configuration.bitrateBitsPerSecond = 24000
        let configured = try OpusEncoder(configuration: configuration)
        #expect(configured.constrainedVariableBitrate)
        #expect(configured.inbandForwardErrorCorrection)
        #expect(configured.expectedPacketLossPercent == 9)
        #expect(configured.bitrateBitsPerSecond == 24000)

        let decoder = try OpusDecoder()
        try decoder.setGain(q8dB: -512)
        #expect(decoder.gainQ8dB == -512)
    }

    @Test("invalid settings are refused with the field named")
    func invalidSettings() throws {
        var configuration = OpusEncoderConfiguration()
        configuration.sampleRate = 44100
        #expect(throws: MediaError.self) { try OpusEncoder(configuration: configuration) }
        do {
            _ = try OpusEncoder(configuration: configuration)
        } catch let error as MediaError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("44100"))
        }
        configuration = OpusEncoderConfiguration()
        configuration.frameDurationMicroseconds = 30_000
        #expect(throws: MediaError.self) { try OpusEncoder(configuration: configuration) }
        configuration = OpusEncoderConfiguration()
        configuration.complexity = 11
        #expect(throws: MediaError.self) { try OpusEncoder(configuration: configuration) }
        #expect(throws: MediaError.self) { try OpusDecoder(sampleRate: 22050) }
        let encoder = try OpusEncoder()
        #expect(throws: MediaError.self) { try encoder.setBitrate(100) }
        // A frame of the wrong length.
        let short = AudioFrame(silenceOf: 100, sampleRate: 48000, channelCount: 2)
        #expect(throws: MediaError.self) { try encoder.encode(short) }
        // Garbage is not a packet.
        let decoder = try OpusDecoder()
        var frame = AudioFrame(silenceOf: 0, sampleRate: 48000, channelCount: 2)
        #expect(throws: MediaError.self) { try decoder.decode([0xFF, 0xFF, 0xFF], into: &frame) }
        #expect(throws: MediaError.self) { try decoder.decode([], into: &frame) }
    }

    @Test(
        "every rate, channel count and frame duration round-trips with the right lengths",
        arguments: [8000, 12000, 16000, 24000, 48000], [1, 2])
    func ratesAndDurations(sampleRate: Int, channels: Int) throws {
        for duration in OpusEncoderConfiguration.supportedFrameDurationsMicroseconds {
            var configuration = OpusEncoderConfiguration()
            configuration.sampleRate = sampleRate
            configuration.channelCount = channels
            configuration.frameDurationMicroseconds = duration
            let encoder = try OpusEncoder(configuration: configuration)
            let decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: channels)
            let perFrame = sampleRate * duration / 1_000_000
            #expect(encoder.samplesPerFrame == perFrame)
            #expect(encoder.preSkip48kHz == encoder.lookaheadSamples * 48000 / sampleRate)
            let pcm = testTone(samplesPerChannel: perFrame, sampleRate: sampleRate, channels: channels)
            let packet = try encoder.encode(AudioFrame(samples: pcm, sampleRate: sampleRate, channelCount: channels))
            #expect(packet.durationMicroseconds == Int64(duration))
            #expect(try OpusDecoder.samplesPerChannel(inPacket: packet.bytes, sampleRate: sampleRate) == perFrame)
            var out = AudioFrame(silenceOf: 0, sampleRate: sampleRate, channelCount: channels)
            try decoder.decode(packet.bytes, into: &out)
            #expect(out.samplesPerChannel == perFrame)
            #expect(decoder.lastPacketDurationSamples == perFrame)
        }
    }

    /// Encodes `seconds` of the test tone and decodes it, aligning for the lookahead; returns the SNR.
    private func roundTripSNR(configuration: OpusEncoderConfiguration, lose: Set<Int> = [], useFEC: Bool = false) throws
        -> Double
    {
        let encoder = try OpusEncoder(configuration: configuration)
        let decoder = try OpusDecoder(sampleRate: configuration.sampleRate, channelCount: configuration.channelCount)
        let frame = encoder.samplesPerFrame
        let channels = configuration.channelCount
        let frames = 100
        let source = testTone(
            samplesPerChannel: frame * frames, sampleRate: configuration.sampleRate, channels: channels)
        var packets: [[UInt8]] = []
        for index in 0..<frames {
            let pcm = Array(source[index * frame * channels..<(index + 1) * frame * channels])
            packets.append(
                try encoder.encode(
                    AudioFrame(samples: pcm, sampleRate: configuration.sampleRate, channelCount: channels)
                ).bytes)
        }
        var decoded: [Int16] = []
        var pcm = [Int16](repeating: 0, count: decoder.maximumSamplesPerPacket * channels)
        for index in 0..<frames {
            let count: Int
            if lose.contains(index) {
                if useFEC, index + 1 < frames {
                    count = try packets[index + 1].withUnsafeBytes { next in
                        try pcm.withUnsafeMutableBufferPointer {
                            try decoder.recoverLoss(fromFECIn: next, samplesPerChannel: frame, into: $0)
                        }
                    }
                } else {
                    count = try pcm.withUnsafeMutableBufferPointer {
                        try decoder.concealLoss(samplesPerChannel: frame, into: $0)
                    }
                }
            } else {
                count = try packets[index].withUnsafeBytes { raw in
                    try pcm.withUnsafeMutableBufferPointer { try decoder.decode(raw, into: $0) }
                }
            }
            #expect(count == frame)
            decoded.append(contentsOf: pcm[0..<count * channels])
        }
        let delay = encoder.lookaheadSamples * channels
        // Skip the first 10 frames (encoder start-up), compare the rest aligned by the lookahead.
        let start = 10 * frame * channels
        return SignalQuality.snr(
            reference: Array(source[start..<source.count - delay]), test: Array(decoded[(start + delay)...]))
    }

    @Test("48 kHz stereo at 64 kbit/s round-trips a tone with a high SNR")
    func toneRoundTrip() throws {
        let snr = try roundTripSNR(configuration: OpusEncoderConfiguration())
        #expect(snr > 20, "SNR \(snr) dB")
    }

    @Test("in-band FEC rebuilds lost packets better than concealment alone")
    func forwardErrorCorrection() throws {
        var configuration = OpusEncoderConfiguration()
        // Wideband speech settings, where libopus codes in SILK mode, which carries the FEC copy.
        configuration.application = .voip
        configuration.sampleRate = 16000
        configuration.bitrateBitsPerSecond = 24000
        configuration.channelCount = 1
        configuration.inbandForwardErrorCorrection = true
        configuration.expectedPacketLossPercent = 20
        let lost: Set<Int> = [20, 35, 50, 65, 80]
        let clean = try roundTripSNR(configuration: configuration)
        let concealed = try roundTripSNR(configuration: configuration, lose: lost, useFEC: false)
        let recovered = try roundTripSNR(configuration: configuration, lose: lost, useFEC: true)
        #expect(recovered > concealed + 1, "FEC \(recovered) dB vs PLC \(concealed) dB")
        #expect(clean >= recovered - 0.01)
    }

    @Test("concealment fills a lost packet with its length and refuses odd lengths")
    func concealment() throws {
        let decoder = try OpusDecoder(sampleRate: 48000, channelCount: 2)
        var pcm = [Int16](repeating: 0, count: 5760 * 2)
        let count = try pcm.withUnsafeMutableBufferPointer { try decoder.concealLoss(samplesPerChannel: 960, into: $0) }
        #expect(count == 960)
        #expect(throws: MediaError.self) {
            try pcm.withUnsafeMutableBufferPointer { try decoder.concealLoss(samplesPerChannel: 100, into: $0) }
        }
    }

    @Test("DTX shrinks silence to tiny packets")
    func discontinuousTransmission() throws {
        var configuration = OpusEncoderConfiguration()
        configuration.application = .voip
        configuration.discontinuousTransmission = true
        let encoder = try OpusEncoder(configuration: configuration)
        var sizes: [Int] = []
        for _ in 0..<50 {
            sizes.append(try encoder.encode(AudioFrame(silenceOf: 960, sampleRate: 48000, channelCount: 2)).byteCount)
        }
        #expect(sizes.suffix(20).allSatisfy { $0 <= 3 }, "\(sizes)")
    }

    @Test("thousands of encoder and decoder lifetimes leave no handle alive")
    func handleLifetimes() throws {
        let tally = HandleTally()
        try LiveCodecHandles.$tally.withValue(tally) {
            for _ in 0..<2000 {
                let encoder = try OpusEncoder()
                let decoder = try OpusDecoder()
                #expect(tally.live.load(ordering: .relaxed) == 2)
                _ = (encoder, decoder)
            }
            // Failed creations must not leak either.
            var bad = OpusEncoderConfiguration()
            bad.channelCount = 3
            for _ in 0..<100 { _ = try? OpusEncoder(configuration: bad) }
        }
        #expect(tally.created.load(ordering: .relaxed) == 4000)
        #expect(tally.live.load(ordering: .relaxed) == 0)
    }
}
