import Foundation
import Testing

@testable import MediaPipeline

/// Times, durations and timestamps at the ends of the 64-bit range, as a fuzzer or a broken
/// muxer writes them: each is a typed error naming its field, or is read without trapping; none
/// crashes. (Found by reading after the containers fuzzer trapped on two IVF timestamps far
/// apart: every sum, difference and unit conversion of a value read from a file or a packet.)
@Suite("Times at the ends of the 64-bit range: typed errors, no traps")
struct TimeOverflowTests {
    /// Expects every reader of `path` (the WebM or IVF reader read through, `info`, `remux`) to
    /// fail with a MediaError naming the file and holding `words`.
    private func expectRefused(_ path: String, _ words: String, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let folder = TemporaryFolder()
        let readers: [(String, () throws -> Void)] = [
            (
                "reader",
                {
                    if path.hasSuffix(".ivf") {
                        let reader = try IVFReader(path: path)
                        while try reader.readFrame() != nil {}
                    } else {
                        let reader = try WebMReader(path: path)
                        while try reader.readFrame() != nil {}
                    }
                }
            ),
            ("info", { _ = try MediaFileInfo.probe(path: path) }),
            ("remux", { _ = try MediaRemuxer.remux(inputs: [path], output: folder.file("out.webm")) }),
        ]
        for (name, read) in readers {
            do {
                try read()
                Issue.record("\(name) accepted \(path)", sourceLocation: sourceLocation)
            } catch let error as MediaError {
                #expect(error.file == path, "\(name): \(error)", sourceLocation: sourceLocation)
                #expect(error.message.contains(words), "\(name): \(error)", sourceLocation: sourceLocation)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: folder.file("out.webm")), sourceLocation: sourceLocation)
    }

    /// A WebM file of one track (VP8, or Opus with `opus`) whose TrackEntry gets `trackFields`,
    /// and a Cluster per entry of `clusters`: its Timestamp and its blocks' bodies after the
    /// track number (relative time, flags, frames).
    private func webm(
        opus: Bool = false, trackFields: (inout [UInt8]) -> Void = { _ in },
        clusters: [(timestamp: UInt64, blocks: [[UInt8]])]
    ) -> [UInt8] {
        var out: [UInt8] = []
        EBML.appendMaster(EBML.ID.ebml, to: &out) { header in
            EBML.appendString(EBML.ID.docType, "webm", to: &header)
        }
        var segment: [UInt8] = []
        EBML.appendMaster(EBML.ID.info, to: &segment) { info in
            EBML.appendUnsigned(EBML.ID.timestampScale, 1_000_000, to: &info)
        }
        EBML.appendMaster(EBML.ID.tracks, to: &segment) { tracks in
            EBML.appendMaster(EBML.ID.trackEntry, to: &tracks) { entry in
                EBML.appendUnsigned(EBML.ID.trackNumber, 1, to: &entry)
                if opus {
                    EBML.appendUnsigned(EBML.ID.trackType, 2, to: &entry)
                    EBML.appendString(EBML.ID.codecID, "A_OPUS", to: &entry)
                    EBML.appendElement(
                        EBML.ID.codecPrivate,
                        OpusHead(channelCount: 2, preSkip: 312, inputSampleRate: 48_000).serialized(),
                        to: &entry)
                } else {
                    EBML.appendUnsigned(EBML.ID.trackType, 1, to: &entry)
                    EBML.appendString(EBML.ID.codecID, "V_VP8", to: &entry)
                    EBML.appendMaster(EBML.ID.video, to: &entry) { video in
                        EBML.appendUnsigned(EBML.ID.pixelWidth, 16, to: &video)
                        EBML.appendUnsigned(EBML.ID.pixelHeight, 12, to: &video)
                    }
                }
                trackFields(&entry)
            }
        }
        for cluster in clusters {
            EBML.appendMaster(EBML.ID.cluster, to: &segment) { body in
                EBML.appendUnsigned(EBML.ID.timestamp, cluster.timestamp, to: &body)
                for block in cluster.blocks { body += block }
            }
        }
        EBML.appendElement(EBML.ID.segment, segment, to: &out)
        return out
    }

    /// A SimpleBlock of track 1 at `relative` ticks holding `frames` (fixed lacing when several).
    private func simpleBlock(relative: Int16, keyframe: Bool = true, frames: [[UInt8]]) -> [UInt8] {
        var body: [UInt8] = [
            0x81, UInt8(truncatingIfNeeded: relative >> 8), UInt8(truncatingIfNeeded: relative),
            (keyframe ? 0x80 : 0) | (frames.count > 1 ? 0x04 : 0),
        ]
        if frames.count > 1 { body.append(UInt8(frames.count - 1)) }
        for frame in frames { body += frame }
        var out: [UInt8] = []
        EBML.appendElement(EBML.ID.simpleBlock, body, to: &out)
        return out
    }

    private let vp8Frame: [UInt8] = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 16, 0, 12, 0, 1, 2]

    private func write(_ bytes: [UInt8], _ name: String, in folder: TemporaryFolder) throws -> String {
        let path = folder.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a WebM track's CodecDelay, DefaultDuration and a block's DiscardPadding beyond 2^61 ns are typed errors")
    func webmDurations() throws {
        let folder = TemporaryFolder()
        let block = simpleBlock(relative: -1, frames: [vp8Frame])
        // CodecDelay of 2^64 - 1 ns on a VP8 track (the Opus pre-skip check never saw it); the
        // block 1 ms before its cluster once subtracted it and trapped.
        let codecDelay = webm(
            trackFields: { EBML.appendUnsigned(EBML.ID.codecDelay, .max, to: &$0) },
            clusters: [(0, [block])])
        try expectRefused(try write(codecDelay, "codec-delay.webm", in: folder), "CodecDelay")
        // DefaultDuration of Int64.max ns: a laced block once added it to its time and trapped.
        let laced = simpleBlock(relative: 0, frames: [vp8Frame, vp8Frame])
        let defaultDuration = webm(
            trackFields: { EBML.appendUnsigned(EBML.ID.defaultDuration, UInt64(Int64.max), to: &$0) },
            clusters: [(1, [laced])])
        try expectRefused(try write(defaultDuration, "default-duration.webm", in: folder), "DefaultDuration")
        // DiscardPadding of Int64.max ns on an Opus block: × 48,000 trapped in info and decode.
        var groupBody: [UInt8] = []
        EBML.appendElement(EBML.ID.block, [0x81, 0, 0, 0x00, 0xF8, 0x01], to: &groupBody)
        EBML.appendSigned(EBML.ID.discardPadding, .max, to: &groupBody)
        var group: [UInt8] = []
        EBML.appendElement(EBML.ID.blockGroup, groupBody, to: &group)
        let padding = webm(opus: true, clusters: [(0, [group])])
        let paddingPath = try write(padding, "discard-padding.webm", in: folder)
        try expectRefused(paddingPath, "DiscardPadding")
        do {
            _ = try AudioFileDecoder.decode(input: paddingPath, output: folder.file("out.wav"))
            Issue.record("decode accepted \(paddingPath)")
        } catch let error as MediaError {
            #expect(error.message.contains("DiscardPadding"), "\(error)")
        }
    }

    @Test("WebM block times beyond 2^61 ns, or laced frames pushed beyond it, are typed errors")
    func webmTimes() throws {
        let folder = TemporaryFolder()
        // A block at 0, then one at 9,223,372,036,854 ms.
        let far = webm(clusters: [
            (0, [simpleBlock(relative: 0, frames: [vp8Frame])]),
            (9_223_372_036_854, [simpleBlock(relative: 0, keyframe: false, frames: [vp8Frame])]),
        ])
        try expectRefused(try write(far, "far.webm", in: folder), "is out of range")
        // The same from 1 ms before 0: info took their span in 64 bits and trapped.
        let span = webm(clusters: [
            (0, [simpleBlock(relative: -1, frames: [vp8Frame])]),
            (9_223_372_036_854, [simpleBlock(relative: 0, keyframe: false, frames: [vp8Frame])]),
        ])
        let spanPath = try write(span, "span.webm", in: folder)
        #expect {
            _ = try MediaFileInfo.probe(path: spanPath)
        } throws: { error in
            (error as? MediaError).map { $0.file == spanPath && $0.message.contains("is out of range") } ?? false
        }
        // Laced frames a DefaultDuration of 2^61 ns apart, from 2^61 - 1 ms: the second is beyond.
        let limitMs = UInt64(MediaTime.limitNanoseconds / 1_000_000)
        let pushed = webm(
            trackFields: { EBML.appendUnsigned(EBML.ID.defaultDuration, UInt64(MediaTime.limitNanoseconds), to: &$0) },
            clusters: [(limitMs - 1, [simpleBlock(relative: 0, frames: [vp8Frame, vp8Frame])])])
        try expectRefused(try write(pushed, "pushed.webm", in: folder), "laced frame 1's time")
    }

    /// An IVF file (VP8, time base 1/`rate`) of the frames of a small encode at `timestamps`.
    private func ivf(timestamps: [Int64], rate: Int = 30, in folder: TemporaryFolder, name: String) throws -> String {
        let path = folder.file(name)
        let writer = try IVFWriter(
            path: path, header: IVFHeader(codec: .vp8, width: 16, height: 12, timebaseDenominator: rate))
        let encoder = try VPXEncoder(configuration: VPXEncoderConfiguration(width: 16, height: 12))
        for (index, timestamp) in timestamps.enumerated() {
            try writer.write(
                try encoder.encode(try syntheticPicture(width: 16, height: 12, frame: index)).bytes,
                timestamp: timestamp)
        }
        try writer.finish()
        return path
    }

    @Test(
        "IVF timestamps whose time is beyond 2^61 ns are typed errors naming the frame; compose refuses a day-long span"
    )
    func ivfTimes() throws {
        let folder = TemporaryFolder()
        // Int64.max then Int64.min: the frame-rate guess once trapped on their difference.
        let extreme = try ivf(timestamps: [.max, .min], in: folder, name: "extreme.ivf")
        try expectRefused(extreme, "frame 0's timestamp \(Int64.max)")
        do {
            _ = try VideoFileDecoder.decode(input: extreme, output: .none)
            Issue.record("decode accepted \(extreme)")
        } catch let error as MediaError {
            #expect(error.file == extreme && error.message.contains("timestamp"), "\(error)")
        }
        // 9,223,372,036,855 units × 10^6 µs overflowed in remux before the division by 30.
        let second = try ivf(timestamps: [0, 9_223_372_036_855], in: folder, name: "second.ivf")
        try expectRefused(second, "frame 1's timestamp 9223372036855")
        // Int64.max and Int64.min in a time base of 1/(2^32 - 1) s are ±2.1e15 µs, within the
        // limit: the frame-rate guess and the frame times once took their difference in 64 bits
        // and trapped (the containers fuzzer's find). The pictures decode as the same frames at
        // times 0 and 1 do.
        let fine = try ivf(timestamps: [.max, .min], rate: 4_294_967_295, in: folder, name: "fine.ivf")
        let plain = try ivf(timestamps: [0, 1], in: folder, name: "plain.ivf")
        let decoded = try VideoFileDecoder.decode(input: fine, output: .none, computeMD5: true)
        #expect(decoded.frames == 2)
        #expect(
            decoded.frameMD5s == (try VideoFileDecoder.decode(input: plain, output: .none, computeMD5: true)).frameMD5s)
        // Within the limit, a span of 100,000 s (probed as 200,000: one average step more):
        // compose would draw millions of pictures.
        let long = try ivf(timestamps: [0, 30 * 100_000], in: folder, name: "long.ivf")
        do {
            _ = try FileCompositor.compose(inputs: [long], output: folder.file("grid.webm"), width: 32, height: 32)
            Issue.record("compose accepted \(long)")
        } catch let error as MediaError {
            #expect(error.file == long && error.message.contains("compose makes at most 86400 s"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.file("grid.webm")))
    }

    @Test("the WebM writer refuses times beyond 2^61 ns instead of trapping on their sums")
    func webmWriterLimits() throws {
        let folder = TemporaryFolder()
        let writer = try WebMWriter(path: folder.file("w.webm"), tracks: [.video(.vp8, width: 16, height: 12)])
        for (time, duration, padding) in [(Int64.max, Int64(33_000), Int64(0)), (0, .max, 0), (0, 33_000, .max)] {
            #expect {
                try vp8Frame.withUnsafeBytes {
                    try writer.write(
                        track: 0, $0, timestampMicroseconds: time, durationMicroseconds: duration, isKeyframe: true,
                        discardPaddingNanoseconds: padding)
                }
            } throws: { error in
                (error as? MediaError).map { $0.code == .invalidArgument && $0.message.contains("beyond") } ?? false
            }
        }
    }

