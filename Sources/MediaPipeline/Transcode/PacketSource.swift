/// One compressed frame from a file, with what a container needs to store it again.
struct SourcePacket {
    /// The index of its track in ``PacketSource/tracks``.
    var track: Int
    var bytes: [UInt8]
    /// Its time as a WebM block stores it (an Opus packet's counts from the start of the
    /// stream, pre-skip included), in microseconds.
    var timeMicroseconds: Int64
    var durationMicroseconds: Int64
    /// An Opus packet's length in 48 kHz samples (0 for video).
    var samples48k = 0
    var isKeyframe: Bool
    /// Padding at the end of an Opus packet to drop (the stream's last), in nanoseconds.
    var discardPaddingNanoseconds: Int64 = 0
}

/// The compressed frames of an IVF, Ogg Opus or WebM file in file order, with their tracks
/// described as a WebM file would hold them (a WebM file's tracks of other codecs are left out
/// and named in ``skippedTracks``).
final class PacketSource {
    let path: String
    let tracks: [WebMTrack]
    /// Tracks not read, as "number (codec ID)".
    private(set) var skippedTracks: [String] = []
    private let reader: Reader
    /// Ogg: 48 kHz samples before the next packet, pre-skip included.
    private var position48k: Int64 = 0
    /// IVF: the time base in microseconds per unit, as a fraction.
    private var ivfUnitMicroseconds: (numerator: Int64, denominator: Int64) = (1, 1)

    private enum Reader {
        case ivf(IVFReader)
        case ogg(OggOpusReader)
        /// A WebM reader, and the index in `tracks` of each of its tracks (nil: skipped).
        case webm(WebMReader, [Int?])
    }

    init(path: String) throws {
        self.path = path
        switch try MediaFileKind.detect(path: path) {
        case .ivf:
            let ivf = try IVFReader(path: path)
            reader = .ivf(ivf)
            tracks = [.video(ivf.header.codec, width: ivf.header.width, height: ivf.header.height)]
            ivfUnitMicroseconds = (
                Int64(ivf.header.timebaseNumerator) * 1_000_000, Int64(ivf.header.timebaseDenominator)
            )
        case .oggOpus:
            let ogg = try OggOpusReader(path: path)
            reader = .ogg(ogg)
            tracks = [.opus(ogg.head)]
        case .webm:
            let webm = try WebMReader(path: path)
            var kept: [WebMTrack] = []
            var mapping: [Int?] = []
            for track in webm.tracks {
                switch track.codec {
                case .vp8, .vp9:
                    mapping.append(kept.count)
                    kept.append(WebMTrack(codec: track.codec!, width: track.width, height: track.height))
                case .opus:
                    mapping.append(kept.count)
                    kept.append(.opus(track.opusHead!))
                case nil:
                    mapping.append(nil)
                    skippedTracks.append("\(track.number) (\(track.codecID))")
                }
            }
            reader = .webm(webm, mapping)
            tracks = kept
        case let kind:
            throw MediaError.unsupported("is \(kind.rawValue); IVF, Ogg Opus or WebM is remuxed", file: path)
        }
    }

    /// The file's size and how far reading has got, for progress display.
    var progress: Double {
        let (read, size): (Int64, Int64)
        switch reader {
        case .ivf(let ivf): (read, size) = (ivf.bytesRead, ivf.fileSize)
        case .ogg(let ogg): (read, size) = (ogg.bytesRead, ogg.fileSize)
        case .webm(let webm, _): (read, size) = (webm.bytesRead, webm.fileSize)
        }
        return size > 0 ? Double(read) / Double(size) : 0
    }

