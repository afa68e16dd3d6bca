import Foundation
import Testing

@testable import MediaPipeline

/// An endpoint that keeps the RTP packets, RTCP and layer switches it is given.
final class LayerRecorder: TransportEndpoint, @unchecked Sendable {
    private let lock = NSLock()
    private var packetsReceived: [RTPPacket] = []
    private var streamsReceived: [MediaStreamID] = []
    private var feedbackReceived: [[UInt8]] = []
    private var switchesReceived: [VideoStreamType] = []
    var packets: [RTPPacket] { lock.withLock { packetsReceived } }
    /// The stream each packet was delivered as, in order.
    var streams: [MediaStreamID] { lock.withLock { streamsReceived } }
    var feedback: [[UInt8]] { lock.withLock { feedbackReceived } }
    var switches: [VideoStreamType] { lock.withLock { switchesReceived } }
    func clear() { lock.withLock { (packetsReceived, streamsReceived, feedbackReceived) = ([], [], []) } }
    func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {}
    func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {}
    func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {}
    func transportReceive(_ packet: RTPPacket, stream: MediaStreamID) {
        lock.withLock {
            packetsReceived.append(packet)
            streamsReceived.append(stream)
        }
    }
    func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {
        lock.withLock { feedbackReceived.append(bytes) }
    }
    func transportConnectionStateChanged(channelId: String, state: ConnectionState, reason: ConnectionChangedReason) {}
    func transportVideoStreamTypeChanged(channelId: String, uid: UInt32, type: VideoStreamType) {
        lock.withLock { switchesReceived.append(type) }
    }
}

/// What an RTCP datagram asks of the publisher: keyframes (by SSRC) and lost packets (SSRC, number).
struct FeedbackRequests: RTCPVisitor {
    var pictureLoss: [UInt32] = []
    var lost: [(ssrc: UInt32, sequence: UInt16)] = []
    private var nackSSRC: UInt32 = 0
    mutating func pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32) { pictureLoss.append(mediaSSRC) }
    mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32) { nackSSRC = mediaSSRC }
    mutating func lost(_ sequenceNumber: UInt16) { lost.append((nackSSRC, sequenceNumber)) }

    static func of(_ datagrams: [[UInt8]]) throws -> FeedbackRequests {
        var requests = FeedbackRequests()
        for bytes in datagrams { try bytes.withUnsafeBytes { try RTCPCompound.visit($0, &requests) } }
        return requests
    }
}

/// A publisher's two VP8 layers as packets: frames of made-up bytes whose first byte marks a
/// keyframe as VP8's frame tag does (its lowest bit clear), the layers on one RTP time base.
struct TwoLayers {
    var high = try! RTPPacketizer(
        codec: .vp8, ssrc: 0x1111, payloadType: RTPPayloadType.vp8,
        firstSequenceNumber: 40_000, timestampOffset: 9_000, firstPictureId: 100)
    var low = try! RTPPacketizer(
        codec: .vp8, ssrc: 0x2222, payloadType: RTPPayloadType.vp8,
        firstSequenceNumber: 65_530, timestampOffset: 9_000, firstPictureId: 32_760)

    /// The packets of frame `index` of `layer` (2,500 bytes high, 700 low).
    mutating func frame(_ index: Int, _ layer: VideoStreamType, keyframe: Bool) -> [RTPPacket] {
        var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: layer == .high ? 2_500 : 700)
        bytes[0] = keyframe ? 0x10 : 0x11
        let frame = EncodedFrame(
            bytes: bytes, codec: .vp8, isKeyframe: keyframe, timestampMicroseconds: Int64(index) * 33_333,
            durationMicroseconds: 33_333)
        var packets: [RTPPacket] = []
        if layer == .high {
            try! high.packetize(frame) { packets.append($0) }
        } else {
            try! low.packetize(frame) { packets.append($0) }
        }
        return packets
    }
}

@Suite("A hub forwarding a publisher's two video layers")
struct VideoLayerForwardingTests {
    let hub = LocalHub()
    let publisher = LayerRecorder()
    let subscriber = LayerRecorder()

