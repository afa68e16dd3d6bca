import Foundation
import Testing

@testable import MediaPipeline

/// One packet as ffmpeg's Matroska demuxer hands it over (`-c copy -f framemd5`).
struct Packet: Equatable, CustomStringConvertible {
    var ptsMilliseconds: Int64?
    var size: Int
    var md5: String
    var description: String { "\(ptsMilliseconds.map(String.init) ?? "-") \(size) \(md5.prefix(8))" }
}

/// The packets of each stream of `path`, by track order, as ffmpeg reads them, with the file's
/// own times (an Opus track's less its CodecDelay).
func ffmpegPackets(_ path: String) throws -> [Int: [Packet]] {
    let lines = try reference(
        "ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0", "-copyts", "-c", "copy", "-f", "framemd5", "-"])
    var streams: [Int: [Packet]] = [:]
    for line in lines.split(separator: "\n") where !line.hasPrefix("#") {
        let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        // Packets with side data (DiscardPadding) carry more fields after the sixth.
        guard fields.count >= 6, let stream = Int(fields[0]), let size = Int(fields[4]) else { continue }
        streams[stream, default: []].append(Packet(ptsMilliseconds: Int64(fields[2]), size: size, md5: fields[5]))
    }
    return streams
}

/// Every frame of `path` read by ``WebMReader``, by track index.
private func ourPackets(_ path: String) throws -> (reader: WebMReader, frames: [Int: [WebMFrame]]) {
    let reader = try WebMReader(path: path)
    var frames: [Int: [WebMFrame]] = [:]
    while let frame = try reader.readFrame() { frames[frame.track, default: []].append(frame) }
    return (reader, frames)
}

private func packets(_ frames: [WebMFrame], withTimes: Bool) -> [Packet] {
    frames.map { frame in
        var md5 = MD5()
        md5.update(frame.bytes)
        return Packet(
            // ffmpeg's 1 ms ticks round a 6.5 ms CodecDelay to 7.
            ptsMilliseconds: withTimes ? Int64((Double(frame.timestampNanoseconds) / 1e6).rounded(.down)) : nil,
            size: frame.bytes.count,
            md5: md5.finalize())
    }
}

@Suite("WebM reader against ffmpeg, vpxdec, GStreamer and mkvmerge files", .timeLimit(.minutes(5)))
struct WebMReaderTests {
    @Test(
        "a WebM whose Opus SamplingFrequency no integer holds (a container fuzzer's find) is a typed error naming the element, in every command"
    )
    func hugeSamplingFrequency() throws {
        let path = Fixtures.packageRoot + "/Tests/Fixtures/regressions/webm-huge-sampling-frequency.webm"
        #expect(FileManager.default.fileExists(atPath: path))
        do {
            _ = try WebMReader(path: path)
            Issue.record("the file was read")
        } catch let error as MediaError {
            #expect(error.code == .invalidFormat)
            #expect(error.message.contains("SamplingFrequency"), "\(error)")
            #expect(error.description.contains("webm-huge-sampling-frequency.webm"), "\(error)")
        }
        // The CLI: one line, non-zero, no crash (a crash is a signal: status above 128 or a trap).
        for arguments in [["info", path], ["decode", path, TemporaryFolder().file("out.y4m")]] {
            let result = try pipebench(arguments)
            #expect(result.status == 1, "pipebench \(arguments[0]): status \(result.status), \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains("SamplingFrequency") == true, "\(result.stderr)")
        }
    }

