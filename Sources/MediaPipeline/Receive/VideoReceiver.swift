/// The receiving side of one remote video stream: its RTP packets assembled into frames, queued
/// frames, a VP8/VP9 decoder, keyframe recovery, and the size of the last decoded picture.
///
/// Loss is seen before decoding: a frame after a gap in the sequence numbers is not decoded
/// unless it is a keyframe (libvpx would decode it against a stale reference and return a wrong
/// picture), and neither is any frame after it until a keyframe comes.
///
/// Two owners, so packet arrival never waits for a decode:
/// - ``inbox`` (packets in, frames queued, the keyframe bookkeeping both sides need) is a
///   ``LockedValue``, taken for a queue operation at a time.
/// - The decoder and what it reports (size, counts, failure) belong to the engine's render
///   round, which ``MediaEngine`` runs one at a time (its `render` value).
/// Hence `@unchecked Sendable`: the compiler cannot see the render round's lock, which is the
/// engine's. (The keyframe request and freeze timing are the control plane's, in ``RemoteUser``.)
final class VideoReceiver: @unchecked Sendable {
    /// The packet side, shared by arrival and decoding.
    struct Inbox: Sendable {
        var assembler: RTPFrameAssembler
        /// Room for 2.1 s of frames at 30 frames/s: under heavy loss on a long round trip the render
        /// delay holds up to two seconds of frames back, so retransmissions land before their turn.
        var queue = FrameQueue<EncodedFrame>(capacity: Self.queueCapacity)
        /// The sender's SSRC, from its latest packet (for keyframe requests).
        var remoteSSRC: UInt32 = 0
        var packetsLostInEarlierStreams: Int64 = 0
        /// True after a gap, until a keyframe arrives: frames in between are dropped unseen.
        var awaitingKeyframe = false
        /// True until a keyframe has been decoded (after subscribing, a decode failure or an
        /// overflow).
        var needsKeyframe = true
        /// Frames dropped while waiting for a keyframe since the last request.
        var droppedSinceRequest = 0
        /// Frames dropped before decoding: incomplete, or after a gap and before a keyframe.
        var framesDroppedBeforeDecode: Int64 = 0
        /// Set when the stream is unsubscribed: nothing is queued any more.
        var released = false
        /// What this receiver's reception reports say.
        var statistics = ReceptionStatistics(clockRate: MediaCodec.vp8.rtpClockRate)
        /// The packets still asked for (NACK), when ``retransmission`` is on.
        var nack = NackTracker()
        /// Whether missing packets are asked for again before the frames behind them are given up.
        let retransmission: Bool
        /// The shortest wait for a missing packet (a reordered one arrives in this time).
        let reorderWaitMicroseconds: Int64
        /// The local user's RTCP SSRC, the sender of its NACKs.
        let feedbackSSRC: UInt32
        /// Whether a round trip was measured (until then the NACK tracker assumes its default).
        var roundTripMeasured = false
        /// How late frames complete over their fastest path, which sets when each is rendered
        /// (render timing that smooths arrival jitter and retransmission delays).
        /// Forgets at 0.997 per frame (a memory of about 10 s at 30 frames/s), so the delay holds
        /// steady over occasional retransmissions instead of swinging after each; covers 3 s,
        /// more than the longest retransmission wait.
        var delays = ArrivalDelayEstimator(
            quantile: 0.99, startDelayMicroseconds: 0, marginBuckets: 0, forgetFactor: 0.997,
            longestDelayMicroseconds: 3_000_000)
        /// How long after its fastest arrival a frame is shown (the target, paced and with
        /// hysteresis: ``updateRenderDelay(now:)``).
        var renderDelayMicroseconds: Int64 = 0
        /// The sender's clock, from its reports: what aligns this video with its audio.
        var senderClock = SenderClock(clockRate: MediaCodec.vp8.rtpClockRate)
        /// The least render delay that shows pictures in sync with the sender's audio (set by
        /// the engine's ``LipSync``), in microseconds.
        var syncFloorMicroseconds: Int64 = 0

        /// The stream's media time minus its sender's NTP time, when a report can be relied on.
        var senderOffsetMicroseconds: Int64? {
            senderClock.trustedOffsetMicroseconds { assembler.mediaMicroseconds(rtpTimestamp: $0) }
        }

