import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench send IN... rtp://HOST:PORT`: media files as paced RTP to a peer, through the engine.
struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract:
            "Send media files (IVF, Ogg Opus, WebM as they are; Y4M and WAV encoded here) as paced RTP to "
            + "rtp://HOST:PORT, with an SDP for the peer.",
        discussion:
            "One audio and one video stream at most. Stream i goes to PORT+2i (its RTCP to the next port; a BYE "
            + "ends each stream), as ffmpeg's RTP outputs do, from local port --local-port+2i, where the peer's "
            + "RTCP is read: NACKs are answered with retransmissions, PLI/FIR with a keyframe on a stream encoded "
            + "here. --sdp writes the description a receiver opens (ffmpeg -protocol_whitelist file,udp,rtp -i "
            + "FILE.sdp) before anything is sent. A line of statistics goes to standard error each second.")

    @Argument(help: "Input files, then the destination rtp://HOST:PORT.") var files: [String]
    @Option(help: "Write the session description here first.") var sdp: String?
    @Option(name: .customLong("start-delay"), help: "Seconds to wait after writing the SDP.") var startDelay = 0.0
    @Option(name: .customLong("local-port"), help: "The first local port (0: any free ports).") var localPort = 0
    @Option(help: "Seconds to stay after the last frame, answering NACKs.") var linger = 0.5
    @Option(help: "Video bitrate for Y4M input; k and M suffixes accepted (default 1M).") var bitrate = Bitrate(
        argument: "1M")!
    @Flag(help: "Send as fast as possible instead of at the media's pace.") var noPacing = false
    @Flag(help: "No statistics lines on standard error.") var quiet = false
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() throws {
        guard files.count >= 2 else { throw ValidationError("name the input files and rtp://HOST:PORT") }
        let destination = files.last!
        guard destination.hasPrefix("rtp://"), let colon = destination.lastIndex(of: ":"),
            let port = Int(destination[destination.index(after: colon)...]), (1...65533).contains(port)
        else { throw ValidationError("the destination '\(destination)' is not rtp://HOST:PORT") }
        guard (0...65533).contains(localPort) else { throw ValidationError("--local-port \(localPort) is not a port") }
        var host = String(destination[destination.index(destination.startIndex, offsetBy: 6)..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var configuration = EngineConfiguration()
        configuration.videoBitrateBitsPerSecond = bitrate.bitsPerSecond
        configuration.videoKeyframeIntervalFrames = 300
        Interruption.catchSignals()
        let summary = try RTPFileSender.send(
            inputs: Array(files.dropLast()), host: host, port: port, localPort: localPort, realtime: !noPacing,
            startDelaySeconds: startDelay, lingerSeconds: linger, configuration: configuration,
            shouldStop: { Interruption.wasRaised },
            progress: { seconds, summary in
                guard !quiet else { return }
                writeStandardError(String(format: "%6.1f s  ", seconds) + Self.describe(summary) + "\n")
            },
            describe: { description in
                if let sdp { try AtomicText.write(description.text, to: sdp) }
            })
        if json {
            print(
                Report.json([
                    "command": "send", "sdp": summary.sdp.text, "packetsRetransmitted": summary.packetsRetransmitted,
                    "keyframeRequestsReceived": summary.keyframeRequestsReceived,
                    "keyframesForced": summary.keyframesForced,
                    "streams": summary.streams.map {
                        [
                            "codec": $0.codec.rawValue, "port": $0.port, "frames": $0.frames, "packets": $0.packets,
                            "bytes": $0.bytes,
                        ] as [String: Any]
                    },
                ]))
            return
        }
        for stream in summary.streams {
            print(
                "sent \(stream.codec) to \(host):\(stream.port): \(stream.frames) frames in \(stream.packets) packets")
        }
        print(Self.describe(summary))
    }

    private static func describe(_ summary: RTPSendSummary) -> String {
        let streams = summary.streams.map { "\($0.codec) \($0.frames) frames, \($0.packets) packets" }
        return streams.joined(separator: " | ")
            + " | \(summary.packetsRetransmitted) retransmitted, \(summary.keyframeRequestsReceived) keyframe requests"
    }
}

/// Writes a small text file whole (a temporary file renamed into place).
enum AtomicText {
    static func write(_ text: String, to path: String) throws {
        let temporary = path + ".partial-\(getpid())"
        do {
            try text.write(toFile: temporary, atomically: false, encoding: .utf8)
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw MediaError(.io, "cannot write: \(error.localizedDescription)", file: path)
        }
    }
}
