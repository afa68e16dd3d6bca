import Foundation
import Testing

@testable import MediaPipeline

/// The stream identity, and the transports naming each packet's stream.
@Suite("Media stream identity")
struct MediaStreamIDTests {
    @Test("audio has one layer; names and equality follow channel, uid, kind and layer")
    func identity() {
        let audio = MediaStreamID(channelId: "c", uid: 7, kind: .audio, layer: .low)
        #expect(audio.layer == .high)
        #expect(audio == .audio(channelId: "c", uid: 7))
        #expect(audio.withLayer(.low) == audio)
        let video = MediaStreamID.video(channelId: "c", uid: 7)
        #expect(video != audio)
        #expect(video.withLayer(.low) != video)
        #expect(video.withLayer(.low).user == StreamKey(channelId: "c", uid: 7))
        #expect(MediaStreamID.video(channelId: "c", uid: 7) != .video(channelId: "d", uid: 7))
        #expect("\(audio) \(video) \(video.withLayer(.low))" == "c/7/audio c/7/video c/7/video-low")
    }

    /// An endpoint that keeps the streams it is given packets of.
    final class StreamRecorder: TransportEndpoint, @unchecked Sendable {
        private let lock = NSLock()
        private var received: [MediaStreamID] = []
        var streams: [MediaStreamID] { lock.withLock { received } }
        func transportUserJoined(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportUserOffline(channelId: String, uid: UInt32, reason: UserOfflineReason) {}
        func transportMediaChanged(channelId: String, uid: UInt32, media: PublishedMedia) {}
        func transportReceive(_ packet: RTPPacket, stream: MediaStreamID) { lock.withLock { received.append(stream) } }
        func transportReceiveRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32) {}
        func transportConnectionStateChanged(
            channelId: String, state: ConnectionState, reason: ConnectionChangedReason
        ) {}
    }

    /// An RTP datagram of `payloadType` with a few payload bytes.
    func datagram(payloadType: UInt8, sequence: UInt16, ssrc: UInt32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0x10, count: 12 + 20)
        let header = RTPHeader(
            marker: true, payloadType: payloadType, sequenceNumber: sequence, timestamp: 0, ssrc: ssrc)
        bytes.withUnsafeMutableBytes { header.write(into: $0) }
        return bytes
    }

    @Test(
        "a WebRTC subscription names each packet's stream by the kind its payload type maps to and the layer forwarded")
    func mapperNamesStreams() {
        let recorder = StreamRecorder()
        let mapper = ReceivedPacketMapper(channelId: "room", uid: 42, endpoint: recorder)
        mapper.payloadTypes.map(remote: 111, to: RTPPayloadType.opus)
        mapper.payloadTypes.map(remote: 96, to: RTPPayloadType.vp8)
        func receive(_ payloadType: UInt8, _ sequence: UInt16) {
            datagram(payloadType: payloadType, sequence: sequence, ssrc: payloadType == 111 ? 1 : 2)
                .withUnsafeBytes { mapper.rtp($0) }
        }
        receive(111, 1)
        receive(96, 1)
        #expect(mapper.videoLayer == nil)
        mapper.videoLayer = .low
        receive(96, 2)
        receive(111, 2)
        mapper.setSubscribed(false, .video)
        receive(96, 3)
        receive(97, 1)  // no meaning here: ignored
        let audio = MediaStreamID.audio(channelId: "room", uid: 42)
        let video = MediaStreamID.video(channelId: "room", uid: 42)
        #expect(recorder.streams == [audio, video, video.withLayer(.low), audio])
        #expect(mapper.counters.unsubscribed == 1)
        #expect(mapper.counters.ignored == 1)
    }

    @Test("an engine drops packets whose payload type is not of the kind their stream names, and takes them when it is")
    func engineChecksKind() throws {
        let session = TestSession()
        let viewer = try session.user()
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let sender = StreamRecorder()
        _ = try session.hub.join(
            channelId: "a", uid: 9, role: .broadcaster, media: [.audio, .video], receivesMedia: false,
            endpoint: sender)
        var packetizer = try RTPPacketizer(codec: .opus, ssrc: 99, payloadType: RTPPayloadType.opus)
        let frames = try encodedTone(100, with: try OpusEncoder())
        /// Sends frames `range` as `stream`, one per 20 ms, playing out as it goes.
        func send(_ range: Range<Int>, as stream: MediaStreamID) throws {
            for index in range {
                try packetizer.packetize(frames[index]) { session.hub.send($0, stream: stream) }
                try session.run(ticks: 2, publishers: [])
            }
        }
        let channel = try viewer.channel("a")
        try send(0..<50, as: .video(channelId: "a", uid: 9))
        #expect(channel.remoteStreamTotals(9)?.audioPacketsDecoded == 0)
        #expect(channel.remoteStreamTotals(9)?.videoFramesDecoded == 0)
        #expect(viewer.engine.statistics.packetsDroppedUnknownKind == 50)
        try send(50..<100, as: .audio(channelId: "a", uid: 9))
        #expect((channel.remoteStreamTotals(9)?.audioPacketsDecoded ?? 0) > 30)
        #expect(viewer.engine.statistics.packetsDroppedUnknownKind == 50)
    }
}
