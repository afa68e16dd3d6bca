/// Writes the compressed frames one remote stream's receivers decode into a file, as they
/// take them: no re-encoding, and exactly the frames the receiver took for decoding or, for
/// audio, pushed out of a full queue unplayed (those it dropped as late or never got are not in
/// the file, nor audio packets with no readable duration). WebM in live mode (a Cluster a second at most,
/// so a process that dies leaves every complete Cluster), Ogg Opus for audio alone, or IVF
/// (90 kHz times, written whole when finished) for video alone.
///
/// The receivers call ``record(_:kind:now:senderOffsetMicroseconds:pictureWidth:pictureHeight:)``
/// from their decode threads; the recorder's own lock orders them. The file starts at the first
/// video keyframe (or, without video, the first audio frame): what came before cannot be
/// decoded on its own. Times keep each stream's own spacing (its RTP timestamps), and the file's
/// time line is its first frame's stream's. The other stream is placed on the sender's NTP
/// time line (from the sender reports of both, mapped to the file's time line once), so a
/// user's voice lands on its picture as captured, whatever each stream's delay was. Until both
/// streams' reports are known, the other stream's frames are left out; a sender that sends no
/// reports within ``reportWaitMicroseconds`` of the file's start has that stream placed on the
/// engine clock instead (at the time its next frame is recorded).
final class StreamRecorder: @unchecked Sendable {
    let path: String
    let key: StreamKey
    let media: RecordedMedia
    private let state: LockedValue<State>

    private struct State: @unchecked Sendable {
        var webm: WebMWriter?
        var ogg: OggOpusWriter?
        var ivf: IVFWriter?
        /// Engine clock time when recording began.
        var startedAt: Int64
        /// Per kind (audio 0, video 1): what is added to a frame's media time to place it in
        /// the file, once decided.
        var placement: [Int64?] = [nil, nil]
        /// The kind of the file's first frame, and that frame's media time.
        var firstKind = 0
        var firstMedia: Int64 = 0
        /// Per kind, the stream's sender clock offset (media − sender NTP), as last told.
        var senderOffsets: [Int64?] = [nil, nil]
        var frames: [Int64] = [0, 0]
        var failure: String?
        var failureReported = false
        var finished = false
    }

    /// A recorder of `media` of `key` into `path` (`.webm`, or `.opus`/`.ogg` for audio
    /// alone), starting at clock time `now`.
    /// - Throws: ``MediaError/Code/invalidArgument`` for another extension, or Ogg with video.
    init(path: String, key: StreamKey, media: RecordedMedia, now: Int64) throws {
        switch MediaFileKind.forOutput(path: path) {
        case .webm: break
        case .oggOpus:
            guard media == .audio else {
                throw MediaError.invalidArgument("\(path): Ogg Opus holds audio alone; record video to .webm")
            }
        case .ivf:
            guard media == .video else {
                throw MediaError.invalidArgument("\(path): IVF holds video alone; record audio to .webm or .opus")
            }
        default:
            throw MediaError.invalidArgument(
                "\(path): a recording is written to .webm, .opus/.ogg for audio, or .ivf for video")
        }
        guard !media.isEmpty else { throw MediaError.invalidArgument("\(path): a recording needs audio or video") }
        self.path = path
        self.key = key
        self.media = media
        state = LockedValue(State(startedAt: now))
    }

    /// How long the second stream waits for its sender's reports before it is placed on the
    /// engine clock (a sender sends one a second; two may be lost).
    static let reportWaitMicroseconds: Int64 = 3_000_000

    /// Frames written so far: audio packets and video frames.
    var framesWritten: (audio: Int64, video: Int64) { state.withLock { ($0.frames[0], $0.frames[1]) } }
    /// Why writing stopped, if it failed (the disk is full, the folder went away…).
    var failure: String? { state.withLock { $0.failure } }

    /// The failure, the first time it is asked for after writing failed (to report it once).
    func takeFailureToReport() -> String? {
        state.withLock { state in
            guard let failure = state.failure, !state.failureReported else { return nil }
            state.failureReported = true
            return failure
        }
    }

