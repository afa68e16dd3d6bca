/// Decodes one Opus stream's packets in order into interleaved 16-bit samples, with the
/// container's trimming applied, so the output has exactly the encoded source's length:
/// the pre-skip dropped at the start, and at the end either an absolute limit (Ogg's final
/// granule position) or a count of padding samples (WebM's DiscardPadding). The header's
/// output gain is applied. A multistream stream (channel mapping family 1) of more than two
/// channels comes out folded down to stereo.
struct OpusStreamDecoder {
    /// Output channels: the stream's, or 2 for more than two.
    let channelCount: Int
    let sampleRate: Int
    private let decoder: OpusDecoder?
    private let multistream: OpusMultistreamDecoder?
    /// Family 1 of more than two channels: the decoded channels, and their stereo weights.
    private var wide: [Int16] = []
    private let weights: [(left: Float, right: Float)]
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
        let maximum = sampleRate * 120 / 1000
        if head.mappingFamily == 1 {
            let multistream = try OpusMultistreamDecoder(head: head, sampleRate: sampleRate)
            self.multistream = multistream
            decoder = nil
            channelCount = min(2, head.channelCount)
            weights = head.channelCount > 2 ? OpusMultistreamDecoder.stereoWeights(channels: head.channelCount) : []
            if head.channelCount > 2 { wide = [Int16](repeating: 0, count: maximum * head.channelCount) }
        } else {
            let single = try OpusDecoder(sampleRate: sampleRate, channelCount: head.channelCount)
            try single.setGain(q8dB: head.outputGainQ8dB)
            decoder = single
            multistream = nil
            channelCount = head.channelCount
            weights = []
        }
        self.sampleRate = sampleRate
        preSkip48k = Int64(head.preSkip)
        factor = Int64(48000 / sampleRate)
        pcm = [Int16](repeating: 0, count: maximum * channelCount)
    }

    /// Decodes `packet` into ``pcm`` (folded down to stereo when wider); the samples per channel.
    private mutating func decodeIntoBuffer(_ packet: UnsafeRawBufferPointer) throws -> Int {
        if let decoder { return try pcm.withUnsafeMutableBufferPointer { try decoder.decode(packet, into: $0) } }
        guard let multistream else { return 0 }
        guard !weights.isEmpty else {
            return try pcm.withUnsafeMutableBufferPointer { try multistream.decode(packet, into: $0) }
        }
        let count = try wide.withUnsafeMutableBufferPointer { try multistream.decode(packet, into: $0) }
        let channels = weights.count
        for frame in 0..<count {
            var left: Float = 0
            var right: Float = 0
            for channel in 0..<channels {
                let sample = Float(wide[frame * channels + channel])
                left += sample * weights[channel].left
                right += sample * weights[channel].right
            }
            pcm[2 * frame] = Int16(max(-32768, min(32767, left.rounded())))
            pcm[2 * frame + 1] = Int16(max(-32768, min(32767, right.rounded())))
        }
        return count
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
            count = try decodeIntoBuffer(packet)
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
