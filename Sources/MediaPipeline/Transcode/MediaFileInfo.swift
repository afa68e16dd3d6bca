/// What a media file holds, read by ``MediaFileInfo/probe(path:)``, which reads the whole file
/// (so a truncated or corrupt file is reported, not described).
public struct MediaFileInfo: Sendable, Equatable {
    /// The file.
    public var path: String
    /// Its format.
    public var kind: MediaFileKind
    /// Codec of compressed files (nil for WAV and Y4M).
    public var codec: MediaCodec?
    /// Duration in seconds.
    public var durationSeconds: Double
    /// Audio: sample rate in Hz (Ogg Opus: the original input rate), channels, samples per channel.
    public var sampleRate: Int = 0, channelCount: Int = 0, sampleFrames: Int64 = 0
    /// Sample encoding of a WAV file.
    public var sampleEncoding: String?
    /// Ogg Opus: pre-skip in 48 kHz samples, output gain in 1/256 dB, vendor, comments, packets.
    public var preSkip: Int = 0, outputGainQ8dB: Int = 0
    /// See ``preSkip``.
    public var vendor: String?
    /// See ``preSkip``.
    public var comments: [String] = []
    /// Video: picture size and frame rate (Y4M) or time base (IVF).
    public var width: Int = 0, height: Int = 0
    /// Frames per second (video).
    public var framesPerSecond: Double = 0
    /// Video frames, or Opus packets.
    public var frames: Int = 0
    /// Video keyframes (VP8 only; nil when not known).
    public var keyframes: Int?
    /// Bytes of compressed payload.
    public var compressedBytes: Int64 = 0
    /// WebM: each track, described as a file of its own would be (kind ``MediaFileKind/webm``,
    /// `codec` nil for codecs MediaPipeline does not decode); the fields above repeat the first
    /// video track's (or, without video, the first audio track's), and the duration is the
    /// longest track's.
    public var tracks: [MediaFileInfo] = []
    /// WebM: the track's number and Matroska codec ID.
    public var trackNumber: Int?
    /// See ``trackNumber``.
    public var codecID: String?
    /// WebM: why a track of a known codec is not decoded here (``WebMTrackInfo/unsupportedReason``).
    public var notDecodedReason: String?
    /// Average compressed bitrate in bits per second (0 for raw formats).
    public var bitrateBitsPerSecond: Double { durationSeconds > 0 ? Double(compressedBytes) * 8 / durationSeconds : 0 }

    /// Reads `path` through and describes it.
    public static func probe(path: String) throws -> MediaFileInfo {
        let kind = try MediaFileKind.detect(path: path)
        var info = MediaFileInfo(path: path, kind: kind, durationSeconds: 0)
        switch kind {
        case .wav:
            let reader = try WAVReader(path: path)
            var block: [Float] = []
            var frames: Int64 = 0
            while case let n = try reader.read(into: &block, maxFrames: 65536), n > 0 { frames += Int64(n) }
            info.sampleRate = reader.format.sampleRate
            info.channelCount = reader.format.channelCount
            info.sampleFrames = frames
            info.sampleEncoding = reader.format.encoding.rawValue
            info.durationSeconds = Double(frames) / Double(info.sampleRate)
        case .oggOpus:
            let reader = try OggOpusReader(path: path)
            info.codec = .opus
            info.sampleRate = reader.head.inputSampleRate
            info.channelCount = reader.head.channelCount
            info.preSkip = reader.head.preSkip
            info.outputGainQ8dB = reader.head.outputGainQ8dB
            info.vendor = reader.tags.vendor
            info.comments = reader.tags.comments
            var finalGranule: Int64 = 0
            while let packet = try reader.nextPacket() {
                _ = try OpusDecoder.samplesPerChannel(inPacket: packet.bytes, sampleRate: 48000)
                info.frames += 1
                info.compressedBytes += Int64(packet.bytes.count)
                if packet.granulePosition >= 0 { finalGranule = packet.granulePosition }
            }
            info.sampleFrames = max(0, finalGranule - Int64(reader.head.preSkip))
            info.durationSeconds = Double(info.sampleFrames) / 48000
        case .y4m:
            let reader = try Y4MReader(path: path, bufferCount: 1)
            while try reader.readFrame() != nil {}
            info.width = reader.header.width
            info.height = reader.header.height
            info.framesPerSecond = reader.header.framesPerSecond
            info.frames = reader.framesRead
            info.durationSeconds = Double(info.frames) / info.framesPerSecond
        case .ivf:
            let reader = try IVFReader(path: path)
            info.codec = reader.header.codec.mediaCodec
            info.width = reader.header.width
            info.height = reader.header.height
            info.framesPerSecond = Double(reader.header.timebaseDenominator) / Double(reader.header.timebaseNumerator)
            var keyframes = 0
            var first: Int64?
            var last: Int64 = 0
            while let frame = try reader.readFrame() {
                info.frames += 1
                info.compressedBytes += Int64(frame.bytes.count)
                if first == nil { first = frame.timestamp }
                last = frame.timestamp
                if (frame.bytes[0] & 0x01) == 0 { keyframes += 1 }  // VP8 frame tag: bit 0 clear on keyframes
            }
            if reader.header.codec == .vp8 { info.keyframes = keyframes }
            let units = IVFTiming.durationUnits(first: first ?? 0, last: last, frames: info.frames)
            info.durationSeconds = Double(units) / info.framesPerSecond
            if units != Int64(info.frames), info.durationSeconds > 0 {
                info.framesPerSecond = Double(info.frames) / info.durationSeconds
            }
        case .webm:
            info = try probeWebM(path: path)
        case .rawI420:
            break
        }
        return info
    }
}

