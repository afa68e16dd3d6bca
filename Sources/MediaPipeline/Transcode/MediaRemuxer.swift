/// What a remux did.
public struct RemuxSummary: Sendable, Equatable {
    /// The file written.
    public var output: String
    /// The tracks written, in the output's order.
    public var tracks: [WebMTrack]
    /// Frames (video) or packets (Opus) written per track.
    public var frames: [Int64]
    /// Bytes of compressed frames written.
    public var compressedBytes: Int64
    /// Tracks of the inputs not written (codecs a WebM, IVF or Ogg Opus file does not hold
    /// here), as "file: number (codec ID)".
    public var skippedTracks: [String]
}

/// Moves compressed frames between containers without decoding them: IVF and Ogg Opus into
/// WebM (several inputs become the tracks of one file, interleaved by time), and a WebM file's
/// video track into IVF or its Opus track into Ogg Opus. Frames are copied byte for byte;
/// Opus keeps its pre-skip and end trimming, so it decodes to the same samples.
public enum MediaRemuxer {
    /// Remuxes `inputs` into `output`, whose extension names its format (.webm, .ivf, or
    /// .opus/.ogg).
    /// - Throws: ``MediaError`` naming the file for an input that is not IVF, Ogg Opus or WebM,
    ///   an output of another format, or (IVF, Ogg) inputs that hold other than one track of
    ///   its kind.
    @discardableResult
    public static func remux(inputs: [String], output: String, progress: ProgressHandler? = nil) throws -> RemuxSummary
    {
        guard !inputs.isEmpty else { throw MediaError.invalidArgument("remux needs an input file") }
        let sources = try inputs.map(PacketSource.init(path:))
        let skipped = sources.flatMap { source in source.skippedTracks.map { "\(source.path): \($0)" } }
        let summary: RemuxSummary
        switch MediaFileKind.forOutput(path: output) {
        case .webm:
            summary = try toWebM(sources, output: output, progress: progress)
        case .ivf:
            let (source, track) = try single(in: sources, output: output, kind: .video)
            summary = try toIVF(source, track: track, output: output, progress: progress)
        case .oggOpus:
            let (source, track) = try single(in: sources, output: output, kind: .audio)
            summary = try toOgg(source, track: track, output: output, progress: progress)
        default:
            throw MediaError.invalidArgument("\(output): remux writes .webm, .ivf or .opus/.ogg files")
        }
        progress?(1)
        return RemuxSummary(
            output: summary.output, tracks: summary.tracks, frames: summary.frames,
            compressedBytes: summary.compressedBytes, skippedTracks: skipped)
    }

    /// The one track of `kind` among the sources (an IVF or Ogg file holds one).
    private static func single(
        in sources: [PacketSource], output: String, kind: MediaKind
    ) throws -> (PacketSource, Int) {
        let found = sources.flatMap { source in
            source.tracks.indices.filter { source.tracks[$0].codec.kind == kind }.map { (source, $0) }
        }
        guard found.count == 1 else {
            throw MediaError.invalidArgument(
                "\(output): this format holds one \(kind == .video ? "VP8/VP9" : "Opus") track; the inputs hold "
                    + "\(found.count)")
        }
        return found[0]
    }

    private static func toWebM(
        _ sources: [PacketSource], output: String, progress: ProgressHandler?
    ) throws -> RemuxSummary {
        // Each source's tracks follow the previous sources' in the output.
        var firstTrack: [Int] = []
        var tracks: [WebMTrack] = []
        for source in sources {
            firstTrack.append(tracks.count)
            tracks += source.tracks
        }
        guard !tracks.isEmpty else {
            throw MediaError.unsupported("\(sources[0].path): no VP8, VP9 or Opus track to remux")
        }
        let writer = try WebMWriter(path: output, tracks: tracks)
        // Merge by time: each source's next packet waits until it is the earliest.
        var next = try sources.map { try $0.next() }
        var written = 0
        while let pick = next.indices.filter({ next[$0] != nil }).min(by: {
            next[$0]!.timeMicroseconds < next[$1]!.timeMicroseconds
        }) {
            let packet = next[pick]!
            try packet.bytes.withUnsafeBytes {
                try writer.write(
                    track: firstTrack[pick] + packet.track, $0, timestampMicroseconds: packet.timeMicroseconds,
                    durationMicroseconds: packet.durationMicroseconds, isKeyframe: packet.isKeyframe,
                    discardPaddingNanoseconds: packet.discardPaddingNanoseconds)
            }
            next[pick] = try sources[pick].next()
            written += 1
            if let progress, written % 64 == 0 {
                progress(sources.map(\.progress).reduce(0, +) / Double(sources.count))
            }
        }
        try writer.finish()
        return RemuxSummary(
            output: output, tracks: tracks, frames: writer.framesWritten, compressedBytes: writer.payloadBytes,
            skippedTracks: [])
    }

    private static func toIVF(
        _ source: PacketSource, track: Int, output: String, progress: ProgressHandler?
    ) throws -> RemuxSummary {
        let description = source.tracks[track]
        // Millisecond timestamps, as ffmpeg writes IVF from WebM: no rate is assumed.
        let writer = try IVFWriter(
            path: output,
            header: IVFHeader(
                codec: VideoCodec(mediaCodec: description.codec)!, width: description.width,
                height: description.height, timebaseNumerator: 1, timebaseDenominator: 1000))
        while let packet = try source.next() {
            guard packet.track == track else { continue }
            try writer.write(packet.bytes, timestamp: (packet.timeMicroseconds + 500) / 1000)
            if let progress, writer.header.frameCount % 64 == 0 { progress(source.progress) }
        }
        guard writer.header.frameCount > 0 else {
            throw MediaError(.truncated, "has no video frame", file: source.path)
        }
        try writer.finish()
        return RemuxSummary(
            output: output, tracks: [description], frames: [Int64(writer.header.frameCount)],
            compressedBytes: writer.payloadBytes, skippedTracks: [])
    }

    private static func toOgg(
        _ source: PacketSource, track: Int, output: String, progress: ProgressHandler?
    ) throws -> RemuxSummary {
        let description = source.tracks[track]
        let head = description.opusHead!
        let writer = try OggOpusWriter(path: output, head: head)
        var packets: Int64 = 0
        var bytes: Int64 = 0
        var padding48k: Int64 = 0
        while let packet = try source.next() {
            guard packet.track == track else { continue }
            guard padding48k == 0 else {
                throw MediaError.unsupported(
                    "an Opus packet follows one with DiscardPadding; Ogg Opus trims only the stream's end",
                    file: source.path)
            }
            try writer.write(packet: packet.bytes, samples48k: packet.samples48k)
            padding48k = MediaTime.samples48k(nanoseconds: packet.discardPaddingNanoseconds)
            packets += 1
            bytes += Int64(packet.bytes.count)
            if let progress, packets % 64 == 0 { progress(source.progress) }
        }
        guard packets > 0 else { throw MediaError(.truncated, "has no Opus packet", file: source.path) }
        try writer.finish(playableSamples48k: max(0, writer.packetSamples48k - Int64(head.preSkip) - padding48k))
        return RemuxSummary(
            output: output, tracks: [description], frames: [packets], compressedBytes: bytes, skippedTracks: [])
    }
}
