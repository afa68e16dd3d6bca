/// The receiving side of one remote audio stream: a small jitter queue, an Opus decoder that
/// exists only while the stream is subscribed, and 10 ms frames for the mixer.
final class AudioReceiver {
    private var queue = FrameQueue(capacity: 50)
    private var decoder: OpusDecoder?
    private let sampleRate: Int
    private let channelCount: Int
    /// Decoded samples not yet handed out, interleaved.
    private var decoded: [Int16]
    private var decodedStart = 0
    private var decodedEnd = 0
    /// The current 10 ms frame, for the mixer and observers. Its address never changes, so a
    /// mix can read many receivers' frames at once.
    let frame: UnsafeMutableBufferPointer<Int16>
    /// Microseconds of consecutive 10 ms ticks without a packet.
    private(set) var starvedMicroseconds: Int64 = 0
    /// Packets decoded since creation.
    private(set) var packetsDecoded: Int64 = 0
    /// True after a packet failed to decode.
    private(set) var failed = false

    init(sampleRate: Int, channelCount: Int) throws {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: channelCount)
        decoded = [Int16](repeating: 0, count: sampleRate * 120 / 1000 * channelCount)
        frame = .allocate(capacity: sampleRate / 100 * channelCount)
        frame.initialize(repeating: 0)
    }

    deinit { frame.deallocate() }

    /// True while a decoder exists.
    var hasDecoder: Bool { decoder != nil }

    /// Releases the decoder and the queued packets (the stream is unsubscribed).
    func release() {
        decoder = nil
        queue.removeAll()
        decodedStart = 0
        decodedEnd = 0
    }

    func enqueue(_ packet: EncodedFrame) { queue.push(packet) }

    var queuedPackets: Int { queue.count }

    /// Produces the next 10 ms into ``frame``. Returns `.audio` when the frame holds decoded
    /// audio, `.concealed` for loss concealment right after a gap, `.none` when starved longer.
    enum Output { case audio, concealed, none }

    func produce(concealUpToMicroseconds: Int64) -> Output {
        guard let decoder else { return .none }
        let needed = frame.count
        if decodedEnd - decodedStart < needed {
            decodedStart = 0
            decodedEnd = 0
            guard let packet = queue.pop() else {
                starvedMicroseconds += 10_000
                guard packetsDecoded > 0, starvedMicroseconds <= concealUpToMicroseconds else { return .none }
                // Opus loss concealment for the missing 10 ms.
                let count = try? decoder.concealLoss(samplesPerChannel: sampleRate / 100, into: frame)
                return count == nil ? .none : .concealed
            }
            do {
                let count = try packet.bytes.withUnsafeBytes { raw in
                    try decoded.withUnsafeMutableBufferPointer { try decoder.decode(raw, into: $0) }
                }
                decodedEnd = count * channelCount
                packetsDecoded += 1
            } catch {
                failed = true
                return .none
            }
            if decodedEnd < needed {
                // Packets shorter than 10 ms (2.5 or 5 ms): pad with concealment-free silence.
                for i in decodedEnd..<needed { decoded[i] = 0 }
                decodedEnd = needed
            }
        }
        starvedMicroseconds = 0
        for i in 0..<needed { frame[i] = decoded[decodedStart + i] }
        decodedStart += needed
        return .audio
    }
}