extension MediaFileInfo {
    /// Reads a WebM file through, describing each track by its frames.
    fileprivate static func probeWebM(path: String) throws -> MediaFileInfo {
        let reader = try WebMReader(path: path)
        var tracks = reader.tracks.map { track in
            var info = MediaFileInfo(path: path, kind: .webm, codec: track.codec, durationSeconds: 0)
            info.trackNumber = track.number
            info.codecID = track.codecID
            info.notDecodedReason = track.unsupportedReason
            info.width = track.width
            info.height = track.height
            // Any value for a track not decoded here: one no integer holds reads as unknown (0).
            info.sampleRate = (try? track.samplingFrequency.checkedInteger("", in: 0...Int(UInt32.max))) ?? 0
            info.channelCount = track.channelCount
            if let head = track.opusHead {
                info.preSkip = head.preSkip
                info.outputGainQ8dB = head.outputGainQ8dB
                info.channelCount = head.channelCount
            }
            if track.isVideo { info.keyframes = 0 }
            return info
        }
        var first = [Int64?](repeating: nil, count: tracks.count)
        var last = [Int64](repeating: 0, count: tracks.count)
        var samples = [Int64](repeating: 0, count: tracks.count)
        while let frame = try reader.readFrame() {
            let index = frame.track
            tracks[index].frames += 1
            tracks[index].compressedBytes += Int64(frame.bytes.count)
            if first[index] == nil { first[index] = frame.timestampNanoseconds }
            last[index] = frame.timestampNanoseconds
            if frame.isKeyframe, tracks[index].keyframes != nil { tracks[index].keyframes! += 1 }
            if reader.tracks[index].codec == .opus {
                do {
                    samples[index] += Int64(try OpusDecoder.samplesPerChannel(inPacket: frame.bytes, sampleRate: 48000))
                } catch let error as MediaError {
                    throw MediaError(
                        error.code,
                        "track \(reader.tracks[index].number) frame \(tracks[index].frames - 1): \(error.message)",
                        file: path)
                }
                samples[index] -= MediaTime.samples48k(nanoseconds: frame.discardPaddingNanoseconds)
            }
        }
        for index in tracks.indices {
            let frames = tracks[index].frames
            if reader.tracks[index].codec == .opus {
                tracks[index].sampleFrames = max(0, samples[index] - Int64(tracks[index].preSkip))
                tracks[index].durationSeconds = Double(tracks[index].sampleFrames) / 48000
            } else if let start = first[index], frames > 0 {
                // The span of the frames' times and one average step more (one frame's
                // DefaultDuration when the track declares it).
                let span = Double(last[index] - start)  // both within MediaTime's limit: the difference fits
                let step =
                    reader.tracks[index].defaultDurationNanoseconds.map(Double.init)
                    ?? (frames > 1 ? span / Double(frames - 1) : 0)
                tracks[index].durationSeconds = (span + step) / 1e9
                if tracks[index].durationSeconds > 0 {
                    tracks[index].framesPerSecond = Double(frames) / tracks[index].durationSeconds
                }
            }
        }
        let main = reader.tracks.firstIndex(where: \.isVideo) ?? reader.tracks.firstIndex(where: \.isAudio) ?? 0
        var info = tracks[main]
        info.trackNumber = nil
        info.codecID = nil
        info.tracks = tracks
        info.durationSeconds = tracks.map(\.durationSeconds).max() ?? 0
        return info
    }
}

/// IVF timestamps count time-base units; most files step one unit per frame, but some writers
/// use a millisecond time base. The duration adds one average frame step to the span.
enum IVFTiming {
    /// Saturating: timestamps read from a file may be anything.
    static func durationUnits(first: Int64, last: Int64, frames: Int) -> Int64 {
        guard frames > 1, last > first else { return Int64(max(frames, 1)) }
        let (span, overflow) = last.subtractingReportingOverflow(first)
        guard !overflow else { return .max }
        let (units, beyond) = span.addingReportingOverflow(span / Int64(frames - 1))
        return beyond ? .max : units
    }
}
