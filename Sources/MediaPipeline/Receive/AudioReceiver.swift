/// The receiving side of one remote audio stream: a jitter buffer in the manner of libwebrtc's
/// NetEq. RTP packets become Opus packets queued in media-time order; an
/// ``ArrivalDelayEstimator`` sets how long they wait; each 10 ms tick decodes what the playout
/// needs, rebuilding a lost packet from the in-band FEC of the one after it, concealing (Opus
/// PLC) what cannot be rebuilt, and shortening or lengthening the audio by a pitch period
/// (``TimeStretcher``) to bring the delay to its target without a click.
///
/// Two owners, so packet arrival never waits for a decode:
/// - ``inbox`` (packets in, the queue, the delay estimate, how far playout has decoded) is a
///   ``LockedValue``: the thread that delivers packets and the one that decodes meet there, for
///   a queue operation each.
/// - Everything else (the decoder, decoded samples, ``frame``, the counters) belongs to the
///   engine's playout round, which ``MediaEngine`` runs one at a time (its `playout` value): the
///   reason this class is `@unchecked Sendable`.
final class AudioReceiver: @unchecked Sendable {
    /// What the playout does next, as the inbox decides it.
    enum Step {
        /// Decode this packet: it continues the audio.
        case decode(QueuedAudio)
        /// The audio before this packet is missing (this many microseconds of it): rebuild it
        /// from the packet's in-band FEC. The packet itself stays queued.
        case recover(QueuedAudio, missingMicroseconds: Int64)
        /// More is missing than FEC can rebuild: conceal this many microseconds.
        case conceal(Int64)
        /// The sender is in DTX (nothing missing, its media time moved on, or it sends nothing
        /// after a DTX frame): comfort noise for this many microseconds.
        case comfortNoise(Int64)
        /// Nothing is queued.
        case starve
        /// Playout has not started, or restarts: the first packet is not due yet.
        case wait
    }

    /// The packet side, shared by arrival and decoding.
    struct Inbox: Sendable {
        var assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
        var remoteSSRC: UInt32?
        var packetsLostInEarlierStreams: Int64 = 0
        var queue = FrameQueue<QueuedAudio>(capacity: 100)
        var delays = ArrivalDelayEstimator()
        /// The end of the audio decoded (or concealed) so far, in media microseconds; nil before
        /// playout starts, and after a long gap until it starts again.
        var decodedUntil: Int64?
        /// Concealment played past ``decodedUntil`` while nothing was queued, or inserted to
        /// grow a delay too short to stretch: media time not yet given up, as the packet due
        /// may only be late (libwebrtc's NetEq does not move its timestamp while it expands).
        /// If that packet comes (or the next one in sequence, after a DTX pause), it plays, and
        /// the delay has grown by this much; if a later one comes, this much of the gap before
        /// it was covered.
        var expandedMicroseconds: Int64 = 0
        /// Packets dropped because they came after their time was played, or twice.
        var latePackets = 0
        /// Times playout started again: a sender whose clock jumped, a new stream, a long gap.
        var restarts = 0
        /// The sequence number of the last packet decoded, and whether it was a DTX frame (an
        /// Opus packet of at most 2 bytes: a TOC with no audio).
        var lastDecodedSequence: Int64?
        var lastDecodedWasDTX = false
        /// Set when the stream is unsubscribed: nothing is queued any more.
        var released = false
        /// What this receiver's reception reports say.
        var statistics = ReceptionStatistics(clockRate: MediaCodec.opus.rtpClockRate)
        /// The sender's clock, from its reports: what aligns this audio with its video.
        var senderClock = SenderClock(clockRate: MediaCodec.opus.rtpClockRate)
        /// The least delay that plays in sync with the sender's video (set by the engine's
        /// ``LipSync``), in the units of ``playoutTiming``'s delay (the target plus half the
        /// stretch band), in microseconds.
        var syncFloorMicroseconds: Int64 = 0

        /// The stream's media time minus its sender's NTP time, when a report can be relied on.
        var senderOffsetMicroseconds: Int64? {
            senderClock.trustedOffsetMicroseconds { assembler.mediaMicroseconds(rtpTimestamp: $0) }
        }

        /// What playout aims at: the jitter buffer's target, or the floor that keeps the audio
        /// in sync with its video once that lies above the band playout keeps around the target
        /// (playout holds its delay within the band, so a floor inside it is met already, and a
        /// few milliseconds of a moving floor stretch nothing).
        var playoutTargetMicroseconds: Int64 {
            let band = AudioReceiver.stretchBandMicroseconds
            let held = syncFloorMicroseconds - band / 2
            return held > delays.targetDelayMicroseconds + band / 2 ? held : delays.targetDelayMicroseconds
        }