    init() throws {
        _ = try hub.join(
            channelId: "c", uid: 1, role: .broadcaster, media: [.video], receivesMedia: true, endpoint: publisher)
        _ = try hub.join(channelId: "c", uid: 2, role: .audience, media: [], receivesMedia: true, endpoint: subscriber)
    }

    /// Sends frame `index` of both layers (low on even frames: half the rate), keyframes where said.
    func sendFrame(_ layers: inout TwoLayers, _ index: Int, highKey: Bool = false, lowKey: Bool = false) {
        for packet in layers.frame(index, .high, keyframe: highKey) {
            hub.send(packet, stream: .video(channelId: "c", uid: 1))
        }
        guard index % 2 == 0 || lowKey else { return }
        for packet in layers.frame(index, .low, keyframe: lowKey) {
            hub.send(packet, stream: .video(channelId: "c", uid: 1, layer: .low))
        }
    }

    /// The PictureID of a VP8 packet.
    func pictureId(_ packet: RTPPacket) throws -> UInt16 {
        try #require(try packet.withUnsafePayload { try VP8PayloadDescriptor(parsing: $0) }.pictureId)
    }

    /// Checks that `packets` read as one stream: one SSRC, consecutive numbers, PictureIDs
    /// that go up by one per frame.
    func expectContinuous(_ packets: [RTPPacket], ssrc: UInt32) throws {
        for (before, after) in zip(packets, packets.dropFirst()) {
            #expect(after.header.ssrc == ssrc)
            #expect(after.header.sequenceNumber == before.header.sequenceNumber &+ 1)
            let step = (try pictureId(after) &- pictureId(before)) & 0x7FFF
            #expect(step == (before.header.marker ? 1 : 0), "PictureID step \(step)")
        }
    }