        /// How late this stream shows its pictures, for ``LipSync``: nil until a sender report
        /// was trusted and a frame completed.
        var playoutTiming: StreamPlayoutTiming? {
            guard let offset = senderOffsetMicroseconds, let transit = delays.minimumTransitMicroseconds
            else { return nil }
            return StreamPlayoutTiming(
                senderOffsetMicroseconds: offset, minimumTransitMicroseconds: transit,
                delayMicroseconds: renderDelayMicroseconds)
        }
        /// When the last packet arrived (clock microseconds).
        var lastArrival: Int64?
        /// How long frames waited beyond their fastest path before being taken for decoding
        /// (what the jitter buffer adds), summed, and the frames counted.
        var addedDelaySumMicroseconds: Int64 = 0, addedDelayFrames: Int64 = 0
        /// Scratch for the numbers of one NACK, and recycled storage for the messages.
        private var nackBatch: [UInt16] = []
        private var nackMessages = ByteRecycler(slotCount: 8, capacity: 12 + 4 * Self.nackLimit)
        /// A stream silent this long (or longer than the retransmission wait) has been through an
        /// outage: the packets missed in it are too old to be worth resending (a keyframe is
        /// asked for instead). Shorter silences (a few packets lost in a row) are asked for.
        static let outageMicroseconds: Int64 = 800_000
        /// The most numbers one NACK asks for (64 entries of up to 17 at most; one each when spread).
        static let nackLimit = 64
        /// Frames queued at most, and the count from which they are shown whatever their time.
        static let queueCapacity = 64
        static let queueForcedCount = 56

        init(
            retransmission: Bool, reorderWaitMicroseconds: Int64, feedbackSSRC: UInt32,
            repeatedNackIgnoredMicroseconds: Int64 = 0
        ) {
            self.retransmission = retransmission
            nack.repeatIgnoredMicroseconds = repeatedNackIgnoredMicroseconds
            self.reorderWaitMicroseconds = reorderWaitMicroseconds
            self.feedbackSSRC = feedbackSSRC
            assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: reorderWaitMicroseconds)
            nackBatch.reserveCapacity(Self.nackLimit)
        }

        /// The interarrival jitter (RFC 3550), in microseconds.
        var jitterMicroseconds: Int64 { statistics.jitterMicroseconds }

        /// How long a missing packet may hold the frames behind it back: long enough for the
        /// rounds of requests the link's loss calls for (three at least: ``NackTracker/roundsNeeded``)
        /// and their retransmissions to cross the measured round trip and jitter, a round
        /// lasting no less than the sender ignores repeats; never less than the reorder wait,
        /// never more than 2 s (the publisher keeps packets 3 s). Giving up costs a keyframe,
        /// which under heavy loss needs retransmissions itself.
        var retransmissionWaitMicroseconds: Int64 {
            guard retransmission else { return reorderWaitMicroseconds }
            let rounds = Int64(nack.roundsNeeded)
            let round = max(nack.roundTripMicroseconds, nack.repeatIgnoredMicroseconds) + jitterMicroseconds
            let wait = rounds * round + 30_000
            return min(2_000_000, max(reorderWaitMicroseconds, wait))
        }

        /// Sequence numbers never received, over every stream this receiver has seen.
        var packetsLost: Int64 { packetsLostInEarlierStreams + assembler.packetsLost }

        /// True while the receiver cannot show a correct new picture without a keyframe.
        var wantsKeyframe: Bool { needsKeyframe || awaitingKeyframe }
        /// The sender's SSRC when a keyframe is wanted and frames were dropped since the last
        /// request.
        var keyframeWanted: UInt32? { wantsKeyframe && droppedSinceRequest > 0 ? remoteSSRC : nil }