        /// How late this stream plays, for ``LipSync``: nil until a sender report was trusted
        /// and a packet came. Playout holds its delay between the target and the target plus
        /// ``AudioReceiver/stretchBandMicroseconds``; the middle of that band stands for it.
        var playoutTiming: StreamPlayoutTiming? {
            guard let offset = senderOffsetMicroseconds, let transit = delays.minimumTransitMicroseconds
            else { return nil }
            return StreamPlayoutTiming(
                senderOffsetMicroseconds: offset, minimumTransitMicroseconds: transit,
                delayMicroseconds: delays.targetDelayMicroseconds + AudioReceiver.stretchBandMicroseconds / 2)
        }

        /// Missing packets to ask for (NACK) when the publisher's side resends audio, nil when
        /// it does not; NACKs go as `feedbackSSRC`. A packet is asked for once it is missing,
        /// and no more once its time has played.
        var nack: NackTracker?
        var feedbackSSRC: UInt32 = 0
        /// Scratch for the numbers of one NACK, and recycled storage for the messages.
        private var nackBatch: [UInt16] = []
        private var nackMessages: ByteRecycler?
        /// The most numbers one audio NACK asks for.
        static let nackLimit = 16

        /// Asks for missing packets from now on, with NACKs sent as `feedbackSSRC`.
        mutating func enableRetransmission(feedbackSSRC: UInt32) {
            nack = NackTracker()
            self.feedbackSSRC = feedbackSSRC
            nackBatch.reserveCapacity(Self.nackLimit)
            nackMessages = ByteRecycler(slotCount: 4, capacity: 12 + 4 * Self.nackLimit)
        }

        /// The NACK to send at clock time `now`, if missing packets whose time has not played
        /// are due to be asked for.
        mutating func takeNack(now: Int64) -> [UInt8]? {
            guard nack != nil, nack!.count > 0, let ssrc = remoteSSRC, nackMessages != nil else { return nil }
            if let played = lastDecodedSequence { nack!.forget(before: played + 1) }
            nackBatch.removeAll(keepingCapacity: true)
            nack!.takeDue(now: now, into: &nackBatch, limit: Self.nackLimit)
            guard !nackBatch.isEmpty else { return nil }
            return nackBatch.withUnsafeBufferPointer {
                RTCPCompound.nack(senderSSRC: feedbackSSRC, mediaSSRC: ssrc, lost: $0, in: &nackMessages!)
            }
        }

        /// A gap in the media this long is not concealed: playout starts again at the next packet.
        static let restartGapMicroseconds: Int64 = 200_000

        /// Sequence numbers never received, over every stream this receiver has seen.
        var packetsLost: Int64 { packetsLostInEarlierStreams + assembler.packetsLost }

        /// Takes one RTP packet arrived at clock time `now`; returns the packets queued (0 or 1).
        mutating func receive(_ packet: RTPPacket, now: Int64) -> Int {
            guard !released else { return 0 }
            statistics.count(packet.header, arrivalMicroseconds: now)
            if remoteSSRC != packet.header.ssrc {
                if remoteSSRC != nil {
                    // A new stream from this user: its own time line, from the start.
                    packetsLostInEarlierStreams += assembler.packetsLost
                    assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
                    nack?.reset()
                    senderClock.reset()
                    restart()
                }
                remoteSSRC = packet.header.ssrc
            }
            var frames = 0
            let sequence = assembler.insert(packet, now: now)
            if nack != nil {
                nack!.jitterMicroseconds = statistics.jitterMicroseconds
                _ = nack!.received(sequence, now: now)
            }
            while let assembled = assembler.next(now: now) {
                frames += enqueue(assembled.frame, arrival: now, sequence: assembled.sequenceNumbers.lowerBound) ? 1 : 0
                recentArrivals[recentArrivalsNext] = assembled.frame.timestampMicroseconds
                recentArrivalsNext = (recentArrivalsNext + 1) % recentArrivals.count
                countInBandRedundancy(of: assembled.frame, arrival: now)
                for copy in assembler.redundantAudio { enqueueRedundantCopy(copy, arrival: now) }
            }
            return frames
        }

        /// The media times of the last 16 packets that came themselves (a ring), to tell a
        /// redundant copy of a lost packet from one of a packet that came.
        private var recentArrivals = [Int64](repeating: .min, count: 16)
        private var recentArrivalsNext = 0

        /// Counts the in-band FEC of a packet whose predecessor never came as that predecessor's
        /// arrival, towards the target delay, as a redundant copy counts: the lost audio can be
        /// rebuilt from it from now on. Under loss the buffer so learns to hold a packet until
        /// its successor has had time to come (as NetEq's delay manager, which counts the gap
        /// before a packet after a loss as a longer interarrival time).
        private mutating func countInBandRedundancy(of frame: EncodedFrame, arrival: Int64) {
            guard frame.withUnsafeBytes(OpusPacket.carriesRedundancy),
                let samples = frame.withUnsafeBytes({
                    try? OpusDecoder.samplesPerChannel(inPacket: $0, sampleRate: 48_000)
                })
            else { return }
            let previous = frame.timestampMicroseconds - Int64(samples) * 1_000_000 / 48_000
            // Only after an earlier packet came: the first packet's predecessor was not lost.
            guard !recentArrivals.contains(previous), recentArrivals.contains(where: { $0 != .min && $0 < previous })
            else { return }
            if delays.add(transitMicroseconds: arrival - previous, now: arrival) { restartPlayout() }
        }

