import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench receive SDP OUT...`: RTP streams a peer sends, through the engine, into files.
struct ReceiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract:
            "Receive the RTP streams an SDP file describes (from ffmpeg, GStreamer…) through the jitter buffers into "
            + "files.",
        discussion:
            "Outputs by extension: .ivf (the video frames, as received), .opus/.ogg (the audio packets, as "
            + "received), .webm (both), .wav (the audio as played: the jitter buffer's output, concealment "
            + "included), .y4m (every picture decoded). With --md5, prints each decoded picture's MD5 as "
            + "`vpxdec --md5 --i420` does per frame (then outputs are optional). Missing packets are asked for again (RTCP NACK), keyframes with PLI, and receiver reports "
            + "go to the sender. A line of statistics goes to standard error each second. Ends when every stream "
            + "has sent RTCP BYE, after --idle seconds without a packet, after --duration, or on Ctrl-C; the files "
            + "are written whole.")

    @Argument(help: "The SDP file, then the output files.") var files: [String]
    @Flag(help: "Print per-frame MD5s of the decoded pictures.") var md5 = false
    @Option(help: "Seconds to wait for the first packet.") var wait = 10.0
    @Option(help: "Seconds without a packet that end the session.") var idle = 2.0
    @Option(help: "Longest session, in seconds.") var duration: Double?
    @Option(
        name: .customLong("rtcp-to"),
        help: "Send RTCP to HOST:PORT (stream i of the SDP: PORT+2i) instead of where the sender's RTCP comes from.")
    var rtcpTo: String?
    @Flag(help: "No statistics lines on standard error.") var quiet = false
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() throws {
        guard files.count >= 2 || (files.count == 1 && md5) else {
            throw ValidationError("name the SDP file and at least one output file (or --md5)")
        }
        let text: String
        do {
            text = try String(contentsOfFile: files[0], encoding: .utf8)
        } catch {
            let reason =
                FileManager.default.fileExists(atPath: files[0])
                ? "not readable as UTF-8 text (\(error.localizedDescription))" : "no such file"
            throw MediaError(.io, "cannot read the SDP file: \(reason)", file: files[0])
        }
        let sdp: SessionDescription
        do {
            sdp = try SessionDescription(parsing: text)
        } catch let error as MediaError {
            throw MediaError(error.code, error.message, file: files[0])
        }
        var rtcp: (host: String, port: Int)?
        if let rtcpTo {
            guard let colon = rtcpTo.lastIndex(of: ":"), let port = Int(rtcpTo[rtcpTo.index(after: colon)...]),
                (1...65535).contains(port)
            else { throw ValidationError("--rtcp-to '\(rtcpTo)' is not HOST:PORT") }
            var host = String(rtcpTo[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            rtcp = (host, port)
        }
        Interruption.catchSignals()
        let summary = try RTPFileReceiver.receive(
            sdp: sdp, outputs: Array(files.dropFirst()), startTimeoutSeconds: wait, idleTimeoutSeconds: idle,
            maximumSeconds: duration, rtcpHost: rtcp?.host, rtcpPort: rtcp?.port ?? 0, computeMD5: md5,
            shouldStop: { Interruption.wasRaised },
            progress: { seconds, streams in
                guard !quiet else { return }
                let parts = streams.map(Self.describe)
                writeStandardError(String(format: "%6.1f s  ", seconds) + parts.joined(separator: " | ") + "\n")
            })
        if json {
            print(
                Report.json([
                    "command": "receive", "endedBy": summary.endedBy, "seconds": summary.seconds,
                    "streams": summary.streams.map {
                        [
                            "kind": $0.kind.rawValue, "packets": $0.packets, "packetsLost": $0.packetsLost,
                            "frames": $0.frames, "nacksSent": $0.nacksSent,
                            "keyframeRequestsSent": $0.keyframeRequestsSent, "framesConcealed": $0.framesConcealed,
                            "framesConcealedSilent": $0.framesConcealedSilent,
                            "ignored": $0.ignored, "bye": $0.sawBye, "meanAddedDelayMs": $0.meanAddedDelayMs,
                            "packetsRecovered": $0.packetsRecovered,
                            "retransmissionsReceived": $0.retransmissionsReceived,
                        ] as [String: Any]
                    },
                    "outputs": summary.outputs.map {
                        ["path": $0.path, "audioFrames": $0.audioFrames, "videoFrames": $0.videoFrames] as [String: Any]
                    },
                    "frameMD5s": summary.frameMD5s,
                ]))
            return
        }
        for (index, sum) in summary.frameMD5s.enumerated() {
            print("\(sum)  frame-\(String(format: "%04d", index + 1)).i420")
        }
        for stream in summary.streams { print("received " + Self.describe(stream)) }
        for output in summary.outputs {
            print("wrote \(output.path): \(output.videoFrames) video frames, \(output.audioFrames) audio frames")
        }
        print("ended by \(summary.endedBy) after \(String(format: "%.1f", summary.seconds)) s")
    }

    private static func describe(_ stream: RTPReceiveSummary.Stream) -> String {
        var text = "\(stream.kind.rawValue): \(stream.packets) packets, \(stream.packetsLost) lost"
        if stream.kind == .video {
            text += ", \(stream.frames) frames, \(stream.nacksSent) NACKs, \(stream.keyframeRequestsSent) PLIs"
            text += String(format: ", %.0f ms added delay", stream.meanAddedDelayMs)
        } else {
            text += ", \(stream.frames) frames played (\(stream.framesConcealed) concealed, "
            text += "\(stream.framesConcealedSilent) of them silent)"
            text += ", \(stream.packetsRecovered) rebuilt (FEC or RED)"
        }
        if stream.retransmissionsReceived > 0 { text += ", \(stream.retransmissionsReceived) RTX" }
        if stream.ignored > 0 { text += ", \(stream.ignored) ignored" }
        return stream.sawBye ? text + ", BYE" : text
    }
}
