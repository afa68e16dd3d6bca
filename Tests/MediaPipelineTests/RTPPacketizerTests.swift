import Foundation
import Testing

@testable import MediaPipeline

/// Real frames of each codec: the sample's VP8 frames as vpxenc wrote them, VP9 and Opus from
/// our encoders (keyframes of 640x360 take several packets).
private enum RealFrames {
    static func vp8() throws -> [EncodedFrame] {
        let reader = try IVFReader(path: Fixtures.motionIVF)
        var frames: [EncodedFrame] = []
        while let frame = try reader.readFrame() {
            let keyframe = frame.bytes[0] & 0x01 == 0
            frames.append(
                EncodedFrame(
                    bytes: frame.bytes, codec: .vp8, isKeyframe: keyframe,
                    timestampMicroseconds: Int64(frames.count) * 33_333, durationMicroseconds: 33_333))
        }
        return frames
    }

    static func vp9(count: Int) throws -> [EncodedFrame] {
        var settings = VPXEncoderConfiguration(codec: .vp9, width: 320, height: 180)
        settings.bitrateBitsPerSecond = 800_000
        let encoder = try VPXEncoder(configuration: settings)
        return try (0..<count).map { index in
            let picture = try syntheticPicture(width: 320, height: 180, frame: index)
            let frame = try encoder.encode(
                picture, timestampMicroseconds: Int64(index) * 33_333, forceKeyframe: index % 10 == 0)
            return EncodedFrame(
                bytes: Array(frame.bytes), codec: .vp9, isKeyframe: frame.isKeyframe,
                timestampMicroseconds: frame.timestampMicroseconds, durationMicroseconds: 33_333, width: 320,
                height: 180)
        }
    }

    static func opus(count: Int) throws -> [EncodedFrame] {
        let encoder = try OpusEncoder(configuration: OpusEncoderConfiguration())
        let samples = testTone(samplesPerChannel: 960 * count)
        return try (0..<count).map { index in
            let frame = AudioFrame(
                samples: Array(samples[(index * 1920)..<((index + 1) * 1920)]), sampleRate: 48000, channelCount: 2,
                timestampSamples: Int64(index) * 960)
            let packet = try encoder.encode(frame)
            return EncodedFrame(
                bytes: Array(packet.bytes), codec: .opus, isKeyframe: true,
                timestampMicroseconds: packet.timestampMicroseconds, durationMicroseconds: packet.durationMicroseconds)
        }
    }
}

/// Packetizes `frames`, returning each frame's packets.
private func packetize(_ frames: [EncodedFrame], _ packetizer: inout RTPPacketizer) throws -> [[RTPPacket]] {
    try frames.map { frame in
        var packets: [RTPPacket] = []
        try packetizer.packetize(frame) { packets.append($0) }
        return packets
    }
}

/// Feeds `packets` to a fresh assembler, one clock millisecond apart, polling `extraMs` later.
private func assemble(
    _ codec: MediaCodec, _ packets: [RTPPacket], gapWaitMs: Int64 = 50, extraMs: Int64 = 1000
) -> (frames: [AssembledFrame], assembler: RTPFrameAssembler) {
    var assembler = RTPFrameAssembler(codec: codec, gapWaitMicroseconds: gapWaitMs * 1000)
    var frames: [AssembledFrame] = []
    var now: Int64 = 0
    for packet in packets {
        assembler.insert(packet, now: now) { frames.append($0) }
        now += 1000
    }
    assembler.poll(now: now + extraMs * 1000) { frames.append($0) }
    return (frames, assembler)
}