        /// Takes one RTP packet arrived at clock time `now`; returns the frames it completed.
        mutating func receive(_ packet: RTPPacket, now: Int64) -> Int {
            guard !released, let codec = RTPPayloadType.codec(packet.header.payloadType), codec.kind == .video else {
                return 0
            }
            statistics.count(packet.header, arrivalMicroseconds: now)
            if packet.header.ssrc != remoteSSRC || codec != assembler.codec {
                // A new stream (another sender or codec): nothing of the old one is a reference.
                packetsLostInEarlierStreams += assembler.packetsLost
                assembler = RTPFrameAssembler(
                    codec: codec, gapWaitMicroseconds: assembler.gapWaitMicroseconds,
                    startWaitMicroseconds: reorderWaitMicroseconds)
                nack.reset()
                senderClock.reset()
                // Its own time line: the old stream's fastest transit and delays say nothing of
                // it, and the old stream's frames still queued would be due by neither.
                delays.reset()
                framesDroppedBeforeDecode += Int64(queue.count)
                queue.removeAll()
                startRenderDelayAfresh()
                if remoteSSRC != 0 { awaitingKeyframe = true }
                remoteSSRC = packet.header.ssrc
            }
            let wait = retransmissionWaitMicroseconds
            let silence = now - (lastArrival ?? now)
            lastArrival = now
            let sequence = assembler.insert(packet, now: now)
            nack.jitterMicroseconds = jitterMicroseconds
            let outage = retransmission && silence > max(Self.outageMicroseconds, wait)
            if outage {
                // What is missing is too old to be worth resending: it is given up on at once
                // and a keyframe asked for (once frames are dropped).
                nack.reset()
                _ = nack.received(sequence, now: now)
            } else if retransmission && !nack.received(sequence, now: now, streamStart: assembler.openStart) {
                // Too much is missing to ask for: a keyframe is quicker.
                awaitingKeyframe = true
                droppedSinceRequest += 1
            }
            assembler.gapWaitMicroseconds = outage ? 0 : wait
            defer { assembler.gapWaitMicroseconds = wait }
            return collect(now: now)
        }

        /// The NACK to send at clock time `now`, if packets are due to be asked for.
        mutating func takeNack(now: Int64) -> [UInt8]? {
            guard retransmission, nack.count > 0 else { return nil }
            nackBatch.removeAll(keepingCapacity: true)
            nack.takeDue(now: now, into: &nackBatch, limit: Self.nackLimit)
            guard !nackBatch.isEmpty else { return nil }
            return nackBatch.withUnsafeBufferPointer {
                RTCPCompound.nack(senderSSRC: feedbackSSRC, mediaSSRC: remoteSSRC, lost: $0, in: &nackMessages)
            }
        }

        /// Gives up on missing packets whose wait is over; returns the frames handed on.
        mutating func poll(now: Int64) -> Int {
            guard !released else { return 0 }
            return collect(now: now)
        }

        /// Queues the frames the assembler has ready.
        private mutating func collect(now: Int64) -> Int {
            let incompleteBefore = assembler.framesIncomplete
            var frames = 0
            // Whether this batch has passed a gap (mostly a packet given up on): the frames
            // behind it waited out the whole retransmission wait for nothing.
            var behindGap = false
            while let assembled = assembler.next(now: now, keyframesDueBy: keyframesDueBy(now: now)) {
                frames += 1
                behindGap = behindGap || assembled.followsGap
                // Only frames that will be shown teach the render delay, and those a give-up let
                // out count from their own completion: a delay covering a wait for a packet that
                // never came would never give up. (Counted, one loss for good set every later
                // picture up to 2 s late, and the forgetting kept it there some 20 s.) Frames
                // dropped until the next keyframe count not at all.
                guard enqueue(assembled) else { continue }
                // The fastest path is timed by the frame's own completion, not by when an
                // earlier frame let it out: under loss nearly every frame waits behind a
                // retransmission, and the minimum would be lost from sight (the render delay
                // swinging with it). The wait behind a missing packet that came in the end still
                // counts toward the render delay, which must cover it.
                let completedTransit = assembled.completedMicroseconds - assembled.frame.timestampMicroseconds
                let restarted = delays.add(
                    transitMicroseconds: behindGap ? completedTransit : now - assembled.frame.timestampMicroseconds,
                    fastestPathTransitMicroseconds: completedTransit, now: now)
                if restarted { startRenderDelayAfresh() }
                updateRenderDelay(now: now)
            }
            framesDroppedBeforeDecode += assembler.framesIncomplete - incompleteBefore
            // Packets the assembler no longer waits for are not asked for any more.
            if let pending = assembler.firstPending { nack.forget(before: pending) }
            return frames
        }

        /// The latest media time (microseconds) a keyframe behind missing packets may have to
        /// be handed on at clock time `now` without waiting for them: that of the frames due to
        /// be shown by now (``isDue(_:now:)``); every keyframe while only a keyframe can be
        /// shown, or while the queue is so full that every frame is due; none before the
        /// stream's timing is known.
        private func keyframesDueBy(now: Int64) -> Int64? {
            if awaitingKeyframe || (needsKeyframe && queue.isEmpty) { return .max }
            return latestDue(now: now)
        }

