import Foundation
import Testing

@testable import MediaPipeline

@Suite("Audio receiver: the jitter buffer")
struct AudioReceiverTests {
    /// `count` 20 ms Opus packets of speech-like audio (a tone with a changing pitch).
    private func packets(_ count: Int, configuration: OpusEncoderConfiguration = .init()) throws -> [EncodedFrame] {
        try encodedTone(count, with: try OpusEncoder(configuration: configuration))
    }

    /// Plays `ticks` × 10 ms, delivering each packet at its arrival time (microseconds on the
    /// same clock as the packets' media time), and returns the output and what each tick gave.
    private func play(
        _ receiver: AudioReceiver, _ stream: [EncodedFrame], arrivals: [Int64?], ticks: Int
    ) -> (samples: [Int16], outputs: [AudioReceiver.Output]) {
        var samples: [Int16] = []
        var outputs: [AudioReceiver.Output] = []
        let order = arrivals.indices.filter { arrivals[$0] != nil }.sorted { arrivals[$0]! < arrivals[$1]! }
        var next = 0
        for tick in 0..<ticks {
            let now = Int64(tick) * 10_000
            while next < order.count, arrivals[order[next]]! <= now {
                receiver.enqueue(stream[order[next]], arrival: arrivals[order[next]]!)
                next += 1
            }
            outputs.append(receiver.produce(now: now, concealUpToMicroseconds: 100_000))
            samples += Array(receiver.frame)
        }
        return (samples, outputs)
    }

