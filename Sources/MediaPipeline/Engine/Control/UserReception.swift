/// What the control plane counts of one remote user's media for its statistics: per packet on
/// arrival, per playout tick and per render round as they report, and the totals at the last
/// 2 s report (so each report covers its interval).
struct UserReception {
    var audioBytes: Int64 = 0, videoBytes: Int64 = 0
    /// Packets expected and lost, per stream, at the last report.
    var lastAudioExpected: Int64 = 0, lastAudioLost: Int64 = 0
    var lastVideoExpected: Int64 = 0, lastVideoLost: Int64 = 0
    var lastAudioBytes: Int64 = 0, lastVideoBytes: Int64 = 0
    /// The audio playout counters at the last report.
    var lastAudio = AudioPlayoutCounters()
    /// Audio time frozen (Agora: intervals of 4 % frame loss or more) and received.
    var audioFrozenMs: Int64 = 0, audioActiveMs: Int64 = 0

    /// Video: frames decoded and rendered, in total and at the last report.
    var videoFramesDecoded: Int64 = 0, videoFramesRendered: Int64 = 0
    var lastVideoFramesDecoded: Int64 = 0, lastVideoFramesRendered: Int64 = 0
    /// When a frame was last decoded, the first one was, and the frozen time of ended gaps.
    var lastVideoFrameAt: Int64?
    var firstVideoFrameAt: Int64?
    var videoFrozenMs: Int64 = 0
    var nacksSent: Int64 = 0, keyframeRequestsSent: Int64 = 0, videoFramesDropped: Int64 = 0

    /// A new audio receiver: its counters start from zero.
    mutating func audioRestarted() {
        lastAudio = AudioPlayoutCounters()
        (lastAudioExpected, lastAudioLost) = (0, 0)
    }

    /// A new video receiver: its counters start from zero, and so does the freeze clock.
    mutating func videoRestarted() {
        (lastVideoExpected, lastVideoLost) = (0, 0)
        lastVideoFrameAt = nil
    }

    /// A gap between decoded frames longer than this is a freeze (Agora).
    static let videoFreezeGapMicroseconds: Int64 = 500_000

    /// Video frames decoded at clock time `now`.
    mutating func videoDecoded(_ count: Int, rendered: Bool, now: Int64) {
        guard count > 0 else { return }
        if let last = lastVideoFrameAt, now - last > Self.videoFreezeGapMicroseconds {
            videoFrozenMs += (now - last) / 1000
        }
        lastVideoFrameAt = now
        if firstVideoFrameAt == nil { firstVideoFrameAt = now }
        videoFramesDecoded += Int64(count)
        if rendered { videoFramesRendered += 1 }
    }

    /// Video frozen up to `now`: the ended gaps and the one going on, if long enough.
    func videoFrozenMs(now: Int64) -> Int64 {
        guard let last = lastVideoFrameAt, now - last > Self.videoFreezeGapMicroseconds else { return videoFrozenMs }
        return videoFrozenMs + (now - last) / 1000
    }
}
