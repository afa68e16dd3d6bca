import Foundation
import MediaPipelineTesting
import Testing

@testable import MediaPipeline

/// The first `count` frames of the sample (vpxenc's VP8, 640x360): a keyframe of several
/// packets, then delta frames; media times 33,333 us apart. (LossRecoveryTests uses it too.)
func sampleFrames(_ count: Int) throws -> [EncodedFrame] {
    let reader = try IVFReader(path: Fixtures.motionIVF)
    var frames: [EncodedFrame] = []
    while frames.count < count, let frame = try reader.readFrame() {
        frames.append(
            EncodedFrame(
                bytes: frame.bytes, codec: .vp8, isKeyframe: frame.bytes[0] & 0x01 == 0,
                timestampMicroseconds: Int64(frames.count) * 33_333, durationMicroseconds: 33_333))
    }
    return frames
}

/// Each frame's RTP packets, numbered from just below the 16-bit wrap so it falls inside.
func packetized(_ frames: [EncodedFrame], ssrc: UInt32 = 0x5EED) throws -> [[RTPPacket]] {
    var packetizer = try RTPPacketizer(
        codec: .vp8, ssrc: ssrc, payloadType: RTPPayloadType.vp8, firstSequenceNumber: 65_533)
    return try frames.map { frame in
        var packets: [RTPPacket] = []
        try packetizer.packetize(frame) { packets.append($0) }
        return packets
    }
}

@Suite("The first frames of a stream: packets that overtook its start")
struct FirstFramesTests {
    /// Arrival orders of the sample's packets: the keyframe's first packet after its second,
    /// and after the next two frames' packets.
    enum Overtaken: CaseIterable, CustomStringConvertible {
        case bySecondPacket, byLaterFrames

        func arrival(_ perFrame: [[RTPPacket]]) -> [RTPPacket] {
            let keyframe = perFrame[0]
            switch self {
            case .bySecondPacket:
                return [keyframe[1], keyframe[0]] + keyframe.dropFirst(2) + perFrame.dropFirst().joined()
            case .byLaterFrames:
                return keyframe.dropFirst() + perFrame[1] + perFrame[2] + [keyframe[0]]
                    + perFrame.dropFirst(3).joined()
            }
        }

        var description: String { self == .bySecondPacket ? "by its second packet" : "by the next frames' packets" }
    }