        /// Takes a copy of an earlier frame a redundant packet carried (RFC 2198). A copy of a
        /// packet that came is left alone; when its own packet never came, the copy stands for
        /// it (``enqueue(_:arrival:sequence:redundantCopy:)``).
        mutating func enqueueRedundantCopy(_ frame: EncodedFrame, arrival: Int64) {
            guard !recentArrivals.contains(frame.timestampMicroseconds) else { return }
            enqueue(frame, arrival: arrival, redundantCopy: true)
        }

        /// Queues an Opus packet arrived at `arrival`, in media-time order. A packet whose time
        /// was already played (or concealed, or rebuilt) is late and dropped, as is a duplicate.
        /// Its arrival counts towards the target delay. A `redundantCopy` (of a packet that never
        /// came) counts the same, so under loss the buffer learns to wait for copies; it is
        /// queued only while playout runs, and never counted late. Returns whether it was queued.
        @discardableResult
        mutating func enqueue(
            _ frame: EncodedFrame, arrival: Int64, sequence: Int64? = nil, redundantCopy: Bool = false
        ) -> Bool {
            let samples = frame.withUnsafeBytes { try? OpusDecoder.samplesPerChannel(inPacket: $0, sampleRate: 48_000) }
            let duration = Int64(samples ?? 960) * 1_000_000 / 48_000
            if delays.add(transitMicroseconds: arrival - frame.timestampMicroseconds, now: arrival) {
                restartPlayout()  // the sender's clock jumped (or it paused): follow it from here
            }
            if redundantCopy && decodedUntil == nil { return false }
            if let until = decodedUntil, frame.timestampMicroseconds < until {
                if !redundantCopy { latePackets += 1 }
                return false
            }
            let packet = QueuedAudio(
                frame: frame, durationMicroseconds: duration, arrivalMicroseconds: arrival, sequence: sequence,
                isRedundantCopy: redundantCopy)
            var dropped: QueuedAudio?
            guard queue.insertOrdered(packet, evicted: &dropped) else {
                if !redundantCopy { latePackets += 1 }
                return false
            }
            // A burst longer than the queue pushed its oldest packet out unplayed: a recording
            // still takes it (the receiver hands it over before it lets go of the inbox).
            if let dropped, evicted.count < evicted.capacity { evicted.append(dropped.frame) }
            return true
        }

        /// Packets pushed out of a full queue unplayed, until the receiver hands them to its
        /// recording (it empties the list, keeping its storage). Room for more than one arrival
        /// can push out (its frame and two redundant copies) is made once, up front, and the
        /// list never grows past it.
        var evicted: [EncodedFrame] = {
            var list: [EncodedFrame] = []
            list.reserveCapacity(8)
            return list
        }()

        /// Forgets what is queued, where playout stood and the arrival statistics: it starts
        /// again like a new stream.
        mutating func restart() {
            delays.reset()
            restartPlayout()
        }

        /// Forgets what is queued and where playout stood.
        private mutating func restartPlayout() {
            queue.removeAll()
            forgetPosition()
            restarts += 1
        }

        /// Forgets where playout stood (and the concealment set aside past it): the next packet
        /// starts it again.
        mutating func forgetPosition() {
            decodedUntil = nil
            expandedMicroseconds = 0
        }

        /// What the playout does next at clock time `now`.
        mutating func nextStep(now: Int64) -> Step {
            guard let until = decodedUntil else {
                // Starting: the first packet plays once it has waited the target delay.
                guard let head = queue.first, let minimum = delays.minimumTransitMicroseconds,
                    now - head.timestampMicroseconds - minimum >= playoutTargetMicroseconds
                else { return .wait }
                queue.pop()
                decodedUntil = head.timestampMicroseconds
                return decoding(head)
            }
            guard let head = queue.first else {
                // A sender in DTX sends nothing more after its DTX frame: not a loss.
                return lastDecodedWasDTX ? .comfortNoise(10_000) : .starve
            }
            let gap = head.timestampMicroseconds - until
            if gap < 1_000 {
                // The packet due (late, if concealment played while waiting for it).
                queue.pop()
                return decoding(head)
            }
            if let last = lastDecodedSequence, let next = head.sequence, next == last + 1 {
                // Nothing is missing, yet media time moved on: the sender skipped silence (DTX).
                // What was concealed meanwhile is delay added, not media covered.
                expandedMicroseconds = 0
                return .comfortNoise(min(gap, 10_000))
            }
            if expandedMicroseconds > 0 {
                // A later packet: what was concealed while waiting stood in for the gap's start.
                decodedUntil = until + min(expandedMicroseconds, gap)
                expandedMicroseconds = 0
                return nextStep(now: now)
            }
            if gap > Self.restartGapMicroseconds {
                forgetPosition()
                restarts += 1
                return nextStep(now: now)
            }
            if gap <= head.durationMicroseconds, head.frame.withUnsafeBytes(OpusPacket.carriesRedundancy) {
                return .recover(head, missingMicroseconds: gap)
            }
            // Conceal up to the packet FEC can rebuild, or the whole gap, 10 ms at a time.
            let beyondRedundancy = gap > head.durationMicroseconds ? gap - head.durationMicroseconds : gap
            return .conceal(min(beyondRedundancy, 10_000))
        }

