import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench receive SDP OUT...`: RTP streams a peer sends, into files.
struct ReceiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract:
            "Receive the RTP streams an SDP file describes (from ffmpeg, GStreamer…) into IVF and Ogg Opus files.",
        discussion:
            "One output per audio/video section of the SDP, in its order: .ivf for VP8/VP9, .opus or .ogg for Opus. "
            + "Ends when every stream has sent RTCP BYE, after --idle seconds without a packet, or after --duration; "
            + "the files are written whole.")

    @Argument(help: "The SDP file, then the output files.") var files: [String]
    @Option(help: "Seconds to wait for the first packet.") var wait = 10.0
    @Option(help: "Seconds without a packet that end the session.") var idle = 2.0
    @Option(help: "Longest session, in seconds.") var duration: Double?
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() throws {
        guard files.count >= 2 else { throw ValidationError("name the SDP file and one output per stream") }
        let text: String
        do {
            text = try String(contentsOfFile: files[0], encoding: .utf8)
        } catch {
            throw MediaError(.io, "cannot read the SDP file", file: files[0])
        }
        let sdp: SessionDescription
        do {
            sdp = try SessionDescription(parsing: text)
        } catch let error as MediaError {
            throw MediaError(error.code, error.message, file: files[0])
        }
        let summary = try RTPFileReceiver.receive(
            sdp: sdp, outputs: Array(files.dropFirst()), startTimeoutSeconds: wait, idleTimeoutSeconds: idle,
            maximumSeconds: duration)
        if json {
            print(
                Report.json([
                    "command": "receive", "endedBy": summary.endedBy,
                    "streams": summary.streams.map {
                        [
                            "codec": $0.codec.rawValue, "output": $0.output, "packets": $0.packets,
                            "packetsLost": $0.packetsLost, "frames": $0.frames, "ignored": $0.ignored, "bye": $0.sawBye,
                        ] as [String: Any]
                    },
                ]))
            return
        }
        for stream in summary.streams {
            print(
                "received \(stream.codec) → \(stream.output): \(stream.packets) packets (\(stream.packetsLost) lost), "
                    + "\(stream.frames) frames, \(stream.ignored) datagrams ignored\(stream.sawBye ? ", BYE" : "")")
        }
        print("ended by \(summary.endedBy)")
    }
}