    @Test("MediaTime.scaled is exact where the result fits and nil where it does not")
    func scaledConversions() {
        var random = SplitMix64(seed: 21)
        for _ in 0..<10_000 {
            let value = Int64(bitPattern: random.next()) >> Int64(random.next() % 40)
            let numerator = Int64(random.next() % 2_000_000) + 1
            let denominator = Int64(random.next() % 2_000_000) + 1
            let (product, overflow) = value.multipliedReportingOverflow(by: numerator)
            guard !overflow else { continue }
            #expect(MediaTime.scaled(value, by: numerator, over: denominator) == product / denominator)
        }
        // Beyond 64 bits in the product, exact in the result: 2^62 × 90,000 / 1,000,000.
        // 2^62 × 0.09 = 415,051,741,658,464,911.36
        #expect(MediaTime.scaled(1 << 62, by: 90_000, over: 1_000_000) == 415_051_741_658_464_911)
        #expect(MediaTime.scaled(.max, by: 2, over: 1) == nil)
        #expect(MediaTime.scaledSaturating(.min, by: 1_000_000, over: 90_000) == .min)
        #expect(MediaTime.samples48k(nanoseconds: 6_500_000) == 312)
        #expect(MediaTime.samples48k(nanoseconds: .max) == 442_721_857_769_029)
    }