        /// The next packet if it continues the audio decoded so far (`.wait` otherwise).
        mutating func nextContinuing() -> Step {
            guard let until = decodedUntil, let head = queue.first, head.timestampMicroseconds - until < 1_000
            else { return .wait }
            queue.pop()
            return decoding(head)
        }

        /// Notes `packet` as the next one decoded: what was concealed before it is delay added.
        private mutating func decoding(_ packet: QueuedAudio) -> Step {
            expandedMicroseconds = 0
            lastDecodedSequence = packet.sequence
            lastDecodedWasDTX = packet.frame.byteCount <= 2
            return .decode(packet)
        }

        /// The delay now, measured the way the target is: how long after its arrival on the
        /// fastest path the audio at media time `position` plays at clock time `now`.
        func delay(position: Int64, now: Int64) -> Int64? {
            delays.minimumTransitMicroseconds.map { now - position - $0 }
        }
    }

    /// The packet side, the spare list ``takeArrivals(_:)`` swaps with ``arrivals``, and the
    /// playout's counters as last published.
    private struct InboxAndSpare: Sendable {
        var inbox = Inbox()
        var spare = PendingArrivals()
        /// The playout's counters as of its last 10 ms produced (``counters``), published with
        /// the playout's last inbox access of the tick.
        var publishedCounters = AudioPlayoutCounters()
    }
    private let box = LockedValue(InboxAndSpare())
    /// Packets delivered but not taken into the inbox yet: the packet path's one lock (it
    /// appends here, and calls ``arrive(_:now:)`` only when the list is full). Taken only
    /// after ``box``'s lock, or alone.
    let arrivals = LockedValue(PendingArrivals())
    /// Where the packets taken in are counted (the user's, shared with its route).
    let tally: ArrivalTally

    // MARK: Owned by the playout round

    private var decoder: AudioDecoding?
    private let sampleRate: Int
    private let channelCount: Int
    /// Decoded samples, interleaved, allocated once (200 ms): those from `decodedStart` to
    /// `decodedEnd` not handed out yet, the 10 ms just handed out (``frame``) before them.
    /// What is left moves to the front before each tick that decodes (under 10 ms of samples;
    /// none for a stream of 20 ms packets that was never stretched) and whenever less than
    /// ``decodedReserve`` lies from `decodedStart` to the end.
    private let decoded: UnsafeMutableBufferPointer<Int16>
    private var decodedStart = 0
    private var decodedEnd = 0
    /// Room a tick may write into from `decodedStart`: decoding stops once 30 ms are buffered
    /// (the stretcher's window; 10 ms for playout alone), and the packet that gets it there may
    /// be the longest, 120 ms (150 ms in all). A stretch's period needs none: lengthening is
    /// refused without room, so the buffer is compacted first (``compactDecoded()``).
    private let decodedReserve: Int
    /// Samples in one 10 ms frame (all channels).
    private let frameSampleCount: Int
    /// 10 ms of silence: ``frame`` when a tick produced nothing.
    private let silence: UnsafeMutableBufferPointer<Int16>
    /// The current 10 ms frame, for the mixer and observers: the decoded samples it was handed
    /// out from, valid until the next ``produce(now:concealUpToMicroseconds:)``, so a mix can
    /// read many receivers' frames at once; silence after a tick that produced nothing.
    private(set) var frame: UnsafeMutableBufferPointer<Int16>
    /// Microseconds of consecutive 10 ms ticks without a packet.
    private(set) var starvedMicroseconds: Int64 = 0
    /// True after a packet failed to decode, until one decodes again.
    private(set) var failed = false
    /// Why the last packet failed to decode.
    private(set) var failure: String?
    /// What the playout did so far, counted by the playout round (which alone touches it) and
    /// published at the end of each ``produce(now:concealUpToMicroseconds:)``.
    private var playoutCounters = AudioPlayoutCounters()
    /// What the playout did up to its last 10 ms, for readers on any thread (statistics,
    /// totals): the copy published in ``box``, never the playout round's working value.
    var counters: AudioPlayoutCounters { box.withLock { $0.publishedCounters } }
    /// The sender's RTP timestamp of ``frame``'s first sample (nil when it holds no audio).
    private(set) var frameRTPTimestamp: UInt32?
    /// The stream's recording, if one runs: every packet the playout takes from the queue goes to
    /// it, and every packet a burst pushes out unplayed. Set by the
    /// control plane, read by the playout round.
    let recorder = RecorderSlot()
    /// The playout round's clock time (for the recording).
    private var roundNow: Int64 = 0

