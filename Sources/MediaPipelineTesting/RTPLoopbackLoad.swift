import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// RTP over real UDP sockets on loopback, for the throughput benchmarks: a publishing
/// ``RTPSession`` and a receiving one whose video decoder does nothing, so what is timed is
/// packetizing, sending, the kernel's loopback, the receive thread (batched reads, parsing,
/// recycled storage) and the engine's depacketizing and queueing — not VP8 decoding, nor the
/// pacer's waits (pacing is off: frames are pushed as fast as they go).
public final class RTPLoopbackLoad {
    /// The publishing side and the receiving side.
    public let sender: RTPSession
    public let receiver: RTPSession?
    private var timestamp: Int64 = 0
    private var framesPushed: Int64 = 0

    /// RTP packets sent per frame pushed so far.
    public var packetsPerFrame: Double { Double(sender.transport.packetsSent) / Double(max(1, framesPushed)) }

    /// A sender and, with `receiving`, a receiver for it; without, the sender's packets go to
    /// a loopback port nobody reads (its sending cost alone).
    public init(receiving: Bool) throws {
        var configuration = EngineConfiguration()
        configuration.codecs.makeVideoDecoder = { _, _ in NullVideoDecoder() }
        let video = SessionDescription.Media(
            kind: "video", port: 0, formats: [.init(payloadType: Int(RTPPayloadType.vp8), codec: .vp8)])
        if receiving {
            let receiver = try RTPSession(
                streams: RTPPeerStream.streams(
                    receiving: SessionDescription(connectionAddress: "127.0.0.1", media: [video]), sendingTo: nil),
                configuration: configuration, pacesVideo: false)
            self.receiver = receiver
            sender = try RTPSession(
                streams: RTPPeerStream.streams(
                    receiving: nil, sendingTo: receiver.transport.localDescription(address: "127.0.0.1")),
                configuration: configuration, pacesVideo: false)
        } else {
            receiver = nil
            // Port 9 (discard): nothing listens on loopback, the kernel drops each datagram.
            var sink = video
            sink.port = 9
            sender = try RTPSession(
                streams: RTPPeerStream.streams(
                    receiving: nil, sendingTo: SessionDescription(connectionAddress: "127.0.0.1", media: [sink])),
                configuration: configuration, pacesVideo: false)
        }
    }

    deinit {
        sender.close()
        receiver?.close()
    }

    /// Publishes `frame` at the next 33 ms step; with a receiver, waits (up to a second) until
    /// every packet sent so far has been received, then lets the engine take the frames due.
    /// Returns false if packets went missing on the way.
    /// - Throws: what ``MediaEngine/pushEncodedFrame(_:)`` throws.
    @discardableResult
    public func push(_ frame: EncodedFrame) throws -> Bool {
        timestamp += 33_333
        framesPushed += 1
        try sender.engine.pushEncodedFrame(frame.restamped(timestamp))
        guard let receiver else { return true }
        let sent = sender.transport.packetsSent
        var spins = 0
        while receiver.transport.packetsReceived < sent {
            spins += 1
            if spins > 100_000 { return false }
            if spins > 100 { usleep(10) } else { sched_yield() }
        }
        receiver.engine.renderVideo()
        return true
    }
}

/// A video decoder that decodes nothing.
private final class NullVideoDecoder: VideoDecoding {
    func decode(_ packet: UnsafeRawBufferPointer, _ body: (I420View) throws -> Void) throws -> Int { 0 }
}