    /// Records `frame` of `kind`, decoded at clock time `now`; `senderOffsetMicroseconds` is
    /// the stream's ``SenderClock`` offset (media − sender NTP) when a report was trusted. A
    /// video frame's decoded picture size names the track's. A failure stops the recording and
    /// waits in ``takeFailureToReport()``.
    func record(
        _ frame: EncodedFrame, kind: MediaKind, now: Int64, senderOffsetMicroseconds: Int64? = nil,
        pictureWidth: Int = 0, pictureHeight: Int = 0
    ) {
        let k = kind == .audio ? 0 : 1
        guard media.contains(kind == .audio ? .audio : .video) else { return }
        state.withLock { state in
            guard state.failure == nil, !state.finished else { return }
            do {
                if state.webm == nil && state.ogg == nil && state.ivf == nil {
                    // The file starts at the first frame that decodes on its own, of video when
                    // video is recorded.
                    guard kind == .video ? frame.isKeyframe : !media.contains(.video) else { return }
                    try open(&state, frame: frame, kind: kind, width: pictureWidth, height: pictureHeight)
                    // The file's time starts with its first frame, not when recording was asked
                    // for (a sender that starts later would leave silence or a still at the front).
                    state.startedAt = now
                    state.firstKind = k
                    state.firstMedia = frame.timestampMicroseconds
                    state.placement[k] = -frame.timestampMicroseconds
                }
                if let offset = senderOffsetMicroseconds { state.senderOffsets[k] = offset }
                if state.placement[k] == nil {
                    if let offset = state.senderOffsets[k], let firstOffset = state.senderOffsets[state.firstKind] {
                        // The first frame's sender NTP time is the file's 0.
                        state.placement[k] = -offset - (state.firstMedia - firstOffset)
                    } else if now - state.startedAt >= Self.reportWaitMicroseconds {
                        state.placement[k] = now - state.startedAt - frame.timestampMicroseconds
                    } else {
                        return  // waits for the sender's clock
                    }
                }
                let time = frame.timestampMicroseconds + state.placement[k]!
                // Captured before the file's first picture: nothing to show it with.
                guard time >= 0 else { return }
                var samples48k = 0
                if kind == .audio {
                    // A packet whose TOC gives no duration is no Opus a reader could place: the
                    // decoder refuses it too (and says so), and the file goes on without it.
                    guard
                        let count = try? frame.withUnsafeBytes({
                            try OpusDecoder.samplesPerChannel(inPacket: $0, sampleRate: 48_000)
                        })
                    else { return }
                    samples48k = count
                }
                if let ogg = state.ogg {
                    try ogg.write(packet: frame.bytes, samples48k: samples48k)
                } else if let ivf = state.ivf {
                    try ivf.write(frame.bytes, timestamp: (time * 9 + 50) / 100)
                } else if let webm = state.webm {
                    let track = media == [.audio, .video] ? (kind == .video ? 0 : 1) : 0
                    try frame.withUnsafeBytes {
                        try webm.write(
                            track: track, $0, timestampMicroseconds: time,
                            durationMicroseconds: Int64(samples48k) * 1_000_000 / 48_000, isKeyframe: frame.isKeyframe)
                    }
                }
                state.frames[k] += 1
            } catch {
                state.failure = "\(error)"
            }
        }
    }

    private func open(_ state: inout State, frame: EncodedFrame, kind: MediaKind, width: Int, height: Int) throws {
        // Audio alone opens at its first packet, whose TOC says mono or stereo; with video the
        // file opens at a keyframe, before any audio, and says stereo (a mono stream decodes to
        // both channels). The sender's encoder delay is not on the wire: libopus's 312 samples
        // (6.5 ms) at 48 kHz, what browsers, ffmpeg and GStreamer senders have.
        let stereo = kind == .audio ? frame.withUnsafeBytes { $0.first.map { $0 & 0x04 != 0 } ?? true } : true
        let opusHead = OpusHead(channelCount: stereo ? 2 : 1, preSkip: 312, inputSampleRate: 48_000)
        if MediaFileKind.forOutput(path: path) == .oggOpus {
            state.ogg = try OggOpusWriter(path: path, head: opusHead)
            return
        }
        if MediaFileKind.forOutput(path: path) == .ivf {
            state.ivf = try IVFWriter(
                path: path,
                header: IVFHeader(
                    codec: frame.codec == .vp9 ? .vp9 : .vp8, width: max(1, width), height: max(1, height),
                    timebaseNumerator: 1, timebaseDenominator: 90_000))
            return
        }
        var tracks: [WebMTrack] = []
        if media.contains(.video) {
            tracks.append(.video(frame.codec == .vp9 ? .vp9 : .vp8, width: max(1, width), height: max(1, height)))
        }
        if media.contains(.audio) { tracks.append(.opus(opusHead)) }
        state.webm = try WebMWriter(path: path, tracks: tracks, mode: .live)
    }

    /// Finishes the file (Cues, sizes, Duration; Ogg: the end-of-stream page). Returns the
    /// frames written, or throws when the file could not be finished or had failed before.
    func finish() throws -> (audio: Int64, video: Int64) {
        try state.withLock { state in
            guard !state.finished else { return (state.frames[0], state.frames[1]) }
            state.finished = true
            if let failure = state.failure { throw MediaError(.io, "recording failed: \(failure)", file: path) }
            if let ogg = state.ogg {
                try ogg.finish(playableSamples48k: max(0, ogg.packetSamples48k - Int64(ogg.head.preSkip)))
            } else if let webm = state.webm {
                try webm.finish()
            } else if let ivf = state.ivf {
                try ivf.finish()
            } else {
                throw MediaError(
                    .truncated,
                    "nothing was recorded: no \(media.contains(.video) ? "video keyframe" : "audio") was decoded",
                    file: path)
            }
            return (state.frames[0], state.frames[1])
        }
    }
}

/// The media a recording holds.
public struct RecordedMedia: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The user's audio.
    public static let audio = RecordedMedia(rawValue: 1)
    /// The user's video.
    public static let video = RecordedMedia(rawValue: 2)
}
