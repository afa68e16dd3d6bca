/// One track of a WebM file: VP8 or VP9 video of a size, or Opus audio described by its
/// `OpusHead` (stored as the track's CodecPrivate, its pre-skip as CodecDelay).
public struct WebMTrack: Sendable, Equatable {
    /// The codec of the track's frames.
    public var codec: MediaCodec
    /// Video: the picture size.
    public var width = 0, height = 0
    /// Opus: the identification header.
    public var opusHead: OpusHead?

    /// A VP8 or VP9 video track of `width` × `height` pictures.
    public static func video(_ codec: VideoCodec, width: Int, height: Int) -> WebMTrack {
        WebMTrack(codec: codec.mediaCodec, width: width, height: height)
    }

    /// An Opus audio track.
    public static func opus(_ head: OpusHead) -> WebMTrack { WebMTrack(codec: .opus, opusHead: head) }
}

/// Writes a WebM file (the Matroska subset WebM uses) of VP8, VP9 and Opus tracks, whole or not
/// at all, seekable as vpxenc and ffmpeg write them:
///
/// - the Segment begins with a SeekHead (to Info, Tracks and Cues), Info (1 ms timestamps, the
///   Duration filled in at the end), and Tracks;
/// - a new Cluster starts at every video keyframe (with video; every 5 s of audio-only), and
///   before a block's time would leave the 16-bit range relative to its cluster;
/// - frames are SimpleBlocks (keyframe flag set for keyframes and every audio frame);
/// - Cues point at each cluster that starts with a video keyframe (or at every cluster of an
///   audio-only file), so players seek to keyframes.
///
/// Frames are written as they come (clusters are closed in place); the head is patched at
/// ``finish()``. Memory stays bounded: one cue per cluster.
///
/// In ``Mode/live`` the file is written in place for recordings that must survive a crash:
/// the Segment and its Clusters have unknown sizes, each Cluster (at most ``liveClusterMilliseconds``
/// long) is held in memory and written whole when the next one starts, so the file on disk
/// always ends after a complete Cluster and reads as a shorter recording. ``finish()`` then
/// adds the Cues, Duration, SeekHead and the sizes of the Segment and its Clusters, so a
/// finished live file is as seekable as any other.
public final class WebMWriter {
    /// How a file is written.
    public enum Mode: Sendable {
        /// Whole or not at all: a hidden file moved into place by ``WebMWriter/finish()``.
        case seekable
        /// In place, Cluster by Cluster: what was written survives the process.
        case live
    }

    /// How the file is written.
    public let mode: Mode
    /// The longest Cluster in live mode: at most this much is lost when the process dies.
    public static let liveClusterMilliseconds: Int64 = 1_000
    /// The destination.
    public let path: String
    /// The tracks, numbered from 1 in this order.
    public let tracks: [WebMTrack]
    /// Frames written per track, and the bytes of their frames.
    public private(set) var framesWritten: [Int64]
    public private(set) var payloadBytes: Int64 = 0

    private let output: AtomicFileWriter
    /// File offsets: where the Segment's size and data start, the reserved SeekHead space, and
    /// the Duration element (or its placeholder).
    private var segmentSizeOffset: Int64 = 0
    private var segmentDataStart: Int64 = 0
    private var seekHeadOffset: Int64 = 0
    private var durationOffset: Int64 = 0
    /// Positions of Info and Tracks relative to the Segment's data (for the SeekHead).
    private var infoPosition: Int64 = 0
    private var tracksPosition: Int64 = 0
    /// The open cluster: where its size field is, and its time in milliseconds.
    private var clusterSizeOffset: Int64?
    private var clusterTimeMs: Int64 = 0
    private var cues: [(timeMs: Int64, track: Int, clusterPosition: Int64)] = []
    private var scratch: [UInt8] = []
    /// Live mode: the open Cluster, written whole when it closes; and where each written
    /// Cluster starts and how long it is, for ``finish()`` to give it its size.
    private var liveCluster: [UInt8] = []
    private var liveClusters: [(offset: Int64, bytes: Int64)] = []
    private var endMs: Int64 = 0
    private var lastTimeMs: [Int64]
    private let hasVideo: Bool

