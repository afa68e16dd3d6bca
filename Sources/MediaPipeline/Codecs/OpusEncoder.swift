internal import COpus

/// An Opus encoder over libopus: PCM frames in, one packet per frame out.
///
/// Not thread-safe: use one encoder from one thread at a time (libopus keeps state per handle).
public final class OpusEncoder {
    /// The settings the encoder was created with (later setter calls are not reflected here;
    /// read the live values through the properties).
    public let configuration: OpusEncoderConfiguration
    /// Samples the encoder delays its output by, at the encoder's sample rate (libopus's lookahead).
    public let lookaheadSamples: Int
    private let handle: OpaquePointer
    private var handleTally: HandleTally?
    /// Room for the largest packet libopus writes for one frame (RFC 6716: 1275 bytes per
    /// 20 ms, up to 3 frames in 60 ms), so no encode ever reallocates.
    private var packetScratch = [UInt8](repeating: 0, count: 4000)
    /// Storage of the frames handed out, reused once they are released.
    private var recycler = ByteRecycler(slotCount: 64, capacity: 1500)

    /// Creates an encoder.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a setting out of range,
    ///   ``MediaError/Code/codecFailure`` if libopus refuses.
    public init(configuration: OpusEncoderConfiguration = .init()) throws {
        try configuration.validate()
        self.configuration = configuration
        let application: Int32
        switch configuration.application {
        case .voip: application = OPUS_APPLICATION_VOIP
        case .audio: application = OPUS_APPLICATION_AUDIO
        case .lowDelay: application = OPUS_APPLICATION_RESTRICTED_LOWDELAY
        }
        var status: Int32 = 0
        guard
            let handle = opus_encoder_create(
                Int32(configuration.sampleRate), Int32(configuration.channelCount), application, &status),
            status == OPUS_OK
        else { throw OpusStatus.error(status, "opus_encoder_create") }
        self.handle = handle
        handleTally = LiveCodecHandles.opened()
        do {
            try OpusStatus.check(
                copus_encoder_set_bitrate(handle, Int32(configuration.bitrateBitsPerSecond)), "set bitrate")
            try OpusStatus.check(
                copus_encoder_set_complexity(handle, Int32(configuration.complexity)), "set complexity")
            try OpusStatus.check(copus_encoder_set_vbr(handle, configuration.variableBitrate ? 1 : 0), "set VBR")
            try OpusStatus.check(
                copus_encoder_set_vbr_constraint(handle, configuration.constrainedVariableBitrate ? 1 : 0),
                "set VBR constraint")
            try OpusStatus.check(
                copus_encoder_set_inband_fec(handle, configuration.inbandForwardErrorCorrection ? 1 : 0), "set FEC")
            try OpusStatus.check(
                copus_encoder_set_packet_loss_perc(handle, Int32(configuration.expectedPacketLossPercent)),
                "set packet loss")
            try OpusStatus.check(
                copus_encoder_set_dtx(handle, configuration.discontinuousTransmission ? 1 : 0), "set DTX")
            var lookahead: Int32 = 0
            try OpusStatus.check(copus_encoder_get_lookahead(handle, &lookahead), "get lookahead")
            lookaheadSamples = Int(lookahead)
        } catch {
            opus_encoder_destroy(handle)
            LiveCodecHandles.closed(handleTally)
            throw error
        }
    }

    deinit {
        opus_encoder_destroy(handle)
        LiveCodecHandles.closed(handleTally)
    }

    /// Samples per channel that each ``encode(_:into:)`` call takes.
    public var samplesPerFrame: Int { configuration.samplesPerFrame }

    /// The Ogg Opus pre-skip for this encoder: its lookahead in 48 kHz samples (RFC 7845 §4.2).
    public var preSkip48kHz: Int { lookaheadSamples * 48000 / configuration.sampleRate }

    // MARK: - Encoding

    /// Encodes one frame of interleaved PCM into `packet`; returns the packet's length in bytes.
    ///
    /// - Parameter pcm: exactly ``samplesPerFrame`` × channel count samples.
    /// - Parameter packet: room for the packet (4000 bytes always suffice).
    /// - Complexity: allocates nothing.
    public func encode(
        _ pcm: UnsafeBufferPointer<Int16>, into packet: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let expected = samplesPerFrame * configuration.channelCount
        guard pcm.count == expected, let input = pcm.baseAddress else {
            throw MediaError.invalidArgument("Opus frame has \(pcm.count) samples; this encoder takes \(expected)")
        }
        guard let output = packet.baseAddress, packet.count > 0 else {
            throw MediaError.invalidArgument("Opus packet buffer is empty")
        }
        let length = opus_encode(
            handle, input, Int32(samplesPerFrame), output.assumingMemoryBound(to: UInt8.self),
            Int32(min(packet.count, Int(Int32.max))))
        guard length >= 0 else { throw OpusStatus.error(length, "opus_encode") }
        return Int(length)
    }