    @Test("a switch waits for the target layer's keyframe, asks once for it, and the stream stays continuous")
    func switchesOnKeyframes() throws {
        var layers = TwoLayers()
        sendFrame(&layers, 0, highKey: true, lowKey: true)
        for index in 1..<6 { sendFrame(&layers, index) }
        // Wanting high by default: the high layer as sent, by reference.
        #expect(subscriber.packets.allSatisfy { $0.header.ssrc == 0x1111 })
        #expect(subscriber.packets.count == 6 * 3)
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == .high)

        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 2, publisher: 1)
        for index in 6..<10 { sendFrame(&layers, index) }
        // Still high until the low layer's keyframe: one request for it, naming the low SSRC.
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x2222])
        #expect(subscriber.packets.count == 10 * 3)
        sendFrame(&layers, 10, lowKey: true)
        for index in 11..<16 { sendFrame(&layers, index) }
        let afterLow = subscriber.packets
        let lowNext = layers.low.nextSequenceNumber
        // Frame 10's high packets, then the low keyframe and the low frames 12 and 14 (one packet each).
        #expect(afterLow.count == 11 * 3 + 3)
        #expect(subscriber.switches == [.low])
        try expectContinuous(afterLow, ssrc: 0x1111)
        // Each packet is delivered as the stream of the layer it was forwarded from: the 33
        // high packets, then the 3 low ones, as one continuous stream on the wire.
        let high = MediaStreamID.video(channelId: "c", uid: 1)
        #expect(
            subscriber.streams == Array(repeating: high, count: 33) + Array(repeating: high.withLayer(.low), count: 3))
        // The low payloads arrive whole after their descriptor.
        let lowSent = layers.frame(99, .low, keyframe: false)[0]
        #expect(afterLow.last!.bytes.count == lowSent.bytes.count)
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x2222])

        // A NACK of a number the subscriber saw goes to the layer and number it came from.
        let nackedSeen = afterLow[afterLow.count - 2].header.sequenceNumber
        let nack = RTCPCompound.serialize([.nack(senderSSRC: 7, mediaSSRC: 0x1111, lostSequenceNumbers: [nackedSeen])])
        hub.sendRTCP(nack, channelId: "c", from: 2, to: 1)
        let requests = try FeedbackRequests.of([publisher.feedback.last!])
        #expect(requests.lost.count == 1)
        #expect(requests.lost.first?.ssrc == 0x2222)
        #expect(requests.lost.first?.sequence == lowNext &- 2)
        // And its retransmission arrives as the subscriber knows it.
        let resent = try #require(layers.frame(98, .low, keyframe: false).first)
        hub.resend(resent, stream: .video(channelId: "c", uid: 1, layer: .low), to: 2)
        #expect(subscriber.packets.last?.header.ssrc == 0x1111)

        // Back to high: one request naming the high SSRC, then the high keyframe switches.
        subscriber.clear()
        hub.setRemoteVideoStreamType(.high, channelId: "c", subscriber: 2, publisher: 1)
        sendFrame(&layers, 16)
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x2222, 0x1111])
        sendFrame(&layers, 17, highKey: true)
        sendFrame(&layers, 18)
        #expect(subscriber.switches == [.low, .high])
        let afterHigh = subscriber.packets
        #expect(afterHigh.count == 1 + 3 + 3)  // low frame 16, then high frames 17 and 18
        try expectContinuous(afterHigh, ssrc: 0x1111)
    }

    @Test("long after a switch, a number maps to the layer forwarded now (the numbers come round)")
    func mappingLongAfterSwitch() throws {
        var layers = TwoLayers()
        var forwarder = VideoLayerForwarder(target: .high)
        for packet in layers.frame(0, .high, keyframe: true) {
            _ = forwarder.forward(packet, layer: .high, highSSRC: 0x1111)
        }
        forwarder.want(.low)
        let keyframe = try #require(layers.frame(0, .low, keyframe: true).first)
        let (decision, switched) = forwarder.forward(keyframe, layer: .low, highSSRC: 0x1111)
        guard case .rewritten(let first) = decision else { throw MediaError.invalidArgument("no switch") }
        #expect(switched)
        let seen = first.header.sequenceNumber
        // Just before the switch: the high layer's numbers; after it, and 40,000 packets on
        // (past half the number space), the low layer's.
        #expect(forwarder.original(of: seen &- 1).0 == .high)
        #expect(forwarder.original(of: seen).0 == .low)
        #expect(forwarder.original(of: seen &+ 40_000) == (.low, keyframe.header.sequenceNumber &+ 40_000))
    }

    @Test(
        "a publisher that says it sends a low layer before its first picture: each subscriber gets its layer from the first packet, one continuous stream, with no keyframe asked"
    )
    func announcedLowLayer() throws {
        let highSubscriber = LayerRecorder()
        _ = try hub.join(
            channelId: "c", uid: 3, role: .audience, media: [], receivesMedia: true, endpoint: highSubscriber)
        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 2, publisher: 1)
        hub.setSendsLowVideo(true, channelId: "c", uid: 1)
        var layers = TwoLayers()
        for index in 0..<6 { sendFrame(&layers, index, highKey: index == 0, lowKey: index == 0) }
        // Low frames 0, 2 and 4 (1 packet each), high frames 0–5 (3 packets each).
        #expect(subscriber.packets.count == 3)
        #expect(subscriber.streams.allSatisfy { $0 == .video(channelId: "c", uid: 1, layer: .low) })
        #expect(try subscriber.packets.map { try pictureId($0) } == [32_760, 32_761, 32_762])
        try expectContinuous(subscriber.packets, ssrc: 0x1111)
        #expect(subscriber.switches == [.low])
        #expect(highSubscriber.packets.count == 18)
        #expect(highSubscriber.packets.allSatisfy { $0.header.ssrc == 0x1111 })
        try expectContinuous(highSubscriber.packets, ssrc: 0x1111)
        #expect(highSubscriber.switches == [.high])
        #expect(publisher.feedback.isEmpty)
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == .low)
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 3, publisher: 1) == .high)
    }

    @Test(
        "a publisher that says it sends a low layer and unsays it before any low packet is forwarded by reference again; a later start numbers on from there"
    )
    func announcedThenWithdrawn() throws {
        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 2, publisher: 1)
        var layers = TwoLayers()
        hub.setSendsLowVideo(true, channelId: "c", uid: 1)
        for packet in layers.frame(0, .high, keyframe: true) {
            hub.send(packet, stream: .video(channelId: "c", uid: 1))
        }
        #expect(subscriber.packets.isEmpty)  // waiting for the low layer
        hub.setSendsLowVideo(false, channelId: "c", uid: 1)
        for index in 1..<3 {
            for packet in layers.frame(index, .high, keyframe: false) {
                hub.send(packet, stream: .video(channelId: "c", uid: 1))
            }
        }
        #expect(subscriber.packets.count == 6)  // by reference again
        hub.setSendsLowVideo(true, channelId: "c", uid: 1)
        sendFrame(&layers, 3, lowKey: true)
        sendFrame(&layers, 4)
        // The plain packets, high frame 3, then the low keyframe and frame 4: one stream.
        #expect(subscriber.packets.count == 11)
        try expectContinuous(subscriber.packets, ssrc: 0x1111)
        #expect(subscriber.switches == [.low])
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == .low)
    }

    @Test(
        "a subscriber that comes after the publisher became layered gets nothing until a keyframe of the layer it wants, asked for once, then one continuous stream"
    )
    func lateSubscriberOfLayeredPublisher() throws {
        var layers = TwoLayers()
        for index in 0..<4 { sendFrame(&layers, index, highKey: index == 0, lowKey: index == 0) }
        let late = LayerRecorder()
        _ = try hub.join(channelId: "c", uid: 3, role: .audience, media: [], receivesMedia: true, endpoint: late)
        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 3, publisher: nil)
        for index in 4..<8 { sendFrame(&layers, index) }
        #expect(late.packets.isEmpty)
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x2222])
        sendFrame(&layers, 8, lowKey: true)
        sendFrame(&layers, 10)
        #expect(late.packets.count == 2)
        #expect(late.streams.allSatisfy { $0 == .video(channelId: "c", uid: 1, layer: .low) })
        try expectContinuous(late.packets, ssrc: 0x1111)
        #expect(late.switches == [.low])
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x2222])
        // The subscriber there from the start goes on with the high layer, by reference.
        #expect(subscriber.packets.count == 30 && subscriber.packets.allSatisfy { $0.header.ssrc == 0x1111 })
    }

    @Test("asking for the low layer of a publisher without one delivers the high layer")
    func lowOfSingleLayerPublisher() throws {
        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 2, publisher: 1)
        var layers = TwoLayers()
        for index in 0..<4 {
            for packet in layers.frame(index, .high, keyframe: index == 0) {
                hub.send(packet, stream: .video(channelId: "c", uid: 1))
            }
        }
        #expect(subscriber.packets.count == 12)
        #expect(subscriber.packets.allSatisfy { $0.header.ssrc == 0x1111 })
        #expect(publisher.feedback.isEmpty)
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == nil)
    }

    @Test("when the publisher stops its low layer, its low subscribers go back to high on a keyframe")
    func lowLayerStops() throws {
        hub.setRemoteVideoStreamType(.low, channelId: "c", subscriber: 2, publisher: nil)
        var layers = TwoLayers()
        sendFrame(&layers, 0, highKey: true, lowKey: true)
        sendFrame(&layers, 1)
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == .low)
        hub.setSendsLowVideo(false, channelId: "c", uid: 1)
        for index in 2..<4 {
            for packet in layers.frame(index, .high, keyframe: false) {
                hub.send(packet, stream: .video(channelId: "c", uid: 1))
            }
        }
        #expect(try FeedbackRequests.of(publisher.feedback).pictureLoss == [0x1111])
        for packet in layers.frame(4, .high, keyframe: true) {
            hub.send(packet, stream: .video(channelId: "c", uid: 1))
        }
        #expect(hub.forwardedVideoStreamType(channelId: "c", subscriber: 2, publisher: 1) == .high)
        #expect(subscriber.switches == [.low, .high])
        // Continuous from the first packet: the high frame sent before the publisher was
        // layered, the switch to low at once, and back.
        try expectContinuous(subscriber.packets, ssrc: 0x1111)
    }
}
