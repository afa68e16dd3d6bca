import Foundation
import Testing

@testable import MediaPipeline

/// VP9 over RTP (RFC 9628) between pipebench and ffmpeg or GStreamer on loopback: the frames
/// byte for byte, as RTPNetworkTests and RTPImpairedNetworkTests check VP8.
@Suite("VP9 over RTP with ffmpeg and GStreamer", .serialized, .timeLimit(.minutes(5)))
struct RTPNetworkTestsVP9 {
    /// A VP9 IVF of the motion sample (90 frames, 640x360, 30 fps) made by ffmpeg's
    /// libvpx-vp9, a keyframe every 30 frames.
    static func vp9Source(in folder: TemporaryFolder) throws -> String {
        let path = folder.file("motion-vp9.ivf")
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", Fixtures.motionIVF, "-c:v", "libvpx-vp9", "-deadline", "realtime",
                "-cpu-used", "8", "-b:v", "800k", "-g", "30", path,
            ])
        return path
    }

    /// ffprobe's keyframe flag of each packet of `path`'s first stream. (For VP9 ffmpeg's parser
    /// sets it from the bitstream, whatever a WebM block says: see ``blockKeyframeFlags(_:)``.)
    static func keyframeFlags(_ path: String) throws -> [Bool] {
        try reference(
            "ffprobe", ["-v", "error", "-select_streams", "0", "-show_entries", "packet=flags", "-of", "csv=p=0", path]
        )
        .split(separator: "\n").map { $0.hasPrefix("K") }
    }

    /// The keyframe flag of each SimpleBlock of a WebM file, as mkvinfo reads them.
    static func blockKeyframeFlags(_ path: String) throws -> [Bool] {
        try reference("mkvinfo", ["-a", path]).split(separator: "\n").filter { $0.contains("Simple block:") }
            .map { $0.contains("Simple block: key,") }
    }

    /// Starts `pipebench receive SDP OUTPUTS... --md5 --idle 1.5 --json`, its report to `report`.
    static func startReceive(_ sdp: String, _ outputs: [String], report: String) throws -> Process {
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
        receiver.arguments = ["receive", sdp] + outputs + ["--md5", "--idle", "1.5", "--quiet", "--json"]
        _ = FileManager.default.createFile(atPath: report, contents: nil)
        receiver.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: report))
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        return receiver
    }

    /// What `pipebench receive` wrote from a VP9 sender of `source`, checked against it: every
    /// frame byte for byte in the WebM (ffmpeg's packet MD5s), its keyframes where the source
    /// has them, and each picture decoded as vpxdec decodes the source.
    static func expectReceived(
        source: String, webm: String, report: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let text = try String(contentsOfFile: report, encoding: .utf8)
        let sent = try ffmpegPackets(source)[0]?.map { Packet(size: $0.size, md5: $0.md5) } ?? []
        let received = try ffmpegPackets(webm)[0]?.map { Packet(size: $0.size, md5: $0.md5) } ?? []
        #expect(sent.count == 90, sourceLocation: sourceLocation)
        let missing = sent.indices.filter { !received.contains(sent[$0]) }
        #expect(
            received == sent, "frames \(missing.prefix(10)) missing of \(sent.count); \(text)",
            sourceLocation: sourceLocation)
        #expect(
            try reference("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", webm])
                .trimmingCharacters(in: .whitespacesAndNewlines) == "vp9", sourceLocation: sourceLocation)
        // The WebM's blocks are keyframes where the source's frames are (the bitstream's).
        let sourceKeyframes = try keyframeFlags(source)
        let webmKeyframes = try blockKeyframeFlags(webm)
        #expect(sourceKeyframes.filter { $0 }.count == 3, sourceLocation: sourceLocation)
        let keyframes =
            "keyframes at \(webmKeyframes.indices.filter { webmKeyframes[$0] }.prefix(10)), the source's at "
            + "\(sourceKeyframes.indices.filter { sourceKeyframes[$0] })"
        #expect(webmKeyframes == sourceKeyframes, "\(keyframes)", sourceLocation: sourceLocation)
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(json?["frameMD5s"] as? [String] == (try vpxdecFrameMD5s(source)), sourceLocation: sourceLocation)
    }

    @Test("pipebench send VP9 to ffmpeg with our SDP: ffmpeg's recording has every frame, byte for byte")
    func sendToFFmpeg() throws {
        let folder = TemporaryFolder()
        let source = try Self.vp9Source(in: folder)
        let sdp = folder.file("ours.sdp")
        let senderErrors = folder.file("send.stderr")
        let sender = try RTPNetworkTests.startSend([source], sdp: sdp, startDelay: 1.5, errors: senderErrors)
        defer { sender.finish(within: 0) }
        try #require(FileManager.default.fileExists(atPath: sdp), "no SDP from pipebench send")
        #expect(try String(contentsOfFile: sdp, encoding: .utf8).contains("a=rtpmap:98 VP9/90000"))
        let video = folder.file("ffmpeg.ivf")
        // ffmpeg's VP9 depacketizer (libavformat/rtpdec_vp9.c) never marks a packet as a
        // keyframe (AV_PKT_FLAG_KEY), and a stream copy drops every packet before the first
        // keyframe: without -copyinkf ffmpeg writes nothing at all (seen: "90 packets read",
        // "0 packets muxed"). With it, every packet it reassembled is written.
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-i", sdp, "-map", "0:0", "-c",
                "copy", "-copyinkf", video,
            ])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(
            sender.terminationStatus == 0 && sender.terminationReason == .exit,
            "\((try? String(contentsOfFile: senderErrors, encoding: .utf8)) ?? "")")
        let frames = try ffmpegPackets(video)[0]?.map { Packet(size: $0.size, md5: $0.md5) }
        #expect(frames?.count == 90)
        #expect(frames == (try ffmpegPackets(source)[0]?.map { Packet(size: $0.size, md5: $0.md5) }))
    }

    @Test(
        "ffmpeg sends a VP9 IVF unchanged over RTP: pipebench receive writes the same frames and decodes them as vpxdec"
    )
    func receiveFromFFmpeg() throws {
        let folder = TemporaryFolder()
        let source = try Self.vp9Source(in: folder)
        let port = try kernelUDPPorts(count: 2)
        // VP9 packetizing is "experimental" to ffmpeg: it asks for -strict experimental.
        func ffmpegArguments(_ extra: [String]) -> [String] {
            [
                "-nostdin", "-v", "error", "-re", "-i", source, "-map", "0:v", "-c", "copy", "-strict", "experimental",
                "-payload_type", "98", "-f", "rtp", "rtp://127.0.0.1:\(port)?pkt_size=1200",
            ] + extra
        }
        let sdp = folder.file("ffmpeg.sdp")
        try reference("ffmpeg", ffmpegArguments(["-sdp_file", sdp, "-t", "0.01"]))
        let description = try SessionDescription(parsing: String(contentsOfFile: sdp, encoding: .utf8))
        #expect(description.media.first?.formats.first?.codec == .vp9)
        #expect(description.media.first?.formats.first?.payloadType == 98)
        let (webm, report) = (folder.file("video.webm"), folder.file("receive.json"))
        let receiver = try Self.startReceive(sdp, [webm], report: report)
        defer { receiver.finish(within: 0) }
        try waitForUDPListeners([port, port + 1])
        try reference("ffmpeg", ffmpegArguments([]))
        #expect(receiver.finish(within: 30), "receive did not end after the stream")
        #expect(receiver.terminationStatus == 0, "\((try? String(contentsOfFile: report, encoding: .utf8)) ?? "")")
        try Self.expectReceived(source: source, webm: webm, report: report)
    }

    @Test("GStreamer (rtpvp9depay) receives pipebench send's VP9: every frame, byte for byte")
    func gstreamerReceives() throws {
        let folder = TemporaryFolder()
        let source = try Self.vp9Source(in: folder)
        let frames = folder.file("frames")
        try FileManager.default.createDirectory(atPath: frames, withIntermediateDirectories: true)
        // GStreamer on the first two ports (RTP, and RTCP it takes and drops), the sender on the
        // next two.
        let port = try kernelUDPPorts(count: 4)
        let gstreamer = try startWithSignalsUnblocked(
            [
                "/usr/bin/gst-launch-1.0", "-e", "udpsrc", "port=\(port)",
                "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP9,payload=98", "!",
                "rtpjitterbuffer", "latency=200", "!", "rtpvp9depay", "!", "multifilesink",
                "location=\(frames)/%05d.vp9", "udpsrc", "port=\(port + 1)", "!", "fakesink",
            ], stdout: folder.file("gst.out"), stderr: folder.file("gst.err"))
        defer { gstreamer.finish(within: 0) }
        try waitForUDPListeners([port, port + 1])
        let sender = try startWithSignalsUnblocked(
            [
                Fixtures.pipebench, "send", source, "rtp://127.0.0.1:\(port)", "--local-port", "\(port + 2)", "--quiet",
                "--json",
            ], stdout: folder.file("send.json"), stderr: folder.file("send.err"))
        defer { sender.finish(within: 0) }
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(
            sender.terminationStatus == 0,
            "\((try? String(contentsOfFile: folder.file("send.err"), encoding: .utf8)) ?? "")")
        // The jitter buffer lets the last frames out after 200 ms: wait for all of them (up to
        // 10 s), then end GStreamer with an end of stream (SIGINT with -e), its files whole.
        let sent = try ffmpegPackets(source)[0]?.map(\.md5) ?? []
        func written() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: frames).count) ?? 0 }
        let deadline = Date().addingTimeInterval(10)
        while written() < sent.count && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        gstreamer.interrupt()
        #expect(gstreamer.finish(within: 10), "GStreamer did not end on SIGINT")
        let received = try FileManager.default.contentsOfDirectory(atPath: frames).sorted().map {
            RTPImpairedNetworkTests.md5([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(frames)/\($0)"))))
        }
        let missing = sent.indices.filter { !received.contains(sent[$0]) }
        let errors = (try? String(contentsOfFile: folder.file("gst.err"), encoding: .utf8)) ?? ""
        #expect(sent.count == 90)
        #expect(
            received == sent, "frames \(missing.prefix(10)) missing of \(sent.count); GStreamer: \(errors.suffix(1000))"
        )
    }

    @Test("GStreamer (rtpvp9pay) sends VP9 to pipebench receive: the same frames, keyframes marked, decoded as vpxdec")
    func gstreamerSends() throws {
        let folder = TemporaryFolder()
        let source = try Self.vp9Source(in: folder)
        let webmSource = folder.file("motion-vp9.webm")
        try reference("ffmpeg", ["-nostdin", "-v", "error", "-i", source, "-c", "copy", webmSource])
        let port = try kernelUDPPorts(count: 2)
        let sdp = folder.file("gstreamer.sdp")
        try [
            "v=0", "o=- 0 0 IN IP4 127.0.0.1", "s=GStreamer", "c=IN IP4 127.0.0.1", "t=0 0",
            "m=video \(port) RTP/AVP 98", "a=rtpmap:98 VP9/90000",
        ].joined(separator: "\r\n").appending("\r\n").write(toFile: sdp, atomically: true, encoding: .utf8)
        let (webm, report) = (folder.file("video.webm"), folder.file("receive.json"))
        let receiver = try Self.startReceive(sdp, [webm], report: report)
        defer { receiver.finish(within: 0) }
        try waitForUDPListeners([port, port + 1])
        // udpsink paces the packets by the file's times (sync), as a live sender would.
        let gstreamer = try startWithSignalsUnblocked(
            [
                "/usr/bin/gst-launch-1.0", "filesrc", "location=\(webmSource)", "!", "matroskademux", "!",
                "rtpvp9pay", "pt=98", "mtu=1200", "picture-id-mode=15-bit", "!", "udpsink", "host=127.0.0.1",
                "port=\(port)",
            ], stdout: folder.file("gst.out"), stderr: folder.file("gst.err"))
        defer { gstreamer.finish(within: 0) }
        #expect(gstreamer.finish(within: 30), "GStreamer did not end")
        #expect(
            gstreamer.terminationStatus == 0,
            "\((try? String(contentsOfFile: folder.file("gst.err"), encoding: .utf8)) ?? "")")
        #expect(receiver.finish(within: 30), "receive did not end after the stream")
        #expect(receiver.terminationStatus == 0, "\((try? String(contentsOfFile: report, encoding: .utf8)) ?? "")")
        try Self.expectReceived(source: source, webm: webm, report: report)
    }
}
