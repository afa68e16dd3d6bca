/// Decodes one Opus stream's packets in order into interleaved 16-bit samples, with the
/// container's trimming applied, so the output has exactly the encoded source's length:
/// the pre-skip dropped at the start, and at the end either an absolute limit (Ogg's final
/// granule position) or a count of padding samples (WebM's DiscardPadding). The header's
/// output gain is applied.
struct OpusStreamDecoder {
    let channelCount: Int
    let sampleRate: Int
    private let decoder: OpusDecoder
    private let preSkip48k: Int64
    /// 48 kHz samples per output sample.
    private let factor: Int64
    private var pcm: [Int16]
    /// Samples decoded so far at 48 kHz, the pre-skip included.
    private var position48k: Int64 = 0
    /// Packets decoded so far.
    private(set) var packets = 0
    /// Samples per channel delivered so far.
    private(set) var delivered: Int64 = 0

    /// A decoder for `head`'s stream at `sampleRate` (an Opus rate).
    init(head: OpusHead, sampleRate: Int) throws {
        guard 48000 % sampleRate == 0, OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) else {
            throw MediaError.invalidArgument(
                "Opus decode rate \(sampleRate) Hz is not one of \(OpusEncoderConfiguration.supportedSampleRates)")
        }
        decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: head.channelCount)
        try decoder.setGain(q8dB: head.outputGainQ8dB)
        channelCount = head.channelCount
        self.sampleRate = sampleRate
        preSkip48k = Int64(head.preSkip)
        factor = Int64(48000 / sampleRate)
        pcm = [Int16](repeating: 0, count: decoder.maximumSamplesPerPacket * head.channelCount)
    }

    /// Decodes `packet` and calls `body` with its samples after trimming (none when all of
    /// them are pre-skip or padding).
    /// - Parameters:
    ///   - endLimit48k: where the stream ends, in 48 kHz samples from its start with the
    ///     pre-skip (Ogg's final granule position); samples past it are dropped.
    ///   - discardAtEnd48k: how many of the packet's last 48 kHz samples are padding.
    mutating func decode(
        _ packet: UnsafeRawBufferPointer, endLimit48k: Int64? = nil, discardAtEnd48k: Int64 = 0,
        _ body: (UnsafeBufferPointer<Int16>) throws -> Void
    ) throws {
        let count: Int
        do {
            count = try pcm.withUnsafeMutableBufferPointer { try decoder.decode(packet, into: $0) }
        } catch let error as MediaError {
            throw MediaError(error.code, "audio packet \(packets): \(error.message)", codecStatus: error.codecStatus)
        }
        packets += 1
        let start = position48k
        var end = start + Int64(count) * factor
        position48k = end
        if let endLimit48k { end = min(end, endLimit48k) }
        end -= max(0, discardAtEnd48k)
        let from = max(start, preSkip48k)
        guard end > from else { return }
        let first = Int((from - start) / factor) * channelCount
        let last = Int((end - start) / factor) * channelCount
        try pcm.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[first..<last])) }
        delivered += Int64(last - first) / Int64(channelCount)
    }
}
