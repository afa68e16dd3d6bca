import Testing

@testable import MediaPipeline

@Suite("Loss recovery parts: the NACK list and the packet history")
struct LossRecoveryTests {
    @Test("a gap is asked for at once, again a round trip (+ 5 ms) later, at most 10 times; arrivals leave the list")
    func nackTracker() {
        var tracker = NackTracker()
        tracker.roundTripMicroseconds = 50_000
        var batch: [UInt16] = []
        let first = tracker.received(65_534, now: 0)
        #expect(first)
        let afterGap = tracker.received(65_538, now: 0)
        #expect(afterGap)  // 65535, 65536, 65537 missing (across the 16-bit wrap)
        tracker.takeDue(now: 0, into: &batch, limit: 64)
        #expect(batch == [65535, 0, 1])
        batch.removeAll()
        tracker.takeDue(now: 54_999, into: &batch, limit: 64)
        #expect(batch.isEmpty)  // not before a round trip
        let retransmitted = tracker.received(65_536, now: 30_000)
        #expect(retransmitted)  // a retransmission arrives
        #expect(tracker.recovered == 1)
        tracker.takeDue(now: 55_000, into: &batch, limit: 64)
        #expect(batch == [65535, 1])
        // Retried until 10 requests each, then dropped.
        for round in 2...12 {
            batch.removeAll()
            tracker.takeDue(now: Int64(round) * 55_000, into: &batch, limit: 64)
            #expect(batch.count == (round <= 9 ? 2 : 0), "round \(round)")
        }
        #expect(tracker.count == 0)
        #expect(tracker.requests == 3 + 2 * 9)
        // Forgetting what the frame buffer gave up on.
        let later = tracker.received(65_548, now: 0)
        #expect(later)
        tracker.forget(before: 65_545)
        batch.removeAll()
        tracker.takeDue(now: 1_000_000, into: &batch, limit: 2)
        #expect(batch == [9, 10])  // 65545, 65546, limited to 2
        // A gap too large to ask for clears the list: the caller asks for a keyframe.
        let hugeGap = tracker.received(65_548 + 1_002, now: 0)
        #expect(!hugeGap)
        #expect(tracker.count == 0)
    }

    @Test("the rounds of requests a gap waits for follow the first-try loss: 3 at none, 4 at 10 %, 8 at 30 %")
    func roundsFollowLoss() {
        // Every tenth (or every third of ten) packet lost on its first way; 2,000 packets, so
        // the estimate has forgotten its start.
        for (lostOfTen, loss, rounds) in [(0, 0.0, 3), (1, 0.1, 4), (3, 0.3, 8)] {
            var tracker = NackTracker()
            var sequence: Int64 = 0
            for index in 0..<2000 {
                sequence += 1
                if index % 10 < lostOfTen { continue }
                _ = tracker.received(sequence, now: Int64(index) * 1000)
                tracker.forget(before: sequence)
            }
            #expect(abs(tracker.lossFraction - loss) < 0.01, "\(tracker.lossFraction)")
            // 1 - (1 - loss)^2 of requests fail (the request or the resend lost): rounds for 99.5 %.
            #expect(tracker.roundsNeeded == rounds, "loss \(loss)")
        }
        // An outage's gap is not loss: the tracker is reset before the first packet after it.
        var tracker = NackTracker()
        for sequence in Int64(0)..<100 { _ = tracker.received(sequence, now: 0) }
        tracker.reset()
        _ = tracker.received(300, now: 0)
        #expect(tracker.lossFraction == 0)
    }

    @Test("packets that come unasked teach the reorder wait: the first request waits for them")
    func reorderWait() {
        var tracker = NackTracker()
        var batch: [UInt16] = []
        #expect(tracker.reorderWaitMicroseconds == 0)
        // A hundred times, packet n + 1 overtakes n, which comes 25 ms after the gap showed.
        var sequence: Int64 = 100
        for round in 0..<100 {
            let now = Int64(round) * 100_000
            _ = tracker.received(sequence + 1, now: now)
            _ = tracker.received(sequence, now: now + 25_000)
            sequence += 2
        }
        // The 0.95 quantile's 10 ms bucket, to its top: 30 ms.
        #expect(tracker.reorderWaitMicroseconds == 30_000)
        // Now a gap is not asked for before 30 ms have passed; the jitter can lengthen the wait.
        _ = tracker.received(sequence + 1, now: 10_000_000)
        tracker.takeDue(now: 10_029_999, into: &batch, limit: 64)
        #expect(batch.isEmpty)
        tracker.takeDue(now: 10_030_000, into: &batch, limit: 64)
        #expect(batch == [UInt16(sequence)])
        tracker.jitterMicroseconds = 40_000
        #expect(tracker.reorderWaitMicroseconds == 80_000)
    }

