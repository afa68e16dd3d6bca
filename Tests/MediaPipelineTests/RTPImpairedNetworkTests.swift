import Foundation
import Testing

@testable import MediaPipeline

/// RTP between pipebench and GStreamer across two network namespaces whose link drops packets
/// in the kernel. One at a time: each runs real-time peers on a small machine.
@Suite("RTP with GStreamer across a lossy link between network namespaces", .serialized)
struct RTPImpairedNetworkTests {
    /// The MD5 of `bytes`, in hex.
    static func md5(_ bytes: [UInt8]) -> String {
        var digest = MD5()
        digest.update(bytes)
        return digest.finalize()
    }

    /// The MD5 of each frame of an IVF file, in order.
    static func frameDigests(ivf path: String) throws -> [String] {
        let reader = try IVFReader(path: path)
        var digests: [String] = []
        while let frame = try reader.readFrame() { digests.append(md5(frame.bytes)) }
        return digests
    }

    @Test("GStreamer receives our stream over 5 % loss: its NACKs are answered and it has every frame, byte for byte")
    func gstreamerReceivesUnderLoss() throws {
        let folder = TemporaryFolder()
        let link = try NamespaceLink()
        let frames = folder.file("frames")
        try FileManager.default.createDirectory(atPath: frames, withIntermediateDirectories: true)
        // The receiver asks for what is missing (AVPF, retransmission); its feedback leaves at
        // RTCP intervals of a few hundred milliseconds, so its jitter buffer waits a second.
        let gstreamer = try link.start(
            in: link.b,
            [
                "gst-launch-1.0", "rtpbin", "name=rtpbin", "rtp-profile=avpf", "latency=1000",
                "do-retransmission=true", "do-lost=true", "udpsrc", "port=5004",
                "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96", "!",
                "rtpbin.recv_rtp_sink_0", "udpsrc", "port=5005", "!", "rtpbin.recv_rtcp_sink_0",
                "rtpbin.send_rtcp_src_0", "!", "udpsink", "host=\(NamespaceLink.addressA)", "port=5005", "sync=false",
                "async=false", "rtpbin.", "!", "rtpvp8depay", "!", "multifilesink", "location=\(frames)/%05d.vp8",
            ], stdout: folder.file("gst.out"), stderr: folder.file("gst.err"))
        Thread.sleep(forTimeInterval: 1)
        let sender = try link.start(
            in: link.a,
            [
                Fixtures.pipebench, "send", Fixtures.motionIVF, "rtp://\(NamespaceLink.addressB):5004", "--local-port",
                "5004", "--linger", "1.5", "--quiet", "--json",
            ], stdout: folder.file("send.json"), stderr: folder.file("send.err"))
        // Loss from the second packet round on: a receiver cannot ask for the packets before
        // its first one, whose existence it does not know.
        Thread.sleep(forTimeInterval: 0.5)
        try link.dropFromA(lossPercent: 5)
        let senderEnded = sender.wait(upTo: 30)
        Thread.sleep(forTimeInterval: 1.5)
        gstreamer.wait(upTo: 0)
        let report = try String(contentsOfFile: folder.file("send.json"), encoding: .utf8)
        let errors = try String(contentsOfFile: folder.file("send.err"), encoding: .utf8)
        #expect(senderEnded && sender.terminationStatus == 0, "\(errors)")
        let json = try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        let dropped = try link.dropped()
        let retransmitted = json?["packetsRetransmitted"] as? Int ?? 0
        // The kernel did drop packets, and the receiver's NACKs got them sent again.
        #expect(dropped > 0, "no packet was dropped: the link did not impair anything")
        #expect(retransmitted > 0, "\(report)")
        let received = try FileManager.default.contentsOfDirectory(atPath: frames).sorted().map {
            Self.md5([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(frames)/\($0)"))))
        }
        let sent = try Self.frameDigests(ivf: Fixtures.motionIVF)
        let missing = sent.indices.filter { !received.contains(sent[$0]) }
        #expect(received == sent, "frames \(missing) missing; \(dropped) dropped, \(report)")
        print("GStreamer receiving over 5 % loss: \(dropped) datagrams dropped, \(retransmitted) retransmitted")
    }
}
