/// Encodes a WAV file into an Ogg Opus file, or a WebM file with one Opus track.
///
/// Sample rates that Opus takes (8, 12, 16, 24, 48 kHz) are encoded as they are; any other rate
/// is resampled to 48 kHz with libsoxr. The decoded output is trimmed to exactly the source's
/// duration: by the Ogg file's granule positions (RFC 7845 §4.4), or by the WebM track's
/// CodecDelay and its last block's DiscardPadding.
public enum AudioFileEncoder {
    /// Encodes `input` (WAV) into `output` (WebM when its name ends in `.webm`, Ogg Opus
    /// otherwise) with `settings`; the sample rate and channel count in `settings` are replaced
    /// by the file's.
    @discardableResult
    public static func encode(
        input: String, output: String, settings: OpusEncoderConfiguration = .init(), progress: ProgressHandler? = nil
    ) throws -> TranscodeSummary {
        let reader = try WAVReader(path: input)
        let format = reader.format
        var configuration = settings
        configuration.channelCount = format.channelCount
        let native = OpusEncoderConfiguration.supportedSampleRates.contains(format.sampleRate)
        configuration.sampleRate = native ? format.sampleRate : 48000
        let encoder = try OpusEncoder(configuration: configuration)
        let resampler =
            native
            ? nil
            : try AudioResampler(inputRate: format.sampleRate, outputRate: 48000, channelCount: format.channelCount)
        let channels = format.channelCount
        let samplesPerFrame = encoder.samplesPerFrame
        let rateFactor = 48000 / configuration.sampleRate  // encoder rate → 48 kHz granule units
        let writer = try OpusFileSink(
            path: output,
            head: OpusHead(channelCount: channels, preSkip: encoder.preSkip48kHz, inputSampleRate: format.sampleRate))

        var pending: [Float] = []  // samples at the encoder rate waiting for a whole frame
        var pendingStart = 0
        var pcm = [Int16](repeating: 0, count: samplesPerFrame * channels)
        var packet = [UInt8](repeating: 0, count: 4000)
        var packetBytes: Int64 = 0
        var encodedFrames: Int64 = 0  // samples per channel at the encoder rate fed so far

        func encodeWhole(padToFrame: Bool) throws {
            while pending.count - pendingStart >= samplesPerFrame * channels
                || (padToFrame && pending.count > pendingStart)
            {
                let available = min(samplesPerFrame * channels, pending.count - pendingStart)
                for i in 0..<available { pcm[i] = pending[pendingStart + i].int16Sample }
                for i in available..<pcm.count { pcm[i] = 0 }
                pendingStart += available
                let length = try pcm.withUnsafeBufferPointer { input in
                    try packet.withUnsafeMutableBytes { try encoder.encode(input, into: $0) }
                }
                try writer.write(packet: Array(packet[0..<length]), samples48k: samplesPerFrame * rateFactor)
                packetBytes += Int64(length)
                encodedFrames += Int64(samplesPerFrame)
            }
            if pendingStart > 0 {
                pending.removeFirst(pendingStart)
                pendingStart = 0
            }
        }

        var block: [Float] = []
        var sourceFrames: Int64 = 0
        var resampledFrames: Int64 = 0
        do {
            while try reader.read(into: &block, maxFrames: 4800) > 0 {
                sourceFrames += Int64(block.count / channels)
                if let resampler {
                    let before = pending.count
                    try block.withUnsafeBufferPointer { try resampler.process($0, appendingTo: &pending) }
                    resampledFrames += Int64((pending.count - before) / channels)
                } else {
                    pending.append(contentsOf: block)
                }
                try encodeWhole(padToFrame: false)
                if let progress, reader.format.frameCount > 0 {
                    progress(Double(sourceFrames) / Double(reader.format.frameCount))
                }
            }
        } catch let error as MediaError {
            throw error.attributed(to: input)
        }
        // The exact length at the encoder rate; the resampler's tail is cut or padded to it.
        let playableFrames =
            native ? sourceFrames : (sourceFrames * 48000 + Int64(format.sampleRate / 2)) / Int64(format.sampleRate)
        if let resampler {
            let before = pending.count
            try resampler.flush(appendingTo: &pending)
            resampledFrames += Int64((pending.count - before) / channels)
            let excess = resampledFrames - playableFrames
            if excess > 0 {
                pending.removeLast(Int(min(Int64(pending.count / channels), excess)) * channels)
            } else if excess < 0 {
                pending.append(contentsOf: repeatElement(0, count: Int(-excess) * channels))
            }
        }
        // Feed silence until the encoder has emitted lookahead + playable samples.
        let needed = Int64(encoder.lookaheadSamples) + playableFrames
        let queued = encodedFrames + Int64(pending.count / channels)
        if queued < needed { pending.append(contentsOf: repeatElement(0, count: Int(needed - queued) * channels)) }
        try encodeWhole(padToFrame: true)
        try writer.finish(playableSamples48k: playableFrames * Int64(rateFactor))
        progress?(1)
        return TranscodeSummary(
            kind: .audio, codec: .opus, input: input, output: output,
            durationSeconds: Double(sourceFrames) / Double(format.sampleRate), frames: playableFrames,
            sampleRate: configuration.sampleRate, channelCount: channels, compressedBytes: packetBytes)
    }
}