    @Test("the history resends a packet once per round trip to each subscriber, never when too old or unknown")
    func packetHistory() throws {
        var history = PacketHistory()
        func resend(
            ssrc: UInt32, sequenceNumber: UInt16, to subscriber: UInt32, now: Int64, roundTripMicroseconds: Int64
        )
            -> RTPPacket?
        {
            history.retransmission(
                ssrc: ssrc, sequenceNumber: sequenceNumber, to: subscriber, now: now,
                roundTripMicroseconds: roundTripMicroseconds)
        }
        var packetizer = try RTPPacketizer(
            codec: .vp8, ssrc: 77, payloadType: RTPPayloadType.vp8, firstSequenceNumber: 65_535)
        var sent: [RTPPacket] = []
        let frame = EncodedFrame(
            bytes: [UInt8](repeating: 0x10, count: 3000), codec: .vp8, isKeyframe: false, timestampMicroseconds: 0,
            durationMicroseconds: 0)
        try packetizer.packetize(frame) { sent.append($0) }
        for packet in sent { history.store(packet, now: 0) }
        let second = sent[1].header.sequenceNumber
        #expect(second == 0)
        let resent = resend(ssrc: 77, sequenceNumber: second, to: 5, now: 10_000, roundTripMicroseconds: 50_000)
        #expect(resent?.bytes == sent[1].bytes)
        #expect(resend(ssrc: 77, sequenceNumber: second, to: 5, now: 40_000, roundTripMicroseconds: 50_000) == nil)
        #expect(resend(ssrc: 77, sequenceNumber: second, to: 6, now: 40_000, roundTripMicroseconds: 50_000) != nil)
        #expect(resend(ssrc: 77, sequenceNumber: second, to: 5, now: 60_000, roundTripMicroseconds: 50_000) != nil)
        #expect(resend(ssrc: 78, sequenceNumber: second, to: 5, now: 200_000, roundTripMicroseconds: 50_000) == nil)
        #expect(resend(ssrc: 77, sequenceNumber: 500, to: 5, now: 200_000, roundTripMicroseconds: 50_000) == nil)
        #expect(resend(ssrc: 77, sequenceNumber: 65_535, to: 5, now: 3_000_001, roundTripMicroseconds: 50_000) == nil)
        #expect(history.packetsRetransmitted == 3)
        #expect(history.bytesRetransmitted == Int64(sent[1].payloadByteCount * 3))
        #expect(history.requestsIgnored == 4)
    }

    @Test("behind an SFU the audio keeps a floor of expected loss (in-band FEC) while reports show none")
    func expectedLossFloor() {
        var controller = LossBasedRateController(
            startBitsPerSecond: 500_000, minimumBitsPerSecond: 100_000, maximumBitsPerSecond: 500_000,
            audioExpectedLossFloorPercent: 10)
        #expect(controller.audioExpectedLossPercent == 10)  // before any report
        var now: Int64 = 0
        for _ in 0..<10 {
            now += 1_000_000
            controller.report(fractionLost: 0, roundTripMicroseconds: 50_000, now: now)
        }
        #expect(controller.audioExpectedLossPercent == 10)
        for _ in 0..<20 {
            now += 1_000_000
            controller.report(fractionLost: 0.3, roundTripMicroseconds: 50_000, now: now)
        }
        #expect(controller.audioExpectedLossPercent == 30)  // reports above the floor lead
        let plain = LossBasedRateController(
            startBitsPerSecond: 500_000, minimumBitsPerSecond: 100_000, maximumBitsPerSecond: 500_000)
        #expect(plain.audioExpectedLossPercent == 0)
    }

    @Test("a sender that ignores repeated NACKs for 200 ms gets a retransmission wait of rounds that long")
    func waitAllowsIgnoredRepeats() {
        let direct = VideoReceiver.Inbox(retransmission: true, reorderWaitMicroseconds: 20_000, feedbackSSRC: 1)
        let throughServer = VideoReceiver.Inbox(
            retransmission: true, reorderWaitMicroseconds: 20_000, feedbackSSRC: 1,
            repeatedNackIgnoredMicroseconds: 200_000)
        // No round trip measured (100 ms assumed), no loss seen: three rounds and 30 ms.
        #expect(direct.retransmissionWaitMicroseconds == 3 * 100_000 + 30_000)
        #expect(throughServer.retransmissionWaitMicroseconds == 3 * 200_000 + 30_000)
    }

