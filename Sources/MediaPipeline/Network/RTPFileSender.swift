#if canImport(Glibc)
    import Glibc
#endif

/// What an RTP send did, per stream.
public struct RTPSendSummary: Sendable, Equatable {
    /// One stream sent.
    public struct Stream: Sendable, Equatable {
        /// The codec, the port its RTP went to, and what was sent.
        public var codec: MediaCodec, port: Int, frames: Int64, packets: Int64, bytes: Int64
    }
    /// The streams, in the SDP's order.
    public var streams: [Stream]
    /// The session description a peer receives them with.
    public var sdp: SessionDescription
}

/// Sends the frames of media files (IVF, Ogg Opus, WebM: every VP8, VP9 and Opus track) as RTP
/// to a host, paced by their times: stream `i` to `port + 2i` (its RTCP to the next port, where
/// a BYE goes at the end), as ffmpeg lays out its RTP outputs. The ``SessionDescription`` a
/// peer needs (ffmpeg's `-i our.sdp`) comes with the summary, and `describe` gets it before
/// anything is sent.
public enum RTPFileSender {
    /// Sends `inputs` to `host` from `port` on; `realtime` paces packets at their media times
    /// (otherwise they go as fast as the socket takes them). `describe` is called with the SDP
    /// before the first packet, `startDelaySeconds` before it is sent.
    /// - Throws: ``MediaError`` naming the file for inputs that are not IVF, Ogg Opus or WebM,
    ///   or the address for a socket error.
    @discardableResult
    public static func send(
        inputs: [String], host: String, port: Int, realtime: Bool = true, startDelaySeconds: Double = 0,
        clock: MediaClock = WallClock(), describe: ((SessionDescription) throws -> Void)? = nil
    ) throws -> RTPSendSummary {
        let sources = try inputs.map(PacketSource.init(path:))
        var streams: [(source: Int, track: Int, packetizer: RTPPacketizer, port: Int)] = []
        var media: [SessionDescription.Media] = []
        for (s, source) in sources.enumerated() {
            for (t, track) in source.tracks.enumerated() {
                let streamPort = port + 2 * streams.count
                guard streamPort + 1 <= 65535 else {
                    throw MediaError.invalidArgument("ports from \(port) run past 65535")
                }
                let isOpus = track.codec == .opus
                let payloadType: UInt8 = isOpus ? 111 : track.codec == .vp8 ? 96 : 98
                let ssrc = UInt32(0x4D50_0000 + streams.count)
                streams.append(
                    (s, t, try RTPPacketizer(codec: track.codec, ssrc: ssrc, payloadType: payloadType), streamPort))
                var format = SessionDescription.Media.Format(
                    payloadType: Int(payloadType), encoding: isOpus ? "opus" : track.codec == .vp8 ? "VP8" : "VP9",
                    clockRate: isOpus ? 48_000 : 90_000, channels: isOpus ? 2 : 1)
                if isOpus { format.parameters = "sprop-stereo=\(track.opusHead?.channelCount == 2 ? 1 : 0)" }
                var section = SessionDescription.Media(
                    kind: isOpus ? "audio" : "video", port: streamPort, formats: [format])
                section.ssrc = ssrc
                media.append(section)
            }
        }
        guard !streams.isEmpty else { throw MediaError.invalidArgument("no VP8, VP9 or Opus stream in the inputs") }
        let sdp = SessionDescription(connectionAddress: host, media: media)
        try describe?(sdp)
        let socket = try UDPSocket(address: host.contains(":") ? "::" : "0.0.0.0", port: 0)
        if startDelaySeconds > 0 { usleep(useconds_t(startDelaySeconds * 1_000_000)) }

        var totals = Array(repeating: (frames: Int64(0), packets: Int64(0), bytes: Int64(0)), count: streams.count)
        var next = try sources.map { try $0.next() }
        let start = clock.nowMicroseconds
        var firstTime: Int64?
        while let pick = next.indices.filter({ next[$0] != nil }).min(by: {
            next[$0]!.timeMicroseconds < next[$1]!.timeMicroseconds
        }) {
            let packet = next[pick]!
            next[pick] = try sources[pick].next()
            guard let s = streams.firstIndex(where: { $0.source == pick && $0.track == packet.track }) else { continue }
            if firstTime == nil { firstTime = packet.timeMicroseconds }
            if realtime {
                let due = start + packet.timeMicroseconds - firstTime!
                let wait = due - clock.nowMicroseconds
                if wait > 0 { usleep(useconds_t(wait)) }
            }
            let frame = EncodedFrame(
                bytes: packet.bytes, codec: sources[pick].tracks[packet.track].codec, isKeyframe: packet.isKeyframe,
                timestampMicroseconds: packet.timeMicroseconds, durationMicroseconds: packet.durationMicroseconds)
            let destination = streams[s].port
            try streams[s].packetizer.packetize(frame) { rtp in
                try rtp.bytes.withUnsafeBytes { try socket.send($0, to: host, port: destination) }
                totals[s].packets += 1
                totals[s].bytes += Int64(rtp.bytes.count)
            }
            totals[s].frames += 1
        }
        // RTCP BYE on each stream's RTCP port: the session is over.
        for stream in streams {
            let ssrc = stream.packetizer.ssrc
            let bye: [UInt8] = [
                0x81, 203, 0, 1, UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF),
                UInt8(ssrc & 0xFF),
            ]
            try bye.withUnsafeBytes { try socket.send($0, to: host, port: stream.port + 1) }
        }
        return RTPSendSummary(
            streams: streams.indices.map {
                RTPSendSummary.Stream(
                    codec: streams[$0].packetizer.codec, port: streams[$0].port, frames: totals[$0].frames,
                    packets: totals[$0].packets, bytes: totals[$0].bytes)
            }, sdp: sdp)
    }
}