@Suite("RTP packetizers and frame assembly")
struct RTPPacketizerTests {
    @Test("every sample frame survives packetize and depacketize byte for byte", arguments: MediaCodec.allCases)
    func roundTrip(codec: MediaCodec) throws {
        let frames: [EncodedFrame] =
            switch codec {
            case .vp8: try RealFrames.vp8()
            case .vp9: try RealFrames.vp9(count: 30)
            case .opus: try RealFrames.opus(count: 50)
            }
        // Start near the ends of the sequence and PictureID ranges so both wrap inside the run.
        var packetizer = try RTPPacketizer(
            codec: codec, ssrc: 0x1234_5678, payloadType: codec == .opus ? 111 : 96, firstSequenceNumber: 65_500,
            timestampOffset: 0xFFFF_F000, firstPictureId: 0x7FFE)
        let perFrame = try packetize(frames, &packetizer)
        var expectedSequence: UInt16 = 65_500
        var multiPacketFrames = 0
        for (index, (frame, packets)) in zip(frames, perFrame).enumerated() {
            if packets.count > 1 { multiPacketFrames += 1 }
            for (position, packet) in packets.enumerated() {
                #expect(packet.header.sequenceNumber == expectedSequence)
                expectedSequence &+= 1
                #expect(packet.header.ssrc == 0x1234_5678)
                #expect(packet.header.timestamp == packetizer.rtpTimestamp(microseconds: frame.timestampMicroseconds))
                if codec != .opus {
                    #expect(packet.payloadByteCount <= 1200)
                    #expect(packet.header.marker == (position == packets.count - 1))
                }
                let reparsed = try RTPPacket(packet.bytes)
                #expect(reparsed.header == packet.header)
                try packet.withUnsafePayload { payload in
                    let pictureId = UInt16((0x7FFE + index) & 0x7FFF)
                    switch codec {
                    case .vp8:
                        let descriptor = try VP8PayloadDescriptor(parsing: payload)
                        #expect(descriptor.pictureId == pictureId && descriptor.pictureIdIs15Bit)
                        #expect(descriptor.startOfPartition == (position == 0) && descriptor.partitionIndex == 0)
                    case .vp9:
                        let descriptor = try VP9PayloadDescriptor(parsing: payload)
                        #expect(descriptor.pictureId == pictureId)
                        #expect(descriptor.startOfFrame == (position == 0))
                        #expect(descriptor.endOfFrame == (position == packets.count - 1))
                        #expect(descriptor.interPicturePredicted == !frame.isKeyframe)
                        let hasStructure = frame.isKeyframe && position == 0
                        #expect((descriptor.scalability != nil) == hasStructure)
                        if hasStructure { #expect(descriptor.scalability?.sizes.first ?? (0, 0) == (320, 180)) }
                    case .opus:
                        #expect(Array(payload) == frame.bytes)
                    }
                }
            }
            // Balanced split: no two packets of a frame differ by more than one byte.
            let sizes = packets.map(\.payloadByteCount)
            #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= (codec == .vp9 && frame.isKeyframe ? 6 : 1))
        }
        if codec != .opus { #expect(multiPacketFrames > 0, "no frame needed several packets") }

        let (assembled, assembler) = assemble(codec, perFrame.flatMap { $0 })
        #expect(assembled.count == frames.count)
        for (frame, result) in zip(frames, assembled) {
            #expect(result.frame.bytes == frame.bytes)
            #expect(result.frame.isKeyframe == frame.isKeyframe)
            #expect(!result.followsGap || result === assembled.first)
            // Microseconds to RTP clock and back: within the RTP clock's resolution.
            let sent = frame.timestampMicroseconds - frames[0].timestampMicroseconds
            let received = result.frame.timestampMicroseconds - assembled[0].frame.timestampMicroseconds
            #expect(abs(received - sent) <= 25)
            if codec == .vp8 && frame.isKeyframe {
                #expect(result.frame.width == 640 && result.frame.height == 360)
            }
            if codec == .opus {
                // Received Opus frames leave the duration to the decoder: their TOC says 20 ms.
                #expect(result.frame.durationMicroseconds == 0)
                #expect(try OpusDecoder.samplesPerChannel(inPacket: result.frame.bytes, sampleRate: 48000) == 960)
            }
        }
        #expect(assembler.packetsLost == 0 && assembler.packetsLate == 0 && assembler.framesIncomplete == 0)
    }

    @Test("a frame of 10,000 bytes takes 9 packets of 1,111 or 1,112 bytes of data")
    func largeFrame() throws {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        let frame = EncodedFrame(
            bytes: bytes, codec: .vp8, isKeyframe: false, timestampMicroseconds: 0, durationMicroseconds: 0)
        var packetizer = try RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: 96)
        let packets = try packetize([frame], &packetizer)[0]
        #expect(packets.count == 9)
        #expect(Set(packets.map { $0.payloadByteCount - 4 }) == [1111, 1112])
        let (assembled, _) = assemble(.vp8, packets)
        #expect(assembled.first?.frame.bytes == bytes)
    }

    @Test("a lost packet drops its frame and marks the next as following a gap; reordering within the wait does not")
    func lossAndReordering() throws {
        let frames = try RealFrames.vp8()
        var packetizer = try RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: 96, firstSequenceNumber: 65_530)
        let perFrame = try packetize(frames, &packetizer)
        let victim = try #require(perFrame.firstIndex { $0.count >= 2 && $0 != perFrame[0] }.map { $0 })

        // Lose the second packet of frame `victim`.
        var lossy = perFrame
        lossy[victim].remove(at: 1)
        let (lost, assembler) = assemble(.vp8, lossy.flatMap { $0 })
        #expect(lost.count == frames.count - 1)
        #expect(assembler.packetsLost == 1 && assembler.framesIncomplete == 1)
        let after = try #require(lost.firstIndex { $0.followsGap && $0.frame.bytes == frames[victim + 1].bytes })
        #expect(lost[..<after].allSatisfy { !$0.followsGap || $0.frame.bytes == frames[0].bytes })
        #expect(lost[(after + 1)...].allSatisfy { !$0.followsGap })

        // Swap two packets and duplicate one: the same frames come out, none after a gap.
        var shuffled = perFrame.flatMap { $0 }
        shuffled.swapAt(5, 7)
        shuffled.insert(shuffled[10], at: 12)
        let (reordered, counts) = assemble(.vp8, shuffled)
        #expect(reordered.map(\.frame.bytes) == frames.map(\.bytes))
        #expect(reordered.dropFirst().allSatisfy { !$0.followsGap })
        #expect(counts.packetsLate == 1 && counts.packetsLost == 0)

        // The head of a frame missing: the stream restarts at the next frame start.
        let headless = Array(perFrame.flatMap { $0 }.dropFirst())
        let (restarted, _) = assemble(.vp8, headless)
        #expect(restarted.first?.followsGap == true && restarted.first?.frame.bytes == frames[1].bytes)
    }