    @Test("packets that overtake each other are put back in order; duplicates are dropped")
    func reordering() throws {
        let stream = try packets(20)
        let onTime = stream.indices.map { Int64($0) * 20_000 }
        let (inOrder, _) = play(
            try AudioReceiver(sampleRate: 48000, channelCount: 2), stream, arrivals: onTime, ticks: 40)
        // Odd packets come 15 ms late, overtaken by the next one; packet 4 comes twice.
        let shuffled = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        shuffled.enqueue(stream[4], arrival: 80_000)
        let late = stream.indices.map { Int64($0) * 20_000 + ($0 % 2 == 1 ? 15_000 : 0) }
        let (reordered, outputs) = play(shuffled, stream, arrivals: late, ticks: 40)
        #expect(shuffled.latePackets == 1)
        #expect(!outputs.contains(.concealed))
        // The reordered stream plays the same audio, sample for sample and at the same time: 15 ms
        // of reordering is within the jitter buffer's starting 60 ms.
        #expect(reordered.count == inOrder.count && reordered.count == 40 * 960)
        #expect(
            reordered == inOrder,
            "first difference at sample \(String(describing: reordered.indices.first { reordered[$0] != inOrder[$0] }))"
        )
    }

    @Test("a packet whose time was already concealed is late and dropped")
    func latePacket() throws {
        let stream = try packets(30)
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        var arrivals: [Int64?] = stream.indices.map { Int64($0) * 20_000 }
        arrivals[12] = nil
        _ = play(receiver, stream, arrivals: arrivals, ticks: 40)
        // Packet 12 comes after its time was concealed: dropped, never played twice.
        receiver.enqueue(stream[12], arrival: 400_000)
        #expect(receiver.latePackets == 1)
        #expect(receiver.counters.concealedTicks == 2)
    }

    @Test(
        "a stall that holds every packet back 150 ms is concealed, then played late: nothing dropped, delay back to target"
    )
    func stallPlaysLate() throws {
        let stream = try packets(150)
        // Steady arrivals, except that packets 40-47 are held and come together 150 ms after
        // packet 40 was due (a receive thread or network path that stalled).
        var arrivals: [Int64?] = stream.indices.map { Int64($0) * 20_000 }
        for index in 40...47 { arrivals[index] = 40 * 20_000 + 150_000 }
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        let (samples, outputs) = play(receiver, stream, arrivals: arrivals, ticks: 300)
        // The stall was concealed while it lasted; every packet played once it came.
        #expect(receiver.latePackets == 0)
        let concealed = outputs.indices.filter { outputs[$0] == .concealed }
        // 150 ms held, less the delay the buffer had: 9 ticks (86-94) concealed, as the
        // synthetic arrivals make it every run; one either side for a target moved by a tick.
        #expect((8...10).contains(concealed.count), "concealed ticks \(concealed)")
        // The delay the stall added was taken out again by shortening (the delay back near its
        // target), and the audio after it is the source's.
        #expect(receiver.counters.accelerations > 0)
        let delay = receiver.withInbox { inbox in
            inbox.decodedUntil.flatMap { inbox.delay(position: $0, now: 300 * 10_000) }
        }
        let target = receiver.targetDelayMicroseconds
        #expect(delay.map { $0 <= target + 40_000 } ?? false, "delay \(delay ?? -1) µs, target \(target) µs")
        // Against the same stream played without the stall: the last 0.2 s is the same audio.
        let (clean, _) = play(
            try AudioReceiver(sampleRate: 48000, channelCount: 2), stream,
            arrivals: stream.indices.map { Int64($0) * 20_000 }, ticks: 300)
        let tail = Array(samples.suffix(19_200))
        let lag = try #require(lagOfBestMatch(Array(clean.suffix(48_000)), tail, maximumFrames: 14_400))
        let matched = Array(clean.suffix(48_000)[(clean.count - 48_000 + lag * 2)...].prefix(tail.count))
        #expect(SignalQuality.snr(reference: matched, test: tail) > 30)
    }

    @Test("a sender whose clock jumps restarts playout instead of having its packets dropped")
    func senderRestart() throws {
        let stream = try packets(40)
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        // 20 packets, then the media clock jumps 10 s back while arrivals go on.
        var outputs: [AudioReceiver.Output] = []
        for tick in 0..<80 {
            let now = Int64(tick) * 10_000
            if tick % 2 == 0 {
                let index = tick / 2
                let frame = index < 20 ? stream[index] : stream[index].restamped(Int64(index) * 20_000 - 10_000_000)
                receiver.enqueue(frame, arrival: now)
            }
            outputs.append(receiver.produce(now: now, concealUpToMicroseconds: 100_000))
        }
        #expect(receiver.latePackets == 0)
        #expect(receiver.withInbox { $0.restarts } == 1)
        #expect(outputs.suffix(20).allSatisfy { $0 == .audio })
    }

    @Test("the target delay follows the arrival jitter, and steady jitter is never concealed")
    func targetFollowsJitter() throws {
        let stream = try packets(500)  // 10 s
        var random = SplitMix64(seed: 3)
        // Uniform jitter of 0...60 ms over a base delay of 30 ms.
        let jittered = stream.indices.map { index -> Int64? in
            Int64(index) * 20_000 + 30_000 + Int64(random.next() % 60_001)
        }
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        let (_, outputs) = play(receiver, stream, arrivals: jittered, ticks: 1000)
        let target = receiver.targetDelayMicroseconds
        #expect((60_000...80_000).contains(target), "target \(target)")
        // After the first two seconds (the estimate settling), nothing is concealed.
        #expect(!outputs[200...].contains(.concealed))
        let counters = receiver.counters
        let meanDelay = counters.delaySumMicroseconds / max(1, counters.delayTicks)
        #expect(meanDelay <= target + 25_000, "mean delay \(meanDelay) for target \(target)")
        // A steady link afterwards brings the target down.
        let steadyReceiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        let steady = stream.indices.map { Optional(Int64($0) * 20_000 + 30_000) }
        let (_, steadyOutputs) = play(steadyReceiver, stream, arrivals: steady, ticks: 1000)
        #expect(steadyReceiver.targetDelayMicroseconds <= 10_000)
        #expect(!steadyOutputs.contains(.concealed))
        #expect(steadyReceiver.counters.accelerations > 0)  // from the 60 ms start down to the target
    }

    @Test("a lost packet is rebuilt from the next one's in-band FEC; without FEC it is concealed")
    func forwardErrorCorrection() throws {
        var settings = OpusEncoderConfiguration()
        settings.application = .voip
        settings.bitrateBitsPerSecond = 32000
        settings.inbandForwardErrorCorrection = true
        settings.expectedPacketLossPercent = 20
        let withFEC = try packets(60, configuration: settings)
        settings.inbandForwardErrorCorrection = false
        let withoutFEC = try packets(60, configuration: settings)
        // LBRR follows voice activity: most packets carry it; none does when FEC is off.
        let carrying = withFEC.filter { $0.withUnsafeBytes(OpusPacket.carriesRedundancy) }.count
        #expect(carrying >= 40, "\(carrying) of 60 packets carry FEC")
        #expect(!withoutFEC.contains { $0.withUnsafeBytes(OpusPacket.carriesRedundancy) })
        #expect(withFEC[31].withUnsafeBytes(OpusPacket.carriesRedundancy))
        for (stream, fec) in [(withFEC, true), (withoutFEC, false)] {
            var arrivals: [Int64?] = stream.indices.map { Int64($0) * 20_000 }
            arrivals[30] = nil
            let lossy = try AudioReceiver(sampleRate: 48000, channelCount: 2)
            let (_, outputs) = play(lossy, stream, arrivals: arrivals, ticks: 100)
            #expect(lossy.counters.packetsRecovered == (fec ? 1 : 0))
            #expect(outputs.filter { $0 == .concealed }.count == (fec ? 0 : 2))
            // What the buffer decides when packet 30's time comes: rebuild it from packet 31.
            var inbox = AudioReceiver.Inbox()
            inbox.enqueue(stream[29], arrival: 0)
            inbox.enqueue(stream[31], arrival: 0)
            inbox.decodedUntil = stream[29].timestampMicroseconds
            guard case .decode = inbox.nextStep(now: 0) else {
                Issue.record("packet 29 not decoded")
                continue
            }
            inbox.decodedUntil = stream[30].timestampMicroseconds
            switch inbox.nextStep(now: 0) {
            case .recover(let next, let missing):
                #expect(fec && next.timestampMicroseconds == stream[31].timestampMicroseconds && missing == 20_000)
            case .conceal(let missing):
                #expect(!fec && missing == 10_000)
            default:
                Issue.record("neither rebuilt nor concealed")
            }
        }
    }

    @Test("DTX: silence the sender skipped, or nothing after its DTX frame, is comfort noise, not loss")
    func discontinuousTransmission() throws {
        var settings = OpusEncoderConfiguration()
        settings.application = .voip
        settings.discontinuousTransmission = true
        let encoder = try OpusEncoder(configuration: settings)
        let speech = try encodedTone(20, with: encoder)
        var dtx: EncodedFrame?
        for _ in 0..<40 {
            let frame = try encoder.encode(AudioFrame(silenceOf: 960, sampleRate: 48000, channelCount: 2))
            if frame.byteCount <= 2 { dtx = frame }
        }
        let dtxFrame = try #require(dtx, "the encoder made no DTX frame")
        // 10 packets of speech (sequence 0...9), a DTX frame (10), nothing for 500 ms (the
        // sender skips silence), then speech again with the next sequence number (11...).
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        var outputs: [AudioReceiver.Output] = []
        var sent: [(frame: EncodedFrame, media: Int64, sequence: Int64)] = []
        for index in 0..<10 { sent.append((speech[index], Int64(index) * 20_000, Int64(index))) }
        sent.append((dtxFrame, 200_000, 10))
        for index in 0..<9 { sent.append((speech[10 + index], 720_000 + Int64(index) * 20_000, 11 + Int64(index))) }
        var next = 0
        var longestStarvation: Int64 = 0
        for tick in 0..<96 {  // until the last packet has played
            let now = Int64(tick) * 10_000
            while next < sent.count, sent[next].media <= now {
                receiver.enqueue(
                    sent[next].frame.restamped(sent[next].media), arrival: sent[next].media,
                    sequence: sent[next].sequence)
                next += 1
            }
            outputs.append(receiver.produce(now: now, concealUpToMicroseconds: 100_000))
            longestStarvation = max(longestStarvation, receiver.starvedMicroseconds)
        }
        // Comfort noise through the silence: nothing concealed or silent, no restart, no freeze.
        #expect(!outputs.contains(.concealed))
        #expect(receiver.counters.comfortNoiseTicks >= 45, "\(receiver.counters)")
        #expect(receiver.counters.silentTicks == 0)
        #expect(receiver.withInbox { $0.restarts } == 0)
        #expect(longestStarvation == 0)
        // Speech plays again, in step: every packet decoded.
        #expect(outputs.suffix(8).allSatisfy { $0 == .audio }, "\(outputs.suffix(8))")
        #expect(receiver.counters.packetsDecoded == 20)
    }

    @Test(
        "packets of every duration, 2.5 ms to 120 ms, arriving in bursts: every one decodes (the decoded samples keep room)"
    )
    func everyPacketDuration() throws {
        // Runs of one duration each, in an order that puts 5 ms packets, whose stretching leaves
        // samples over, right before 120 ms ones; 120 ms packets are two 60 ms frames (code 2).
        let runs: [(durationMicroseconds: Int, count: Int)] = [
            (20_000, 50), (5_000, 40), (120_000, 4), (2_500, 40), (60_000, 4), (5_000, 24), (120_000, 6),
            (10_000, 20), (40_000, 5), (5_000, 16), (120_000, 5),
        ]
        let pcm = testTone(samplesPerChannel: 48 * 4_000)
        var stream: [EncodedFrame] = []
        var media = 0  // microseconds
        for run in runs {
            var configuration = OpusEncoderConfiguration()
            configuration.frameDurationMicroseconds = min(run.durationMicroseconds, 60_000)
            let encoder = try OpusEncoder(configuration: configuration)
            let frameSamples = configuration.samplesPerFrame * 2
            func encodeNext() throws -> EncodedFrame {
                let start = media / 1_000 * 48 * 2
                let samples = Array(pcm[start..<(start + frameSamples)])
                media += configuration.frameDurationMicroseconds
                return try encoder.encode(
                    AudioFrame(samples: samples, sampleRate: 48000, channelCount: 2, timestampSamples: 0))
            }
            for _ in 0..<run.count {
                let timestamp = Int64(media)
                if run.durationMicroseconds == 120_000 {
                    let (first, second) = (try encodeNext(), try encodeNext())
                    stream.append(
                        EncodedFrame(
                            bytes: Self.twoFramePacket(first.bytes, second.bytes), codec: .opus, isKeyframe: true,
                            timestampMicroseconds: timestamp, durationMicroseconds: 120_000))
                } else {
                    stream.append(try encodeNext().restamped(timestamp))
                }
            }
        }
        #expect(media == 3_940_000)
        // Each packet is sent when its audio ends; some are held back up to 90 ms and come in bursts.
        var random = SplitMix64(seed: 23)
        let arrivals: [Int64] = stream.map { frame in
            let duration =
                Int64(try! OpusDecoder.samplesPerChannel(inPacket: frame.bytes, sampleRate: 48000)) * 1000 / 48
            let held = Int64.random(in: 0...3, using: &random) == 0 ? Int64.random(in: 0...90_000, using: &random) : 0
            return frame.timestampMicroseconds + duration + held
        }
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        var failures: [String] = []
        let order = stream.indices.sorted { arrivals[$0] < arrivals[$1] }
        var next = 0
        for tick in 0..<420 {
            let now = Int64(tick) * 10_000
            while next < order.count, arrivals[order[next]] <= now {
                receiver.enqueue(stream[order[next]], arrival: arrivals[order[next]])
                next += 1
            }
            _ = receiver.produce(now: now, concealUpToMicroseconds: 100_000)
            if receiver.failed, failures.count < 3 { failures.append("tick \(tick): \(receiver.failure ?? "?")") }
        }
        #expect(failures.isEmpty, "\(failures)")
        // Every packet was played but those that came after their time was concealed.
        #expect(receiver.counters.packetsDecoded == Int64(stream.count) - Int64(receiver.latePackets))
        #expect(receiver.latePackets < 5, "\(receiver.latePackets) late")
        #expect(receiver.counters.accelerations + receiver.counters.expansions > 0, "the bursts were stretched")
    }

    /// An Opus packet of two frames of different sizes (RFC 6716 3.2.3, code 2) from two
    /// single-frame packets of one configuration.
    private static func twoFramePacket(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        let length = first.count - 1
        var packet: [UInt8] = [(first[0] & 0xFC) | 2]
        if length < 252 {
            packet.append(UInt8(length))
        } else {
            let low = 252 + length % 4
            packet += [UInt8(low), UInt8((length - low) / 4)]
        }
        return packet + first.dropFirst() + second.dropFirst()
    }

    @Test("shortening and lengthening by a pitch period keep a tone continuous")
    func timeStretch() {
        // A 200 Hz tone (period 240 frames at 48 kHz), stereo, 60 ms.
        let frames = 2880
        var samples = [Int16](repeating: 0, count: (frames + 960) * 2)
        for frame in 0..<frames {
            let value = Int16(8000 * sin(2 * Double.pi * 200 * Double(frame) / 48000))
            samples[frame * 2] = value
            samples[frame * 2 + 1] = value
        }
        let maximumStep = 8000 * 2 * Double.pi * 200 / 48000 * 1.1  // the tone's steepest slope
        func isSmooth(_ count: Int) -> Bool {
            (1..<count).allSatisfy { abs(Double(samples[$0 * 2]) - Double(samples[($0 - 1) * 2])) <= maximumStep }
        }
        let removed = samples.withUnsafeMutableBufferPointer {
            TimeStretcher.shorten($0, start: 0, frames: frames, channels: 2, sampleRate: 48000, minimumCorrelation: 0.9)
        }
        #expect(removed % 240 == 0 && removed > 0)
        #expect(isSmooth(frames - removed))
        let added = samples.withUnsafeMutableBufferPointer {
            TimeStretcher.lengthen(
                $0, start: 0, frames: frames - removed, channels: 2, sampleRate: 48000, minimumCorrelation: 0.9)
        }
        #expect(added % 240 == 0 && added > 0)
        #expect(isSmooth(frames - removed + added))
    }
}

/// The lag (in frames, 0...`maximumFrames`) at which `delayed` best matches `reference`.
func lagOfBestMatch(_ delayed: [Int16], _ reference: [Int16], maximumFrames: Int) -> Int? {
    var best: (lag: Int, error: Double)?
    for lag in 0...maximumFrames {
        let count = min(reference.count, delayed.count - lag * 2)
        guard count > 4800 else { break }
        var error = 0.0
        for index in stride(from: 0, to: count, by: 7) {
            let difference = Double(delayed[lag * 2 + index]) - Double(reference[index])
            error += difference * difference
        }
        if best == nil || error < best!.error { best = (lag, error) }
    }
    return best?.lag
}