        /// Queues an assembled frame; returns whether it was queued. A frame that cannot be
        /// decoded without a keyframe first is dropped and counted in ``droppedSinceRequest``
        /// (the engine then asks for a keyframe).
        private mutating func enqueue(_ assembled: AssembledFrame) -> Bool {
            let frame = assembled.frame
            if frame.isKeyframe {
                awaitingKeyframe = false
            } else if assembled.followsGap {
                awaitingKeyframe = true
            }
            if awaitingKeyframe {
                droppedSinceRequest += 1
                framesDroppedBeforeDecode += 1
                return false
            }
            if needsKeyframe && !frame.isKeyframe && queue.isEmpty {
                droppedSinceRequest += 1
                return false
            }
            if queue.push(frame) != nil {
                // Overflow: the oldest frame is gone, so later frames may not decode. Start over
                // at a keyframe.
                queue.removeAll()
                needsKeyframe = true
                droppedSinceRequest += 1
                return false
            }
            return true
        }

        /// Whether `frame` should be shown by clock time `now`: its media time plus the fastest
        /// transit plus the render delay (or the floor that keeps it in sync, if longer) has
        /// come (or the queue is filling up).
        func isDue(_ frame: EncodedFrame, now: Int64) -> Bool {
            frame.timestampMicroseconds <= latestDue(now: now) ?? .max
        }

        /// The latest media time (microseconds) due to be shown by clock time `now` (the media
        /// time plus the fastest transit plus the render delay, or the sync floor if longer, has
        /// come); every one while the queue is filling up; nil before the stream's timing is
        /// known (a frame is then shown at once).
        private func latestDue(now: Int64) -> Int64? {
            guard queue.count < Self.queueForcedCount else { return .max }
            guard let minimum = delays.minimumTransitMicroseconds else { return nil }
            return now - minimum - max(renderDelayMicroseconds, syncFloorMicroseconds)
        }

        /// For this long after a stream's first frame the render delay takes its target at
        /// once: the estimate is still learning the link, and the audio is still settling too
        /// (libwebrtc's timing likewise takes its first target whole).
        static let renderDelayStartMicroseconds: Int64 = 2_000_000

        /// When the render delay last moved, and when the stream's first frame came (clock
        /// microseconds); nil for a new stream.
        var renderDelayUpdatedAt: Int64?
        var firstFrameAt: Int64?

        /// A new stream, or a sender whose clock jumped: the render delay learns afresh, taking
        /// its targets at once for the first 2 s again.
        mutating func startRenderDelayAfresh() {
            renderDelayUpdatedAt = nil
            firstFrameAt = nil
        }

        /// Follows the target delay at clock time `now`: at once in a stream's first
        /// ``renderDelayStartMicroseconds``, then at ``LipSync``'s pace (40 ms per 100 ms:
        /// pictures shown 40 % slower while it climbs, faster while it comes down), the pace at
        /// which the audio is moved, so the sender's audio follows as it moves; up as soon as
        /// the target is higher, down only once it is 20 ms lower, so pictures keep a steady
        /// cadence while the estimate wavers. (Jumping at once, after one frame held 465 ms
        /// behind a retransmission, it left the audio a second to catch up: beeps up to 370 ms
        /// off their pictures through Janus under 10 % loss.)
        mutating func updateRenderDelay(now: Int64) {
            let target = delays.targetDelayMicroseconds
            // The time since the frame before, up to 100 ms: frames that come in a burst after
            // a stall move it no faster (counted up to a second, 30 % loss on a 200 ms round
            // trip moved it 400 ms at once and left a beep 208 ms before its picture). Below 10
            // frames/s it moves slower than its pace.
            let pace = LipSync.pace(elapsedMicroseconds: now - (renderDelayUpdatedAt ?? now))
            renderDelayUpdatedAt = now
            if firstFrameAt == nil { firstFrameAt = now }
            let starting = now - (firstFrameAt ?? now) < Self.renderDelayStartMicroseconds
            if target > renderDelayMicroseconds {
                renderDelayMicroseconds = starting ? target : min(target, renderDelayMicroseconds + pace)
            } else if target < renderDelayMicroseconds - 20_000 {
                renderDelayMicroseconds = starting ? target : max(target, renderDelayMicroseconds - pace)
            }
        }

