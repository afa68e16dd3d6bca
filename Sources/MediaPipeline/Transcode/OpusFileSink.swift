/// Where an audio encode's Opus packets go: an Ogg Opus file, or a WebM file with one Opus
/// track, chosen by the output's name. Both trim the decoded output to the source's exact
/// length: Ogg by its last granule position, WebM by the last block's DiscardPadding (so the
/// WebM side holds each packet back until the next one or the end shows whether it is the last).
enum OpusFileSink {
    case ogg(OggOpusWriter)
    case webm(WebMWriter, HeldPacket)

    /// The packet a WebM sink has not written yet, and the 48 kHz samples before it; the
    /// track it goes to, and whether the sink finishes the file (or shares it with video).
    final class HeldPacket {
        var bytes: [UInt8] = []
        var duration48k = 0
        var position48k: Int64 = 0
        var track = 0
        var ownsWriter = true
    }

    /// A sink writing to track `track` of `writer`, which its owner finishes (audio beside video).
    static func track(_ track: Int, of writer: WebMWriter) -> OpusFileSink {
        let held = HeldPacket()
        held.track = track
        held.ownsWriter = false
        return .webm(writer, held)
    }

    init(path: String, head: OpusHead) throws {
        if MediaFileKind.forOutput(path: path) == .webm {
            self = .webm(try WebMWriter(path: path, tracks: [.opus(head)]), HeldPacket())
        } else {
            self = .ogg(
                try OggOpusWriter(
                    path: path, head: head,
                    tags: OpusTags(vendor: "MediaPipeline (libopus)", comments: ["ENCODER=MediaPipeline"])))
        }
    }

    /// Appends a packet of `duration` samples at 48 kHz.
    func write(packet: [UInt8], samples48k duration: Int) throws {
        switch self {
        case .ogg(let writer):
            try writer.write(packet: packet, samples48k: duration)
        case .webm(let writer, let held):
            try flush(writer, held, discardPadding48k: 0)
            held.bytes = packet
            held.duration48k = duration
        }
    }

    /// Writes what is held and finishes the file, trimmed to `playableSamples48k` after the
    /// pre-skip.
    func finish(playableSamples48k: Int64) throws {
        switch self {
        case .ogg(let writer):
            try writer.finish(playableSamples48k: playableSamples48k)
        case .webm(let writer, let held):
            let end = held.position48k + Int64(held.duration48k)
            let preSkip = Int64(writer.tracks[held.track].opusHead?.preSkip ?? 0)
            let padding = max(0, end - preSkip - playableSamples48k)
            try flush(writer, held, discardPadding48k: min(padding, Int64(held.duration48k)))
            if held.ownsWriter { try writer.finish() }
        }
    }

    private func flush(_ writer: WebMWriter, _ held: HeldPacket, discardPadding48k: Int64) throws {
        guard !held.bytes.isEmpty else { return }
        try held.bytes.withUnsafeBytes {
            try writer.write(
                track: held.track, $0, timestampMicroseconds: held.position48k * 1000 / 48,
                durationMicroseconds: Int64(held.duration48k) * 1000 / 48, isKeyframe: true,
                discardPaddingNanoseconds: discardPadding48k * 1_000_000_000 / 48_000)
        }
        held.position48k += Int64(held.duration48k)
        held.bytes.removeAll(keepingCapacity: true)
    }
}
