/// A WAV file encoded into Opus packets one at a time, as a caller pulls them: the core of
/// ``AudioFileEncoder`` and of audio interleaved with video (`encode --audio`).
///
/// Sample rates that Opus takes (8, 12, 16, 24, 48 kHz) are encoded as they are; any other rate
/// is resampled to 48 kHz with libsoxr. At the end, silence is fed until the encoder has given
/// out every sample it holds back; ``playableSamples48k`` then tells the container how much of
/// the packets' audio (after the pre-skip) is the source's.
final class WAVOpusStream {
    let input: String
    /// The identification header of the stream (the encoder's pre-skip; the WAV's rate).
    let head: OpusHead
    /// The encoder's rate and channel count.
    let configuration: OpusEncoderConfiguration
    /// The WAV's rate.
    let sourceSampleRate: Int
    /// Bytes of packets given out, and source frames read.
    private(set) var packetBytes: Int64 = 0
    private(set) var sourceFrames: Int64 = 0

    private let reader: WAVReader
    private let encoder: OpusEncoder
    private let resampler: AudioResampler?
    private let channels: Int
    /// 48 kHz samples per encoder sample.
    private let rateFactor: Int
    private var pending: [Float] = []  // samples at the encoder rate waiting for a whole frame
    private var pendingStart = 0
    private var pcm: [Int16]
    private var packet = [UInt8](repeating: 0, count: 4000)
    private var resampledFrames: Int64 = 0
    private var encodedFrames: Int64 = 0  // samples per channel at the encoder rate encoded
    private var block: [Float] = []
    private var readerDone = false
    private var playableFrames: Int64?

    /// Opens `input` (WAV) for encoding with `settings`, whose rate and channel count are
    /// replaced by the file's.
    init(input: String, settings: OpusEncoderConfiguration) throws {
        self.input = input
        reader = try WAVReader(path: input)
        let format = reader.format
        var configuration = settings
        configuration.channelCount = format.channelCount
        let native = OpusEncoderConfiguration.supportedSampleRates.contains(format.sampleRate)
        configuration.sampleRate = native ? format.sampleRate : 48000
        encoder = try OpusEncoder(configuration: configuration)
        resampler =
            native
            ? nil
            : try AudioResampler(inputRate: format.sampleRate, outputRate: 48000, channelCount: format.channelCount)
        self.configuration = configuration
        channels = format.channelCount
        sourceSampleRate = format.sampleRate
        rateFactor = 48000 / configuration.sampleRate
        pcm = [Int16](repeating: 0, count: encoder.samplesPerFrame * channels)
        head = OpusHead(channelCount: channels, preSkip: encoder.preSkip48kHz, inputSampleRate: format.sampleRate)
    }

    /// The share of the source read so far, 0...1 (for progress display).
    var fractionRead: Double {
        reader.format.frameCount > 0 ? Double(sourceFrames) / Double(reader.format.frameCount) : 0
    }

    /// The source's length at 48 kHz: how much of the packets' audio after the pre-skip to keep.
    /// Known once ``nextPacket()`` has returned nil.
    var playableSamples48k: Int64 { (playableFrames ?? 0) * Int64(rateFactor) }

    /// The source's length in samples per channel at the encoder rate (once the end is reached).
    var playableEncoderFrames: Int64 { playableFrames ?? 0 }

    /// The next packet and its duration in 48 kHz samples; nil after the last.
    func nextPacket() throws -> (bytes: [UInt8], samples48k: Int)? {
        let frameSamples = encoder.samplesPerFrame * channels
        do {
            while pending.count - pendingStart < frameSamples, !readerDone {
                if try reader.read(into: &block, maxFrames: 4800) > 0 {
                    sourceFrames += Int64(block.count / channels)
                    if let resampler {
                        let before = pending.count
                        try block.withUnsafeBufferPointer { try resampler.process($0, appendingTo: &pending) }
                        resampledFrames += Int64((pending.count - before) / channels)
                    } else {
                        pending.append(contentsOf: block)
                    }
                } else {
                    readerDone = true
                    try finishSource()
                }
            }
        } catch let error as MediaError {
            throw error.attributed(to: input)
        }
        let available = min(frameSamples, pending.count - pendingStart)
        guard available > 0 else { return nil }
        for i in 0..<available { pcm[i] = pending[pendingStart + i].int16Sample }
        for i in available..<pcm.count { pcm[i] = 0 }
        pendingStart += available
        if pendingStart > 48000 * channels {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        let length = try pcm.withUnsafeBufferPointer { input in
            try packet.withUnsafeMutableBytes { try encoder.encode(input, into: $0) }
        }
        packetBytes += Int64(length)
        encodedFrames += Int64(encoder.samplesPerFrame)
        return (Array(packet[0..<length]), encoder.samplesPerFrame * rateFactor)
    }

    /// At the source's end: the resampler's tail cut or padded to the exact length, and
    /// silence until the encoder has emitted its lookahead and every source sample.
    private func finishSource() throws {
        let playable =
            resampler == nil
            ? sourceFrames
            : (sourceFrames * 48000 + Int64(sourceSampleRate / 2)) / Int64(sourceSampleRate)
        playableFrames = playable
        if let resampler {
            let before = pending.count
            try resampler.flush(appendingTo: &pending)
            resampledFrames += Int64((pending.count - before) / channels)
            let excess = resampledFrames - playable
            if excess > 0 {
                pending.removeLast(Int(min(Int64((pending.count - pendingStart) / channels), excess)) * channels)
            } else if excess < 0 {
                pending.append(contentsOf: repeatElement(0, count: Int(-excess) * channels))
            }
        }
        let needed = Int64(encoder.lookaheadSamples) + playable
        let queued = encodedFrames + Int64((pending.count - pendingStart) / channels)
        if queued < needed { pending.append(contentsOf: repeatElement(0, count: Int(needed - queued) * channels)) }
    }
}
