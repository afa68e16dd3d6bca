import Foundation
import MediaPipeline

/// Formats results for people (one line) and machines (`--json`).
enum Report {
    static func json(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
        else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func summaryObject(_ verb: String, _ summary: TranscodeSummary, elapsedSeconds: Double) -> [String: Any] {
        var object: [String: Any] = [
            "command": verb, "kind": summary.kind.rawValue, "codec": summary.codec.rawValue, "input": summary.input,
            "output": summary.output, "durationSeconds": summary.durationSeconds, "frames": summary.frames,
            "compressedBytes": summary.compressedBytes, "bitrateBitsPerSecond": summary.bitrateBitsPerSecond.rounded(),
            "elapsedSeconds": elapsedSeconds, "peakResidentKilobytes": peakResidentKilobytes(),
        ]
        if summary.kind == .audio {
            object["sampleRate"] = summary.sampleRate
            object["channelCount"] = summary.channelCount
            object["speedRealtime"] = elapsedSeconds > 0 ? summary.durationSeconds / elapsedSeconds : 0
        } else {
            object["width"] = summary.width
            object["height"] = summary.height
            object["framesPerSecond"] = elapsedSeconds > 0 ? Double(summary.frames) / elapsedSeconds : 0
        }
        if !summary.frameMD5s.isEmpty { object["frameMD5s"] = summary.frameMD5s }
        return object
    }

    static func summaryLine(_ verb: String, _ summary: TranscodeSummary, elapsedSeconds: Double) -> String {
        let target = summary.output.isEmpty ? "" : " → \(summary.output)"
        let kbps = String(format: "%.1f kbit/s", summary.bitrateBitsPerSecond / 1000)
        if summary.kind == .audio {
            let speed = elapsedSeconds > 0 ? summary.durationSeconds / elapsedSeconds : 0
            return String(
                format: "%@ %@%@: %.3f s, %d Hz, %d ch, Opus %@, %.0f× realtime", verb, summary.input, target,
                summary.durationSeconds, summary.sampleRate, summary.channelCount, kbps, speed)
        }
        let fps = elapsedSeconds > 0 ? Double(summary.frames) / elapsedSeconds : 0
        return String(
            format: "%@ %@%@: %lld frames %dx%d, %@ %@, %.0f fps", verb, summary.input, target, summary.frames,
            summary.width,
            summary.height, summary.codec.description, kbps, fps)
    }
}

/// The most memory this process has held at once, in KiB: the kernel's high-water mark of
/// this program's own address space (`VmHWM`). getrusage's ru_maxrss is not used: across
/// exec it keeps the parent's peak, which would report the launcher's memory, not ours.
func peakResidentKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
    }
    return 0
}

/// Seconds elapsed while running `body` (the CLI's wall clock; the library reads none).
func measure<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let value = try body()
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (value, seconds)
}
