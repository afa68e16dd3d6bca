import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench info FILE`: what a media file holds.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Describe a WAV, Ogg Opus, Y4M, IVF or WebM file (reading it through).")

    @Argument(help: "The file.") var file: String
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let info = try MediaFileInfo.probe(path: file)
        var object: [String: Any] = [
            "path": info.path, "format": info.kind.rawValue, "durationSeconds": info.durationSeconds,
        ]
        var lines = ["\(info.path): \(info.kind.rawValue)"]
        switch info.kind {
        case .wav:
            object.merge([
                "sampleRate": info.sampleRate, "channelCount": info.channelCount, "sampleFrames": info.sampleFrames,
                "sampleEncoding": info.sampleEncoding ?? "",
            ]) { $1 }
            lines.append(
                String(
                    format: "  %d Hz, %d ch, %@, %lld samples (%.3f s)", info.sampleRate, info.channelCount,
                    info.sampleEncoding ?? "", info.sampleFrames, info.durationSeconds))
        case .oggOpus:
            let (fields, description) = Self.describeOpus(info)
            object.merge(fields) { $1 }
            object.merge(["inputSampleRate": info.sampleRate, "vendor": info.vendor ?? "", "comments": info.comments]) {
                $1
            }
            lines.append(
                "  " + description + String(format: ", input %d Hz, vendor '%@'", info.sampleRate, info.vendor ?? ""))
        case .y4m, .ivf:
            let (fields, description) = Self.describeVideo(info)
            object.merge(fields) { $1 }
            lines.append("  " + description)
        case .webm:
            var tracks: [[String: Any]] = []
            for track in info.tracks {
                var fields: [String: Any] = ["number": track.trackNumber ?? 0, "codecID": track.codecID ?? ""]
                let description: String
                switch track.codec {
                case .vp8, .vp9:
                    let (video, text) = Self.describeVideo(track)
                    fields.merge(video) { $1 }
                    description = text
                case .opus:
                    let (audio, text) = Self.describeOpus(track)
                    fields.merge(audio) { $1 }
                    description = text
                case nil:
                    fields.merge(["frames": track.frames, "durationSeconds": track.durationSeconds]) { $1 }
                    if let reason = track.notDecodedReason { fields["notDecoded"] = reason }
                    description = String(
                        format: "%@, not decoded here%@, %d frames", track.codecID ?? "",
                        track.notDecodedReason.map { " (\($0))" } ?? "", track.frames)
                }
                tracks.append(fields)
                lines.append("  track \(track.trackNumber ?? 0): " + description)
            }
            object["tracks"] = tracks
            lines.append(String(format: "  duration %.3f s", info.durationSeconds))
        case .rawI420:
            break  // probe() does not read it
        }
        print(json ? Report.json(object) : lines.joined(separator: "\n"))
    }

    /// A video file's or track's fields and its one-line description.
    private static func describeVideo(_ info: MediaFileInfo) -> ([String: Any], String) {
        var fields: [String: Any] = [
            "width": info.width, "height": info.height, "framesPerSecond": info.framesPerSecond, "frames": info.frames,
            "durationSeconds": info.durationSeconds,
        ]
        var line = String(
            format: "%dx%d, %.3f fps, %d frames (%.3f s)", info.width, info.height, info.framesPerSecond, info.frames,
            info.durationSeconds)
        if let codec = info.codec {
            fields["codec"] = codec.rawValue
            fields["bitrateBitsPerSecond"] = info.bitrateBitsPerSecond.rounded()
            line = codec.description + " " + line + String(format: ", %.1f kbit/s", info.bitrateBitsPerSecond / 1000)
        }
        if let keyframes = info.keyframes {
            fields["keyframes"] = keyframes
            line += ", \(keyframes) keyframes"
        }
        return (fields, line)
    }

    /// An Opus file's or track's fields and its one-line description.
    private static func describeOpus(_ info: MediaFileInfo) -> ([String: Any], String) {
        let fields: [String: Any] = [
            "codec": "opus", "channelCount": info.channelCount, "sampleFrames48k": info.sampleFrames,
            "preSkip": info.preSkip, "outputGainQ8dB": info.outputGainQ8dB, "packets": info.frames,
            "bitrateBitsPerSecond": info.bitrateBitsPerSecond.rounded(), "durationSeconds": info.durationSeconds,
        ]
        let line = String(
            format: "Opus, %d ch, pre-skip %d, %lld samples at 48 kHz (%.3f s), %d packets, %.1f kbit/s",
            info.channelCount, info.preSkip, info.sampleFrames, info.durationSeconds, info.frames,
            info.bitrateBitsPerSecond / 1000)
        return (fields, line)
    }
}
