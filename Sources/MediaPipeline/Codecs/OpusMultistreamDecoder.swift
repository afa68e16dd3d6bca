internal import COpus

/// A decoder for Opus packets of several streams (channel mapping family 1: up to 8 channels in
/// Vorbis order, RFC 7845 §5.1.1), over libopus's multistream decoder, that also folds them down
/// to stereo.
///
/// Not thread-safe: use one decoder from one thread at a time.
final class OpusMultistreamDecoder {
    let sampleRate: Int
    /// Channels decoded (the head's channel count).
    let channelCount: Int
    private let handle: OpaquePointer
    private var handleTally: HandleTally?

    /// Samples per channel in the longest Opus packet (120 ms) at ``sampleRate``.
    var maximumSamplesPerPacket: Int { sampleRate * 120 / 1000 }

    /// A decoder for `head`'s streams (family 1) at `sampleRate`.
    init(head: OpusHead, sampleRate: Int) throws {
        guard head.mappingFamily == 1, (1...8).contains(head.channelCount),
            head.channelMapping.count == head.channelCount
        else {
            throw MediaError.invalidArgument(
                "Opus multistream decoding takes family 1 with 1...8 channels, not family \(head.mappingFamily) "
                    + "with \(head.channelCount)")
        }
        var status: Int32 = 0
        let created = head.channelMapping.withUnsafeBufferPointer { mapping in
            opus_multistream_decoder_create(
                Int32(sampleRate), Int32(head.channelCount), Int32(head.streamCount), Int32(head.coupledStreamCount),
                mapping.baseAddress!, &status)  // not empty: checked above
        }
        guard let created, status == OPUS_OK else { throw OpusStatus.error(status, "opus_multistream_decoder_create") }
        handle = created
        self.sampleRate = sampleRate
        channelCount = head.channelCount
        handleTally = LiveCodecHandles.opened()
        try OpusStatus.check(copus_ms_decoder_set_gain(handle, Int32(head.outputGainQ8dB)), "set gain")
    }

    deinit {
        opus_multistream_decoder_destroy(handle)
        LiveCodecHandles.closed(handleTally)
    }

    /// Decodes `packet` into `pcm` (interleaved, ``channelCount`` channels); returns the samples
    /// per channel.
    func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws -> Int {
        guard let data = packet.baseAddress, packet.count > 0, let output = pcm.baseAddress else {
            throw MediaError.invalidArgument("empty Opus packet or output")
        }
        let samples = opus_multistream_decode(
            handle, data.assumingMemoryBound(to: UInt8.self), Int32(packet.count), output,
            Int32(pcm.count / channelCount), 0)
        guard samples >= 0 else { throw OpusStatus.error(samples, "opus_multistream_decode") }
        return Int(samples)
    }

    /// Each Vorbis-order channel's weight in the left and right of a stereo fold-down: front
    /// channels to their side, the centre and LFE at -3 dB to both, surrounds at -3 dB to their
    /// side, a rear centre at -6 dB to both; each side's weights then scaled to sum to 1, so a
    /// full-scale input cannot clip.
    static func stereoWeights(channels: Int) -> [(left: Float, right: Float)] {
        let c: Float = 0.7071
        let layouts: [[(Float, Float)]] = [
            [(c, c)],  // mono
            [(1, 0), (0, 1)],  // L R
            [(1, 0), (c, c), (0, 1)],  // L C R
            [(1, 0), (0, 1), (c, 0), (0, c)],  // FL FR RL RR
            [(1, 0), (c, c), (0, 1), (c, 0), (0, c)],  // FL C FR RL RR
            [(1, 0), (c, c), (0, 1), (c, 0), (0, c), (c, c)],  // FL C FR RL RR LFE
            [(1, 0), (c, c), (0, 1), (c, 0), (0, c), (0.5, 0.5), (c, c)],  // FL C FR SL SR RC LFE
            [(1, 0), (c, c), (0, 1), (c, 0), (0, c), (c, 0), (0, c), (c, c)],  // FL C FR SL SR RL RR LFE
        ]
        let layout = layouts[max(1, min(8, channels)) - 1]
        let left = layout.reduce(0) { $0 + $1.0 }
        let right = layout.reduce(0) { $0 + $1.1 }
        return layout.map { (left: $0.0 / left, right: $0.1 / right) }
    }
}
