/// What an RTP receive did, per stream.
public struct RTPReceiveSummary: Sendable, Equatable {
    /// One stream (m= section) received.
    public struct Stream: Sendable, Equatable {
        /// The codec and the file written.
        public var codec: MediaCodec, output: String
        /// RTP packets received, lost (sequence numbers never seen), and frames written.
        public var packets: Int64, packetsLost: Int64, frames: Int64
        /// Datagrams on the stream's ports that were not its packets (garbage, other senders).
        public var ignored: Int64
        /// Whether the sender said goodbye (RTCP BYE).
        public var sawBye: Bool
    }
    /// The streams, in the SDP's order.
    public var streams: [Stream]
    /// Why receiving ended: "bye", "timeout" or "duration".
    public var endedBy: String
}

/// Receives the RTP streams an SDP describes (as a peer such as ffmpeg or GStreamer sends them)
/// into files: VP8/VP9 into IVF, Opus into Ogg Opus, each frame as it was sent.
///
/// Each m= section's RTP port (and its RTCP port, or the same one with rtcp-mux) is bound on the
/// SDP's connection address. Packets are read in batches into a preallocated slab and put back
/// into frames by the packet layer's assembler. Receiving ends when every stream has said BYE,
/// when no packet came for `idleTimeoutSeconds` (after the first; `startTimeoutSeconds`
/// before it), or after `maximumSeconds`. The files are written whole or not at all.
public enum RTPFileReceiver {
    /// Receives `sdp`'s audio and video sections into `outputs` (one per section, in order:
    /// `.ivf` for VP8/VP9, `.opus`/`.ogg` for Opus).
    /// - Throws: ``MediaError`` for a section of another codec, an output of the wrong kind, a
    ///   port that cannot be bound, or nothing received.
    @discardableResult
    public static func receive(
        sdp: SessionDescription, outputs: [String], startTimeoutSeconds: Double = 10, idleTimeoutSeconds: Double = 2,
        maximumSeconds: Double? = nil, clock: MediaClock = WallClock(), onPacket: (() -> Void)? = nil
    ) throws -> RTPReceiveSummary {
        let sections = sdp.media.filter { $0.kind == "audio" || $0.kind == "video" }
        guard sections.count == outputs.count else {
            throw MediaError.invalidArgument(
                "the SDP has \(sections.count) audio/video streams; \(outputs.count) output files were named")
        }
        var streams = try zip(sections, outputs).map { section, output in
            try ReceivedStream(section: section, address: sdp.address(of: section) ?? "127.0.0.1", output: output)
        }
        let sockets = streams.flatMap { $0.sockets }
        let start = clock.nowMicroseconds
        var lastPacket: Int64?
        var endedBy = "timeout"
        while true {
            let now = clock.nowMicroseconds
            if streams.allSatisfy(\.sawBye) {
                endedBy = "bye"
                break
            }
            if let maximumSeconds, Double(now - start) / 1e6 >= maximumSeconds {
                endedBy = "duration"
                break
            }
            let idle =
                lastPacket.map { Double(now - $0) / 1e6 >= idleTimeoutSeconds }
                ?? (Double(now - start) / 1e6 >= startTimeoutSeconds)
            if idle { break }
            let readable = try UDPSocket.wait(sockets, timeoutMilliseconds: 50)
            var socketIndex = 0
            for s in streams.indices {
                for (k, socket) in streams[s].sockets.enumerated() {
                    defer { socketIndex += 1 }
                    guard readable[socketIndex] else { continue }
                    try socket.receive(timeoutMilliseconds: 0) { datagram in
                        lastPacket = clock.nowMicroseconds
                        try streams[s].handle(datagram, onRTCPSocket: k == 1, now: clock.nowMicroseconds)
                        onPacket?()
                    }
                }
            }
        }
        var summaries: [RTPReceiveSummary.Stream] = []
        for index in streams.indices { summaries.append(try streams[index].finish()) }
        return RTPReceiveSummary(streams: summaries, endedBy: endedBy)
    }
}

/// One m= section being received into its file.
private struct ReceivedStream {
    let codec: MediaCodec
    let payloadTypes: Set<UInt8>
    let output: String
    /// The RTP socket, and the RTCP one unless rtcp-mux.
    let sockets: [UDPSocket]
    var assembler: RTPFrameAssembler
    var ivf: IVFWriter?
    var ogg: OggOpusWriter?
    /// Frames the assembler handed out for one packet, written right after.
    var ready: [AssembledFrame] = []
    var firstMicroseconds: Int64?
    var frames: Int64 = 0
    var packets: Int64 = 0
    var sawBye = false
    let channels: Int
    /// The stream's SSRC: the SDP's, or the first packet's. Packets of others are not its.
    var ssrc: UInt32?
    /// Datagrams on the stream's ports that were not its RTP or RTCP (garbage, other senders).
    var ignored: Int64 = 0