        /// The next frame to decode at clock time `now`, skipping delta frames while a keyframe
        /// is needed, its RTP timestamp, and whether the one after it is due too.
        mutating func nextDue(now: Int64) -> (frame: EncodedFrame, rtpTimestamp: UInt32, moreDue: Bool)? {
            while let head = queue.first {
                if needsKeyframe && !head.isKeyframe {
                    queue.pop()
                    continue
                }
                guard isDue(head, now: now) else { return nil }
                queue.pop()
                // Taken for decoding: frames arriving meanwhile queue behind it (a failed decode
                // sets the flag again). Cleared only after decoding, a delta frame arriving while
                // the keyframe decodes would find the queue empty and be dropped.
                if head.isKeyframe { needsKeyframe = false }
                if let minimum = delays.minimumTransitMicroseconds {
                    addedDelaySumMicroseconds += max(0, now - head.timestampMicroseconds - minimum)
                    addedDelayFrames += 1
                }
                let rtp = assembler.rtpTimestamp(microseconds: head.timestampMicroseconds) ?? 0
                return (head, rtp, queue.first.map { isDue($0, now: now) } ?? false)
            }
            return nil
        }
    }

    /// The packet side.
    let inbox: LockedValue<Inbox>

    // MARK: Owned by the render round

    private var decoder: VideoDecoding?
    private let threads: Int
    private let codecs: CodecFactory
    /// Size of the last decoded picture.
    private(set) var width = 0, height = 0
    /// Frames decoded since creation.
    private(set) var framesDecoded: Int64 = 0
    /// Frames rendered (the last decoded frame of each batch).
    private(set) var framesRendered: Int64 = 0
    /// True after a frame failed to decode, until one decodes again.
    private(set) var failed = false
    /// Why the last frame failed to decode.
    private(set) var failure: String?
    /// Frames decoded by the last ``decodeBatch(_:now:observer:key:)`` not yet collected.
    private var batchCount = 0

    /// The stream's recording, if one runs: every frame decoded goes to it. Set by the control
    /// plane, read by the render round.
    let recorder = RecorderSlot()

    /// A receiver decoding on `threads` threads. With `retransmission`, missing packets are
    /// asked for with NACKs (sent as `feedbackSSRC`) and waited for as long as a round trip
    /// allows; without, a missing packet holds later frames back for `reorderWaitMicroseconds`.
    init(
        threads: Int, reorderWaitMicroseconds: Int64, retransmission: Bool = false, feedbackSSRC: UInt32 = 0,
        repeatedNackIgnoredMicroseconds: Int64 = 0, codecs: CodecFactory = .libraries
    ) {
        self.threads = threads
        self.codecs = codecs
        inbox = LockedValue(
            Inbox(
                retransmission: retransmission, reorderWaitMicroseconds: reorderWaitMicroseconds,
                feedbackSSRC: feedbackSSRC, repeatedNackIgnoredMicroseconds: repeatedNackIgnoredMicroseconds))
    }

    /// Notes a round trip to the publisher (from RTCP XR), which paces the NACKs: smoothed
    /// (a quarter of each new sample), since jitter moves single samples both ways.
    func setRoundTrip(microseconds: Int64) {
        inbox.withLock { inbox in
            let sample = max(1_000, microseconds)
            inbox.nack.roundTripMicroseconds =
                inbox.roundTripMeasured ? (3 * inbox.nack.roundTripMicroseconds + sample) / 4 : sample
            inbox.roundTripMeasured = true
        }
    }

    /// Notes a sender report of the stream `ssrc` (if it is this receiver's): for the round
    /// trip, and for the sender's clock.
    func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrivalMicroseconds: Int64) {
        inbox.withLock { inbox in
            guard inbox.statistics.ssrc == ssrc else { return }
            inbox.statistics.senderReport(ntpTimestamp: ntpTimestamp, arrivalMicroseconds: arrivalMicroseconds)
            inbox.senderClock.report(ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp)
        }
    }

    /// True until the stream is released (its decoder goes with the receiver).
    var isLive: Bool { inbox.withLock { !$0.released } }

    /// What one delivery or poll changed: frames assembled, packets found lost, frames dropped
    /// before decoding.
    struct Progress {
        var frames = 0
        var packetsLost: Int64 = 0
        var framesDropped: Int64 = 0
        /// Whether frames wait for decoding afterwards.
        var hasQueuedFrames = false
        /// A NACK to send to the publisher.
        var nack: [UInt8]?
        /// The sender's SSRC when the receiver waits for a keyframe and dropped frames since it
        /// last asked (``keyframeState``): a keyframe request may be due.
        var keyframeWanted: UInt32?
    }

    /// Takes one RTP packet arrived at clock time `now`.
    func receive(_ packet: RTPPacket, now: Int64) -> Progress {
        progress(now: now) { $0.receive(packet, now: now) }
    }

    /// Gives up on missing packets whose wait is over at clock time `now`, and asks again for
    /// those due.
    func poll(now: Int64) -> Progress { progress(now: now) { $0.poll(now: now) } }

    /// Runs `step` on the inbox, reporting what it changed, in one hold of the inbox lock.
    private func progress(now: Int64, _ step: (inout Inbox) -> Int) -> Progress {
        inbox.withLock { inbox in
            let (lost, dropped) = (inbox.packetsLost, inbox.framesDroppedBeforeDecode)
            let frames = step(&inbox)
            return Progress(
                frames: frames, packetsLost: inbox.packetsLost - lost,
                framesDropped: inbox.framesDroppedBeforeDecode - dropped, hasQueuedFrames: !inbox.queue.isEmpty,
                nack: inbox.takeNack(now: now), keyframeWanted: inbox.keyframeWanted)
        }
    }

    /// Where the receiver stands on keyframes, in one hold of its lock: whether it waits for one
    /// after a gap (the canvas keeps the last correct picture until it comes), and the sender's
    /// SSRC when it needs one and has dropped frames since its last request (nil otherwise).
    var keyframeState: (awaiting: Bool, wanted: UInt32?) { inbox.withLock { ($0.awaitingKeyframe, $0.keyframeWanted) } }

    /// A keyframe request went out: count drops afresh.
    func keyframeRequested() { inbox.withLock { $0.droppedSinceRequest = 0 } }

    /// Stops queueing and drops what is queued (the stream is unsubscribed). The decoder is
    /// freed with the receiver, once no render round holds it any more.
    func release() {
        inbox.withLock {
            $0.released = true
            $0.queue.removeAll()
        }
    }

    /// Decodes every queued frame due at clock time `now`, shows each picture to `observer` (as
    /// stream `key`) and renders the newest into `canvas`. Call from the render round only.
    func decodeBatch(_ canvas: CanvasBuffer?, now: Int64, observer: VideoFrameObserver? = nil, key: StreamKey) {
        batchCount += decodeQueued(now: now) { view, rtpTimestamp, last in
            observer?.remoteVideoFrame(view, stream: key, rtpTimestamp: rtpTimestamp)
            if last { canvas?.render(view, rtpTimestamp: rtpTimestamp) }
        }
    }

    /// The frames decoded by batches since the last call. Call from the render round only.
    func takeBatchCount() -> Int {
        defer { batchCount = 0 }
        return batchCount
    }

    /// Decodes the frames due at clock time `now` (``Inbox/isDue(_:now:)``); calls `picture`
    /// with each picture, its RTP timestamp and whether it is the last of the batch. Returns the
    /// frames decoded. Call from the render round only.
    func decodeQueued(now: Int64, picture: (I420View, UInt32, _ last: Bool) -> Void) -> Int {
        var decodedNow = 0
        while let (frame, rtpTimestamp, moreDue) = inbox.withLock({ $0.nextDue(now: now) }) {
            do {
                if decoder == nil {
                    decoder = try codecs.makeVideoDecoder(frame.codec == .vp9 ? .vp9 : .vp8, threads)
                }
                let last = !moreDue
                try frame.withUnsafeBytes { bytes in
                    _ = try decoder!.decode(bytes) { view in
                        width = view.width
                        height = view.height
                        picture(view, rtpTimestamp, last)
                        if last { framesRendered += 1 }
                    }
                }
                if let recording = recorder.current {
                    recording.record(
                        frame, kind: .video, now: now,
                        senderOffsetMicroseconds: inbox.withLock { $0.senderOffsetMicroseconds },
                        pictureWidth: width, pictureHeight: height)
                }
                failed = false
                framesDecoded += 1
                decodedNow += 1
            } catch {
                failed = true
                failure = "\(error)"
                inbox.withLock { $0.needsKeyframe = true }
                decoder = nil
            }
        }
        return decodedNow
    }
}