    /// A receiver playing at `sampleRate` with `channelCount` channels. With `retransmission`,
    /// missing packets are asked for with NACKs sent as `feedbackSSRC` (a publisher's side that
    /// resends audio: ``TransportFeedbackProfile/audioRetransmission``). What arrives is counted
    /// in `tally`.
    init(
        sampleRate: Int, channelCount: Int, retransmission: Bool = false, feedbackSSRC: UInt32 = 0,
        codecs: CodecFactory = .libraries, tally: ArrivalTally = ArrivalTally()
    ) throws {
        self.tally = tally
        if retransmission { box.withLock { $0.inbox.enableRetransmission(feedbackSSRC: feedbackSSRC) } }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        decoder = try codecs.makeAudioDecoder(sampleRate, channelCount)
        decoded = .allocate(capacity: sampleRate * 200 / 1000 * channelCount)
        decoded.initialize(repeating: 0)
        decodedReserve = sampleRate * 150 / 1000 * channelCount
        frameSampleCount = sampleRate / 100 * channelCount
        silence = .allocate(capacity: frameSampleCount)
        silence.initialize(repeating: 0)
        frame = silence
    }

    deinit {
        silence.deallocate()
        decoded.deallocate()
    }

    /// Runs `body` on the inbox, holding its lock, after taking in the packets delivered since
    /// the last access: every reader and writer of the inbox sees every packet delivered before
    /// it.
    func withInbox<R>(_ body: (inout Inbox) throws -> R) rethrows -> R {
        try box.withLock { box in
            takeArrivals(&box)
            return try body(&box.inbox)
        }
    }

    /// Takes `packet`, arrived at clock time `now`, as the packet path delivers it: appended to
    /// the pending list under its own short lock, and buffered at the receiver's next access
    /// (its arrival time kept). When the list is full (nothing read the receiver for
    /// ``PendingArrivals/capacity`` packets) the caller takes the list and the packet in itself.
    /// NACKs for what the packets show missing go out with the playout's tick (``takeNack(now:)``).
    func arrive(_ packet: RTPPacket, now: Int64) {
        guard !arrivals.withLock({ $0.append(packet, now: now) }) else { return }
        withInbox { _ = takeIn(packet, now: now, &$0) }
    }

    /// Takes one packet into `inbox` (its lock held): queued, anything it pushed out handed to
    /// the recording, and counted in ``tally``. Returns the frames queued and the packets it
    /// showed to be lost.
    private func takeIn(_ packet: RTPPacket, now: Int64, _ inbox: inout Inbox) -> (frames: Int, lost: Int64) {
        let lost = inbox.packetsLost
        let frames = inbox.receive(packet, now: now)
        recordEvicted(&inbox, now: now)
        let found = inbox.packetsLost - lost
        tally.audioArrived(packets: 1, bytes: packet.payloadByteCount, frames: frames, lost: found)
        return (frames, found)
    }

    /// Takes the pending packets into the inbox (with ``box``'s lock held), in arrival order,
    /// and counts them in ``tally`` at once.
    private func takeArrivals(_ box: inout InboxAndSpare) {
        arrivals.withLock { swap(&$0, &box.spare) }
        guard !box.spare.isEmpty else { return }
        let lost = box.inbox.packetsLost
        var (frames, bytes) = (0, 0)
        // By index: an iterator would hold a second reference to the list's storage, and
        // emptying the list would then allocate new storage instead of keeping it.
        for index in box.spare.arrivals.indices {
            let arrival = box.spare.arrivals[index]
            guard let packet = arrival.packet else { continue }
            frames += box.inbox.receive(packet, now: arrival.arrivalMicroseconds)
            bytes += packet.payloadByteCount
            recordEvicted(&box.inbox, now: arrival.arrivalMicroseconds)
        }
        tally.audioArrived(
            packets: box.spare.arrivals.count, bytes: bytes, frames: frames, lost: box.inbox.packetsLost - lost)
        box.spare.removeAll()
    }

    /// Takes in the packets delivered so far (their counts reach ``tally``).
    func takeArrivals() { withInbox { _ in } }

    /// Takes one RTP packet arrived at clock time `now` at once (after those pending); returns
    /// the packets queued (0 or 1), the packets it showed to be lost, and the NACK due. Counted
    /// in ``tally`` as ``arrive(_:now:)`` counts.
    func receive(_ packet: RTPPacket, now: Int64) -> (frames: Int, packetsLost: Int64, nack: [UInt8]?) {
        withInbox { inbox in
            let (frames, lost) = takeIn(packet, now: now, &inbox)
            return (frames, lost, inbox.takeNack(now: now))
        }
    }

    /// Hands the packets a burst pushed out of the queue unplayed to the recording, if any (it
    /// holds the packets as received, played or not), and empties the list in place: nothing
    /// is allocated, however long the burst. Called with the inbox's lock held; the recording's
    /// locks are never held while the inbox's is taken.
    private func recordEvicted(_ inbox: inout Inbox, now: Int64) {
        guard !inbox.evicted.isEmpty else { return }
        for frame in inbox.evicted { record(frame, now: now, senderOffset: inbox.senderOffsetMicroseconds) }
        inbox.evicted.removeAll(keepingCapacity: true)
    }

