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
    /// samples (``OpusHead/decodedChannelCount`` channels) after trimming. Returns the samples per
    /// channel delivered: `(final granule − pre-skip) × sampleRate / 48000`.
    ///
    /// The header's output gain is applied.
    @discardableResult
    public func decode(sampleRate: Int = 48000, _ body: (UnsafeBufferPointer<Int16>) throws -> Void) throws -> Int64 {
        var stream = try OpusStreamDecoder(head: head, sampleRate: sampleRate)
        let preSkip = Int64(head.preSkip)
        while let packet = try nextPacket() {
            if packet.isLast, packet.granulePosition < preSkip {
                throw MediaError.invalidFormat(
                    "final granule position \(packet.granulePosition) is smaller than the pre-skip \(preSkip)",
                    file: path)
            }
            do {
                // The last packet's granule position ends the stream (RFC 7845 §4.4).
                try packet.bytes.withUnsafeBytes {
                    try stream.decode($0, endLimit48k: packet.isLast ? packet.granulePosition : nil, body)
                }
            } catch let error as MediaError {
                throw error.attributed(to: path)
            }
        }
        return stream.delivered
    }
}