    /// Space kept for the SeekHead at the start of the Segment (three entries fit in 60 bytes).
    private static let seekHeadReservedBytes = 96
    /// The longest audio-only cluster.
    private static let audioClusterMs: Int64 = 5_000

    /// Starts a file with `tracks`.
    /// - Throws: ``MediaError/Code/invalidArgument`` for no track, a video track of a size
    ///   outside 1...65535 or of an audio codec, an Opus track without its header.
    public init(path: String, tracks: [WebMTrack], mode: Mode = .seekable) throws {
        guard !tracks.isEmpty else { throw MediaError.invalidArgument("\(path): a WebM file needs a track") }
        for (index, track) in tracks.enumerated() {
            if track.codec == .opus {
                guard track.opusHead != nil else {
                    throw MediaError.invalidArgument("\(path): Opus track \(index + 1) has no OpusHead")
                }
            } else {
                guard (1...65535).contains(track.width), (1...65535).contains(track.height) else {
                    throw MediaError.invalidArgument(
                        "\(path): video track \(index + 1) size \(track.width)x\(track.height) is outside 1...65535")
                }
            }
        }
        self.path = path
        self.tracks = tracks
        framesWritten = Array(repeating: 0, count: tracks.count)
        lastTimeMs = Array(repeating: .min, count: tracks.count)
        hasVideo = tracks.contains { $0.codec != .opus }
        self.mode = mode
        output = try AtomicFileWriter(path: path, direct: mode == .live)
        try writeHead()
    }

    private func writeHead() throws {
        var bytes: [UInt8] = []
        EBML.appendMaster(EBML.ID.ebml, to: &bytes) { header in
            EBML.appendUnsigned(EBML.ID.ebmlVersion, 1, to: &header)
            EBML.appendUnsigned(EBML.ID.ebmlReadVersion, 1, to: &header)
            EBML.appendUnsigned(EBML.ID.ebmlMaxIDLength, 4, to: &header)
            EBML.appendUnsigned(EBML.ID.ebmlMaxSizeLength, 8, to: &header)
            EBML.appendString(EBML.ID.docType, "webm", to: &header)
            EBML.appendUnsigned(EBML.ID.docTypeVersion, 4, to: &header)
            EBML.appendUnsigned(EBML.ID.docTypeReadVersion, 2, to: &header)
        }
        EBML.appendID(EBML.ID.segment, to: &bytes)
        segmentSizeOffset = Int64(bytes.count)
        // Patched by finish(); "unknown" (all ones) until then in live mode.
        bytes += mode == .live ? Self.unknownSize : [0x01, 0, 0, 0, 0, 0, 0, 0]
        segmentDataStart = Int64(bytes.count)
        seekHeadOffset = Int64(bytes.count)
        EBML.appendVoid(totalBytes: Self.seekHeadReservedBytes, to: &bytes)

        infoPosition = Int64(bytes.count) - segmentDataStart
        var info: [UInt8] = []
        EBML.appendUnsigned(EBML.ID.timestampScale, 1_000_000, to: &info)
        EBML.appendString(EBML.ID.muxingApp, "MediaPipeline", to: &info)
        EBML.appendString(EBML.ID.writingApp, "MediaPipeline", to: &info)
        let durationStart = info.count
        if mode == .live {
            EBML.appendVoid(totalBytes: 11, to: &info)  // the Duration's place, until finish()
        } else {
            EBML.appendFloat(EBML.ID.duration, 0, to: &info)  // patched by finish()
        }
        EBML.appendID(EBML.ID.info, to: &bytes)
        EBML.appendSize(UInt64(info.count), to: &bytes)
        durationOffset = Int64(bytes.count + durationStart)
        bytes.append(contentsOf: info)

        tracksPosition = Int64(bytes.count) - segmentDataStart
        EBML.appendMaster(EBML.ID.tracks, to: &bytes) { list in
            for (index, track) in tracks.enumerated() {
                EBML.appendMaster(EBML.ID.trackEntry, to: &list) { entry in
                    EBML.appendUnsigned(EBML.ID.trackNumber, UInt64(index + 1), to: &entry)
                    EBML.appendUnsigned(EBML.ID.trackUID, UInt64(index + 1), to: &entry)
                    EBML.appendUnsigned(EBML.ID.flagLacing, 0, to: &entry)
                    switch track.codec.kind {
                    case .video:
                        EBML.appendUnsigned(EBML.ID.trackType, 1, to: &entry)
                        EBML.appendString(EBML.ID.codecID, track.codec.matroskaCodecID, to: &entry)
                        EBML.appendMaster(EBML.ID.video, to: &entry) { video in
                            EBML.appendUnsigned(EBML.ID.pixelWidth, UInt64(track.width), to: &video)
                            EBML.appendUnsigned(EBML.ID.pixelHeight, UInt64(track.height), to: &video)
                        }
                    case .audio:
                        let head = track.opusHead!
                        EBML.appendUnsigned(EBML.ID.trackType, 2, to: &entry)
                        EBML.appendString(EBML.ID.codecID, track.codec.matroskaCodecID, to: &entry)
                        EBML.appendElement(EBML.ID.codecPrivate, head.serialized(), to: &entry)
                        // Pre-skip in nanoseconds at 48 kHz; 80 ms of pre-roll after a seek (Matroska's Opus mapping).
                        EBML.appendUnsigned(
                            EBML.ID.codecDelay, UInt64(head.preSkip) * 1_000_000_000 / 48_000, to: &entry)
                        EBML.appendUnsigned(EBML.ID.seekPreRoll, 80_000_000, to: &entry)
                        EBML.appendMaster(EBML.ID.audio, to: &entry) { audio in
                            EBML.appendFloat(EBML.ID.samplingFrequency, 48_000, to: &audio)
                            EBML.appendUnsigned(EBML.ID.channels, UInt64(head.channelCount), to: &audio)
                        }
                    }
                }
            }
        }
        try output.write(bytes)
    }

