/// Reads a WebM file (or a Matroska file of the same subset) frame by frame, as it streams:
/// what vpxenc, ffmpeg, GStreamer's webmmux, mkvmerge and browsers' MediaRecorder write.
///
/// - The head (EBML header, Info, Tracks) is read by `init`; frames then come in file order,
///   from every track, through ``readFrame()``.
/// - SimpleBlocks and BlockGroups (with BlockDuration, ReferenceBlock, DiscardPadding); Xiph,
///   EBML and fixed-size lacing, each laced frame returned on its own.
/// - Segments and Clusters of unknown size (live recordings): an unknown-size Cluster ends at
///   the next element that cannot be its child; an unknown-size Segment at the end of the file.
/// - Void, CRC-32, SeekHead, Cues, Tags, Chapters and elements unknown here are skipped.
/// - Memory stays bounded: one frame (and the frames of one laced block) at a time; the head's
///   elements are limited in size.
///
/// Every truncation or corruption is a ``MediaError`` naming the element and its byte offset.
/// Encrypted or compressed tracks (ContentEncodings) and chained Segments are refused as
/// ``MediaError/Code/unsupported``.
public final class WebMReader {
    /// The file being read.
    public let path: String
    /// The EBML DocType: "webm" or "matroska".
    public let docType: String
    /// The tracks, in the order of their TrackEntries.
    public let tracks: [WebMTrackInfo]
    /// Nanoseconds per timestamp tick (Info's TimestampScale; 1,000,000 by default).
    public let timestampScaleNanoseconds: Int64
    /// The duration Info declares, in nanoseconds (nil when it declares none).
    public let durationNanoseconds: Int64?
    /// Frames returned so far.
    public private(set) var framesRead = 0
    /// The largest frame accepted, in bytes.
    public static let maximumFrameBytes = 64 << 20
    /// The largest EBML header, Info or Tracks element accepted, in bytes.
    static let maximumHeadBytes: Int64 = 16 << 20

    private let file: FileByteReader
    /// The Segment: its header, and where its data ends (nil: at the end of the file).
    private let segment: EBMLElementHeader
    /// The Cluster being read, if any, and its Timestamp once read.
    private var cluster: EBMLElementHeader?
    private var clusterTimestamp: Int64?
    /// An element header read but not yet handled (it ended an unknown-size Cluster).
    private var peeked: EBMLElementHeader?
    /// Frames of the block last read (more than one when laced), returned one by one.
    private var pending: [WebMFrame] = []
    private var pendingIndex = 0
    /// Track index by track number.
    private var trackIndexByNumber: [Int: Int] = [:]

    /// The file's size in bytes (0 if unknown), for progress display.
    public var fileSize: Int64 { file.size }
    /// Bytes consumed so far.
    public var bytesRead: Int64 { file.offset }