    /// The next packet, or nil after the last.
    func next() throws -> SourcePacket? {
        switch reader {
        case .ivf(let ivf):
            guard let frame = try ivf.readFrame() else { return nil }
            let unit = ivfUnitMicroseconds
            // The reader refuses a timestamp whose time is beyond MediaTime's limit.
            return SourcePacket(
                track: 0, bytes: frame.bytes,
                timeMicroseconds: ivf.header.microseconds(timestamp: frame.timestamp) ?? 0,
                durationMicroseconds: unit.numerator / unit.denominator,
                isKeyframe: VideoBitstream.isKeyframe(frame.bytes, codec: tracks[0].codec))
        case .ogg(let ogg):
            guard let packet = try ogg.nextPacket() else { return nil }
            let samples = try opusSamples(packet.bytes, what: "audio packet \(ogg.packetsRead - 1)")
            let start = position48k
            position48k += Int64(samples)
            var padding: Int64 = 0
            if packet.isLast {
                // The final granule position trims the stream's end (RFC 7845 §4.4).
                guard packet.granulePosition >= Int64(ogg.head.preSkip), packet.granulePosition <= position48k else {
                    throw MediaError.invalidFormat(
                        "final granule position \(packet.granulePosition) is outside the last packet's "
                            + "\(start)...\(position48k)", file: path)
                }
                // Scaled without overflow: a final granule may trim far more than one packet.
                padding = MediaTime.scaledSaturating(
                    position48k - packet.granulePosition, by: 1_000_000_000, over: 48_000)
            }
            return SourcePacket(
                track: 0, bytes: packet.bytes,
                timeMicroseconds: MediaTime.scaledSaturating(start, by: 1_000_000, over: 48_000),
                durationMicroseconds: Int64(samples) * 1_000_000 / 48_000, samples48k: samples, isKeyframe: true,
                discardPaddingNanoseconds: padding)
        case .webm(let webm, let mapping):
            while let frame = try webm.readFrame() {
                guard let track = mapping[frame.track] else { continue }
                let source = webm.tracks[frame.track]
                var duration = frame.durationNanoseconds ?? source.defaultDurationNanoseconds ?? 0
                let samples =
                    source.codec == .opus
                    ? try opusSamples(frame.bytes, what: "track \(source.number) frame \(webm.framesRead - 1)") : 0
                if source.codec == .opus { duration = Int64(samples) * 1_000_000_000 / 48_000 }
                // Back to the block's own time: the writer stores the CodecDelay again.
                let blockTime = frame.timestampNanoseconds + source.codecDelayNanoseconds
                return SourcePacket(
                    track: track, bytes: frame.bytes, timeMicroseconds: blockTime / 1000,
                    durationMicroseconds: duration / 1000, samples48k: samples, isKeyframe: frame.isKeyframe,
                    discardPaddingNanoseconds: frame.discardPaddingNanoseconds)
            }
            return nil
        }
    }
}

extension PacketSource {
    /// An Opus packet's length in 48 kHz samples; a packet with no valid TOC is an error naming
    /// `what` in the file.
    fileprivate func opusSamples(_ bytes: [UInt8], what: String) throws -> Int {
        do {
            return try OpusDecoder.samplesPerChannel(inPacket: bytes, sampleRate: 48_000)
        } catch let error as MediaError {
            throw MediaError(error.code, "\(what): \(error.message)", file: path)
        }
    }
}

/// What the first bytes of a compressed video frame say.
enum VideoBitstream {
    /// True when `frame` starts a keyframe: VP8's frame tag has bit 0 clear (RFC 6386 §9.1);
    /// VP9's uncompressed header has frame_type 0 and does not just show an existing frame.
    static func isKeyframe(_ frame: [UInt8], codec: MediaCodec) -> Bool {
        isKeyframe(firstByte: frame.first, codec: codec)
    }

    /// True when a frame whose first byte is `first` starts a keyframe (see
    /// ``isKeyframe(_:codec:)``); false for an empty frame (nil).
    static func isKeyframe(firstByte first: UInt8?, codec: MediaCodec) -> Bool {
        guard let first else { return false }
        switch codec {
        case .vp8:
            return first & 0x01 == 0
        case .vp9:
            // frame_marker (2 bits), profile_low_bit, profile_high_bit, a reserved bit in
            // profile 3, show_existing_frame, frame_type.
            guard first >> 6 == 0b10 else { return false }
            let profile = Int((first >> 5) & 1) | Int((first >> 4) & 1) << 1
            var bit = profile == 3 ? 2 : 3  // bits left after the profile (and reserved) bits, from bit 3
            let showExisting = (first >> UInt8(bit)) & 1
            guard showExisting == 0 else { return false }
            bit -= 1
            return (first >> UInt8(bit)) & 1 == 0
        case .opus:
            return true
        }
    }
}
