import Foundation
import Testing

@testable import MediaPipeline

/// Two ``RTPSession``s in one process over loopback UDP: one publishes, one receives. Pushing
/// and rendering run on different threads while the transports' receive threads deliver (this
/// suite also runs under ThreadSanitizer).
@Suite("RTP sessions between two engines over loopback UDP")
struct RTPSessionTests {
    @Test(
        "a session publishes an IVF file's frames and Opus; the other renders every frame and plays the audio",
        arguments: ["127.0.0.1", "::1"])
    func sessionToSession(address: String) throws {
        let folder = TemporaryFolder()
        // The receiver binds free ports; the sender is told them by the receiver's description.
        let receiving = SessionDescription(
            connectionAddress: address,
            media: [
                .init(kind: "video", port: 0, formats: [.init(payloadType: 100, encoding: "VP8", clockRate: 90_000)]),
                .init(
                    kind: "audio", port: 0,
                    formats: [.init(payloadType: 101, encoding: "opus", clockRate: 48_000, channels: 2)]),
            ])
        let receiver = try RTPSession(receiving: receiving, sendingTo: nil)
        defer { receiver.close() }
        let description = receiver.transport.localDescription(address: address)
        #expect(description.text.contains(address.contains(":") ? "IN IP6 ::1" : "IN IP4 127.0.0.1"))
        #expect(description.media.allSatisfy { $0.port > 0 })
        let sender = try RTPSession(receiving: nil, sendingTo: description)
        defer { sender.close() }
        #expect(sender.channel.publishedMedia == [.audio, .video])

        let recording = try receiver.engine.startRecording(
            channelId: RTPSession.channelId, uid: RTPSession.peerUid, path: folder.file("video.ivf"), media: .video)
        let canvas = try receiver.engine.setupRemoteVideo(
            VideoCanvas(channelId: RTPSession.channelId, uid: RTPSession.peerUid, width: 320, height: 180))

        // The sender's thread pushes the file's frames (in their own time, paced) and 20 ms
        // Opus packets; this thread pulls the playout and renders meanwhile.
        let frames = try IVFReader(path: Fixtures.motionIVF)
        var encoded: [[UInt8]] = []
        while let frame = try frames.readFrame() { encoded.append(frame.bytes) }
        let opus = try OpusEncoder()
        let tone = (0..<960 * 2).map { Int16(8000 * sin(Double($0 / 2) * 2 * .pi * 440 / 48_000)) }
        var packets: [[UInt8]] = []
        for _ in 0..<150 {
            packets.append(try tone.withUnsafeBufferPointer { try opus.encode($0, timestampMicroseconds: 0).bytes })
        }
        let pushed = Thread { [encoded, packets] in
            let start = Date()
            for index in 0..<150 {
                let time = Int64(index) * 20_000
                if index % 2 == 0, index / 2 < encoded.count {
                    sender.engine.pushEncodedFrame(
                        EncodedFrame(
                            bytes: encoded[index / 2], codec: .vp8, isKeyframe: index == 0,
                            timestampMicroseconds: Int64(index / 2) * 33_333, durationMicroseconds: 33_333))
                }
                sender.engine.pushEncodedFrame(
                    EncodedFrame(
                        bytes: packets[index], codec: .opus, isKeyframe: true, timestampMicroseconds: time,
                        durationMicroseconds: 20_000))
                let due = start.addingTimeInterval(Double(time + 20_000) / 1e6)
                Thread.sleep(forTimeInterval: max(0, due.timeIntervalSinceNow))
            }
        }
        pushed.start()
        var mix = [Int16](repeating: 0, count: receiver.engine.playoutFrameSampleCount)
        var loudest = 0
        for _ in 0..<400 {
            mix.withUnsafeMutableBufferPointer { receiver.engine.pullPlayout(into: $0) }
            loudest = max(loudest, mix.map { abs(Int($0)) }.max() ?? 0)
            receiver.engine.renderVideo()
            Thread.sleep(forTimeInterval: 0.01)
        }
        let (_, videoFrames) = try receiver.engine.stopRecording(recording)
        let totals = receiver.channel.remoteStreamTotals(RTPSession.peerUid)
        // Every frame pushed (75 of the file's) arrived, decoded and in order, byte for byte.
        #expect(videoFrames == 75, "\(String(describing: totals))")
        let reader = try IVFReader(path: folder.file("video.ivf"))
        var received: [[UInt8]] = []
        while let frame = try reader.readFrame() { received.append(frame.bytes) }
        #expect(received == Array(encoded.prefix(75)))
        #expect(canvas.framesRendered > 0 && canvas.sourceSize == (640, 360))
        // The tone plays (its 8000 peak, within the Opus coding error).
        #expect(loudest > 6000, "loudest sample \(loudest)")
        #expect(totals?.audioPacketsDecoded ?? 0 >= 140, "\(String(describing: totals))")
        let statistics = receiver.transport.statistics
        #expect(statistics.first { $0.kind == .video }?.packetsReceived ?? 0 > 75)
        #expect(sender.transport.statistics.allSatisfy { $0.packetsSent > 0 && $0.sendFailures == 0 })
    }

    @Test("a transport carries one channel; the peer's uid and a bad remote are refused")
    func refusals() throws {
        #expect(throws: MediaError.self) {
            try RTPPeerTransport(streams: [
                {
                    var stream = RTPPeerStream(kind: .video, localAddress: "127.0.0.1")
                    stream.remoteHost = "example.org"
                    stream.remotePort = 5004
                    return stream
                }()
            ])
        }
        var stream = RTPPeerStream(kind: .audio, localAddress: "127.0.0.1")
        stream.receiveFormats = [.init(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2)]
        let transport = try RTPPeerTransport(streams: [stream])
        defer { transport.close() }
        let engine = try MediaEngine(transport: transport, clock: WallClock())
        let first = try engine.createChannel("one")
        try first.join(uid: 7, options: .subscribeOnly)
        #expect(first.isJoined && first.remoteUsers == [RTPPeerTransport.peerUid])
        let second = try engine.createChannel("two")
        try second.join(uid: 8, options: .subscribeOnly)
        #expect(!second.isJoined)
        engine.destroy()
    }
}
