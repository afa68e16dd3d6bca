/// Writes an Ogg Opus file (RFC 7845) from Opus packets, whole or not at all.
///
/// Pages hold at most about one second of audio. The last packet is held back so that it can
/// go on the end-of-stream page with the granule position that trims the decoded output to
/// exactly the source's length.
public final class OggOpusWriter {
    /// The destination.
    public let path: String
    /// The identification header written.
    public let head: OpusHead
    private let output: AtomicFileWriter
    private let pages: OggPacketWriter
    private var held: [UInt8]?
    private var heldEnd: Int64 = 0
    private var samples48k: Int64 = 0
    private var pageStart48k: Int64 = 0
    /// The longest span of audio on one page, in 48 kHz samples.
    public var maximumPageDuration48k: Int64 = 48000

    /// Starts a file with the given headers. `serial` identifies the logical stream.
    public init(
        path: String, head: OpusHead, tags: OpusTags = OpusTags(vendor: "MediaPipeline"), serial: UInt32 = 0x4D50_4F50
    )
        throws
    {
        guard head.channelCount == 1 || head.channelCount == 2 else {
            throw MediaError.invalidArgument("Ogg Opus writer takes 1 or 2 channels, not \(head.channelCount)")
        }
        self.path = path
        self.head = head
        output = try AtomicFileWriter(path: path)
        pages = OggPacketWriter(output: output, serial: serial)
        try pages.write(head.serialized(), granulePosition: 0, flush: true)
        try pages.write(tags.serialized(), granulePosition: 0, flush: true)
    }

    /// Appends one Opus packet lasting `samples48k` samples at 48 kHz.
    public func write(packet: [UInt8], samples48k duration: Int) throws {
        guard !packet.isEmpty else { throw MediaError.invalidArgument("empty Opus packet for \(path)") }
        if let held { try pages.write(held, granulePosition: heldEnd, flush: false) }
        if samples48k - pageStart48k >= maximumPageDuration48k {
            try pages.flush()
            pageStart48k = samples48k
        }
        samples48k += Int64(duration)
        held = packet
        heldEnd = samples48k
    }

    /// 48 kHz samples in the packets written so far (pre-skip included): the granule position
    /// of the last packet.
    public var packetSamples48k: Int64 { samples48k }

    /// Ends the stream so that a decoder outputs exactly `playableSamples48k` samples (the
    /// source's length at 48 kHz), and moves the file into place.
    /// - Precondition: the packets cover pre-skip plus `playableSamples48k`, and the trim
    ///   falls within the last packet.
    public func finish(playableSamples48k: Int64) throws {
        guard let held else { throw MediaError.invalidArgument("Ogg Opus file \(path) has no audio packet") }
        let end = Int64(head.preSkip) + playableSamples48k
        guard end <= samples48k else {
            throw MediaError.invalidArgument(
                "\(path): packets hold \(samples48k) samples; \(end) needed for the declared length")
        }
        try pages.write(held, granulePosition: end, flush: true, endOfStream: true)
        try output.commit()
    }
}
