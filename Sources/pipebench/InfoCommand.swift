import ArgumentParser
import Foundation
import MediaPipeline

/// `pipebench info FILE`: what a media file holds.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Describe a WAV, Ogg Opus, Y4M or IVF file (reading it through).")

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
            object.merge([
                "codec": "opus", "inputSampleRate": info.sampleRate, "channelCount": info.channelCount,
                "sampleFrames48k": info.sampleFrames, "preSkip": info.preSkip, "outputGainQ8dB": info.outputGainQ8dB,
                "vendor": info.vendor ?? "", "comments": info.comments, "packets": info.frames,
                "bitrateBitsPerSecond": info.bitrateBitsPerSecond.rounded(),
            ]) { $1 }
            lines.append(
                String(
                    format: "  Opus, %d ch, input %d Hz, pre-skip %d, %lld samples at 48 kHz (%.3f s)",
                    info.channelCount,
                    info.sampleRate, info.preSkip, info.sampleFrames, info.durationSeconds))
            lines.append(
                String(
                    format: "  %d packets, %.1f kbit/s, vendor '%@'", info.frames, info.bitrateBitsPerSecond / 1000,
                    info.vendor ?? ""))
        case .y4m, .ivf:
            object.merge([
                "width": info.width, "height": info.height, "framesPerSecond": info.framesPerSecond,
                "frames": info.frames,
            ]) { $1 }
            if let codec = info.codec {
                object["codec"] = codec.rawValue
                object["bitrateBitsPerSecond"] = info.bitrateBitsPerSecond.rounded()
            }
            if let keyframes = info.keyframes { object["keyframes"] = keyframes }
            var line = String(
                format: "  %dx%d, %.3f fps, %d frames (%.3f s)", info.width, info.height, info.framesPerSecond,
                info.frames, info.durationSeconds)
            if let codec = info.codec {
                line += String(format: ", %@ %.1f kbit/s", codec.description, info.bitrateBitsPerSecond / 1000)
            }
            if let keyframes = info.keyframes { line += ", \(keyframes) keyframes" }
            lines.append(line)
        case .rawI420, .webm:
            break  // probe() reads neither
        }
        print(json ? Report.json(object) : lines.joined(separator: "\n"))
    }
}