    init(section: SessionDescription.Media, address: String, output: String) throws {
        guard let format = section.formats.first(where: { $0.codec != nil }), let codec = format.codec else {
            throw MediaError.unsupported(
                "SDP \(section.kind) stream on port \(section.port) is \(section.formats.map(\.encoding)); "
                    + "Opus, VP8 or VP9 is received")
        }
        let wanted = MediaFileKind.forOutput(path: output)
        guard codec == .opus ? wanted == .oggOpus : wanted == .ivf else {
            throw MediaError.invalidArgument(
                "\(output): a \(codec) stream is written to \(codec == .opus ? ".opus or .ogg" : ".ivf")")
        }
        self.codec = codec
        self.output = output
        channels = max(1, min(2, format.channels))
        payloadTypes = Set(section.formats.filter { $0.codec == codec }.map { UInt8($0.payloadType) })
        let rtp = try UDPSocket(address: address, port: section.port)
        sockets = section.rtcpMux ? [rtp] : [rtp, try UDPSocket(address: address, port: section.effectiveRTCPPort)]
        assembler = RTPFrameAssembler(codec: codec, gapWaitMicroseconds: 100_000)
        ssrc = section.ssrc
    }

    /// An RTP or RTCP datagram (told apart by the payload type byte, RFC 5761 §4).
    mutating func handle(_ datagram: UnsafeRawBufferPointer, onRTCPSocket: Bool, now: Int64) throws {
        guard datagram.count >= 2 else { return }
        let secondByte = datagram[1]
        if onRTCPSocket || (192...223).contains(secondByte) {
            noteRTCP(datagram)
            return
        }
        guard let packet = try? RTPPacket(Array(datagram)), payloadTypes.contains(packet.header.payloadType),
            packet.header.ssrc == ssrc ?? packet.header.ssrc
        else {
            ignored += 1  // not RTP of this stream: ignored, as RFC 3550 says
            return
        }
        ssrc = packet.header.ssrc
        packets += 1
        ready.removeAll(keepingCapacity: true)
        assembler.insert(packet, now: now) { ready.append($0) }
        for assembled in ready { try write(assembled) }
    }

    /// Looks for this stream's BYE in an RTCP compound packet (version 2, naming its SSRC).
    private mutating func noteRTCP(_ datagram: UnsafeRawBufferPointer) {
        var offset = 0
        while offset + 4 <= datagram.count {
            let first = datagram[offset]
            let type = datagram[offset + 1]
            let words = Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3])
            let end = offset + (words + 1) * 4
            guard first >> 6 == 2, end <= datagram.count else {
                ignored += 1
                return
            }
            if type == 203, first & 0x1F >= 1, words >= 1, let ssrc {
                let named =
                    UInt32(datagram[offset + 4]) << 24 | UInt32(datagram[offset + 5]) << 16
                    | UInt32(datagram[offset + 6]) << 8 | UInt32(datagram[offset + 7])
                if named == ssrc { sawBye = true }
            }
            offset = end
        }
    }

    private mutating func write(_ assembled: AssembledFrame) throws {
        let frame = assembled.frame
        if codec == .opus {
            if ogg == nil {
                ogg = try OggOpusWriter(
                    path: output, head: OpusHead(channelCount: channels, preSkip: 0, inputSampleRate: 48_000))
            }
            let samples = try frame.withUnsafeBytes {
                try OpusDecoder.samplesPerChannel(inPacket: $0, sampleRate: 48_000)
            }
            try ogg!.write(packet: frame.bytes, samples48k: samples)
        } else {
            if ivf == nil {
                // The picture size from the first frame, a keyframe (VP8: RFC 6386 §9.1).
                guard frame.isKeyframe else { return }
                let decoder = try VPXDecoder(codec: codec == .vp9 ? .vp9 : .vp8)
                var size = (1, 1)
                _ = try frame.withUnsafeBytes { try decoder.decode($0) { size = ($0.width, $0.height) } }
                ivf = try IVFWriter(
                    path: output,
                    header: IVFHeader(
                        codec: codec == .vp9 ? .vp9 : .vp8, width: size.0, height: size.1, timebaseNumerator: 1,
                        timebaseDenominator: 90_000))
            }
            // IVF times in the RTP clock's 90 kHz ticks from the first frame.
            if firstMicroseconds == nil { firstMicroseconds = frame.timestampMicroseconds }
            let ticks = ((frame.timestampMicroseconds - firstMicroseconds!) * 90_000 + 500_000) / 1_000_000
            try ivf!.write(frame.bytes, timestamp: ticks)
        }
        frames += 1
    }

    mutating func finish() throws -> RTPReceiveSummary.Stream {
        ready.removeAll(keepingCapacity: true)
        assembler.poll(now: .max) { ready.append($0) }
        for assembled in ready { try write(assembled) }
        if let ogg {
            try ogg.finish(playableSamples48k: ogg.packetSamples48k)
        } else if let ivf {
            try ivf.finish()
        } else {
            throw MediaError(.truncated, "no \(codec) frame was received for it", file: output)
        }
        return RTPReceiveSummary.Stream(
            codec: codec, output: output, packets: packets, packetsLost: assembler.packetsLost, frames: frames,
            ignored: ignored, sawBye: sawBye)
    }
}