    /// Opens `path` and reads its head: the EBML header, then the Segment's elements up to the
    /// first Cluster (Info and Tracks among them).
    /// - Throws: ``MediaError`` naming the file, the element and its offset, for anything
    ///   but a WebM or Matroska file with a Tracks element before its first Cluster.
    public init(path: String) throws {
        self.path = path
        do {
            file = try FileByteReader(path: path)
            guard let ebml = try EBML.readHeader(from: file) else {
                throw MediaError(.truncated, "file is empty")
            }
            guard ebml.id == EBML.ID.ebml else {
                throw MediaError.invalidFormat("not a WebM file: it starts with \(ebml.label), not an EBML header")
            }
            docType = try Self.readEBMLHeader(ebml, from: file)
            var top = try EBML.readHeader(from: file)
            while let header = top, header.id == EBML.ID.void {
                try Self.skip(header, in: file)
                top = try EBML.readHeader(from: file)
            }
            guard let segment = top else {
                throw MediaError(.truncated, "file ends at byte \(file.offset), after its EBML header")
            }
            guard segment.id == EBML.ID.segment else {
                throw MediaError.invalidFormat("\(segment.label) follows the EBML header; a Segment was expected")
            }
            self.segment = segment

            var scale: Int64 = 1_000_000
            var durationTicks: Double?
            var tracks: [WebMTrackInfo]?
            while let header = try EBML.readHeader(from: file) {
                try Self.checkInside(header, segment)
                if header.id == EBML.ID.cluster {
                    peeked = header
                    break
                }
                switch header.id {
                case EBML.ID.info:
                    let bytes = try Self.readWhole(header, from: file)
                    (scale, durationTicks) = try Self.parseInfo(bytes, header)
                case EBML.ID.tracks where tracks == nil:
                    tracks = try Self.parseTracks(try Self.readWhole(header, from: file), header)
                case EBML.ID.ebml, EBML.ID.segment:
                    throw MediaError.unsupported(
                        "\(header.label): a second Segment before the first Cluster (chained Segments are not read)")
                default:
                    try Self.skip(header, in: file)
                }
                if let end = segment.end, file.offset >= end { break }
            }
            guard let tracks else {
                throw MediaError.invalidFormat(
                    "the Segment at byte \(segment.offset) has no Tracks before its first Cluster")
            }
            self.tracks = tracks
            timestampScaleNanoseconds = scale
            durationNanoseconds = try durationTicks.map {
                try ($0 * Double(scale)).checkedInteger("Info: Duration × TimestampScale, in ns,", in: 0...Int64.max)
            }
            for (index, track) in tracks.enumerated() { trackIndexByNumber[track.number] = index }
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    /// The next frame of any track in file order, or nil at the end of the Segment.
    /// - Throws: ``MediaError`` naming the element and offset of a truncation or corruption.
    public func readFrame() throws -> WebMFrame? {
        do {
            while pendingIndex >= pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingIndex = 0
                guard let header = try nextHeader() else {
                    try checkComplete()
                    return nil
                }
                try handle(header)
            }
            let frame = pending[pendingIndex]
            pendingIndex += 1
            framesRead += 1
            return frame
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    // MARK: - Walking the Segment

    private func nextHeader() throws -> EBMLElementHeader? {
        if let header = peeked {
            peeked = nil
            return header
        }
        if let end = segment.end, file.offset >= end {
            // What follows a known-size Segment: nothing, or a second (chained) Segment.
            guard let after = try EBML.readHeader(from: file) else { return nil }
            if after.id == EBML.ID.ebml || after.id == EBML.ID.segment {
                throw MediaError.unsupported(
                    "\(after.label): a second Segment follows the first (chained Segments are not read)")
            }
            throw MediaError.invalidFormat("\(after.label) lies after the Segment's end at byte \(end)")
        }
        return try EBML.readHeader(from: file)
    }

    /// At the end of the file: every element with a known size must be complete.
    private func checkComplete() throws {
        for open in [cluster, segment].compactMap({ $0 }) {
            if let end = open.end, file.offset < end {
                throw MediaError(
                    .truncated,
                    "\(open.label) declares \(open.size!) bytes, but the file ends at byte \(file.offset) (truncated file)"
                )
            }
        }
    }

    private func handle(_ header: EBMLElementHeader) throws {
        if let open = cluster {
            let inside: Bool
            if let end = open.end {
                inside = header.offset < end
            } else {
                inside = !Self.isSegmentLevel(header.id)
            }
            if inside {
                try Self.checkInside(header, open)
                try handleClusterChild(header)
                return
            }
            cluster = nil
        }
        try Self.checkInside(header, segment)
        switch header.id {
        case EBML.ID.cluster:
            cluster = header
            clusterTimestamp = nil
        case EBML.ID.ebml, EBML.ID.segment:
            throw MediaError.unsupported("\(header.label): a second Segment (chained Segments are not read)")
        default:
            try Self.skip(header, in: file)
        }
    }

    private func handleClusterChild(_ header: EBMLElementHeader) throws {
        switch header.id {
        case EBML.ID.timestamp:
            let value = try Self.readSmallValue(header, from: file)
            guard value <= UInt64(Int64.max / 2) else {
                throw MediaError.invalidFormat("\(header.label): cluster timestamp \(value) is out of range")
            }
            clusterTimestamp = Int64(value)
        case EBML.ID.simpleBlock:
            try readBlock(header, keyframe: nil)
        case EBML.ID.blockGroup:
            try readBlockGroup(header)
        default:
            try Self.skip(header, in: file)
        }
    }

    /// Elements that can only be children of a Segment (or the start of another file): they
    /// end an unknown-size Cluster.
    private static func isSegmentLevel(_ id: UInt32) -> Bool {
        switch id {
        case EBML.ID.cluster, EBML.ID.cues, EBML.ID.seekHead, EBML.ID.info, EBML.ID.tracks, EBML.ID.tags,
            EBML.ID.chapters, EBML.ID.attachments, EBML.ID.ebml, EBML.ID.segment:
            return true
        default:
            return false
        }
    }

    // MARK: - Blocks

    private func readBlockGroup(_ group: EBMLElementHeader) throws {
        guard let end = group.end else {
            throw MediaError.invalidFormat(
                "\(group.label) has an unknown size, which only a Segment or Cluster may have")
        }
        let first = pending.count
        var sawBlock = false
        var hasReference = false
        var durationTicks: UInt64?
        var discardPadding: Int64 = 0
        while file.offset < end {
            guard let child = try EBML.readHeader(from: file) else {
                throw MediaError(.truncated, "\(group.label) is cut at byte \(file.offset) (truncated file)")
            }
            try Self.checkInside(child, group)
            switch child.id {
            case EBML.ID.block:
                guard !sawBlock else {
                    throw MediaError.invalidFormat("\(group.label) holds a second Block, \(child.label)")
                }
                sawBlock = true
                try readBlock(child, keyframe: false)
            case EBML.ID.blockDuration:
                durationTicks = try Self.readSmallValue(child, from: file)
            case EBML.ID.referenceBlock:
                hasReference = true
                try Self.skip(child, in: file)
            case EBML.ID.discardPadding:
                let raw = try Self.readSmallValue(child, from: file)
                let shift = UInt64(64 - 8 * Int(child.size!))
                discardPadding = child.size == 0 ? 0 : Int64(bitPattern: raw << shift) >> shift
                try Self.checkDuration(discardPadding, "DiscardPadding", in: child)
            default:
                try Self.skip(child, in: file)
            }
        }
        guard sawBlock else { throw MediaError.invalidFormat("\(group.label) holds no Block") }
        for index in first..<pending.count { pending[index].isKeyframe = !hasReference }
        if let last = pending.indices.last, last >= first {
            pending[last].discardPaddingNanoseconds = max(0, discardPadding)
        }
        if let durationTicks, pending.count - first == 1 {
            let (nanoseconds, overflow) = Int64(clamping: durationTicks).multipliedReportingOverflow(
                by: timestampScaleNanoseconds)
            guard !overflow, MediaTime.isWithinLimit(nanoseconds: nanoseconds) else {
                throw MediaError.invalidFormat("\(group.label): BlockDuration \(durationTicks) is out of range")
            }
            pending[first].durationNanoseconds = nanoseconds
        }
    }

    /// Reads a SimpleBlock or a Block (`keyframe` nil: from its flags) into `pending`.
    private func readBlock(_ block: EBMLElementHeader, keyframe: Bool?) throws {
        guard let end = block.end else {
            throw MediaError.invalidFormat(
                "\(block.label) has an unknown size, which only a Segment or Cluster may have")
        }
        if let remaining = file.remaining, end - file.offset > remaining {
            throw MediaError(
                .truncated,
                "\(block.label) declares \(block.size!) bytes, but the file ends at byte \(file.size) (truncated file)")
        }
        guard let clusterTime = clusterTimestamp else {
            throw MediaError.invalidFormat("\(block.label) comes before its Cluster's Timestamp")
        }
        func byte() throws -> UInt8 {
            guard file.offset < end, let value = try file.readByte() else {
                throw MediaError.invalidFormat("\(block.label): its header runs past the block's \(block.size!) bytes")
            }
            return value
        }
        // Track number (a variable-length integer), 16-bit relative time, flags.
        let first = try byte()
        let numberLength = EBML.vintLength(first)
        guard numberLength > 0 else { throw MediaError.invalidFormat("\(block.label): invalid track number byte 0x00") }
        var number = UInt64(first) & ((1 << (8 - UInt64(numberLength))) - 1)
        for _ in 1..<numberLength { number = number << 8 | UInt64(try byte()) }
        guard let track = trackIndexByNumber[Int(clamping: number)] else {
            throw MediaError.invalidFormat("\(block.label) names track \(number), which the Tracks do not list")
        }
        let relative = Int16(bitPattern: UInt16(try byte()) << 8 | UInt16(try byte()))
        let flags = try byte()
        let ticks = clusterTime + Int64(relative)
        let (blockTime, overflow) = ticks.multipliedReportingOverflow(by: timestampScaleNanoseconds)
        guard !overflow, MediaTime.isWithinLimit(nanoseconds: blockTime) else {
            throw MediaError.invalidFormat("\(block.label): time \(ticks) ticks is out of range")
        }
        // The codec's delay is subtracted from every block's time (Matroska's CodecDelay; both
        // within MediaTime's limit, so the difference fits, and must stay within it).
        let time = blockTime - tracks[track].codecDelayNanoseconds
        guard MediaTime.isWithinLimit(nanoseconds: time) else {
            throw MediaError.invalidFormat(
                "\(block.label): time \(blockTime) ns less the CodecDelay is \(time) ns, which is out of range")
        }

        let laceCount = (flags & 0x06) == 0 ? 1 : Int(try byte()) + 1
        var sizes = [Int](repeating: 0, count: laceCount)
        func remaining() -> Int { Int(end - file.offset) }
        switch flags & 0x06 {
        case 0x00:
            sizes[0] = remaining()
        case 0x02:  // Xiph: each size but the last as a run of 255s and a final byte below 255
            var total = 0
            for index in 0..<laceCount - 1 {
                var size = 0
                while true {
                    let value = try byte()
                    size += Int(value)
                    if value != 255 { break }
                }
                sizes[index] = size
                total += size
            }
            sizes[laceCount - 1] = remaining() - total
        case 0x04:  // fixed: equal sizes
            guard remaining() % laceCount == 0 else {
                throw MediaError.invalidFormat(
                    "\(block.label): \(remaining()) bytes do not split into \(laceCount) equal laced frames")
            }
            for index in 0..<laceCount { sizes[index] = remaining() / laceCount }
        default:  // EBML: the first size, then signed differences from the size before
            var total = 0
            var previous = 0
            for index in 0..<laceCount - 1 {
                let lead = try byte()
                let length = EBML.vintLength(lead)
                guard length > 0 else { throw MediaError.invalidFormat("\(block.label): invalid EBML lace size") }
                var value = Int64(lead) & ((1 << (8 - Int64(length))) - 1)
                for _ in 1..<length { value = value << 8 | Int64(try byte()) }
                if index == 0 {
                    previous = Int(value)
                } else {
                    previous += Int(value - ((1 << (7 * Int64(length) - 1)) - 1))
                }
                guard previous >= 0, previous <= Self.maximumFrameBytes else {
                    throw MediaError.invalidFormat("\(block.label): laced frame \(index) has size \(previous)")
                }
                sizes[index] = previous
                total += previous
            }
            sizes[laceCount - 1] = remaining() - total
        }
        if sizes.last! < 0 {
            throw MediaError.invalidFormat(
                "\(block.label): its \(laceCount) laced frames' sizes exceed the block's \(block.size!) bytes")
        }
        var frameTime = time
        for (index, size) in sizes.enumerated() {
            guard size > 0 else {
                throw MediaError.invalidFormat("\(block.label): frame \(index) of the block is empty")
            }
            guard size <= Self.maximumFrameBytes else {
                throw MediaError.invalidFormat(
                    "\(block.label): a frame of \(size) bytes, above the \(Self.maximumFrameBytes)-byte limit")
            }
            let bytes = try file.readBytes(size, what: "the frame data of \(block.label)")
            pending.append(
                WebMFrame(
                    track: track, bytes: bytes, timestampNanoseconds: frameTime,
                    isKeyframe: keyframe ?? ((flags & 0x80) != 0)))
            if index < laceCount - 1 {
                // Each step is within MediaTime's limit, so the sum fits; the time must stay within it.
                frameTime += try lacedFrameDuration(track: track, bytes, in: block.label)
                guard MediaTime.isWithinLimit(nanoseconds: frameTime) else {
                    throw MediaError.invalidFormat(
                        "\(block.label): laced frame \(index + 1)'s time \(frameTime) ns is out of range")
                }
            }
        }
    }

    /// How far a laced frame moves the next frame's time: the track's DefaultDuration, or an
    /// Opus packet's own duration.
    private func lacedFrameDuration(track: Int, _ bytes: [UInt8], in label: String) throws -> Int64 {
        if let duration = tracks[track].defaultDurationNanoseconds { return duration }
        if tracks[track].codec == .opus {
            do {
                let samples = try OpusDecoder.samplesPerChannel(inPacket: bytes, sampleRate: 48_000)
                return Int64(samples) * 1_000_000_000 / 48_000
            } catch let error as MediaError {
                throw MediaError(error.code, "\(label): laced Opus frame: \(error.message)")
            }
        }
        return 0
    }

    // MARK: - Element helpers

    /// Checks that `child` lies within `parent` (when the parent's size is known).
    private static func checkInside(_ child: EBMLElementHeader, _ parent: EBMLElementHeader) throws {
        guard let parentEnd = parent.end else { return }
        guard let childEnd = child.end else {
            // An unknown-size Cluster inside a known-size Segment ends with the Segment.
            if child.id == EBML.ID.cluster { return }
            throw MediaError.invalidFormat(
                "\(child.label) has an unknown size, which only a Segment or Cluster may have")
        }
        guard childEnd <= parentEnd else {
            throw MediaError.invalidFormat(
                "\(child.label) declares \(child.size!) bytes, past the end of \(parent.label) at byte \(parentEnd)")
        }
    }

    private static func skip(_ header: EBMLElementHeader, in file: FileByteReader) throws {
        guard let size = header.size else {
            throw MediaError.invalidFormat("\(header.label) has an unknown size and cannot be skipped")
        }
        try file.skip(size, what: header.label)
    }

    /// Reads a master element of the head whole (bounded by ``maximumHeadBytes``).
    private static func readWhole(_ header: EBMLElementHeader, from file: FileByteReader) throws -> EBMLBytes {
        guard let size = header.size else {
            throw MediaError.invalidFormat(
                "\(header.label) has an unknown size, which only a Segment or Cluster may have")
        }
        guard size <= maximumHeadBytes else {
            throw MediaError.invalidFormat(
                "\(header.label) declares \(size) bytes, above the \(maximumHeadBytes)-byte limit")
        }
        if let remaining = file.remaining, size > remaining {
            throw MediaError(
                .truncated, "\(header.label) declares \(size) bytes, but only \(remaining) remain (truncated file)")
        }
        return EBMLBytes(bytes: try file.readBytes(Int(size), what: header.label), fileOffset: header.dataOffset)
    }

    /// Reads an integer element of at most 8 bytes.
    private static func readSmallValue(_ header: EBMLElementHeader, from file: FileByteReader) throws -> UInt64 {
        guard let size = header.size, size <= 8 else {
            throw MediaError.invalidFormat(
                "\(header.label): an integer of \(header.size.map(String.init) ?? "unknown") bytes (8 at most)")
        }
        let bytes = try file.readBytes(Int(size), what: header.label)
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    // MARK: - The head

    /// Checks the EBML header's versions and limits; returns its DocType.
    private static func readEBMLHeader(_ header: EBMLElementHeader, from file: FileByteReader) throws -> String {
        let body = try readWhole(header, from: file)
        var docType = "matroska"
        var readVersion: UInt64 = 1
        var docTypeReadVersion: UInt64 = 1
        var maxIDLength: UInt64 = 4
        var maxSizeLength: UInt64 = 8
        try body.forEachChild(in: 0..<body.bytes.count, of: header) { child, range in
            switch child.id {
            case EBML.ID.docType: docType = body.string(range)
            case EBML.ID.ebmlReadVersion: readVersion = try body.unsigned(range, child)
            case EBML.ID.docTypeReadVersion: docTypeReadVersion = try body.unsigned(range, child)
            case EBML.ID.ebmlMaxIDLength: maxIDLength = try body.unsigned(range, child)
            case EBML.ID.ebmlMaxSizeLength: maxSizeLength = try body.unsigned(range, child)
            default: break
            }
        }
        guard docType == "webm" || docType == "matroska" else {
            throw MediaError.unsupported("EBML DocType '\(docType)' is not WebM or Matroska")
        }
        guard readVersion <= 1 else { throw MediaError.unsupported("EBMLReadVersion \(readVersion) (1 is read)") }
        guard docTypeReadVersion <= 4 else {
            throw MediaError.unsupported("DocTypeReadVersion \(docTypeReadVersion) (up to 4 is read)")
        }
        guard maxIDLength <= 4, maxSizeLength <= 8 else {
            throw MediaError.unsupported(
                "EBMLMaxIDLength \(maxIDLength) / EBMLMaxSizeLength \(maxSizeLength) (4 and 8 at most are read)")
        }
        return docType
    }

    private static func parseInfo(_ body: EBMLBytes, _ header: EBMLElementHeader) throws -> (Int64, Double?) {
        var scale: UInt64 = 1_000_000
        var duration: Double?
        try body.forEachChild(in: 0..<body.bytes.count, of: header) { child, range in
            switch child.id {
            case EBML.ID.timestampScale: scale = try body.unsigned(range, child)
            case EBML.ID.duration: duration = try body.float(range, child)
            default: break
            }
        }
        guard scale > 0, scale <= 1_000_000_000 else {
            throw MediaError.invalidFormat("\(header.label): TimestampScale \(scale) ns is outside 1...1,000,000,000")
        }
        if let duration, !(duration.isFinite && duration >= 0 && duration < 1e15) {
            throw MediaError.invalidFormat("\(header.label): Duration \(duration) is not a valid time")
        }
        return (Int64(scale), duration)
    }

    private static func parseTracks(_ body: EBMLBytes, _ header: EBMLElementHeader) throws -> [WebMTrackInfo] {
        var tracks: [WebMTrackInfo] = []
        try body.forEachChild(in: 0..<body.bytes.count, of: header) { entry, range in
            guard entry.id == EBML.ID.trackEntry else { return }
            let track = try parseTrackEntry(body, range, entry)
            guard !tracks.contains(where: { $0.number == track.number }) else {
                throw MediaError.invalidFormat("\(entry.label): track number \(track.number) is used twice")
            }
            tracks.append(track)
        }
        guard !tracks.isEmpty else { throw MediaError.invalidFormat("\(header.label) lists no TrackEntry") }
        return tracks
    }

    /// A duration (nanoseconds) read from `element`, within MediaTime's limit, or a typed error
    /// naming the element `name`.
    private static func checkDuration(_ value: Int64, _ name: String, in element: EBMLElementHeader) throws {
        guard MediaTime.isWithinLimit(nanoseconds: value) else {
            throw MediaError.invalidFormat(
                "\(element.label): \(name) \(value) ns is beyond the \(MediaTime.limitNanoseconds) ns a duration may have"
            )
        }
    }

    private static func parseTrackEntry(
        _ body: EBMLBytes, _ range: Range<Int>, _ entry: EBMLElementHeader
    ) throws -> WebMTrackInfo {
        func checkedDuration(_ value: UInt64, _ name: String, _ element: EBMLElementHeader) throws -> Int64 {
            let nanoseconds = Int64(clamping: value)
            try checkDuration(nanoseconds, name, in: element)
            return nanoseconds
        }
        var track = WebMTrackInfo(number: 0, type: 0, codecID: "")
        var hasCodecDelay = false  // without one, the Opus pre-skip comes from the OpusHead
        try body.forEachChild(in: range, of: entry) { child, range in
            switch child.id {
            case EBML.ID.trackNumber: track.number = Int(clamping: try body.unsigned(range, child))
            case EBML.ID.trackType: track.type = Int(clamping: try body.unsigned(range, child))
            case EBML.ID.codecID: track.codecID = body.string(range)
            case EBML.ID.codecPrivate: track.codecPrivate = Array(body.bytes[range])
            case EBML.ID.codecDelay:
                track.codecDelayNanoseconds = try checkedDuration(body.unsigned(range, child), "CodecDelay", child)
                hasCodecDelay = true
            case EBML.ID.seekPreRoll:
                track.seekPreRollNanoseconds = try checkedDuration(body.unsigned(range, child), "SeekPreRoll", child)
            case EBML.ID.defaultDuration:
                let value = try checkedDuration(body.unsigned(range, child), "DefaultDuration", child)
                track.defaultDurationNanoseconds = value > 0 ? value : nil
            case EBML.ID.contentEncodings:
                throw MediaError.unsupported(
                    "\(entry.label): the track's frames are compressed or encrypted (ContentEncodings), which is not read"
                )
            case EBML.ID.video:
                try body.forEachChild(in: range, of: child) { field, range in
                    switch field.id {
                    case EBML.ID.pixelWidth: track.width = Int(clamping: try body.unsigned(range, field))
                    case EBML.ID.pixelHeight: track.height = Int(clamping: try body.unsigned(range, field))
                    default: break
                    }
                }
            case EBML.ID.audio:
                try body.forEachChild(in: range, of: child) { field, range in
                    switch field.id {
                    case EBML.ID.samplingFrequency: track.samplingFrequency = try body.float(range, field)
                    case EBML.ID.channels: track.channelCount = Int(clamping: try body.unsigned(range, field))
                    default: break
                    }
                }
            default: break
            }
        }
        guard track.number > 0 else { throw MediaError.invalidFormat("\(entry.label) has no TrackNumber") }
        track.codec = MediaCodec(matroskaCodecID: track.codecID)
        if track.codec?.kind == .video {
            guard track.type == 1 || track.type == 0 else {
                throw MediaError.invalidFormat("\(entry.label): \(track.codecID) in a track of type \(track.type)")
            }
            track.type = 1
            guard track.width > 0, track.height > 0 else {
                throw MediaError.invalidFormat(
                    "\(entry.label): video track \(track.number) has no picture size (PixelWidth/PixelHeight)")
            }
        }
        if track.codec == .opus {
            guard track.type == 2 || track.type == 0 else {
                throw MediaError.invalidFormat("\(entry.label): \(track.codecID) in a track of type \(track.type)")
            }
            track.type = 2
            var head: OpusHead
            if track.codecPrivate.isEmpty {
                guard (1...2).contains(track.channelCount) else {
                    throw MediaError.unsupported(
                        "\(entry.label): Opus track \(track.number) has no OpusHead and \(track.channelCount) channels")
                }
                head = OpusHead(
                    channelCount: track.channelCount, preSkip: 0,
                    inputSampleRate: try track.samplingFrequency.checkedInteger(
                        "\(entry.label): Opus track \(track.number): SamplingFrequency", in: 0...Int(UInt32.max)))
            } else {
                do {
                    head = try OpusHead.parse(track.codecPrivate)
                } catch let error as MediaError where error.code == .unsupported {
                    // A variant not handled here (multistream Opus): the track is listed and
                    // skipped, the rest of the file read.
                    track.codec = nil
                    track.unsupportedReason = error.message
                    return track
                } catch let error as MediaError {
                    throw MediaError(error.code, "\(entry.label): CodecPrivate: \(error.message)")
                }
            }
            if hasCodecDelay {
                // Pre-skip is a 16-bit count of 48 kHz samples: at most 1.37 s.
                guard track.codecDelayNanoseconds <= 65_535 * 1_000_000_000 / 48_000 else {
                    throw MediaError.invalidFormat(
                        "\(entry.label): CodecDelay \(track.codecDelayNanoseconds) ns is longer than any Opus pre-skip")
                }
                head.preSkip = Int((track.codecDelayNanoseconds * 48_000 + 500_000_000) / 1_000_000_000)
            }
            track.opusHead = head
        }
        return track
    }
}
