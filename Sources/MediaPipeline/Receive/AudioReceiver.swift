/// The receiving side of one remote audio stream: its RTP packets turned into Opus frames, a
/// small jitter queue, an Opus decoder, and 10 ms frames for the mixer.
///
/// Two owners, so packet arrival never waits for a decode:
/// - ``inbox`` (packets in, frames queued in timestamp order) is a ``LockedValue``: the thread that
///   delivers packets and the one that decodes meet there, for a queue operation each.
/// - Everything else (the decoder, decoded samples, ``frame``, the last output) belongs to the
///   engine's playout round, which ``MediaEngine`` runs one at a time (its `playout` value): the
///   reason this class is `@unchecked Sendable`.
final class AudioReceiver: @unchecked Sendable {
    /// The packet side, shared by arrival and decoding.
    struct Inbox {
        var assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
        var remoteSSRC: UInt32?
        var packetsLostInEarlierStreams: Int64 = 0
        /// Where the current stream's time starts on this receiver's time line (microseconds),
        /// so a new SSRC continues after the old one.
        var streamOffsetMicroseconds: Int64 = 0
        var queue = FrameQueue(capacity: 50)
        /// The end of the last packet played (decoded or concealed), in stream microseconds.
        var playedUntilMicroseconds: Int64?
        /// Packets dropped because they came too late or twice.
        var latePackets = 0
        /// Set when the stream is unsubscribed: nothing is queued any more.
        var released = false
        /// What this receiver's reception reports say.
        var statistics = ReceptionStatistics(clockRate: MediaCodec.opus.rtpClockRate)

        /// Sequence numbers never received, over every stream this receiver has seen.
        var packetsLost: Int64 { packetsLostInEarlierStreams + assembler.packetsLost }

        /// Takes one RTP packet arrived at clock time `now`; returns the frames queued (0 or 1).
        mutating func receive(_ packet: RTPPacket, now: Int64) -> Int {
            guard !released else { return 0 }
            statistics.count(packet.header, arrivalMicroseconds: now)
            if remoteSSRC != packet.header.ssrc {
                if remoteSSRC != nil {
                    // A new stream from this user: its time continues where the old one's ended.
                    packetsLostInEarlierStreams += assembler.packetsLost
                    assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
                    streamOffsetMicroseconds = playedUntilMicroseconds ?? streamOffsetMicroseconds
                }
                remoteSSRC = packet.header.ssrc
            }
            var frames = 0
            assembler.insert(packet, now: now)
            while let frame = assembler.next(now: now)?.frame {
                frames += 1
                enqueue(
                    streamOffsetMicroseconds == 0
                        ? frame : frame.restamped(frame.timestampMicroseconds + streamOffsetMicroseconds))
            }
            return frames
        }

        /// Queues a frame in timestamp order. A frame whose time has already been played (or
        /// concealed) is late and dropped, as is a duplicate. A jump back by more than a second
        /// is the sender starting its clock again: the stream restarts from that frame.
        mutating func enqueue(_ frame: EncodedFrame) {
            if let played = playedUntilMicroseconds, frame.timestampMicroseconds < played {
                guard played - frame.timestampMicroseconds > 1_000_000 else {
                    latePackets += 1
                    return
                }
                queue.removeAll()
                playedUntilMicroseconds = nil
            }
            if !queue.insertOrdered(frame) { latePackets += 1 }
        }
    }

    /// The packet side.
    let inbox = LockedValue(Inbox())

    // MARK: Owned by the playout round

    private var decoder: AudioDecoding?
    private let sampleRate: Int
    private let channelCount: Int
    /// Decoded samples not yet handed out, interleaved: room for 10 ms left over plus the
    /// longest packet (120 ms), allocated once.
    private let decoded: UnsafeMutableBufferPointer<Int16>
    private var decodedStart = 0
    private var decodedEnd = 0
    /// The current 10 ms frame, for the mixer and observers. Its address never changes, so a
    /// mix can read many receivers' frames at once.
    let frame: UnsafeMutableBufferPointer<Int16>
    /// Microseconds of consecutive 10 ms ticks without a packet.
    private(set) var starvedMicroseconds: Int64 = 0
    /// Packets decoded since creation.
    private(set) var packetsDecoded: Int64 = 0
    /// True after a packet failed to decode, until one decodes again.
    private(set) var failed = false
    /// Why the last packet failed to decode.
    private(set) var failure: String?

    init(sampleRate: Int, channelCount: Int, codecs: CodecFactory = .libraries) throws {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        decoder = try codecs.makeAudioDecoder(sampleRate, channelCount)
        decoded = .allocate(capacity: sampleRate * 130 / 1000 * channelCount)
        decoded.initialize(repeating: 0)
        frame = .allocate(capacity: sampleRate / 100 * channelCount)
        frame.initialize(repeating: 0)
    }

