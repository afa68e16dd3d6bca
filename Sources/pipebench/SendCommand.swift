import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench send IN... rtp://HOST:PORT`: media files as paced RTP to a peer.
struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send media files (IVF, Ogg Opus, WebM) as paced RTP to rtp://HOST:PORT, with an SDP for the peer.",
        discussion:
            "Each VP8, VP9 or Opus stream goes to its own port, PORT, PORT+2, … (RTCP on the next port; a BYE ends "
            + "each stream), as ffmpeg's RTP outputs do. --sdp writes the description a receiver opens "
            + "(ffmpeg -protocol_whitelist file,udp,rtp -i FILE.sdp) before anything is sent.")

    @Argument(help: "Input files, then the destination rtp://HOST:PORT.") var files: [String]
    @Option(help: "Write the session description here first.") var sdp: String?
    @Option(name: .customLong("start-delay"), help: "Seconds to wait after writing the SDP.") var startDelay = 0.0
    @Flag(help: "Send as fast as possible instead of at the media's pace.") var noPacing = false
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() throws {
        guard files.count >= 2 else { throw ValidationError("name the input files and rtp://HOST:PORT") }
        let destination = files.last!
        guard destination.hasPrefix("rtp://"), let colon = destination.lastIndex(of: ":"),
            let port = Int(destination[destination.index(after: colon)...]), (1...65533).contains(port)
        else { throw ValidationError("the destination '\(destination)' is not rtp://HOST:PORT") }
        var host = String(destination[destination.index(destination.startIndex, offsetBy: 6)..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let summary = try RTPFileSender.send(
            inputs: Array(files.dropLast()), host: host, port: port, realtime: !noPacing, startDelaySeconds: startDelay
        ) { description in
            if let sdp { try AtomicText.write(description.text, to: sdp) }
        }
        if json {
            print(
                Report.json([
                    "command": "send", "sdp": summary.sdp.text,
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