    /// Appends one frame of track `track` (0-based) at media time `timestampMicroseconds`
    /// lasting `durationMicroseconds` (for the file's duration). Timestamps of a track must not
    /// go back. `discardPaddingNanoseconds` (the last Opus frame's) is how much of the frame's
    /// decoded end is padding to drop, so the track decodes to its exact length (it makes the
    /// frame a BlockGroup with DiscardPadding).
    /// - Throws: ``MediaError/Code/invalidArgument`` for an unknown track, an empty frame, a
    ///   timestamp before 0 or before the track's previous one, or a time, duration or padding
    ///   beyond ±2^61 ns.
    public func write(
        track: Int, _ frame: UnsafeRawBufferPointer, timestampMicroseconds: Int64, durationMicroseconds: Int64,
        isKeyframe: Bool, discardPaddingNanoseconds: Int64 = 0
    ) throws {
        guard tracks.indices.contains(track) else {
            throw MediaError.invalidArgument("\(path): no track \(track + 1) (the file has \(tracks.count))")
        }
        guard !frame.isEmpty else { throw MediaError.invalidArgument("\(path): an empty frame for track \(track + 1)") }
        // Within MediaTime's limit, the sums below fit in 64 bits.
        let limit = -MediaTime.limitMicroseconds...MediaTime.limitMicroseconds
        guard limit.contains(timestampMicroseconds), limit.contains(durationMicroseconds),
            limit.contains(discardPaddingNanoseconds / 1000)
        else {
            throw MediaError.invalidArgument(
                "\(path): track \(track + 1) frame at \(timestampMicroseconds) µs lasting \(durationMicroseconds) µs "
                    + "with \(discardPaddingNanoseconds) ns of padding: beyond the \(MediaTime.limitMicroseconds) µs "
                    + "a media time may have")
        }
        let timeMs = (timestampMicroseconds + 500) / 1000
        guard timestampMicroseconds >= 0 else {
            throw MediaError.invalidArgument(
                "\(path): track \(track + 1) frame at \(timestampMicroseconds) µs is before the file's start (0)")
        }
        guard timeMs >= lastTimeMs[track] else {
            throw MediaError.invalidArgument(
                "\(path): track \(track + 1) frame at \(timestampMicroseconds) µs comes before its previous one "
                    + "(\(lastTimeMs[track]) ms)")
        }
        lastTimeMs[track] = timeMs
        let isVideo = tracks[track].codec != .opus
        let startsCluster: Bool
        if !clusterIsOpen {
            startsCluster = true
        } else if mode == .live && timeMs - clusterTimeMs >= Self.liveClusterMilliseconds {
            startsCluster = true
        } else if hasVideo {
            startsCluster = (isVideo && isKeyframe) || timeMs - clusterTimeMs > Int64(Int16.max)
        } else {
            startsCluster = timeMs - clusterTimeMs >= Self.audioClusterMs
        }
        if startsCluster { try openCluster(timeMs: timeMs, cue: !hasVideo || (isVideo && isKeyframe), track: track) }
        let relative = timeMs - clusterTimeMs
        guard relative >= Int64(Int16.min) else {
            throw MediaError.invalidArgument(
                "\(path): track \(track + 1) frame at \(timeMs) ms is too far before its cluster (\(clusterTimeMs) ms)")
        }
        scratch.removeAll(keepingCapacity: true)
        if discardPaddingNanoseconds > 0 {
            // BlockGroup { Block, DiscardPadding }: a Block has no keyframe flag.
            var padding: [UInt8] = []
            EBML.appendSigned(EBML.ID.discardPadding, discardPaddingNanoseconds, to: &padding)
            var blockHeader: [UInt8] = []
            EBML.appendID(EBML.ID.block, to: &blockHeader)
            EBML.appendSize(UInt64(4 + frame.count), to: &blockHeader)
            EBML.appendID(EBML.ID.blockGroup, to: &scratch)
            EBML.appendSize(UInt64(blockHeader.count + 4 + frame.count + padding.count), to: &scratch)
            scratch.append(contentsOf: blockHeader)
            appendBlockHeader(track: track, relative: relative, flags: 0)
            try emit(scratch)
            try emit(frame)
            try emit(padding)
        } else {
            EBML.appendID(EBML.ID.simpleBlock, to: &scratch)
            EBML.appendSize(UInt64(4 + frame.count), to: &scratch)
            appendBlockHeader(track: track, relative: relative, flags: isKeyframe || !isVideo ? 0x80 : 0x00)
            try emit(scratch)
            try emit(frame)
        }
        framesWritten[track] += 1
        payloadBytes += Int64(frame.count)
        // The presentation ends where the frame does, less (Opus) the codec delay and padding
        // the decoder drops.
        var endMicroseconds = timestampMicroseconds + durationMicroseconds - discardPaddingNanoseconds / 1000
        if let head = tracks[track].opusHead { endMicroseconds -= Int64(head.preSkip) * 1_000_000 / 48_000 }
        endMs = max(endMs, (endMicroseconds + 500) / 1000)
    }