    /// Hands `frame` to the recording, if one runs, with the inbox's lock held (so packets reach
    /// it in the order they leave the queue).
    private func record(_ frame: EncodedFrame, now: Int64, senderOffset: Int64?) {
        guard let recording = recorder.current else { return }
        recording.record(frame, kind: .audio, now: now, senderOffsetMicroseconds: senderOffset)
    }

    /// The NACK due at clock time `now` (a packet found missing whose reorder wait is over),
    /// if any.
    func takeNack(now: Int64) -> [UInt8]? { withInbox { $0.takeNack(now: now) } }

    /// Queues an Opus frame arrived at clock time `arrival` (see ``Inbox/enqueue(_:arrival:sequence:redundantCopy:)``).
    func enqueue(_ frame: EncodedFrame, arrival: Int64, sequence: Int64? = nil) {
        withInbox { inbox in
            inbox.enqueue(frame, arrival: arrival, sequence: sequence)
            recordEvicted(&inbox, now: arrival)
        }
    }

    /// Sequence numbers never received.
    var packetsLost: Int64 { withInbox { $0.packetsLost } }

    /// Packets dropped because they came too late or twice.
    var latePackets: Int { withInbox { $0.latePackets } }

    /// The jitter buffer's target delay now, in microseconds.
    var targetDelayMicroseconds: Int64 { withInbox { $0.delays.targetDelayMicroseconds } }

