internal import COpus

/// An Opus decoder over libopus, with packet loss concealment and in-band FEC recovery.
///
/// Not thread-safe: use one decoder from one thread at a time.
public final class OpusDecoder {
    /// Output sample rate in Hz (8000, 12000, 16000, 24000 or 48000).
    public let sampleRate: Int
    /// Output channels, 1 or 2.
    public let channelCount: Int
    private let handle: OpaquePointer
    private var handleTally: HandleTally?

    /// Samples per channel in the longest Opus packet (120 ms) at ``sampleRate``.
    public var maximumSamplesPerPacket: Int { sampleRate * 120 / 1000 }

    /// Creates a decoder producing `sampleRate` Hz with `channelCount` channels.
    public init(sampleRate: Int = 48000, channelCount: Int = 2) throws {
        guard OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) else {
            throw MediaError.invalidArgument(
                "Opus decoder rate \(sampleRate) Hz is not one of \(OpusEncoderConfiguration.supportedSampleRates)")
        }
        guard channelCount == 1 || channelCount == 2 else {
            throw MediaError.invalidArgument("Opus decoder channel count \(channelCount) is not 1 or 2")
        }
        var status: Int32 = 0
        guard let handle = opus_decoder_create(Int32(sampleRate), Int32(channelCount), &status), status == OPUS_OK
        else {
            throw OpusStatus.error(status, "opus_decoder_create")
        }
        self.handle = handle
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        handleTally = LiveCodecHandles.opened()
    }

    deinit {
        opus_decoder_destroy(handle)
        LiveCodecHandles.closed(handleTally)
    }

    /// Decodes one packet into `pcm`; returns the samples per channel written.
    ///
    /// - Parameter packet: one Opus packet.
    /// - Parameter pcm: room for the packet's samples (``maximumSamplesPerPacket`` × channels always suffices).
    /// - Complexity: allocates nothing.
    public func decode(
        _ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws -> Int {
        guard let data = packet.baseAddress, packet.count > 0 else {
            throw MediaError.invalidArgument(
                "empty Opus packet: use concealLoss(samplesPerChannel:into:) for a missing one")
        }
        return try run(
            data.assumingMemoryBound(to: UInt8.self), packet.count, pcm, pcm.count / channelCount, fec: false)
    }

    /// Produces `samplesPerChannel` samples of packet loss concealment for a packet that never
    /// arrived; returns the samples per channel written.
    public func concealLoss(
        samplesPerChannel: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws -> Int {
        try checkLossLength(samplesPerChannel, pcm)
        return try run(nil, 0, pcm, samplesPerChannel, fec: false)
    }

    /// Rebuilds a lost packet from the in-band FEC data carried by the packet that followed it;
    /// returns the samples per channel written (`samplesPerChannel`, the lost packet's length).
    ///
    /// Decode `nextPacket` itself normally afterwards. Without FEC data in `nextPacket` libopus
    /// falls back to concealment.
    public func recoverLoss(
        fromFECIn nextPacket: UnsafeRawBufferPointer, samplesPerChannel: Int,
        into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws -> Int {
        try checkLossLength(samplesPerChannel, pcm)
        guard let data = nextPacket.baseAddress, nextPacket.count > 0 else {
            throw MediaError.invalidArgument("FEC recovery needs the packet after the lost one; it is empty")
        }
        return try run(data.assumingMemoryBound(to: UInt8.self), nextPacket.count, pcm, samplesPerChannel, fec: true)
    }

    /// Decodes `packet` into `frame`, resizing its samples in place (no allocation once the
    /// frame has held a packet this long).
    public func decode(_ packet: [UInt8], into frame: inout AudioFrame) throws {
        let count = try Self.samplesPerChannel(inPacket: packet, sampleRate: sampleRate)
        frame.sampleRate = sampleRate
        frame.channelCount = channelCount
        if frame.samples.count != count * channelCount {
            frame.samples.removeAll(keepingCapacity: true)
            frame.samples.append(contentsOf: repeatElement(0, count: count * channelCount))
        }
        _ = try packet.withUnsafeBytes { (raw) in
            try frame.samples.withUnsafeMutableBufferPointer { (pcm) in try decode(raw, into: pcm) }
        }
    }

    /// Duration of the last decoded packet in samples per channel (libopus's
    /// `OPUS_GET_LAST_PACKET_DURATION`).
    public var lastPacketDurationSamples: Int {
        var value: Int32 = 0
        _ = copus_decoder_get_last_packet_duration(handle, &value)
        return Int(value)
    }

    /// Output gain in 1/256 dB, as libopus holds it.
    public var gainQ8dB: Int {
        var value: Int32 = 0
        _ = copus_decoder_get_gain(handle, &value)
        return Int(value)
    }

    /// Sets an output gain in 1/256 dB (the Ogg Opus header's output gain), -32768...32767.
    public func setGain(q8dB: Int) throws {
        guard (-32768...32767).contains(q8dB) else {
            throw MediaError.invalidArgument("Opus gain \(q8dB) is outside Q7.8 range")
        }
        try OpusStatus.check(copus_decoder_set_gain(handle, Int32(q8dB)), "set gain")
    }

    /// Forgets all decoding state, as after a seek.
    public func reset() { _ = copus_decoder_reset_state(handle) }

    /// Samples per channel that `packet` decodes to at `sampleRate`.
    /// - Throws: ``MediaError/Code/invalidFormat`` for a malformed packet.
    public static func samplesPerChannel(inPacket packet: [UInt8], sampleRate: Int) throws -> Int {
        try packet.withUnsafeBytes { try samplesPerChannel(inPacket: $0, sampleRate: sampleRate) }
    }

    /// Samples per channel that `packet` decodes to at `sampleRate` (its TOC byte and frame count).
    /// - Throws: ``MediaError/Code/invalidFormat`` for an empty or malformed packet.
    static func samplesPerChannel(inPacket packet: UnsafeRawBufferPointer, sampleRate: Int) throws -> Int {
        guard let base = packet.baseAddress, !packet.isEmpty else {
            throw MediaError.invalidFormat("empty Opus packet")
        }
        let count = opus_packet_get_nb_samples(
            base.assumingMemoryBound(to: UInt8.self), Int32(packet.count), Int32(sampleRate))
        guard count > 0 else {
            throw MediaError(
                .invalidFormat, "malformed Opus packet: \(String(cString: opus_strerror(count)))", codecStatus: count)
        }
        guard Int(count) <= sampleRate * 120 / 1000 else {
            throw MediaError.invalidFormat(
                "Opus packet lasts \(Int(count) * 1000 / sampleRate) ms, above the 120 ms limit")
        }
        return Int(count)
    }

    // MARK: - Private

    private func checkLossLength(_ samplesPerChannel: Int, _ pcm: UnsafeMutableBufferPointer<Int16>) throws {
        guard samplesPerChannel > 0, samplesPerChannel % (sampleRate / 400) == 0,
            samplesPerChannel <= maximumSamplesPerPacket
        else {
            throw MediaError.invalidArgument(
                "lost-packet length \(samplesPerChannel) samples is not a multiple of 2.5 ms up to 120 ms at \(sampleRate) Hz"
            )
        }
        guard pcm.count >= samplesPerChannel * channelCount else {
            throw MediaError.invalidArgument(
                "output holds \(pcm.count) samples; \(samplesPerChannel * channelCount) needed")
        }
    }

    private func run(
        _ data: UnsafePointer<UInt8>?, _ length: Int, _ pcm: UnsafeMutableBufferPointer<Int16>, _ frameSize: Int,
        fec: Bool
    ) throws -> Int {
        guard let output = pcm.baseAddress, frameSize > 0 else {
            throw MediaError.invalidArgument("Opus output buffer is empty")
        }
        let samples = opus_decode(handle, data, Int32(length), output, Int32(frameSize), fec ? 1 : 0)
        guard samples >= 0 else { throw OpusStatus.error(samples, "opus_decode") }
        return Int(samples)
    }
}