    /// Encodes one ``AudioFrame`` into an ``EncodedFrame``.
    /// - Complexity: allocates nothing in steady state (see ``encode(_:timestampMicroseconds:)``).
    public func encode(_ frame: AudioFrame) throws -> EncodedFrame {
        guard frame.sampleRate == configuration.sampleRate, frame.channelCount == configuration.channelCount else {
            throw MediaError.invalidArgument(
                "audio frame is \(frame.sampleRate) Hz × \(frame.channelCount) channels; the encoder takes "
                    + "\(configuration.sampleRate) Hz × \(configuration.channelCount)")
        }
        return try frame.samples.withUnsafeBufferPointer { pcm in
            try encode(pcm, timestampMicroseconds: frame.timestampSamples * 1_000_000 / Int64(frame.sampleRate))
        }
    }

    /// Encodes one frame of interleaved PCM (exactly ``samplesPerFrame`` × channel count samples)
    /// into an ``EncodedFrame`` stamped `timestampMicroseconds`.
    /// - Complexity: allocates nothing in steady state: the frame's bytes live in storage the
    ///   encoder reuses once earlier frames have been released (a ring of 64: more than a receiver queues).
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, timestampMicroseconds: Int64) throws -> EncodedFrame {
        let length = try packetScratch.withUnsafeMutableBytes { out in try encode(pcm, into: out) }
        let bytes = packetScratch.withUnsafeBytes {
            recycler.bytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<length]))
        }
        return EncodedFrame(
            bytes: bytes, codec: .opus, isKeyframe: true, timestampMicroseconds: timestampMicroseconds,
            durationMicroseconds: Int64(configuration.frameDurationMicroseconds))
    }

    // MARK: - Live settings (read back from libopus)

    /// The target bitrate in bits per second, as libopus holds it.
    public var bitrateBitsPerSecond: Int { get32(copus_encoder_get_bitrate) }
    /// Sets the target bitrate, 500...512000 bit/s.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard (500...512_000).contains(bitsPerSecond) else {
            throw MediaError.invalidArgument("Opus bitrate \(bitsPerSecond) bit/s is outside 500...512000")
        }
        try OpusStatus.check(copus_encoder_set_bitrate(handle, Int32(bitsPerSecond)), "set bitrate")
    }

    /// The complexity 0...10, as libopus holds it.
    public var complexity: Int { get32(copus_encoder_get_complexity) }
    /// Sets the complexity, 0...10.
    public func setComplexity(_ value: Int) throws {
        guard (0...10).contains(value) else {
            throw MediaError.invalidArgument("Opus complexity \(value) is outside 0...10")
        }
        try OpusStatus.check(copus_encoder_set_complexity(handle, Int32(value)), "set complexity")
    }

    /// Whether VBR is on, as libopus holds it.
    public var variableBitrate: Bool { get32(copus_encoder_get_vbr) != 0 }
    /// Turns VBR on or off.
    public func setVariableBitrate(_ on: Bool) throws {
        try OpusStatus.check(copus_encoder_set_vbr(handle, on ? 1 : 0), "set VBR")
    }

    /// Whether VBR is constrained, as libopus holds it.
    public var constrainedVariableBitrate: Bool { get32(copus_encoder_get_vbr_constraint) != 0 }

    /// Whether in-band FEC is on, as libopus holds it.
    public var inbandForwardErrorCorrection: Bool { get32(copus_encoder_get_inband_fec) != 0 }
    /// Turns in-band FEC on or off.
    public func setInbandForwardErrorCorrection(_ on: Bool) throws {
        try OpusStatus.check(copus_encoder_set_inband_fec(handle, on ? 1 : 0), "set FEC")
    }

    /// Expected packet loss in percent, as libopus holds it.
    public var expectedPacketLossPercent: Int { get32(copus_encoder_get_packet_loss_perc) }
    /// Sets the expected packet loss, 0...100 %.
    public func setExpectedPacketLossPercent(_ percent: Int) throws {
        guard (0...100).contains(percent) else {
            throw MediaError.invalidArgument("Opus expected packet loss \(percent) % is outside 0...100")
        }
        try OpusStatus.check(copus_encoder_set_packet_loss_perc(handle, Int32(percent)), "set packet loss")
    }

    /// Whether DTX is on, as libopus holds it.
    public var discontinuousTransmission: Bool { get32(copus_encoder_get_dtx) != 0 }
    /// Turns DTX on or off.
    public func setDiscontinuousTransmission(_ on: Bool) throws {
        try OpusStatus.check(copus_encoder_set_dtx(handle, on ? 1 : 0), "set DTX")
    }

    private func get32(_ getter: (OpaquePointer, UnsafeMutablePointer<Int32>) -> Int32) -> Int {
        var value: Int32 = 0
        // Getters only fail for a bad request id, which these fixed wrappers never pass.
        _ = getter(handle, &value)
        return Int(value)
    }
}

/// libopus status codes to ``MediaError``.
enum OpusStatus {
    static func error(_ status: Int32, _ operation: String) -> MediaError {
        let reason = String(cString: opus_strerror(status))
        return MediaError(.codecFailure, "\(operation) failed: \(reason) (\(status))", codecStatus: status)
    }

    static func check(_ status: Int32, _ operation: String) throws {
        if status != OPUS_OK { throw error(status, operation) }
    }
}
