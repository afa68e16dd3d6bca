import Foundation
import Testing

@testable import MediaPipeline

@Suite("RTP over UDP with real peers, and SDP", .timeLimit(.minutes(5)))
struct RTPNetworkTests {
    @Test(
        "SDP as ffmpeg and browsers write it reads, round-trips, names the line at fault; receive refuses what it lacks"
    )
    func sessionDescription() throws {
        let ffmpeg = """
            v=0
            o=- 0 0 IN IP4 127.0.0.1
            s=No Name
            t=0 0
            a=tool:libavformat LIBAVFORMAT_VERSION
            m=video 15004 RTP/AVP 96
            c=IN IP4 127.0.0.1
            a=rtpmap:96 VP8/90000
            m=audio 15006 RTP/AVP 111
            c=IN IP4 127.0.0.1
            a=rtpmap:111 opus/48000/2
            a=fmtp:111 sprop-stereo=1
            """
        let sdp = try SessionDescription(parsing: ffmpeg)
        #expect(sdp.media.count == 2)
        #expect(sdp.media[0].formats.first?.codec == .vp8 && sdp.media[0].port == 15004)
        #expect(sdp.media[0].effectiveRTCPPort == 15005)
        #expect(sdp.media[1].formats.first?.codec == .opus && sdp.media[1].formats.first?.channels == 2)
        #expect(sdp.media[1].formats.first?.parameters == "sprop-stereo=1")
        #expect(sdp.address(of: sdp.media[1]) == "127.0.0.1")

        // Feedback, rtcp-mux, an SSRC and IPv6, then the text we write reads back the same.
        let avpf = """
            v=0\r
            o=- 1 1 IN IP6 ::1\r
            s=-\r
            c=IN IP6 ::1\r
            t=0 0\r
            m=video 5004 RTP/AVPF 96 97\r
            a=rtcp-mux\r
            a=rtpmap:96 VP8/90000\r
            a=rtpmap:97 VP9/90000\r
            a=rtcp-fb:* nack\r
            a=rtcp-fb:96 nack pli\r
            a=rtcp-fb:96 ccm fir\r
            a=ssrc:1111 cname:peer\r
            """
        let parsed = try SessionDescription(parsing: avpf)
        let video = parsed.media[0]
        #expect(video.transport == "RTP/AVPF" && video.rtcpMux && video.effectiveRTCPPort == 5004)
        #expect(video.formats[0].feedback == ["nack", "nack pli", "ccm fir"])
        #expect(video.formats[1].feedback == ["nack"] && video.formats[1].codec == .vp9)
        #expect(video.ssrc == 1111 && parsed.connectionAddress == "::1")
        #expect(try SessionDescription(parsing: parsed.text).media == parsed.media)

        for (text, words) in [
            ("v=1\r\n", "line 1 'v=1': version 1"),
            ("v=0\r\nm=video x RTP/AVP 96\r\n", "line 2"),
            ("v=0\r\nm=video 5004 RTP/AVP 96\r\na=rtpmap:97 VP8/90000\r\n", "payload type 97 is not on its m= line"),
            ("v=0\r\nm=video 5004 RTP/AVP 96\r\n", "payload type 96 has no rtpmap"),
            ("m=video 5004 RTP/AVP 0\r\n", "no 'v=0'"),
        ] {
            #expect(throws: MediaError.self) { try SessionDescription(parsing: text) }
            do { _ = try SessionDescription(parsing: text) } catch let error as MediaError {
                #expect(error.message.contains(words), "\(error)")
            }
        }

        // An audio section's RFC 2198 redundancy is received with its Opus; other formats are not.
        let withRED = try SessionDescription(
            parsing:
                "v=0\r\nc=IN IP4 127.0.0.1\r\nm=audio 5006 RTP/AVP 100 63 0\r\na=rtpmap:100 opus/48000/2\r\n"
                + "a=rtpmap:63 red/48000/2\r\na=rtpmap:0 PCMU/8000\r\n")
        let audioStreams = try RTPPeerStream.streams(receiving: withRED, sendingTo: nil)
        #expect(audioStreams.map { $0.receiveFormats.map(\.payloadType) } == [[100, 63]])
        // Retransmission formats (RFC 4588) are received for the formats their apt names.
        let withRTX = try SessionDescription(
            parsing:
                "v=0\r\nc=IN IP4 127.0.0.1\r\nm=video 5004 RTP/AVPF 96 97 98\r\na=rtpmap:96 VP8/90000\r\n"
                + "a=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\na=rtpmap:98 rtx/90000\r\na=fmtp:98 apt=35\r\n")
        #expect(withRTX.media[0].formats.map(\.retransmittedPayloadType) == [nil, 96, 35])
        let videoStreams = try RTPPeerStream.streams(receiving: withRTX, sendingTo: nil)
        #expect(videoStreams.map { $0.receiveFormats.map(\.payloadType) } == [[96, 97]])

        // Outputs the SDP's streams cannot fill are refused before anything is bound, in one line.
        let folder = TemporaryFolder()
        let audioOnly = folder.file("audio.sdp")
        try "v=0\r\nc=IN IP4 127.0.0.1\r\nm=audio 0 RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n".write(
            toFile: audioOnly, atomically: true, encoding: .utf8)
        for (arguments, words) in [
            ([folder.file("out.y4m")], "out.y4m: the SDP has no video stream"),
            (["--md5"], "MD5s: the SDP has no video stream"),
            ([folder.file("out.mp4")], "out.mp4: receive writes"),
        ] {
            let result = try pipebench(["receive", audioOnly] + arguments)
            #expect(result.status != 0 && result.stderr.contains(words), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    /// Starts `pipebench send ARGUMENTS... rtp://127.0.0.1:PORT --sdp SDP --start-delay S` on
    /// even loopback ports the kernel chose (four: video and audio, RTP and RTCP), and returns once the SDP is written (up to 30 s) or the sender
    /// has ended. Its standard output goes to `output`, its standard error to the file `errors`.
    static func startSend(
        _ arguments: [String], sdp: String, startDelay: Double, output: Pipe? = nil, errors: String? = nil
    ) throws -> Process {
        let port = try kernelUDPPorts(count: 4)
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
        sender.arguments =
            ["send"] + arguments + ["rtp://127.0.0.1:\(port)", "--sdp", sdp, "--start-delay", "\(startDelay)"]
        sender.standardOutput = output ?? FileHandle.nullDevice
        if let errors {
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            sender.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        } else {
            sender.standardError = FileHandle.nullDevice
        }
        try sender.run()
        for _ in 0..<600 where !FileManager.default.fileExists(atPath: sdp) && sender.isRunning {
            Thread.sleep(forTimeInterval: 0.05)
        }
        return sender
    }

    @Test("pipebench send to ffmpeg with our SDP: ffmpeg's recording has every frame, byte for byte")
    func sendToFFmpeg() throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        let sdp = folder.file("ours.sdp")
        let senderErrors = folder.file("send.stderr")
        // ffmpeg opens our SDP as soon as it is there, and ends 10 s after the last packet.
        let sender = try Self.startSend([Fixtures.motionIVF, opus], sdp: sdp, startDelay: 1.5, errors: senderErrors)
        defer { sender.finish(within: 0) }
        let state = sender.isRunning ? "running" : "status \(sender.terminationStatus)"
        let errors = (try? String(contentsOfFile: senderErrors, encoding: .utf8)) ?? ""
        try #require(FileManager.default.fileExists(atPath: sdp), "no SDP from pipebench send (\(state)): \(errors)")
        let video = folder.file("ffmpeg.ivf")
        let audio = folder.file("ffmpeg.opus")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-i", sdp, "-map", "0:0", "-c",
                "copy",
                video, "-map", "0:1", "-c", "copy", audio,
            ])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(
            sender.terminationStatus == 0 && sender.terminationReason == .exit,
            "\((try? String(contentsOfFile: senderErrors, encoding: .utf8)) ?? "")")
        let frames = try ffmpegPackets(video)[0]?.map { Packet(size: $0.size, md5: $0.md5) }
        #expect(frames?.count == 90)
        #expect(frames == (try ffmpegPackets(Fixtures.motionIVF)[0]?.map { Packet(size: $0.size, md5: $0.md5) }))
        let packets = try ffmpegPackets(audio)[0]?.map { Packet(size: $0.size, md5: $0.md5) }
        #expect(packets?.count == 201)
        #expect(packets == (try ffmpegPackets(opus)[0]?.map { Packet(size: $0.size, md5: $0.md5) }))
    }

    @Test("pipebench send encodes Y4M and WAV live; pipebench receive decodes every picture and plays the speech")
    func sendEncodedToReceive() throws {
        let folder = TemporaryFolder()
        let sdp = folder.file("ours.sdp")
        let sent = Pipe()
        let sender = try Self.startSend(
            [Fixtures.oddY4M, Fixtures.speechWAV, "--quiet", "--json"], sdp: sdp, startDelay: 1.5, output: sent)
        defer { sender.finish(within: 0) }
        let (video, audio) = (folder.file("video.ivf"), folder.file("audio.wav"))
        let received = try pipebench(["receive", sdp, video, audio, "--idle", "1.5", "--quiet", "--json"])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(sender.terminationStatus == 0)
        #expect(received.status == 0, "\(received.stderr)")
        let sendReport = String(decoding: sent.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let json = try JSONSerialization.jsonObject(with: Data(sendReport.utf8)) as? [String: Any]
        let streams = json?["streams"] as? [[String: Any]] ?? []
        let pictures = try MediaFileInfo.probe(path: Fixtures.oddY4M).frames
        #expect(streams.first { $0["codec"] as? String == "vp8" }?["frames"] as? Int == pictures, "\(sendReport)")
        // Every picture encoded arrived and decodes (vpxdec agrees on the count and the size).
        let md5s = try vpxdecFrameMD5s(video)
        #expect(md5s.count == pictures)
        #expect(try MediaFileInfo.probe(path: video).width == 161)
        // The speech plays: about as long as the source, and as loud.
        let played = try wavSamples(audio)
        let source = try wavSamples(Fixtures.speechWAV)
        #expect(abs(played.count - source.count) < 48_000 * 2 / 2, "\(played.count) against \(source.count)")
        func rms(_ samples: [Int16]) -> Double {
            (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
        }
        #expect(abs(rms(played) / rms(source) - 1) < 0.25, "RMS \(rms(played)) against \(rms(source))")
    }

    @Test("Ctrl-C ends pipebench receive cleanly: the frames so far are in whole files")
    func receiveInterrupted() throws {
        let folder = TemporaryFolder()
        let sdp = folder.file("ours.sdp")
        let sender = try Self.startSend([Fixtures.motionIVF, "--quiet"], sdp: sdp, startDelay: 1)
        defer { sender.finish(within: 0) }
        let video = folder.file("video.webm")
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
        receiver.arguments = ["receive", sdp, video, "--json"]
        let output = Pipe()
        receiver.standardOutput = output
        let progress = folder.file("receive.stderr")
        _ = FileManager.default.createFile(atPath: progress, contents: nil)
        receiver.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: progress))
        try receiver.run()
        defer {
            if receiver.isRunning { kill(receiver.processIdentifier, SIGKILL) }
            receiver.waitUntilExit()
        }
        // Interrupted mid-stream: once its progress line (one a second) counts 20 video frames
        // of the 90 (3 s).
        func framesSoFar() -> Int {
            let text = (try? String(contentsOfFile: progress, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").last(where: { $0.contains(" frames, ") }),
                let end = line.range(of: " frames, ")
            else { return 0 }
            return Int(line[..<end.lowerBound].split(separator: " ").last ?? "") ?? 0
        }
        let deadline = Date().addingTimeInterval(20)
        while framesSoFar() < 20 && receiver.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(framesSoFar() >= 20, "receive's progress: \(framesSoFar()) frames")
        receiver.interrupt()
        #expect(receiver.finish(within: 15), "receive did not end on SIGINT")
        #expect(sender.finish(within: 30), "the sender did not end")
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(receiver.terminationStatus == 0 && receiver.terminationReason == .exit, "\(report)")
        let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect(json?["endedBy"] as? String == "interrupted")
        // A whole WebM file with the frames received so far, each the source's frame.
        let frames = try ffmpegPackets(video)[0]?.map(\.md5) ?? []
        let source = try ffmpegPackets(Fixtures.motionIVF)[0]?.map(\.md5) ?? []
        #expect((20..<90).contains(frames.count), "\(frames.count) frames")
        #expect(frames == Array(source.prefix(frames.count)))
        #expect(try reference("ffprobe", ["-v", "error", "-show_format", video]).contains("duration="))
    }

    @Test("ffmpeg sends an IVF and an Ogg Opus file unchanged over RTP: pipebench receive writes the same frames")
    func receiveFromFFmpeg() throws { try receiveFromFFmpeg(flooded: false) }

    @Test("garbage, truncated, oversized and foreign packets flooding the ports cost the stream nothing")
    func receiveUnderFlood() throws { try receiveFromFFmpeg(flooded: true) }

    /// ffmpeg sends the motion IVF and an Ogg Opus file to `pipebench receive`; with `flooded`,
    /// a second sender meanwhile fills both streams' RTP and RTCP ports with bad datagrams.
    private func receiveFromFFmpeg(flooded: Bool) throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        // Loopback ports the kernel chose, so parallel runs do not meet.
        let videoPort = try kernelUDPPorts(count: 4)
        let audioPort = videoPort + 2
        func ffmpegArguments(_ extra: [String]) -> [String] {
            [
                "-nostdin", "-v", "error", "-re", "-i", Fixtures.motionIVF, "-re", "-i", opus, "-map", "0:v", "-c",
                "copy", "-payload_type", "96", "-f", "rtp", "rtp://127.0.0.1:\(videoPort)?pkt_size=1200", "-map",
                "1:a", "-c", "copy", "-payload_type", "111", "-f", "rtp", "rtp://127.0.0.1:\(audioPort)?pkt_size=1200",
            ] + extra
        }
        // ffmpeg's own SDP for these streams (a first run of a few milliseconds writes it).
        let sdp = folder.file("ffmpeg.sdp")
        try reference("ffmpeg", ffmpegArguments(["-sdp_file", sdp, "-t", "0.01"]))
        #expect(try SessionDescription(parsing: String(contentsOfFile: sdp, encoding: .utf8)).media.count == 2)

        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
        receiver.arguments = [
            "receive", sdp, folder.file("video.ivf"), folder.file("audio.opus"), folder.file("video.y4m"), "--md5",
            "--idle", "1.5", "--json",
        ]
        let output = Pipe()
        receiver.standardOutput = output
        // Flooded, the receiver's progress lines say when ffmpeg's packets have come.
        let progress = folder.file("receiver.log")
        if flooded {
            _ = FileManager.default.createFile(atPath: progress, contents: nil)
            receiver.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: progress))
        }
        try receiver.run()
        defer { receiver.finish(within: 0) }
        try waitForUDPListeners([videoPort, videoPort + 1, audioPort, audioPort + 1])
        var flood: Flood?
        if flooded {
            // The flood's RTP comes from an SSRC of its own, with that SSRC's BYEs: a receiver
            // told no SSRC takes the first it hears, so the flood starts once both streams' first
            // packets were taken (a fixed head start lost that race on a loaded machine).
            let ffmpeg = try startWithSignalsUnblocked(
                ["/usr/bin/ffmpeg"] + ffmpegArguments([]), stdout: folder.file("ffmpeg.out"),
                stderr: folder.file("ffmpeg.err"))
            defer { ffmpeg.finish(within: 0) }
            let streaming = Self.waitForPackets(inProgress: progress, seconds: 20)
            #expect(streaming, "the receiver took no packet of both streams: \(Self.text(progress))")
            flood = Flood(ports: [videoPort, videoPort + 1, audioPort, audioPort + 1])
            flood?.start()
            let sent = ffmpeg.finish(within: 60)
            flood?.stop()
            #expect(sent && ffmpeg.terminationStatus == 0, "ffmpeg: \(Self.text(folder.file("ffmpeg.err")))")
        } else {
            try reference("ffmpeg", ffmpegArguments([]))
        }
        #expect(receiver.finish(within: 30), "receive did not end after the stream")
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(receiver.terminationStatus == 0, "\(report)\n\(Self.text(progress))")
        if let flood {
            // The receiver saw the flood and set it aside: its report counts the datagrams ignored.
            #expect(flood.sent > 1000, "\(flood.sent) bad datagrams sent")
            let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
            let streams = json?["streams"] as? [[String: Any]] ?? []
            let ignored = streams.compactMap { $0["ignored"] as? Int }.reduce(0, +)
            #expect(ignored > 500, "\(report)")
            #expect(json?["endedBy"] as? String != "bye", "another SSRC's BYE ended the session")
        }

        // Every frame, byte for byte, in order.
        func ivfFrames(_ path: String) throws -> [[UInt8]] {
            let reader = try IVFReader(path: path)
            var frames: [[UInt8]] = []
            while let frame = try reader.readFrame() { frames.append(frame.bytes) }
            return frames
        }
        func oggPackets(_ path: String) throws -> [[UInt8]] {
            let reader = try OggOpusReader(path: path)
            var packets: [[UInt8]] = []
            while let packet = try reader.nextPacket() { packets.append(packet.bytes) }
            return packets
        }
        let video = try ivfFrames(folder.file("video.ivf"))
        #expect(video.count == 90)
        #expect(video == (try ivfFrames(Fixtures.motionIVF)))
        let audio = try oggPackets(folder.file("audio.opus"))
        let sourcePackets = try oggPackets(opus)
        #expect(
            audio == sourcePackets,
            "packets \(sourcePackets.indices.filter { !audio.contains(sourcePackets[$0]) }) missing; \(report)")
        // The IVF's 90 kHz times give the source's 30 fps back.
        #expect(abs(try MediaFileInfo.probe(path: folder.file("video.ivf")).framesPerSecond - 30) < 0.1)

        // Every picture decoded, as vpxdec decodes the source: the MD5s printed and the Y4M's
        // pictures, which ffmpeg reads as 90 frames at the 30 fps of their timestamps.
        let expected = try vpxdecFrameMD5s(Fixtures.motionIVF)
        let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect(json?["frameMD5s"] as? [String] == expected)
        let y4m = try Y4MReader(path: folder.file("video.y4m"))
        #expect(y4m.header.frameRateNumerator == 30 && y4m.header.frameRateDenominator == 1)
        var pictures: [String] = []
        while let picture = try y4m.readFrame() { pictures.append(picture.withView { $0.md5() }) }
        #expect(pictures == expected)
        let probe = try reference(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames,r_frame_rate,width,height",
                "-of", "csv=p=0", folder.file("video.y4m"),
            ])
        #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "640,360,30/1,90")
    }
}

