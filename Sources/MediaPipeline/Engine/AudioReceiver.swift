/// The receiving side of one remote audio stream: its RTP packets turned into Opus frames, a
/// small jitter queue, an Opus decoder that exists only while the stream is subscribed, and
/// 10 ms frames for the mixer.
final class AudioReceiver {
    private var assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
    private var remoteSSRC: UInt32?
    private var packetsLostInEarlierStreams: Int64 = 0
    /// Where the current stream's time starts on this receiver's time line (microseconds), so a
    /// new SSRC continues after the old one.
    private var streamOffsetMicroseconds: Int64 = 0
    private var queue = FrameQueue(capacity: 50)
    private var decoder: OpusDecoder?
    private let sampleRate: Int
    private let channelCount: Int
    /// Decoded samples not yet handed out, interleaved: room for 10 ms left over plus the
    /// longest packet (120 ms), allocated once.
    private let decodedBuffer: UnsafeMutableBufferPointer<Int16>
    private var decoded: UnsafeMutableBufferPointer<Int16> { decodedBuffer }
    private var decodedStart = 0
    private var decodedEnd = 0
    /// The current 10 ms frame, for the mixer and observers. Its address never changes, so a
    /// mix can read many receivers' frames at once.
    let frame: UnsafeMutableBufferPointer<Int16>
    /// Microseconds of consecutive 10 ms ticks without a packet.
    private(set) var starvedMicroseconds: Int64 = 0
    /// Packets decoded since creation.
    private(set) var packetsDecoded: Int64 = 0
    /// The end of the last packet decoded, in the sender's microseconds.
    private var playedUntilMicroseconds: Int64?
    /// True after a packet failed to decode, until one decodes again.
    private(set) var failed = false

    init(sampleRate: Int, channelCount: Int) throws {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: channelCount)
        decodedBuffer = .allocate(capacity: sampleRate * 130 / 1000 * channelCount)
        decodedBuffer.initialize(repeating: 0)
        frame = .allocate(capacity: sampleRate / 100 * channelCount)
        frame.initialize(repeating: 0)
    }

    deinit {
        frame.deallocate()
        decodedBuffer.deallocate()
    }

    /// True while a decoder exists.
    var hasDecoder: Bool { decoder != nil }

    /// Releases the decoder and the queued packets (the stream is unsubscribed).
    func release() {
        decoder = nil
        queue.removeAll()
        decodedStart = 0
        decodedEnd = 0
    }

    /// Sequence numbers never received, over every stream this receiver has seen.
    var packetsLost: Int64 { packetsLostInEarlierStreams + assembler.packetsLost }

    /// Takes one RTP packet arrived at clock time `now`; returns the frames queued (0 or 1).
    func receive(_ packet: RTPPacket, now: Int64) -> Int {
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
        assembler.insert(packet, now: now) { assembled in
            frames += 1
            let frame = assembled.frame
            enqueue(
                streamOffsetMicroseconds == 0
                    ? frame : frame.restamped(frame.timestampMicroseconds + streamOffsetMicroseconds))
        }
        return frames
    }

    /// Queues a packet in timestamp order. A packet whose time has already been played (or
    /// concealed) is late and dropped, as is a duplicate. A jump back by more than a second is
    /// the sender starting its clock again: the stream restarts from that packet.
    func enqueue(_ packet: EncodedFrame) {
        if let played = playedUntilMicroseconds, packet.timestampMicroseconds < played {
            guard played - packet.timestampMicroseconds > 1_000_000 else {
                latePackets += 1
                return
            }
            queue.removeAll()
            playedUntilMicroseconds = nil
        }
        if !queue.insertOrdered(packet) { latePackets += 1 }
    }

    /// Packets dropped because they came too late or twice.
    private(set) var latePackets = 0

    /// Produces the next 10 ms into ``frame``. Returns `.audio` when the frame holds decoded
    /// audio, `.concealed` for loss concealment right after a gap, `.none` when starved longer.
    enum Output { case audio, concealed, none }
    /// What the last ``produce(concealUpToMicroseconds:)`` of a decode round gave.
    var lastOutput = Output.none

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
                let room = UnsafeMutableBufferPointer(rebasing: decodedBuffer[decodedEnd...])
                guard let packet = queue.pop() else {
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
                    playedUntilMicroseconds.map {
                        playedUntilMicroseconds = $0 + Int64(count) * 1_000_000 / Int64(sampleRate)
                    }
                    break
                }
                do {
                    let count = try packet.withUnsafeBytes { try decoder.decode($0, into: room) }
                    decodedEnd += count * channelCount
                    packetsDecoded += 1
                    failed = false
                    // The decoder tells the packet's duration (received frames leave it 0).
                    playedUntilMicroseconds =
                        packet.timestampMicroseconds + Int64(count) * 1_000_000 / Int64(sampleRate)
                } catch {
                    failed = true
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