    @Test(
        "a whole keyframe behind a missing packet is handed out once it is due, the frames before it given up on; before then, and for a delta frame there, the gap wait holds"
    )
    func wholeKeyframeSkipsTheWaitWhenDue() throws {
        let sample = try RealFrames.vp8()
        try #require(sample.count >= 4 && sample[0].isKeyframe && !sample[1].isKeyframe)
        /// Frames 0 to 3 of the sample, then the sample's keyframe again (or, with
        /// `deltaFifth`, its frame 1) and frame 2 again, 33 ms apart; the first packet of frame
        /// 2 never comes. Every packet is in at 5 ms; the assembler is asked at 10 ms with
        /// keyframes due by `dueBy`, then at 2 s with none. Returns what came out each time.
        func run(dueBy: Int64?, deltaFifth: Bool = false) throws -> (
            early: [AssembledFrame], late: [AssembledFrame], lost: Int64, dropped: Int64
        ) {
            var frames = Array(sample[0..<4])
            for bytes in [deltaFifth ? sample[1].bytes : sample[0].bytes, sample[2].bytes] {
                frames.append(
                    EncodedFrame(
                        bytes: bytes, codec: .vp8, isKeyframe: bytes == sample[0].bytes,
                        timestampMicroseconds: Int64(frames.count) * 33_333, durationMicroseconds: 33_333))
            }
            var packetizer = try RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: 96, firstSequenceNumber: 65_530)
            var perFrame = try packetize(frames, &packetizer)
            perFrame[2].removeFirst()
            var assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: 1_000_000)
            var early: [AssembledFrame] = []
            for packet in perFrame.joined() { assembler.insert(packet, now: 5_000) { early.append($0) } }
            while let frame = assembler.next(now: 10_000, keyframesDueBy: dueBy) { early.append(frame) }
            var late: [AssembledFrame] = []
            assembler.poll(now: 2_000_000) { late.append($0) }
            return (early, late, assembler.packetsLost, assembler.framesIncomplete)
        }
        /// Which of the sample's first four frames each is (by its bytes), -1 for none.
        func indices(_ frames: [AssembledFrame]) -> [Int] {
            frames.map { frame in sample[0..<4].firstIndex { $0.bytes == frame.frame.bytes } ?? -1 }
        }
        // Due (by the keyframe's media time, or any time): frames 0 and 1, then at once the
        // keyframe (after a gap) and the frame behind it; frames 2 and 3 given up on, the one
        // packet lost.
        let anyTime = try run(dueBy: .max)
        let keyframeTime = try #require(anyTime.early.dropFirst(2).first).frame.timestampMicroseconds
        let skipped = try run(dueBy: keyframeTime)
        #expect(indices(anyTime.early) == indices(skipped.early))
        #expect(indices(skipped.early) == [0, 1, 0, 2])
        #expect(skipped.early.map(\.followsGap) == [false, false, true, false])
        #expect(skipped.early[2].frame.isKeyframe && skipped.late.isEmpty)
        #expect(skipped.lost == 1 && skipped.dropped == 2)
        // Not yet due (1 us short), or no due time: nothing past frame 1 until the gap wait is
        // over; then frame 3 (after the gap) and the two behind it. Likewise a delta frame
        // fifth, however late it may be.
        for (dueBy, deltaFifth) in [(keyframeTime - 1, false), (nil, false), (Int64.max, true)] {
            let waited = try run(dueBy: dueBy, deltaFifth: deltaFifth)
            let label = "due by \(dueBy.map(String.init) ?? "none"), delta fifth \(deltaFifth)"
            #expect(indices(waited.early) == [0, 1], "\(label)")
            #expect(indices(waited.late) == [3, deltaFifth ? 1 : 0, 2], "\(label)")
            #expect(waited.late.first?.followsGap == true, "\(label)")
            #expect(waited.lost == 1 && waited.dropped == 1, "\(label): \(waited.lost) lost, \(waited.dropped) dropped")
        }
    }

    @Test(
        "the packet ring starts small, grows when the packets held back behind a missing one span more of it, and hands every frame out whole and in order"
    )
    func ringGrowsWithWhatIsHeldBack() throws {
        let sample = try RealFrames.vp8()
        var packetizer = try RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: 96, firstSequenceNumber: 65_400)
        let perFrame = try packetize(sample, &packetizer)
        // The sample's first frames, up to 300 packets: several rings' worth, within the window.
        var frameCount = 0
        var packetCount = 0
        while frameCount < perFrame.count && packetCount + perFrame[frameCount].count <= 300 {
            packetCount += perFrame[frameCount].count
            frameCount += 1
        }
        let frames = Array(sample[..<frameCount])
        let packets = perFrame[..<frameCount].flatMap { $0 }
        let initial = RTPFrameAssembler.initialSlotCount
        try #require(packets.count > 4 * initial && packets.count < RTPFrameAssembler.window)

        // In order and whole: the ring keeps its first size.
        /// Whether `out` is `frames`, byte for byte (a count and a flag: no bytes printed).
        func sameFrames(_ out: [AssembledFrame]) -> Bool {
            out.count == frames.count && zip(out, frames).allSatisfy { $0.frame.bytes == $1.bytes }
        }
        let (inOrder, steady) = assemble(.vp8, packets)
        #expect(sameFrames(inOrder), "\(inOrder.count) of \(frames.count) frames")
        #expect(steady.storageSlotCount == initial)

        // The second packet held back until all the others came (within the gap wait): every
        // packet after it waits in the ring, which doubles until it spans them all.
        var late = packets
        let held = late.remove(at: 1)
        late.append(held)
        let (reordered, grown) = assemble(.vp8, late, gapWaitMs: 10_000)
        #expect(sameFrames(reordered), "\(reordered.count) of \(frames.count) frames")
        #expect(reordered.allSatisfy { !$0.followsGap })
        #expect(grown.packetsLost == 0 && grown.packetsLate == 0)
        // The smallest power of two that spans them (the first packet, or all of them).
        let slots = grown.storageSlotCount
        #expect(slots & (slots - 1) == 0 && slots >= packets.count - 1 && slots < 2 * packets.count, "\(slots) slots")
    }

    @Test("audio packets are frames as they come; holes in the sequence are counted as lost")
    func audioLoss() throws {
        let frames = try RealFrames.opus(count: 20)
        var packetizer = try RTPPacketizer(codec: .opus, ssrc: 1, payloadType: 111)
        var packets = try packetize(frames, &packetizer).flatMap { $0 }
        packets.remove(at: 4)
        packets.remove(at: 9)
        packets.swapAt(1, 2)
        let (assembled, assembler) = assemble(.opus, packets)
        #expect(assembled.count == 18)
        #expect(assembler.packetsLost == 2)
        #expect(assembled[1].frame.bytes == frames[2].bytes && assembled[1].frame.timestampMicroseconds == 40_000)
    }

    @Test("a jump of thousands of sequence numbers (a long outage) restarts the stream at the next frame")
    func farJump() throws {
        let frames = try RealFrames.vp8()
        var packetizer = try RTPPacketizer(codec: .vp8, ssrc: 1, payloadType: 96, firstSequenceNumber: 100)
        let perFrame = try packetize(frames, &packetizer)
        var assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: 50_000)
        var out: [AssembledFrame] = []
        for packet in perFrame[0] { assembler.insert(packet, now: 0) { out.append($0) } }
        #expect(out.count == 1)
        // The next frame's packets, as if 5,000 packets had been lost in between.
        let skipped = 5_000
        func shifted(_ packet: RTPPacket, by offset: Int) throws -> RTPPacket {
            var bytes = packet.bytes
            let sequence = packet.header.sequenceNumber &+ UInt16(truncatingIfNeeded: offset)
            bytes[2] = UInt8(sequence >> 8)
            bytes[3] = UInt8(sequence & 0xFF)
            return try RTPPacket(bytes)
        }
        for packet in perFrame[1] { assembler.insert(try shifted(packet, by: skipped), now: 1_000) { out.append($0) } }
        #expect(out.count == 2)
        #expect(out[1].followsGap && out[1].frame.bytes == frames[1].bytes)
        #expect(assembler.packetsLost == Int64(skipped))
        // A sender that starts its sequence again, thousands behind: followed, not taken as late.
        for packet in perFrame[2] { assembler.insert(try shifted(packet, by: -3_000), now: 2_000) { out.append($0) } }
        #expect(out.count == 3)
        #expect(out[2].followsGap && out[2].frame.bytes == frames[2].bytes)
    }

    @Test("malformed payloads and far jumps are counted, never assembled")
    func malformed() throws {
        let header = RTPHeader(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1)
        var bytes = [UInt8](repeating: 0, count: 13)
        bytes.withUnsafeMutableBytes { header.write(into: $0) }
        bytes[12] = 0x90  // X and I set, but the descriptor ends there
        let packet = try RTPPacket(bytes)
        let (frames, assembler) = assemble(.vp8, [packet])
        #expect(frames.isEmpty && assembler.packetsMalformed == 1)
    }
}

extension AssembledFrame {
    fileprivate static func === (lhs: AssembledFrame, rhs: AssembledFrame?) -> Bool {
        guard let rhs else { return false }
        return lhs.sequenceNumbers == rhs.sequenceNumbers
    }
}

extension RTPPacket: Equatable {
    public static func == (lhs: RTPPacket, rhs: RTPPacket) -> Bool { lhs.bytes == rhs.bytes }
}