    /// Notes a sender report of the stream `ssrc` (if it is this receiver's): for the round
    /// trip, and for the sender's clock.
    func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrivalMicroseconds: Int64) {
        withInbox { inbox in
            guard inbox.statistics.ssrc == ssrc else { return }
            inbox.statistics.senderReport(ntpTimestamp: ntpTimestamp, arrivalMicroseconds: arrivalMicroseconds)
            inbox.senderClock.report(ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp)
        }
    }

    /// True until the stream is released (its decoder goes with the receiver).
    var isLive: Bool { withInbox { !$0.released } }

    /// Stops queueing and drops what is queued (the stream is unsubscribed). The decoder is
    /// freed with the receiver, once no playout round holds it any more.
    func release() {
        withInbox {
            $0.released = true
            $0.queue.removeAll()
        }
    }

    /// What ``produce(now:concealUpToMicroseconds:)`` put into ``frame``: `.audio` for decoded
    /// audio (FEC-rebuilt audio included), `.concealed` when some of it is loss concealment,
    /// `.comfortNoise` while the sender is in DTX, `.none` when there is nothing to play (not
    /// started, or starved longer than concealment goes).
    enum Output { case audio, concealed, comfortNoise, none }
    /// What the last ``produce(now:concealUpToMicroseconds:)`` of a decode round gave.
    var lastOutput = Output.none

    /// Decoded frames buffered, per channel.
    private var bufferedFrames: Int { (decodedEnd - decodedStart) / channelCount }

    private func microseconds(frames: Int) -> Int64 { Int64(frames) * 1_000_000 / Int64(sampleRate) }
    private func frames(microseconds: Int64) -> Int { Int(microseconds * Int64(sampleRate) / 1_000_000) }

    /// Decodes the next 10 ms at clock time `now`. Call from the playout round only.
    func produce(now: Int64, concealUpToMicroseconds: Int64) -> Output {
        guard let decoder else { return .none }
        frameRTPTimestamp = nil
        frame = silence
        roundNow = now
        let needed = frameSampleCount / channelCount
        // Before a tick decodes, what is left (under 10 ms) moves to the front, so decoding writes
        // into the same lines at the buffer's start every time, which the cache still holds (a
        // buffer decoded along its length, as after a stretch, cycled through 70 ms of lines,
        // and its decoding and the mix missed the cache more); then decode until a whole 10 ms
        // is there.
        if bufferedFrames < needed || decoded.count - decodedStart < decodedReserve { compactDecoded() }
        var concealed = false
        var comfortNoise = false
        var starved = false
        while bufferedFrames < needed {
            let step = takeStep { $0.nextStep(now: now) }
            if case .comfortNoise = step { comfortNoise = true }
            switch decode(next: step, decoder, concealed: &concealed) {
            case .decoded: continue
            case .starved:
                starved = true
                starvedMicroseconds += 10_000
                guard playoutCounters.packetsDecoded > 0, starvedMicroseconds <= concealUpToMicroseconds,
                    conceal(microseconds(frames: needed - bufferedFrames), decoder, waiting: true)
                else {
                    // Silent from here: playout starts again when packets come back.
                    decodedStart = 0
                    decodedEnd = 0
                    if playoutCounters.packetsDecoded > 0 { playoutCounters.silentTicks += 1 }
                    withInboxPublishingCounters { inbox in
                        if inbox.decodedUntil != nil { inbox.restarts += 1 }
                        inbox.forgetPosition()
                    }
                    return .none
                }
                concealed = true
            case .stopped:
                // Waiting for packets after having played counts as starving.
                if playoutCounters.packetsDecoded > 0 {
                    if !starved { starvedMicroseconds += 10_000 }
                    playoutCounters.silentTicks += 1
                }
                withInboxPublishingCounters { _ in }
                return .none
            }
        }
        if !starved {
            starvedMicroseconds = 0
            // Not while waiting for a packet: the concealment buffered is no audio to stretch.
            stretchTowardTarget(now: now, decoder: decoder, concealed: &concealed)
        }
        let buffered = microseconds(frames: bufferedFrames)
        frame = UnsafeMutableBufferPointer(start: decoded.baseAddress! + decodedStart, count: frameSampleCount)
        decodedStart += frameSampleCount
        playoutCounters.ticks += 1
        if concealed {
            playoutCounters.concealedTicks += 1
            if isSilent(frame) { playoutCounters.silentConcealedTicks += 1 }
        }
        if comfortNoise && !concealed { playoutCounters.comfortNoiseTicks += 1 }
        frameRTPTimestamp = withInboxPublishingCounters { inbox in
            inbox.decodedUntil.flatMap {
                inbox.assembler.rtpTimestamp(microseconds: $0 + inbox.expandedMicroseconds - buffered)
            }
        }
        return concealed ? .concealed : comfortNoise ? .comfortNoise : .audio
    }

    /// ``withInbox(_:)`` that also publishes the playout's counters (``counters``): the last
    /// inbox access of each ``produce(now:concealUpToMicroseconds:)``, so publishing them takes
    /// no lock of its own.
    private func withInboxPublishingCounters<R>(_ body: (inout Inbox) -> R) -> R {
        box.withLock { box in
            takeArrivals(&box)
            box.publishedCounters = playoutCounters
            return body(&box.inbox)
        }
    }

    /// Moves the decoded samples not handed out yet to the front of the buffer (one memmove,
    /// the ranges may overlap; none when nothing is left).
    private func compactDecoded() {
        guard decodedStart > 0 else { return }
        let left = decodedEnd - decodedStart
        if left > 0 { decoded.baseAddress!.update(from: decoded.baseAddress! + decodedStart, count: left) }
        (decodedStart, decodedEnd) = (0, left)
    }

    private enum StepResult { case decoded, starved, stopped }

    /// Whether `samples` are below about -50 dBFS RMS: concealment there is not heard (the
    /// W3C statistics' "silent concealed samples").
    private func isSilent(_ samples: UnsafeMutableBufferPointer<Int16>) -> Bool {
        var energy = 0.0
        for sample in samples { energy += Double(sample) * Double(sample) }
        return energy < 100 * 100 * Double(samples.count)
    }

    /// The inbox's next step, taken by `body` under its lock; a packet it hands to the decoder
    /// goes to the recording then, under the same lock as the packets a burst pushes out
    /// (``recordEvicted(_:now:)``), so the recording holds the packets in the order they left
    /// the queue. (Recorded after its decode instead, a packet came after later ones a burst
    /// pushed out meanwhile.)
    private func takeStep(_ body: (inout Inbox) -> Step) -> Step {
        withInbox { inbox in
            let step = body(&inbox)
            if case .decode(let packet) = step {
                record(packet.frame, now: roundNow, senderOffset: inbox.senderOffsetMicroseconds)
            }
            return step
        }
    }

    /// Carries out one step of the inbox's, appending to the decoded samples.
    private func decode(next step: Step, _ decoder: AudioDecoding, concealed: inout Bool) -> StepResult {
        let room = UnsafeMutableBufferPointer(rebasing: decoded[decodedEnd...])
        switch step {
        case .wait:
            return .stopped
        case .starve:
            return .starved
        case .decode(let packet):
            do {
                let count = try packet.frame.withUnsafeBytes { try decoder.decode($0, into: room) }
                decodedEnd += count * channelCount
                playoutCounters.packetsDecoded += 1
                if packet.isRedundantCopy { playoutCounters.packetsRecovered += 1 }
                failed = false
                let end = packet.timestampMicroseconds + microseconds(frames: count)
                withInbox { $0.decodedUntil = end }
                return .decoded
            } catch {
                failed = true
                failure = "\(error)"
                return .stopped
            }
        case .recover(let next, let missing):
            let count = next.frame.withUnsafeBytes { bytes in
                try? decoder.recoverLoss(fromFECIn: bytes, samplesPerChannel: frames(microseconds: missing), into: room)
            }
            guard let count else { return conceal(missing, decoder) ? .decoded : .stopped }
            decodedEnd += count * channelCount
            playoutCounters.packetsRecovered += 1
            let recovered = microseconds(frames: count)
            withInbox { $0.decodedUntil = $0.decodedUntil.map { $0 + recovered } }
            return .decoded
        case .conceal(let missing):
            concealed = true
            return conceal(missing, decoder) ? .decoded : .stopped
        case .comfortNoise(let duration):
            // After a DTX frame libopus's concealment is its comfort noise.
            return conceal(duration, decoder) ? .decoded : .stopped
        }
    }

    /// Appends `missing` microseconds (whole 2.5 ms steps, at least one) of Opus loss
    /// concealment. For a gap before a queued packet, the concealed time counts as played, so
    /// the missing packet would now be late; `waiting` for a packet with nothing queued, it
    /// is set aside (``Inbox/expandedMicroseconds``): the packet due still plays if it comes.
    private func conceal(_ missing: Int64, _ decoder: AudioDecoding, waiting: Bool = false) -> Bool {
        let step = sampleRate / 400
        let wanted = max(step, (frames(microseconds: missing) + step - 1) / step * step)
        let room = UnsafeMutableBufferPointer(rebasing: decoded[decodedEnd...])
        guard let count = try? decoder.concealLoss(samplesPerChannel: wanted, into: room) else { return false }
        decodedEnd += count * channelCount
        let concealedTime = microseconds(frames: count)
        withInbox { inbox in
            if waiting {
                inbox.expandedMicroseconds += concealedTime
            } else {
                inbox.decodedUntil = inbox.decodedUntil.map { $0 + concealedTime }
            }
        }
        return true
    }

    /// How far above its target the delay may stay before playout shortens the audio.
    static let stretchBandMicroseconds: Int64 = 20_000

    /// Shortens or lengthens the buffered audio by a pitch period when the delay strays from
    /// the target: above it by more than ``stretchBandMicroseconds``, or below it.
    private func stretchTowardTarget(now: Int64, decoder: AudioDecoding, concealed: inout Bool) {
        let (delay, target) = withInbox { inbox -> (Int64?, Int64) in
            let position = inbox.decodedUntil.map { $0 - microseconds(frames: bufferedFrames) }
            return (position.flatMap { inbox.delay(position: $0, now: now) }, inbox.playoutTargetMicroseconds)
        }
        guard let delay else { return }
        playoutCounters.delaySumMicroseconds += delay
        playoutCounters.delayTicks += 1
        let band = Self.stretchBandMicroseconds
        guard delay > target + band || delay < target else { return }
        let needed = TimeStretcher.framesNeeded(sampleRate: sampleRate)
        // Decode ahead when the next packet continues the audio (never conceal for this).
        while bufferedFrames < needed {
            let step = takeStep { $0.nextContinuing() }
            guard case .decoded = decode(next: step, decoder, concealed: &concealed) else { break }
        }
        let distance = abs(delay - target)
        let correlation = distance > 60_000 ? 0.5 : 0.9
        if delay > target + band {
            let removed = TimeStretcher.shorten(
                decoded, start: decodedStart / channelCount, frames: bufferedFrames, channels: channelCount,
                sampleRate: sampleRate, minimumCorrelation: correlation)
            if removed > 0 {
                decodedEnd -= removed * channelCount
                playoutCounters.accelerations += 1
            }
        } else {
            // A period inserted needs room after the buffered samples (rare: the delay fell
            // below the target).
            compactDecoded()
            let added = TimeStretcher.lengthen(
                decoded, start: decodedStart / channelCount, frames: bufferedFrames, channels: channelCount,
                sampleRate: sampleRate, minimumCorrelation: correlation)
            if added > 0 {
                decodedEnd += added * channelCount
                playoutCounters.expansions += 1
            } else if bufferedFrames < needed, target - delay > band,
                conceal(10_000, decoder, waiting: true)
            {
                concealed = true
                // Too little is buffered to repeat a pitch period (the delay is shorter than the
                // stretcher's 30 ms window): the delay grows by 10 ms of loss concealment
                // instead, as NetEq expands. Without it, a playout 14 ms behind its packets never
                // reached the 165 ms lip sync asked of it (through Janus under 10 % loss: beeps
                // 72–142 ms before their pictures for 15 s).
                playoutCounters.expansions += 1
            }
        }
    }
}

/// What one audio receiver's playout did, counted by the playout round.
struct AudioPlayoutCounters {
    /// 10 ms frames produced, those holding loss concealment, and those of them that are
    /// silent (under -50 dBFS: concealment nobody hears).
    var ticks: Int64 = 0, concealedTicks: Int64 = 0, silentConcealedTicks: Int64 = 0
    /// Ticks with nothing to play after playout had started (starved past concealment, or
    /// waiting for playout to start again).
    var silentTicks: Int64 = 0
    /// Ticks of comfort noise while the sender was in DTX (not loss).
    var comfortNoiseTicks: Int64 = 0
    /// Packets decoded, and lost packets rebuilt (from the next one's in-band FEC, or from a
    /// redundant copy a later one carried).
    var packetsDecoded: Int64 = 0, packetsRecovered: Int64 = 0
    /// Pitch periods removed (delay above target) and inserted (below), the latter with the
    /// 10 ms concealments inserted where too little was buffered to stretch.
    var accelerations: Int64 = 0, expansions: Int64 = 0
    /// The playout delay summed over the ticks it was measured on.
    var delaySumMicroseconds: Int64 = 0, delayTicks: Int64 = 0
}