    @Test(
        "a NACK repeated no sooner than the sender's de-duplication window; an audio receiver asks once, until the packet's time plays"
    )
    func repeatsAndAudioRequests() throws {
        var tracker = NackTracker()
        tracker.repeatIgnoredMicroseconds = 200_000
        _ = tracker.received(10, now: 0)
        _ = tracker.received(12, now: 0)
        var batch: [UInt16] = []
        tracker.takeDue(now: 0, into: &batch, limit: 8)
        #expect(batch == [11])
        batch.removeAll()
        tracker.takeDue(now: 150_000, into: &batch, limit: 8)
        #expect(batch.isEmpty)  // a round trip (100 ms assumed) is over, the window is not
        tracker.takeDue(now: 203_000, into: &batch, limit: 8)
        #expect(batch == [11])

        // Audio: packet 2 of a stream goes missing; the NACK names it and the sender's SSRC.
        var settings = OpusEncoderConfiguration()
        settings.inbandForwardErrorCorrection = false
        let frames = try encodedTone(8, with: try OpusEncoder(configuration: settings))
        var packetizer = try RTPPacketizer(codec: .opus, ssrc: 0xA0D1, payloadType: RTPPayloadType.opus)
        var packets: [RTPPacket] = []
        for frame in frames { try packetizer.packetize(frame) { packets.append($0) } }
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2, retransmission: true, feedbackSSRC: 0xFEED)
        let plain = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        for index in [0, 1, 3] {
            let now = Int64(index) * 20_000
            let (_, _, nack) = receiver.receive(packets[index], now: now)
            #expect(plain.receive(packets[index], now: now).nack == nil)
            guard index == 3 else {
                #expect(nack == nil)
                continue
            }
            let message = try #require(nack)
            let parsed = try message.withUnsafeBytes { try RTCPCompound.parse($0) }
            let missing = packets[2].header.sequenceNumber
            #expect(parsed == [.nack(senderSSRC: 0xFEED, mediaSSRC: 0xA0D1, lostSequenceNumbers: [missing])])
        }
        // Asked once; once playout has passed it, it is not asked for again.
        for tick in 0..<20 {
            _ = receiver.produce(now: 60_000 + Int64(tick) * 10_000, concealUpToMicroseconds: 100_000)
        }
        #expect(receiver.takeNack(now: 400_000) == nil)
    }

    @Test("the loss controller lowers video above 10 % loss, raises it below 2 %, sets Opus FEC and RED from the loss")
    func lossController() {
        var controller = LossBasedRateController(
            startBitsPerSecond: 500_000, minimumBitsPerSecond: 100_000, maximumBitsPerSecond: 500_000)
        // 20 % loss reported every second: -10 % each time (one cut per 300 ms + RTT at most).
        var now: Int64 = 0
        controller.report(fractionLost: 0.2, roundTripMicroseconds: 50_000, now: now)
        #expect(controller.videoBitsPerSecond == 450_000)
        controller.report(fractionLost: 0.2, roundTripMicroseconds: 50_000, now: 100_000)
        #expect(controller.videoBitsPerSecond == 450_000)  // too soon after the last cut
        for _ in 0..<30 {
            now += 1_000_000
            controller.report(fractionLost: 0.2, roundTripMicroseconds: 50_000, now: now)
        }
        #expect(controller.videoBitsPerSecond == 100_000)  // bounded below
        #expect(controller.audioExpectedLossPercent == 20)
        #expect(controller.audioRedundancyDistance == 2)  // two earlier frames repeated from 8 %
        // 5 % loss: held; the smoothed loss (0.3 of each report) comes down to one copy.
        for _ in 0..<6 {
            now += 1_000_000
            controller.report(fractionLost: 0.05, roundTripMicroseconds: 50_000, now: now)
        }
        #expect(controller.videoBitsPerSecond == 100_000)
        #expect(controller.audioRedundancyDistance == 1)
        // No loss: +8 % + 1 kbit/s per second, up to the maximum; FEC off once the loss fades.
        for _ in 0..<40 {
            now += 1_000_000
            controller.report(fractionLost: 0, roundTripMicroseconds: 50_000, now: now)
        }
        #expect(controller.videoBitsPerSecond == 500_000)
        #expect(controller.audioExpectedLossPercent == 0)
        #expect(controller.audioRedundancyDistance == 0)
    }

    @Test(
        "a frame lost for good leaves the render delay alone: the frames held behind it until the give-up count from their completion, those dropped not at all; one repaired late raises it; a keyframe held behind it goes on at its time"
    )
    func renderDelayAfterGiveUp() throws {
        // The sample's keyframe and 29 delta frames, then (by default) the keyframe again as
        // frame 30 (the next keyframe after a loss) and 5 delta frames behind it: 33 ms apart,
        // each arriving whole at its media time.
        let sample = try sampleFrames(30)
        /// The 36 frames, with the sample's keyframe at 0 and at each of `keyframes`.
        func stream(keyframes: Set<Int>) throws -> [[RTPPacket]] {
            let frames = (0..<36).map { index in
                let key = index == 0 || keyframes.contains(index)
                return EncodedFrame(
                    bytes: key ? sample[0].bytes : sample[1 + (index - 1) % 29].bytes, codec: .vp8, isKeyframe: key,
                    timestampMicroseconds: Int64(index) * 33_333, durationMicroseconds: 33_333)
            }
            return try packetized(frames, ssrc: 0x10_5E)
        }
        /// Delivers every frame but `lost` at its media time (`lost` itself at `repairedAt`, if
        /// given), polling every 5 ms, with pictures held at least `syncFloor` microseconds (as
        /// lip sync may hold them); returns the render delay's target at the end, the frames
        /// dropped before decoding, the frames queued, and when the first frame after `lost`
        /// was queued (clock microseconds).
        func run(lost: Int, repairedAt: Int64?, keyframes: Set<Int> = [30], syncFloor: Int64 = 0) throws -> (
            target: Int64, dropped: Int64, queued: Int, resumedAt: Int64?
        ) {
            let perFrame = try stream(keyframes: keyframes)
            // Behind a server that ignores repeated NACKs for 200 ms: a 630 ms wait for a
            // missing packet (3 rounds and 30 ms).
            let receiver = VideoReceiver(
                threads: 1, reorderWaitMicroseconds: 20_000, retransmission: true, feedbackSSRC: 0xFEED,
                repeatedNackIgnoredMicroseconds: 200_000)
            receiver.inbox.withLock { $0.syncFloorMicroseconds = syncFloor }
            var now: Int64 = 0
            var resumedAt: Int64?
            /// Notes the first time more than the `lost` frames before the loss are queued.
            func noteResumption(at time: Int64) {
                if resumedAt == nil && receiver.inbox.withLock({ $0.queue.count }) > lost { resumedAt = time }
            }
            for (index, packets) in perFrame.enumerated() {
                let due = Int64(index) * 33_333
                while now < due {
                    var pollAt = now  // the clock never goes back
                    if let repairedAt, now <= repairedAt && repairedAt < now + 5_000 {
                        for packet in perFrame[lost] { _ = receiver.receive(packet, now: repairedAt) }
                        pollAt = repairedAt
                    }
                    _ = receiver.poll(now: pollAt)
                    noteResumption(at: pollAt)
                    now += 5_000
                }
                guard index != lost else { continue }
                for packet in packets { _ = receiver.receive(packet, now: due) }
                noteResumption(at: due)
            }
            _ = receiver.poll(now: now)
            return receiver.inbox.withLock {
                ($0.delays.targetDelayMicroseconds, $0.framesDroppedBeforeDecode, $0.queue.count, resumedAt)
            }
        }
        // Frame 5 never comes: frames 6 to 24 wait 630 ms for it, then follow a gap and are dropped
        // until the keyframe (frame 30), which and whose followers are shown at their time.
        let givenUp = try run(lost: 5, repairedAt: nil)
        #expect(givenUp.dropped >= 20, "\(givenUp)")
        #expect(givenUp.queued == 5 + 6, "\(givenUp)")
        #expect(givenUp.target <= 10_000, "render delay \(givenUp.target) us after a loss for good")
        let keyframeArrival = Int64(30) * 33_333
        #expect(givenUp.resumedAt == keyframeArrival, "keyframe queued at \(String(describing: givenUp.resumedAt))")
        // Frame 5 comes 400 ms late (a retransmission): every frame is shown, and the delay
        // covers the wait of those held behind it.
        let repaired = try run(lost: 5, repairedAt: 5 * 33_333 + 400_000)
        #expect(repaired.dropped == 0 && repaired.queued == 36, "\(repaired)")
        #expect(repaired.target >= 300_000, "render delay \(repaired.target) us after a late repair")
        // A keyframe (frame 15, 500 ms) among the frames held behind the loss for good: it and
        // the 20 behind it are shown. It goes on when it is due, not at the give-up (some 830
        // ms): on arrival, or 200 ms later with pictures held 200 ms; those it lets out count
        // from their own completion.
        let keyframeTime = Int64(15) * 33_333
        for floor: Int64 in [0, 200_000] {
            let keyframeHeld = try run(lost: 5, repairedAt: nil, keyframes: [15], syncFloor: floor)
            #expect(keyframeHeld.queued == 5 + 21, "\(keyframeHeld)")
            let resumed = try #require(keyframeHeld.resumedAt)
            #expect(
                resumed >= keyframeTime + floor - 1_000 && resumed <= keyframeTime + floor + 5_000,
                "keyframe queued at \(resumed) us, due at \(keyframeTime + floor)")
            #expect(
                keyframeHeld.target <= 10_000, "render delay \(keyframeHeld.target) us after a keyframe held by a loss")
        }
    }

    @Test(
        "a new stream (another SSRC) learns its render timing afresh: its pictures are shown on time however short the stream before it"
    )
    func newStreamRenderTiming() throws {
        // Stream A: 30 frames 33 ms apart (the sample's first second), from clock 0; then
        // stream B: the same second three times over on its own time line (media time from 0
        // again), from clock 1 s. Each frame arrives whole at its stream's start plus its media
        // time, so B's transit is 1 s more than A's. (With A's sliding minimum kept, which
        // covers 1 to 2 s, B's frames looked 1 s late, the render delay took 1 s, and once the
        // window turned B was shown 1 s late.) A's pictures are held 100 ms (a sync floor), so
        // A's last frames are still queued when B starts: on A's time line, they are not due
        // for another second by B's timing, and must not hold B back.
        // Nothing is decoded: each frame ends in a byte naming its stream. The clock steps 5 ms
        // at a time, and each step takes every frame then due.
        let sample = try sampleFrames(30)
        func stream(seconds: Int, ssrc: UInt32, startingAt start: Int64) throws -> [(
            arrival: Int64, packets: [RTPPacket]
        )] {
            let frames = (0..<(30 * seconds)).map { index in
                EncodedFrame(
                    bytes: sample[index % 30].bytes + [UInt8(ssrc)], codec: .vp8,
                    isKeyframe: sample[index % 30].isKeyframe,
                    timestampMicroseconds: Int64(index) * 33_333, durationMicroseconds: 33_333)
            }
            return try packetized(frames, ssrc: ssrc).enumerated().map {
                (start + Int64($0.offset) * 33_333, $0.element)
            }
        }
        let arrivals =
            try stream(seconds: 1, ssrc: 0xA, startingAt: 0) + stream(seconds: 3, ssrc: 0xB, startingAt: 1_000_000)
        let receiver = VideoReceiver(
            threads: 1, reorderWaitMicroseconds: 20_000, retransmission: true, feedbackSSRC: 0xFEED)
        var next = 0
        var takenFromB = 0
        var latestB: Int64 = 0  // the most a frame of B was taken after its arrival (microseconds)
        for now in stride(from: Int64(0), to: 4_100_000, by: 5_000) {
            receiver.inbox.withLock { $0.syncFloorMicroseconds = now < 1_000_000 ? 100_000 : 0 }
            while next < arrivals.count && arrivals[next].arrival <= now {
                for packet in arrivals[next].packets { _ = receiver.receive(packet, now: arrivals[next].arrival) }
                next += 1
            }
            _ = receiver.poll(now: now)
            while let (frame, _, _) = receiver.inbox.withLock({ $0.nextDue(now: now) }) {
                guard frame.bytes.last == 0xB else { continue }
                takenFromB += 1
                latestB = max(latestB, now - (1_000_000 + frame.timestampMicroseconds))
            }
        }
        #expect(takenFromB == 90, "\(takenFromB) of B's 90 frames taken")
        #expect(latestB <= 10_000, "a frame of B taken \(latestB) us after its arrival")
        let target = receiver.inbox.withLock { $0.delays.targetDelayMicroseconds }
        #expect(target <= 10_000, "render delay target \(target) us")
    }
}