    @Test(
        "a keyframe whose first packet is overtaken comes out whole, and every frame after it, in order",
        arguments: Overtaken.allCases)
    func assemblerKeepsTheStart(order: Overtaken) throws {
        let frames = try sampleFrames(12)
        let perFrame = try packetized(frames)
        try #require(perFrame[0].count >= 3 && frames[0].isKeyframe, "the keyframe should take several packets")
        var assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: 50_000)
        var out: [AssembledFrame] = []
        var now: Int64 = 0
        for packet in order.arrival(perFrame) {
            assembler.insert(packet, now: now) { out.append($0) }
            now += 1_000  // the overtaken packet comes within the 50 ms wait
        }
        assembler.poll(now: now + 1_000_000) { out.append($0) }
        #expect(out.map(\.frame.bytes) == frames.map(\.bytes))
        #expect(out.first?.frame.isKeyframe == true && out.first?.frame.width == 640)
        #expect(out.allSatisfy { !$0.followsGap })
        // Each frame from its own packets' sequence numbers, in order (across the wrap).
        var next = out.first?.sequenceNumbers.lowerBound ?? 0
        for (frame, packets) in zip(out, perFrame) {
            #expect(frame.sequenceNumbers == next...(next + Int64(packets.count) - 1))
            next = frame.sequenceNumbers.upperBound + 1
        }
        // Media times keep their spacing; the first packet to arrive is where they count from.
        let spacing = zip(out.dropFirst(), out).map { $0.frame.timestampMicroseconds - $1.frame.timestampMicroseconds }
        #expect(spacing.allSatisfy { abs($0 - 33_333) <= 11 }, "\(spacing)")
        #expect(assembler.packetsLate == 0 && assembler.packetsLost == 0 && assembler.framesIncomplete == 0)
        #expect(assembler.packetsReceived == Int64(perFrame.joined().count))
    }

    @Test(
        "once a frame is out the start is settled: an older packet is late; a start that never comes waits the start wait only"
    )
    func startSettles() throws {
        let frames = try sampleFrames(6)
        let perFrame = try packetized(frames)
        // The keyframe arrives whole, then a copy of a packet from before it (a stray resend).
        var assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: 50_000)
        var out: [AssembledFrame] = []
        for packet in perFrame[0] { assembler.insert(packet, now: 0) { out.append($0) } }
        #expect(out.count == 1 && assembler.openStart == nil)
        var bytes = perFrame[0][0].bytes
        let earlier = perFrame[0][0].header.sequenceNumber &- 1
        (bytes[2], bytes[3]) = (UInt8(earlier >> 8), UInt8(earlier & 0xFF))
        assembler.insert(try RTPPacket(bytes), now: 1_000) { out.append($0) }
        #expect(assembler.packetsLate == 1 && assembler.firstPending == out[0].sequenceNumbers.upperBound + 1)

        // Joining mid-frame: the keyframe's first packet never comes. The rest of it waits the
        // start wait (20 ms), not the gap wait (1 s, a retransmission's), then the stream
        // starts at the next frame, which follows a gap.
        var joined = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: 1_000_000, startWaitMicroseconds: 20_000)
        var late: [AssembledFrame] = []
        for packet in perFrame[0].dropFirst() + perFrame[1] + perFrame[2] {
            joined.insert(packet, now: 0) { late.append($0) }
        }
        #expect(late.isEmpty)
        joined.poll(now: 19_999) { late.append($0) }
        #expect(late.isEmpty)
        joined.poll(now: 20_000) { late.append($0) }
        #expect(late.map(\.frame.bytes) == [frames[1].bytes, frames[2].bytes])
        #expect(late.first?.followsGap == true)
    }

    @Test("a packet missing between the stream's start and the first packet seen is asked for (NACK)")
    func nackKnowsTheStart() throws {
        // The list: numbers before the earliest noted are missing when the assembler's start moved
        // back to the one that came, not when a packet comes after the start has settled.
        var tracker = NackTracker()
        _ = tracker.received(100, now: 0)
        _ = tracker.received(103, now: 0)  // 101 and 102 missing
        let movedBack = tracker.received(97, now: 1_000, streamStart: 97)  // 98 and 99 too
        let settled = tracker.received(95, now: 2_000, streamStart: nil)  // settled: nothing more
        #expect(movedBack && settled)
        var batch: [UInt16] = []
        tracker.takeDue(now: 2_000, into: &batch, limit: 64)
        #expect(batch == [98, 99, 101, 102])

        let frames = try sampleFrames(4)
        let perFrame = try packetized(frames, ssrc: 0xA11CE)
        let keyframe = perFrame[0]
        try #require(keyframe.count >= 4)
        let receiver = VideoReceiver(
            threads: 1, reorderWaitMicroseconds: 20_000, retransmission: true, feedbackSSRC: 0xFEED)
        // The keyframe's third packet comes first; its first 5 ms later (reordered, within the
        // reorder wait); its second is lost on the way.
        var requested: [UInt16] = []
        func deliver(_ packet: RTPPacket, at now: Int64) throws {
            let progress = receiver.receive(packet, now: now)
            if let message = progress.nack {
                for case .nack(_, let media, let lost) in try message.withUnsafeBytes({ try RTCPCompound.parse($0) }) {
                    #expect(media == 0xA11CE)
                    requested += lost
                }
            }
        }
        try deliver(keyframe[2], at: 0)
        try deliver(keyframe[0], at: 5_000)
        var now: Int64 = 10_000
        for packet in keyframe.dropFirst(3) + perFrame[1] {
            try deliver(packet, at: now)
            now += 1_000
        }
        for tick in 0..<10 {
            let progress = receiver.poll(now: now + Int64(tick) * 5_000)
            if let message = progress.nack {
                for case .nack(_, _, let lost) in try message.withUnsafeBytes({ try RTCPCompound.parse($0) }) {
                    requested += lost
                }
            }
        }
        #expect(requested.first == keyframe[1].header.sequenceNumber, "\(requested)")
        #expect(Set(requested) == [keyframe[1].header.sequenceNumber])
        // The resend completes the keyframe: it and the frame behind it are queued, nothing
        // was dropped and no keyframe is wanted.
        let resent = receiver.receive(keyframe[1], now: now + 60_000)
        #expect(resent.frames == 2 && resent.framesDropped == 0 && resent.packetsLost == 0)
        #expect(receiver.inbox.withLock { $0.queue.first?.isKeyframe } == true)
        #expect(receiver.keyframeState.wanted == nil)
    }

    @Test(
        "through the engine: a file sender's first keyframe overtaken by its next frame is decoded, every picture as the reference decoder's"
    )
    func engineDecodesTheFirstKeyframe() throws {
        let frames = try sampleFrames(30)
        // The reference: the library's decoder over the same frames, picture by picture.
        let reference = try VPXDecoder(codec: .vp8)
        var expected: [String] = []
        for frame in frames {
            try frame.withUnsafeBytes { bytes in _ = try reference.decode(bytes) { expected.append($0.md5()) } }
        }
        let session = TestSession()
        let scripted = ScriptedTransport(hub: session.hub)
        let host = try session.user(transport: scripted)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let pictures = PictureDigests()
        viewer.engine.setVideoFrameObserver(pictures)
        // The host's first video packet (the keyframe's first) is held back until the frame after
        // the keyframe has gone out whole.
        let held = HeldFirstVideoPacket()
        scripted.scriptPackets { packet, _ in held.fate(of: packet) }
        for (index, frame) in frames.enumerated() {
            try host.engine.pushEncodedFrame(
                EncodedFrame(
                    bytes: frame.bytes, codec: .vp8, isKeyframe: frame.isKeyframe,
                    timestampMicroseconds: session.clock.nowMicroseconds, durationMicroseconds: 30_000))
            if index == 1 {
                #expect(scripted.heldPacketCount == 1)
                scripted.releasePackets()
            }
            for _ in 0..<3 {
                viewer.engine.renderVideo()
                session.clock.advance(byMicroseconds: 10_000)
                session.hub.deliverDue()
            }
        }
        for _ in 0..<50 {
            viewer.engine.renderVideo()
            session.clock.advance(byMicroseconds: 10_000)
        }
        #expect(pictures.digests == expected, "\(pictures.digests.count) of \(expected.count) pictures")
        let stats = try viewer.channel("a").statistics
        #expect(stats.videoFramesDroppedBeforeDecode == 0 && stats.keyframeRequestsSent == 0, "\(stats)")
    }
}

/// Holds the first video packet a sender sends, delivering every other one.
private final class HeldFirstVideoPacket: @unchecked Sendable {
    private let lock = NSLock()
    private var heldOne = false

    func fate(of packet: RTPPacket) -> ScriptedTransport.PacketFate {
        guard RTPPayloadType.codec(packet.header.payloadType)?.kind == .video else { return .deliver }
        return lock.withLock {
            defer { heldOne = true }
            return heldOne ? .deliver : .hold
        }
    }
}

/// The MD5 of every picture a ``VideoFrameObserver`` is shown, in order.
private final class PictureDigests: VideoFrameObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        let digest = picture.md5()
        lock.withLock { collected.append(digest) }
    }

    var digests: [String] { lock.withLock { collected } }
}