extension RTPNetworkTests {
    /// Waits up to `seconds` for a progress line of `pipebench receive` (in the file at `path`)
    /// that counts packets of both its streams ("audio: N packets" and "video: N packets", both
    /// above 0); whether one came.
    static func waitForPackets(inProgress path: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let lines = text(path).split(separator: "\n")
            if lines.contains(where: { packets("audio", in: $0) > 0 && packets("video", in: $0) > 0 }) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// The packets a progress line counts for `kind` ("audio: 22 packets, ..."), 0 if none.
    private static func packets(_ kind: String, in line: Substring) -> Int {
        guard let start = line.range(of: "\(kind): ") else { return 0 }
        return Int(line[start.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    /// The text of the file at `path` ("" when it cannot be read).
    static func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}

/// Sends bad datagrams to loopback ports from its own thread until stopped: random bytes,
/// RTP headers cut short, RTP of the streams' payload types from another SSRC, RTCP that claims
/// more than it holds, BYEs of another SSRC, and datagrams larger than a receive slot.
private final class Flood: @unchecked Sendable {
    let ports: [Int]
    private let lock = NSLock()
    private var running = true
    private var count = 0
    private var thread: Thread?

    init(ports: [Int]) { self.ports = ports }

    var sent: Int { lock.withLock { count } }

    func start() {
        let thread = Thread { [self] in
            guard let socket = try? UDPSocket(address: "127.0.0.1", port: 0) else { return }
            // Seeded, so a datagram that breaks the receiver comes again in the next run.
            var generator = SplitMix64(seed: 0x5EED_F100D)
            var round = 0
            while lock.withLock({ running }) {
                var datagram: [UInt8]
                switch round % 6 {
                case 0:
                    datagram = (0..<Int.random(in: 1...1400, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
                case 1: datagram = [0x80, 96, 0x12]  // an RTP header cut short
                case 2:  // RTP of payload type 96 and 111 from an SSRC nobody announced
                    datagram =
                        [0x80, round % 12 == 2 ? 96 : 111, UInt8(round & 0xFF), 0, 0, 0, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF]
                        + [UInt8](repeating: 0x10, count: 100)
                case 3: datagram = [0x80, 200, 0x00, 0x40, 1, 2, 3, 4]  // an SR claiming 260 bytes
                case 4: datagram = [0x81, 203, 0, 1, 0xDE, 0xAD, 0xBE, 0xEF]  // another SSRC's BYE
                default: datagram = [UInt8](repeating: 0x80, count: 3000)  // larger than a slot
                }
                for port in ports {
                    guard let peer = try? UDPPeer(host: "127.0.0.1", port: port) else { continue }
                    datagram.withUnsafeBytes { _ = socket.send($0, to: peer) }
                }
                lock.withLock { count += ports.count }
                round += 1
                if round % 8 == 0 { usleep(1_000) }
            }
        }
        self.thread = thread
        thread.start()
    }

    func stop() { lock.withLock { running = false } }
}
