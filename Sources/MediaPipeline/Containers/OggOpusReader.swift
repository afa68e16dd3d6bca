/// Reads an Ogg Opus file (RFC 7845): its headers, its packets, and its audio decoded with
/// pre-skip and end trimming applied, so that the output has exactly the encoded source's
/// length. Single-stream mono and stereo files (channel mapping family 0); chained and
/// multistream files are reported as unsupported. Streams: memory does not grow with the file.
public final class OggOpusReader {
    /// The file being read.
    public let path: String
    /// The identification header.
    public let head: OpusHead
    /// The comment header.
    public let tags: OpusTags
    private let file: FileByteReader
    private let packets: OggPacketReader
    /// Audio packets read so far.
    public private(set) var packetsRead = 0
    /// Bytes of the audio packets read so far (without container overhead).
    public private(set) var packetBytesRead: Int64 = 0

    /// Opens `path` and reads both headers.
    public init(path: String) throws {
        self.path = path
        do {
            file = try FileByteReader(path: path)
            packets = OggPacketReader(file: file)
            guard let first = try packets.nextPacket() else { throw MediaError(.truncated, "no Ogg packet") }
            head = try OpusHead.parse(first.bytes)
            guard first.isLast == false, let second = try packets.nextPacket() else {
                throw MediaError(.truncated, "stream ends before the OpusTags header")
            }
            tags = try OpusTags.parse(second.bytes)
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    /// The file's size in bytes, and how far reading has got (for progress display).
    public var fileSize: Int64 { file.size }
    /// Bytes consumed so far.
    public var bytesRead: Int64 { file.offset }

    /// The next audio packet, with the granule position of its page when it is the last packet
    /// completed there (-1 otherwise), and whether it ends the stream; nil after the last one.
    public func nextPacket() throws -> (bytes: [UInt8], granulePosition: Int64, isLast: Bool)? {
        do {
            guard let packet = try packets.nextPacket() else { return nil }
            packetsRead += 1
            packetBytesRead += Int64(packet.bytes.count)
            return (packet.bytes, packet.granulePosition, packet.isLast)
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    /// Decodes the whole stream at `sampleRate`, calling `body` with each block of interleaved
    /// samples (``OpusHead/channelCount`` channels) after trimming. Returns the samples per
    /// channel delivered: `(final granule − pre-skip) × sampleRate / 48000`.
    ///
    /// The header's output gain is applied.
    @discardableResult
    public func decode(sampleRate: Int = 48000, _ body: (UnsafeBufferPointer<Int16>) throws -> Void) throws -> Int64 {
        guard 48000 % sampleRate == 0, OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) else {
            throw MediaError.invalidArgument(
                "Opus decode rate \(sampleRate) Hz is not one of \(OpusEncoderConfiguration.supportedSampleRates)")
        }
        let decoder = try OpusDecoder(sampleRate: sampleRate, channelCount: head.channelCount)
        try decoder.setGain(q8dB: head.outputGainQ8dB)
        let factor = Int64(48000 / sampleRate)
        let channels = head.channelCount
        var pcm = [Int16](repeating: 0, count: decoder.maximumSamplesPerPacket * channels)
        var position48k: Int64 = 0  // decoded so far, including pre-skip
        var delivered: Int64 = 0
        let preSkip = Int64(head.preSkip)
        var index = 0
        while let packet = try nextPacket() {
            let count: Int
            do {
                count = try packet.bytes.withUnsafeBytes { raw in
                    try pcm.withUnsafeMutableBufferPointer { try decoder.decode(raw, into: $0) }
                }
            } catch let error as MediaError {
                throw MediaError(
                    error.code, "audio packet \(index): \(error.message)", file: path, codecStatus: error.codecStatus)
            }
            index += 1
            let start = position48k
            var end = start + Int64(count) * factor
            position48k = end
            if packet.isLast {
                guard packet.granulePosition >= preSkip else {
                    throw MediaError.invalidFormat(
                        "final granule position \(packet.granulePosition) is smaller than the pre-skip \(preSkip)",
                        file: path)
                }
                end = min(end, packet.granulePosition)  // end trimming (RFC 7845 §4.4)
            }
            let from = max(start, preSkip)
            if end > from {
                let first = Int((from - start) / factor) * channels
                let last = Int((end - start) / factor) * channels
                try pcm.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[first..<last])) }
                delivered += Int64(last - first) / Int64(channels)
            }
        }
        return delivered
    }
}
