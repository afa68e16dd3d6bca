/// Keeps one remote user's audio and video in step, as libwebrtc's `RtpStreamsSynchronizer` and
/// GStreamer's rtpbin do: both streams of a sender share its NTP clock, so each one's
/// sender-to-playout latency is known up to the same constant (``StreamPlayoutTiming``). The
/// stream that would play earlier is held back by the difference, never more than
/// ``maximumAddedMicroseconds`` (1.5 s). The delay added moves in steps, one per
/// ``updateIntervalMicroseconds``: the audio's by at most ``audioStepMicroseconds`` (playout
/// stretches toward its new target a pitch period at a time, which is not heard), the video's
/// by at most ``videoStepMicroseconds`` (pictures shown 10 % slower or faster for a while: no
/// frame held twice as long, none skipped).
///
/// Until both streams have a trusted sender clock (no report yet, or the mapping jumped), the
/// streams play unsynced: the added delays return to 0 at the same pace, and ``isSynced`` says so.
///
/// Users of one channel can be aligned with each other too (a channel composite recording, so
/// that two users who clap at once show both claps in one frame): every stream is then held
/// back to the latency of the group's slowest, which their senders' NTP clocks make comparable.
///
/// A value owned by the control plane (one per remote user); the receivers take the delays it
/// decides.
struct LipSync {
    /// The most delay added to either stream. libwebrtc caps its own near 1 s; under 30 % loss
    /// on a 200 ms round trip the video's render delay covers retransmissions and the frames
    /// held behind them, about 1.1–1.3 s, which its audio must match.
    static let maximumAddedMicroseconds: Int64 = 1_500_000
    /// How often the delays are decided.
    static let updateIntervalMicroseconds: Int64 = 100_000
    /// The most the audio's added delay moves per decision: 40 ms per 100 ms, so a video a
    /// second behind (a long round trip under heavy loss) is caught up with in 2.5 s.
    static let audioStepMicroseconds: Int64 = 40_000
    /// The most the video's added delay moves per decision: 10 ms per 100 ms.
    static let videoStepMicroseconds: Int64 = 10_000
    /// The same while users are aligned with each other (a channel composite): 40 ms per
    /// 100 ms, pictures shown 40 % slower for a while, so a recording that starts with its
    /// users half a second apart has them together within about 1.5 s rather than 5 s.
    static let alignedVideoStepMicroseconds: Int64 = 40_000

    /// The delay added to the audio's playout and to the video's rendering.
    private(set) var audioAddedMicroseconds: Int64 = 0
    private(set) var videoAddedMicroseconds: Int64 = 0
    /// Whether the last decision aligned the streams (both had a trusted sender clock).
    private(set) var isSynced = false
    /// How much later the audio plays than the picture captured with it, with the added delays
    /// (negative: earlier); nil while unsynced.
    private(set) var offsetMicroseconds: Int64?
    private var lastUpdate: Int64?

    /// Whether a decision is due at clock time `now`.
    func isDue(now: Int64) -> Bool {
        lastUpdate.map { now - $0 >= Self.updateIntervalMicroseconds } ?? true
    }

    /// Decides the added delays at clock time `now` from the two streams' timings (nil for a
    /// stream not received, or not yet placed on the sender's clock). With
    /// `alignedToLatencyMicroseconds` (the latency of the slowest stream of a group of users, as
    /// a channel composite aligns them), each stream is held back to that latency instead, as
    /// far as the cap allows. Returns whether either delay changed.
    mutating func update(
        audio: StreamPlayoutTiming?, video: StreamPlayoutTiming?, alignedToLatencyMicroseconds group: Int64? = nil,
        now: Int64
    ) -> Bool {
        lastUpdate = now
        let (before, beforeVideo) = (audioAddedMicroseconds, videoAddedMicroseconds)
        var audioTarget: Int64 = 0
        var videoTarget: Int64 = 0
        if let group {
            audioTarget = audio.map { Self.capped(group - $0.latencyMicroseconds) } ?? 0
            videoTarget = video.map { Self.capped(group - $0.latencyMicroseconds) } ?? 0
        } else if let audio, let video {
            // Positive: the video plays later than the audio captured with it.
            let relative = video.latencyMicroseconds - audio.latencyMicroseconds
            audioTarget = Self.capped(relative)
            videoTarget = Self.capped(-relative)
        }
        isSynced = audio != nil && video != nil
        audioAddedMicroseconds = Self.step(audioAddedMicroseconds, toward: audioTarget, by: Self.audioStepMicroseconds)
        videoAddedMicroseconds = Self.step(
            videoAddedMicroseconds, toward: videoTarget,
            by: group == nil ? Self.videoStepMicroseconds : Self.alignedVideoStepMicroseconds)
        if isSynced, let audio, let video {
            offsetMicroseconds =
                (audio.latencyMicroseconds + audioAddedMicroseconds)
                - (video.latencyMicroseconds + videoAddedMicroseconds)
        } else {
            offsetMicroseconds = nil
        }
        return audioAddedMicroseconds != before || videoAddedMicroseconds != beforeVideo
    }

    /// A delay to add, within 0…``maximumAddedMicroseconds``.
    private static func capped(_ delay: Int64) -> Int64 { min(max(delay, 0), maximumAddedMicroseconds) }

    private static func step(_ value: Int64, toward target: Int64, by most: Int64) -> Int64 {
        value + min(max(target - value, -most), most)
    }
}