    deinit {
        frame.deallocate()
        decoded.deallocate()
    }

    /// Takes one RTP packet arrived at clock time `now`; returns the frames queued (0 or 1)
    /// and the packets it showed to be lost.
    func receive(_ packet: RTPPacket, now: Int64) -> (frames: Int, packetsLost: Int64) {
        inbox.withLock { inbox in
            let lost = inbox.packetsLost
            let frames = inbox.receive(packet, now: now)
            return (frames, inbox.packetsLost - lost)
        }
    }

    /// Queues a frame (see ``Inbox/enqueue(_:)``).
    func enqueue(_ frame: EncodedFrame) { inbox.withLock { $0.enqueue(frame) } }

    /// Sequence numbers never received.
    var packetsLost: Int64 { inbox.withLock { $0.packetsLost } }

    /// Frames dropped because they came too late or twice.
    var latePackets: Int { inbox.withLock { $0.latePackets } }

    /// Notes a sender report of the stream `ssrc` (if it is this receiver's), for the round trip.
    func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, arrivalMicroseconds: Int64) {
        inbox.withLock { inbox in
            guard inbox.statistics.ssrc == ssrc else { return }
            inbox.statistics.senderReport(ntpTimestamp: ntpTimestamp, arrivalMicroseconds: arrivalMicroseconds)
        }
    }

    /// True until the stream is released (its decoder goes with the receiver).
    var isLive: Bool { inbox.withLock { !$0.released } }

    /// Stops queueing and drops what is queued (the stream is unsubscribed). The decoder is
    /// freed with the receiver, once no playout round holds it any more.
    func release() {
        inbox.withLock {
            $0.released = true
            $0.queue.removeAll()
        }
    }

    /// Produces the next 10 ms into ``frame``. Returns `.audio` when the frame holds decoded
    /// audio, `.concealed` for loss concealment right after a gap, `.none` when starved longer.
    enum Output { case audio, concealed, none }
    /// What the last ``produce(concealUpToMicroseconds:)`` of a decode round gave.
    var lastOutput = Output.none

    /// Decodes the next 10 ms. Call from the playout round only.
    func produce(concealUpToMicroseconds: Int64) -> Output {
        guard let decoder else { return .none }
        let needed = frame.count
        var concealed = false
        if decodedEnd - decodedStart < needed {
            // Keep what is left, then decode packets until a whole 10 ms is there (packets of
            // 2.5 or 5 ms take several; 20, 40, 60 ms ones leave samples for later ticks).
            let left = decodedEnd - decodedStart
            for i in 0..<left { decoded[i] = decoded[decodedStart + i] }
            decodedStart = 0
            decodedEnd = left
            while decodedEnd < needed {
                let room = UnsafeMutableBufferPointer(rebasing: decoded[decodedEnd...])
                guard let packet = inbox.withLock({ $0.queue.pop() }) else {
                    starvedMicroseconds += 10_000
                    guard packetsDecoded > 0, starvedMicroseconds <= concealUpToMicroseconds else { return .none }
                    // Opus loss concealment for what is missing (whole 2.5 ms steps).
                    let missing = (needed - decodedEnd) / channelCount
                    guard let count = try? decoder.concealLoss(samplesPerChannel: missing, into: room) else {
                        return .none
                    }
                    decodedEnd += count * channelCount
                    concealed = true
                    // The concealed time is played: a packet for it arriving now would be late.
                    let concealedMicroseconds = Int64(count) * 1_000_000 / Int64(sampleRate)
                    inbox.withLock { inbox in
                        inbox.playedUntilMicroseconds = inbox.playedUntilMicroseconds.map { $0 + concealedMicroseconds }
                    }
                    break
                }
                do {
                    let count = try packet.withUnsafeBytes { try decoder.decode($0, into: room) }
                    decodedEnd += count * channelCount
                    packetsDecoded += 1
                    failed = false
                    // The decoder tells the packet's duration (received frames leave it 0).
                    let end = packet.timestampMicroseconds + Int64(count) * 1_000_000 / Int64(sampleRate)
                    inbox.withLock { $0.playedUntilMicroseconds = end }
                } catch {
                    failed = true
                    failure = "\(error)"
                    return .none
                }
            }
        }
        if !concealed { starvedMicroseconds = 0 }
        for i in 0..<needed { frame[i] = decoded[decodedStart + i] }
        decodedStart += needed
        return concealed ? .concealed : .audio
    }
}