    @Test("RTP timestamps that run 2^31 ahead packet after packet, and media times at Int64's ends, do not trap")
    func rtpTimestamps() throws {
        // 4,400 Opus packets, each timestamp 2^31 - 1 after the one before: the unwrapped
        // timestamp passes 9.2e12 ticks, where × 10^6 overflowed.
        var assembler = RTPFrameAssembler(codec: .opus, gapWaitMicroseconds: 0)
        var times: [Int64] = []
        for index in 0..<4_400 {
            let timestamp = UInt32(truncatingIfNeeded: Int64(index) * 0x7FFF_FFFF)
            let sequence = UInt16(truncatingIfNeeded: index)
            var bytes: [UInt8] = [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: timestamp >> $0) }
            bytes += [0, 0, 0, 7, 0xF8]
            assembler.insert(try RTPPacket(bytes), now: Int64(index) * 20_000) {
                times.append($0.frame.timestampMicroseconds)
            }
        }
        #expect(times.count == 4_400)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "media times go forward (or saturate)")
        // The assembler's media time → RTP timestamp, to the nearest tick, as the 64-bit formula
        // gave it wherever that did not overflow (negative times included).
        for rate in [Int64(48_000), 90_000] {
            var timed = RTPFrameAssembler(codec: rate == 48_000 ? .opus : .vp8, gapWaitMicroseconds: 0)
            var bytes: [UInt8] = [0x80, rate == 48_000 ? 111 : 96, 0, 1, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 7]
            bytes += rate == 48_000 ? [0xF8] : [0x10, 0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A]
            timed.insert(try RTPPacket(bytes), now: 0) { _ in }
            let first: Int64 = 0x1234_5678
            var mismatches: [Int64] = []
            for microseconds in stride(from: Int64(-3_000_000), through: 3_000_000, by: 7) {
                let old = UInt32(truncatingIfNeeded: first + (microseconds * rate + 500_000) / 1_000_000)
                if timed.rtpTimestamp(microseconds: microseconds) != old { mismatches.append(microseconds) }
            }
            #expect(mismatches.isEmpty, "\(rate) Hz: \(mismatches.prefix(5))")
        }
        let packetizer = try RTPPacketizer(codec: .opus, ssrc: 7, payloadType: 111)
        _ = packetizer.rtpTimestamp(microseconds: .max)
        _ = packetizer.rtpTimestamp(microseconds: .min)
        #expect(packetizer.rtpTimestamp(microseconds: 20_000) &- packetizer.rtpTimestamp(microseconds: 0) == 960)
    }
}