    /// Appends one frame (see ``write(track:_:timestampMicroseconds:durationMicroseconds:isKeyframe:discardPaddingNanoseconds:)``).
    public func write(track: Int, _ frame: EncodedFrame, durationMicroseconds: Int64) throws {
        try frame.withUnsafeBytes {
            try write(
                track: track, $0, timestampMicroseconds: frame.timestampMicroseconds,
                durationMicroseconds: durationMicroseconds, isKeyframe: frame.isKeyframe)
        }
    }

    /// Appends a block's track number (a variable-length integer), 16-bit relative time and flags.
    private func appendBlockHeader(track: Int, relative: Int64, flags: UInt8) {
        EBML.appendSize(UInt64(track + 1), to: &scratch)
        scratch.append(UInt8(truncatingIfNeeded: relative >> 8))
        scratch.append(UInt8(truncatingIfNeeded: relative))
        scratch.append(flags)
    }

    /// Block bytes go to the open live Cluster, or straight to the file.
    private func emit(_ bytes: UnsafeRawBufferPointer) throws {
        if mode == .live { liveCluster.append(contentsOf: bytes) } else { try output.write(bytes) }
    }

    private func emit(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try emit($0) } }

    private var clusterIsOpen: Bool { clusterSizeOffset != nil || !liveCluster.isEmpty }

    private func openCluster(timeMs: Int64, cue: Bool, track: Int) throws {
        try closeCluster()
        let start = output.position
        if cue { cues.append((timeMs, track, start - segmentDataStart)) }
        scratch.removeAll(keepingCapacity: true)
        EBML.appendID(EBML.ID.cluster, to: &scratch)
        let sizeAt = Int64(scratch.count)
        // Patched when it closes; in live mode "unknown": it ends where the next one starts.
        scratch += mode == .live ? Self.unknownSize : [0x01, 0, 0, 0, 0, 0, 0, 0]
        EBML.appendUnsigned(EBML.ID.timestamp, UInt64(timeMs), to: &scratch)
        if mode == .live {
            liveCluster.append(contentsOf: scratch)
        } else {
            try output.write(scratch)
            clusterSizeOffset = start + sizeAt
        }
        clusterTimeMs = timeMs
    }

    private func closeCluster() throws {
        if mode == .live {
            guard !liveCluster.isEmpty else { return }
            // One write of the whole Cluster, then to the operating system: a process that dies
            // later leaves a file that ends after this Cluster.
            liveClusters.append((output.position, Int64(liveCluster.count)))
            try output.write(liveCluster)
            try output.flush()
            liveCluster.removeAll(keepingCapacity: true)
            return
        }
        guard let sizeOffset = clusterSizeOffset else { return }
        let end = output.position
        try patchSize(at: sizeOffset, value: UInt64(end - sizeOffset - 8))
        try output.seek(to: end)
        clusterSizeOffset = nil
    }

    /// An 8-byte "unknown" size: all value bits set.
    private static let unknownSize: [UInt8] = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    private func patchSize(at offset: Int64, value: UInt64) throws {
        var bytes: [UInt8] = []
        EBML.appendSize(value, width: 8, to: &bytes)
        try output.seek(to: offset)
        try output.write(bytes)
    }

    /// Closes the last cluster, writes the Cues, the SeekHead, the Duration and the Segment's
    /// size, and moves the file into place (live mode: in place; to a pipe, which cannot seek
    /// back, without the Cues and patches).
    /// - Throws: ``MediaError/Code/truncated`` when no frame was written.
    public func finish() throws {
        guard framesWritten.contains(where: { $0 > 0 }) else {
            throw MediaError(.truncated, "no frame was written", file: path)
        }
        try closeCluster()
        guard output.isSeekable else {
            try output.commit()
            return
        }
        let cuesPosition = output.position - segmentDataStart
        var bytes: [UInt8] = []
        EBML.appendMaster(EBML.ID.cues, to: &bytes) { list in
            for cue in cues {
                EBML.appendMaster(EBML.ID.cuePoint, to: &list) { point in
                    EBML.appendUnsigned(EBML.ID.cueTime, UInt64(cue.timeMs), to: &point)
                    EBML.appendMaster(EBML.ID.cueTrackPositions, to: &point) { positions in
                        EBML.appendUnsigned(EBML.ID.cueTrack, UInt64(cue.track + 1), to: &positions)
                        EBML.appendUnsigned(EBML.ID.cueClusterPosition, UInt64(cue.clusterPosition), to: &positions)
                    }
                }
            }
        }
        try output.write(bytes)
        let end = output.position

        var seekHead: [UInt8] = []
        EBML.appendMaster(EBML.ID.seekHead, to: &seekHead) { list in
            for (id, position) in [
                (EBML.ID.info, infoPosition), (EBML.ID.tracks, tracksPosition), (EBML.ID.cues, cuesPosition),
            ] {
                EBML.appendMaster(EBML.ID.seek, to: &list) { seek in
                    var idBytes: [UInt8] = []
                    EBML.appendID(id, to: &idBytes)
                    EBML.appendElement(EBML.ID.seekID, idBytes, to: &seek)
                    EBML.appendUnsigned(EBML.ID.seekPosition, UInt64(position), to: &seek)
                }
            }
        }
        EBML.appendVoid(totalBytes: Self.seekHeadReservedBytes - seekHead.count, to: &seekHead)
        try output.seek(to: seekHeadOffset)
        try output.write(seekHead)

        // The whole 11-byte Duration element, over its placeholder (live mode: a Void).
        var duration: [UInt8] = []
        EBML.appendFloat(EBML.ID.duration, Double(endMs), to: &duration)
        try output.seek(to: durationOffset)
        try output.write(duration)

        try patchSize(at: segmentSizeOffset, value: UInt64(end - segmentDataStart))
        // Live Clusters get their sizes too: players warn of an unknown size inside a known one.
        let clusterHeaderBytes: Int64 = 4 + 8
        for cluster in liveClusters {
            try patchSize(at: cluster.offset + 4, value: UInt64(cluster.bytes - clusterHeaderBytes))
        }
        try output.seekToEnd()
        try output.commit()
    }
}