    @Test(
        "a WebM whose audio is 5.1 Opus (multistream, as ffmpeg writes it) reads whole: the audio decodes folded to stereo, as ffmpeg's libopus decode folded alike"
    )
    func surroundOpus() throws {
        let folder = TemporaryFolder()
        let path = folder.file("surround.webm")
        // Six different tones, one per channel, so a channel put in the wrong place shows.
        let tones = (0..<6).map { "sine=frequency=\(220 + 110 * $0):duration=1" }
        _ = try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x36:rate=10:duration=1"]
                + tones.flatMap { ["-f", "lavfi", "-i", $0] } + [
                    "-filter_complex", "[1:a][2:a][3:a][4:a][5:a][6:a]join=inputs=6:channel_layout=5.1[a]", "-map",
                    "0:v", "-map", "[a]", "-c:v", "libvpx", "-c:a", "libopus", "-mapping_family", "1", "-b:a", "256k",
                    "-shortest", path,
                ])
        let reader = try WebMReader(path: path)
        let audio = try #require(reader.tracks.first { $0.codecID == "A_OPUS" })
        #expect(audio.codec == .opus && audio.opusHead?.mappingFamily == 1 && audio.opusHead?.channelCount == 6)
        let info = try pipebench(["info", path])
        #expect(info.status == 0 && info.stdout.contains("Opus, 6 ch") && info.stdout.contains("VP8 64x36"))
        // The video, as ffmpeg decodes it, frame for frame.
        let decoded = try pipebench(["decode", path, folder.file("video.y4m"), "--md5", "--quiet"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let ours = decoded.stdout.split(separator: "\n").map { String($0.prefix(32)) }
        let theirs = try reference(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-f", "framemd5", "-pix_fmt", "yuv420p", "-"]
        ).split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            String($0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces))
        }
        #expect(ours.count == 10 && ours == theirs, "\(ours) \(theirs)")
        // The audio: stereo, against ffmpeg's libopus decode of the six channels (its order
        // FL FR FC LFE BL BR) folded with the weights the fold-down is meant to use, written
        // here: fronts to their side, centre and LFE at -3 dB to both, surrounds at -3 dB to
        // their side, each side's sum scaled to 1.
        let wav = folder.file("audio.wav")
        #expect(try pipebench(["decode", path, wav, "--quiet"]).status == 0)
        let stereo = try wavSamples(wav)
        let six = try ffmpegAudio(path, libopus: true)
        let c = 0.7071
        let side = 1 + 3 * c
        let weights: [(left: Double, right: Double)] = [
            (1 / side, 0), (0, 1 / side), (c / side, c / side), (c / side, c / side), (c / side, 0), (0, c / side),
        ]
        let frames = min(stereo.count / 2, six.count / 6)
        #expect(frames >= 47_000, "\(stereo.count / 2) and \(six.count / 6) frames")
        var signal = 0.0
        var noise = 0.0
        for frame in 0..<frames {
            var left = 0.0
            var right = 0.0
            for channel in 0..<6 {
                left += Double(six[6 * frame + channel]) * weights[channel].left
                right += Double(six[6 * frame + channel]) * weights[channel].right
            }
            for (expected, got) in [(left, stereo[2 * frame]), (right, stereo[2 * frame + 1])] {
                signal += expected * expected
                noise += (expected - Double(got)) * (expected - Double(got))
            }
        }
        let snr = 10 * log10(signal / max(noise, 1))
        #expect(signal > 0 && snr >= 40, "SNR \(snr) dB against ffmpeg's decode folded alike")
        // A family not handled (255, no defined order): the track is listed with why, and skipped.
        var odd = OpusHead(channelCount: 3, preSkip: 312, inputSampleRate: 48_000)
        odd.mappingFamily = 255
        odd.streamCount = 3
        odd.channelMapping = [0, 1, 2]
        let other = folder.file("family255.webm")
        let writer = try WebMWriter(path: other, tracks: [.opus(odd)])
        let packet = try encodedTone(1, with: try OpusEncoder(configuration: OpusEncoderConfiguration()))[0]
        try writer.write(track: 0, packet, durationMicroseconds: 20_000)
        try writer.finish()
        let skipped = try #require(try WebMReader(path: other).tracks.first)
        #expect(skipped.codec == nil && skipped.unsupportedReason?.contains("family 255") == true, "\(skipped)")
        let refused = try pipebench(["decode", other, folder.file("x.wav")])
        #expect(refused.status == 1 && refused.stderr.contains("is not decoded here"), "\(refused.stderr)")
    }

    @Test("numbers read from files convert checked: NaN, infinities and values out of range are typed errors")
    func checkedConversions() throws {
        #expect(try 48_000.4.checkedInteger("rate", in: 0...Int(UInt32.max)) == 48_000)
        #expect(try (-0.4).checkedInteger("x", in: Int64(0)...Int64.max) == 0)
        for value in [Double.nan, .infinity, -.infinity, 1e300, -1, Double(Int64.max)] {
            #expect(throws: MediaError.self) {
                _ = try value.checkedInteger("SamplingFrequency", in: 0...Int(UInt32.max))
            }
        }
        #expect(throws: MediaError.self) { _ = try FrameRate.nearest(toStepNanoseconds: 0) }
        #expect(try FrameRate.nearest(toStepNanoseconds: 1e9 / 30) == (30, 1))
    }

    /// WebM files as the tools people use write them, from the odd-size Y4M and speech samples.
    private static func toolFiles(in folder: TemporaryFolder) throws -> [String: String] {
        var files: [String: String] = [:]
        let y4m = Fixtures.oddY4M
        files["vpxenc VP8"] = folder.file("vpxenc8.webm")
        try reference("vpxenc", ["-q", "--codec=vp8", "--kf-max-dist=10", "-o", files["vpxenc VP8"]!, y4m])
        files["vpxenc VP9"] = folder.file("vpxenc9.webm")
        try reference("vpxenc", ["-q", "--codec=vp9", "--kf-max-dist=10", "-o", files["vpxenc VP9"]!, y4m])
        let ffmpegArguments = [
            "-nostdin", "-v", "error", "-y", "-i", y4m, "-i", Fixtures.speechWAV, "-t", "2", "-c:v", "libvpx", "-b:v",
            "200k", "-c:a", "libopus", "-shortest",
        ]
        files["ffmpeg VP8+Opus"] = folder.file("ffmpeg.webm")
        try reference("ffmpeg", ffmpegArguments + [files["ffmpeg VP8+Opus"]!])
        // Written to a pipe, ffmpeg cannot seek back: an unknown-size Segment, no Cues.
        files["ffmpeg to a pipe"] = folder.file("ffmpeg-pipe.webm")
        try reference(
            "sh", ["-c", "ffmpeg \(ffmpegArguments.joined(separator: " ")) -f webm - > \(files["ffmpeg to a pipe"]!)"])
        for (name, streamable) in [("GStreamer webmmux", "false"), ("GStreamer webmmux streamable", "true")] {
            let path = folder.file("gst-\(streamable).webm")
            try reference(
                "gst-launch-1.0",
                [
                    "-q", "videotestsrc", "num-buffers=45", "!", "video/x-raw,width=160,height=90,framerate=15/1", "!",
                    "vp8enc", "!", "webmmux", "streamable=\(streamable)", "name=mux", "!", "filesink",
                    "location=\(path)", "audiotestsrc", "num-buffers=150", "!", "audio/x-raw,rate=48000,channels=2",
                    "!", "opusenc", "!", "mux.",
                ])
            files[name] = path
        }
        files["mkvmerge (Matroska)"] = folder.file("mkvmerge.mkv")
        try reference("mkvmerge", ["-q", "-o", files["mkvmerge (Matroska)"]!, files["ffmpeg VP8+Opus"]!])
        return files
    }

    @Test(
        "files of vpxenc, ffmpeg, GStreamer and mkvmerge: every packet as ffmpeg reads it, every picture as vpxdec decodes it, Opus to ffmpeg's exact samples"
    )
    func toolFilesReadAsTheToolsReadThem() throws {
        let folder = TemporaryFolder()
        for (name, path) in try Self.toolFiles(in: folder).sorted(by: { $0.key < $1.key }) {
            let (reader, frames) = try ourPackets(path)
            let reference = try ffmpegPackets(path)
            #expect(reader.tracks.count == reference.count, "\(name)")
            for (index, track) in reader.tracks.enumerated() {
                let ours = packets(frames[index] ?? [], withTimes: true)
                #expect(!ours.isEmpty, "\(name) track \(index)")
                let theirs = reference[index] ?? []
                let first =
                    (0..<min(ours.count, theirs.count)).first { ours[$0] != theirs[$0] }
                    ?? min(ours.count, theirs.count)
                #expect(
                    ours == theirs,
                    "\(name) track \(index): \(ours.count) vs \(theirs.count) packets, from \(first): \(ours.dropFirst(first).prefix(3)) vs \(theirs.dropFirst(first).prefix(3))"
                )
                if track.isVideo {
                    // The first frame is a keyframe; VP8's flags agree with its frame tags (bit 0 clear
                    // on keyframes).
                    #expect(frames[index]?.first?.isKeyframe == true, "\(name)")
                    if track.codec == .vp8 {
                        #expect(
                            frames[index]?.allSatisfy { $0.isKeyframe == ($0.bytes[0] & 1 == 0) } == true, "\(name)")
                    }
                }
            }
            // Video: the pictures vpxdec decodes, MD5 for MD5.
            if let video = reader.tracks.firstIndex(where: \.isVideo) {
                let summary = try VideoFileDecoder.decode(input: path, output: .none, computeMD5: true)
                #expect(summary.frames == Int64(frames[video]?.count ?? -1), "\(name)")
                #expect(summary.frameMD5s == (try vpxdecFrameMD5s(path)), "\(name)")
                #expect(summary.width == reader.tracks[video].width, "\(name)")
            }
            // Audio: the samples ffmpeg's libopus decode gives, to the sample, at the exact count.
            if let audio = reader.tracks.first(where: \.isAudio) {
                let wav = folder.file("\(name).wav")
                let summary = try AudioFileDecoder.decode(input: path, output: wav)
                let raw = folder.file("\(name).s16")
                try MediaPipelineTests.reference(
                    "ffmpeg", ["-nostdin", "-v", "error", "-c:a", "libopus", "-i", path, "-f", "s16le", raw])
                let expected = try rawInt16(raw)
                #expect(expected.count == Int(summary.frames) * audio.channelCount, "\(name)")
                #expect(try wavSamples(wav) == expected, "\(name)")
            }
        }
    }

    @Test(
        "lacing (Xiph, EBML, fixed), BlockGroups, Void, CRC-32 and unknown elements, unknown-size Segment and Clusters")
    func handBuiltFile() throws {
        let folder = TemporaryFolder()
        let path = folder.file("laced.webm")
        let built = try LacedFile.build()
        try Data(built.bytes).write(to: URL(fileURLWithPath: path))
        let (reader, frames) = try ourPackets(path)
        #expect(reader.tracks.map(\.codecID) == ["A_OPUS", "V_VP8"])
        #expect(reader.tracks.map(\.number) == [7, 3])
        #expect(reader.tracks[0].opusHead?.preSkip == 312)
        #expect(reader.durationNanoseconds == nil)

        // Every frame, in order, as written; the same packets ffmpeg demuxes.
        let audio = frames[0] ?? []
        #expect(audio.map(\.bytes) == built.audioFrames)
        let demuxed = try ffmpegPackets(path)
        #expect(
            packets(audio, withTimes: true) == demuxed[0], "\(packets(audio, withTimes: true)) vs \(demuxed[0] ?? [])")
        // Laced frames after the first are one Opus frame (20 ms) apart.
        #expect(audio.map { $0.timestampNanoseconds / 1_000_000 } == built.audioTimesMilliseconds)
        // The BlockGroup's padding lands on its last frame only.
        #expect(
            audio.map(\.discardPaddingNanoseconds)
                == built.audioFrames.indices.map { $0 == built.audioFrames.count - 1 ? 5_000_000 : 0 })
        let video = frames[1] ?? []
        #expect(video.map(\.bytes) == built.videoFrames)
        // A SimpleBlock's keyframe flag, and a BlockGroup with a ReferenceBlock is not a keyframe.
        #expect(video.map(\.isKeyframe) == [true, false])
        #expect(video.last?.durationNanoseconds == 40_000_000)
        #expect(packets(video, withTimes: true) == demuxed[1])
    }

    @Test("bad element sizes, IDs and blocks are typed errors naming the element and its byte offset")
    func badElements() throws {
        let folder = TemporaryFolder()
        let built = try LacedFile.build()
        func rejected(_ words: String, code: MediaError.Code = .invalidFormat, _ mutate: (inout [UInt8]) -> Void) throws
        {
            var bytes = built.bytes
            mutate(&bytes)
            let path = folder.file("bad-\(UUID().uuidString).webm")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                _ = try ourPackets(path)
                Issue.record("accepted a file with \(words)")
            } catch let error as MediaError {
                #expect(error.file == path)
                #expect(error.code == code, "\(error)")
                #expect(error.message.contains(words), "\(error)")
            }
        }
        let offsets = built.offsets
        try rejected("DocType 'xebm'", code: .unsupported) { $0[offsets.docType] = UInt8(ascii: "x") }
        try rejected("not a WebM file") { $0[0] = 0x1B }
        try rejected("names track 9, which the Tracks do not list") { $0[offsets.firstBlockTrack] = 0x89 }
        try rejected("SimpleBlock at byte \(offsets.firstBlock) comes before its Cluster's Timestamp") {
            $0[offsets.clusterTimestamp] = 0xEC  // the Timestamp becomes a Void
        }
        try rejected("has no Tracks before its first Cluster") { $0[offsets.tracks + 3] ^= 0x01 }
        try rejected("TrackEntry at byte \(offsets.secondTrackEntry): track number 7 is used twice") {
            $0[offsets.secondTrackNumber] = 7
        }
        try rejected("SimpleBlock at byte \(offsets.firstBlock): its 3 laced frames' sizes exceed the block's") {
            $0[offsets.firstBlock + 1] = 0x40  // the Xiph-laced block shrinks to 12 bytes
            $0[offsets.firstBlock + 2] = 12
        }
        try rejected("has an unknown size, which only a Segment or Cluster may have") {
            $0[offsets.firstBlock + 1] = 0xFF
        }
        try rejected("compressed or encrypted (ContentEncodings)", code: .unsupported) {
            // The Opus track's SeekPreRoll (0x56BB) becomes ContentEncodings (0x6D80): a master of
            // one 8-byte element, which the reader refuses before reading it.
            $0[offsets.seekPreRoll] = 0x6D
            $0[offsets.seekPreRoll + 1] = 0x80
        }
    }

    @Test("a WebM file truncated at any byte is a typed error naming the element and offset")
    func truncation() throws {
        let folder = TemporaryFolder()
        let path = folder.file("small.webm")
        try WebMTestFiles.writeSmallAV(path)
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        _ = try ourPackets(path)
        let cut = folder.file("cut.webm")
        var failures: [String] = []
        for length in 0..<whole.count {
            try Data(whole[0..<length]).write(to: URL(fileURLWithPath: cut))
            do {
                _ = try ourPackets(cut)
                failures.append("\(length): accepted")
            } catch let error as MediaError {
                if error.file != cut { failures.append("\(length): does not name the file: \(error)") }
                if length > 0, !error.message.contains("byte") { failures.append("\(length): no offset: \(error)") }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }
}

/// Small WebM files for the reader's tests.
enum WebMTestFiles {
    /// Three 16x12 VP8 frames and 100 ms of Opus, written by ``WebMWriter`` (known sizes, Cues).
    static func writeSmallAV(_ path: String) throws {
        let opus = try OpusEncoder()
        let head = OpusHead(channelCount: 2, preSkip: opus.preSkip48kHz, inputSampleRate: 48000)
        let writer = try WebMWriter(path: path, tracks: [.video(.vp8, width: 16, height: 12), .opus(head)])
        let encoder = try VPXEncoder(configuration: VPXEncoderConfiguration(width: 16, height: 12))
        let audio = try encodedTone(5, with: opus)
        for index in 0..<3 {
            let frame = try encoder.encode(try syntheticPicture(width: 16, height: 12, frame: index))
            try frame.withUnsafeBytes {
                try writer.write(
                    track: 0, $0, timestampMicroseconds: Int64(index) * 33_333, durationMicroseconds: 33_333,
                    isKeyframe: frame.isKeyframe)
            }
            for packet in audio[index * 2..<min(audio.count, index * 2 + 2)] {
                try writer.write(track: 1, packet, durationMicroseconds: 20_000)
            }
        }
        try writer.finish()
    }
}

/// A file no muxer here writes, built element by element: an unknown-size Segment with a Void
/// and an unknown element before Tracks; an Opus track numbered 7 and a VP8 track numbered 3;
/// an unknown-size Cluster with a CRC-32, Xiph-, EBML- and fixed-laced SimpleBlocks, a video
/// SimpleBlock and a BlockGroup (laced Opus Block with DiscardPadding; a video Block with a
/// ReferenceBlock and a BlockDuration), ended by a second Cluster and Cues.
private struct LacedFile {
    var bytes: [UInt8] = []
    var audioFrames: [[UInt8]] = []
    var audioTimesMilliseconds: [Int64] = []
    var videoFrames: [[UInt8]] = []
    var offsets = Offsets()

    struct Offsets {
        var docType = 0, tracks = 0, secondTrackEntry = 0, secondTrackNumber = 0, seekPreRoll = 0
        var clusterTimestamp = 0, firstBlock = 0, firstBlockTrack = 0
    }

    /// An Opus packet of `size` bytes: a valid TOC (CELT fullband 20 ms, stereo, one frame) and
    /// patterned bytes; only the container is under test.
    private static func opusPacket(_ size: Int, seed: Int) -> [UInt8] {
        [0xFC] + (1..<size).map { UInt8(truncatingIfNeeded: $0 * 7 + seed * 31) }
    }

    static func build() throws -> LacedFile {
        var file = LacedFile()
        var out: [UInt8] = []
        EBML.appendMaster(EBML.ID.ebml, to: &out) { header in
            EBML.appendUnsigned(EBML.ID.ebmlVersion, 1, to: &header)
            EBML.appendUnsigned(EBML.ID.ebmlReadVersion, 1, to: &header)
            EBML.appendString(EBML.ID.docType, "webm", to: &header)
            EBML.appendUnsigned(EBML.ID.docTypeVersion, 4, to: &header)
            EBML.appendUnsigned(EBML.ID.docTypeReadVersion, 2, to: &header)
        }
        file.offsets.docType = (0..<out.count - 4).first { Array(out[$0..<$0 + 4]) == Array("webm".utf8) }!
        EBML.appendID(EBML.ID.segment, to: &out)
        out.append(0xFF)  // unknown size
        EBML.appendVoid(totalBytes: 20, to: &out)
        EBML.appendElement(0x1A2B_3C4D, [1, 2, 3, 4, 5], to: &out)  // an element unknown here
        EBML.appendMaster(EBML.ID.info, to: &out) { info in
            EBML.appendUnsigned(EBML.ID.timestampScale, 1_000_000, to: &info)
        }
        file.offsets.tracks = out.count
        var tracks: [UInt8] = []
        let head = OpusHead(channelCount: 2, preSkip: 312, inputSampleRate: 48000)
        var audioEntry: [UInt8] = []
        EBML.appendUnsigned(EBML.ID.trackNumber, 7, to: &audioEntry)
        EBML.appendUnsigned(EBML.ID.trackType, 2, to: &audioEntry)
        EBML.appendString(EBML.ID.codecID, "A_OPUS", to: &audioEntry)
        EBML.appendElement(EBML.ID.codecPrivate, head.serialized(), to: &audioEntry)
        let seekPreRollAt = audioEntry.count
        EBML.appendUnsigned(EBML.ID.seekPreRoll, 80_000_000, to: &audioEntry)
        EBML.appendMaster(EBML.ID.audio, to: &audioEntry) { audio in
            EBML.appendFloat(EBML.ID.samplingFrequency, 48_000, to: &audio)
            EBML.appendUnsigned(EBML.ID.channels, 2, to: &audio)
        }
        var videoEntry: [UInt8] = []
        let videoNumberAt = videoEntry.count + 2
        EBML.appendUnsigned(EBML.ID.trackNumber, 3, to: &videoEntry)
        EBML.appendUnsigned(EBML.ID.trackType, 1, to: &videoEntry)
        EBML.appendString(EBML.ID.codecID, "V_VP8", to: &videoEntry)
        EBML.appendMaster(EBML.ID.video, to: &videoEntry) { video in
            EBML.appendUnsigned(EBML.ID.pixelWidth, 16, to: &video)
            EBML.appendUnsigned(EBML.ID.pixelHeight, 12, to: &video)
        }
        EBML.appendElement(EBML.ID.trackEntry, audioEntry, to: &tracks)
        let videoEntryStart = tracks.count
        EBML.appendElement(EBML.ID.trackEntry, videoEntry, to: &tracks)
        EBML.appendElement(EBML.ID.tracks, tracks, to: &out)
        let tracksData = file.offsets.tracks + 4 + 1 + (tracks.count > 126 ? 1 : 0)
        file.offsets.secondTrackEntry = tracksData + videoEntryStart
        file.offsets.seekPreRoll = tracksData + 2 + seekPreRollAt
        file.offsets.secondTrackNumber = tracksData + videoEntryStart + 2 + videoNumberAt

        // Cluster 1 at 1000 ms, unknown size.
        EBML.appendID(EBML.ID.cluster, to: &out)
        out.append(0xFF)
        EBML.appendElement(EBML.ID.crc32, [0, 0, 0, 0], to: &out)  // not checked, skipped
        file.offsets.clusterTimestamp = out.count
        EBML.appendUnsigned(EBML.ID.timestamp, 1000, to: &out)

        func block(_ id: UInt32, track: UInt8, relative: Int16, flags: UInt8, lacing: [UInt8], frames: [[UInt8]]) {
            var body: [UInt8] = [
                0x80 | track, UInt8(truncatingIfNeeded: relative >> 8), UInt8(truncatingIfNeeded: relative), flags,
            ]
            if !lacing.isEmpty || frames.count > 1 { body.append(UInt8(frames.count - 1)) }
            body += lacing
            for frame in frames { body += frame }
            EBML.appendElement(id, body, to: &out)
        }
        // Xiph lacing: sizes 300 (255 + 45), 40, and the rest (100).
        let xiph = [opusPacket(300, seed: 1), opusPacket(40, seed: 2), opusPacket(100, seed: 3)]
        file.offsets.firstBlock = out.count
        file.offsets.firstBlockTrack = out.count + 3  // after the ID and a 2-byte size
        block(EBML.ID.simpleBlock, track: 7, relative: 0, flags: 0x80 | 0x02, lacing: [255, 45, 40], frames: xiph)
        // EBML lacing: 200, then 200 + (-50) = 150, 150 + 30 = 180, and the rest (60).
        let ebml = [
            opusPacket(200, seed: 4), opusPacket(150, seed: 5), opusPacket(180, seed: 6), opusPacket(60, seed: 7),
        ]
        // 200 as a 2-byte size; -50 and +30 as 1-byte signed sizes (bias 63).
        block(
            EBML.ID.simpleBlock, track: 7, relative: 60, flags: 0x80 | 0x06,
            lacing: [0x40, 200, 0x80 | (63 - 50), 0x80 | (63 + 30)],
            frames: ebml)
        let video1: [UInt8] = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A] + (0..<50).map { UInt8($0) }
        block(EBML.ID.simpleBlock, track: 3, relative: 100, flags: 0x80, lacing: [], frames: [video1])
        // Fixed lacing: two frames of 64 bytes.
        let fixed = [opusPacket(64, seed: 8), opusPacket(64, seed: 9)]
        block(EBML.ID.simpleBlock, track: 7, relative: 140, flags: 0x80 | 0x04, lacing: [], frames: fixed)

        // Cluster 2 at 2000 ms (ends cluster 1): a BlockGroup of video with a reference and a
        // duration, and a BlockGroup of two Xiph-laced Opus frames with DiscardPadding.
        EBML.appendID(EBML.ID.cluster, to: &out)
        out.append(0xFF)
        EBML.appendUnsigned(EBML.ID.timestamp, 2000, to: &out)
        let video2: [UInt8] = [0x31, 0x01, 0x00] + (0..<30).map { UInt8($0 * 3) }
        var group: [UInt8] = []
        swap(&out, &group)
        block(EBML.ID.block, track: 3, relative: 0, flags: 0, lacing: [], frames: [video2])
        EBML.appendSigned(EBML.ID.referenceBlock, -1000, to: &out)
        EBML.appendUnsigned(EBML.ID.blockDuration, 40, to: &out)
        swap(&out, &group)
        EBML.appendElement(EBML.ID.blockGroup, group, to: &out)
        let last = [opusPacket(90, seed: 10), opusPacket(70, seed: 11)]
        group = []
        swap(&out, &group)
        block(EBML.ID.block, track: 7, relative: 20, flags: 0x02, lacing: [90], frames: last)
        EBML.appendSigned(EBML.ID.discardPadding, 5_000_000, to: &out)
        swap(&out, &group)
        EBML.appendElement(EBML.ID.blockGroup, group, to: &out)
        EBML.appendMaster(EBML.ID.cues, to: &out) { _ in }

        file.bytes = out
        file.audioFrames = xiph + ebml + fixed + last
        file.audioTimesMilliseconds = [1000, 1020, 1040, 1060, 1080, 1100, 1120, 1140, 1160, 2020, 2040]
        file.videoFrames = [video1, video2]
        return file
    }
}
