/// Keeps one remote user's audio and video in step, as libwebrtc's `RtpStreamsSynchronizer` and
/// GStreamer's rtpbin do: both streams of a sender share its NTP clock, so each one's
/// sender-to-playout latency is known up to the same constant (``StreamPlayoutTiming``). The
/// stream that would play earlier is held back by the difference, never more than
/// ``maximumAddedMicroseconds`` (1.5 s), through a floor under its delay (libwebrtc sets a
/// minimum playout delay the same way): the receiver plays at the floor or at its own delay,
/// whichever is longer. The floor is decided every ``updateIntervalMicroseconds`` and moves at
/// most ``stepMicroseconds`` per 100 ms (playout stretches toward it a pitch period at a time;
/// pictures are shown 40 % slower or faster for a while), but for the later stream's, which
/// follows its own delay up at once (a stream is never held below its own delay).
///
/// Until both streams have a trusted sender clock (no report yet, or the mapping jumped), the
/// streams play unsynced: each plays at its own delay, what was added for sync running down at
/// the same pace, and ``isSynced`` says so.
///
/// Users of one channel can be aligned with each other too (a channel composite recording, so
/// that two users who clap at once show both claps in one frame): every stream is then held
/// back to the latency of the group's slowest, which their senders' NTP clocks make comparable.
///
/// A value owned by the control plane (one per remote user); the receivers take the floors it
/// decides.
struct LipSync {
    /// The most delay added to either stream. libwebrtc caps its own near 1 s; under 30 % loss
    /// on a 200 ms round trip the video's render delay covers retransmissions and the frames
    /// held behind them, about 1.1–1.3 s, which its audio must match.
    static let maximumAddedMicroseconds: Int64 = 1_500_000
    /// How often the floors are decided: every other playout tick, so a stream that moves
    /// (a video whose render delay climbs) is followed within 20 ms.
    static let updateIntervalMicroseconds: Int64 = 20_000
    /// The most a floor moves per ``stepPeriodMicroseconds`` of clock time, taken in proportion
    /// to the time since the last decision: 40 ms per 100 ms, for either stream. Audio playout
    /// stretches toward it a pitch period at a time; pictures are shown 40 % slower or faster
    /// for a while. It is the pace of the video's render delay too
    /// (``VideoReceiver/Inbox/updateRenderDelay(now:)``), so whichever stream
    /// moves, the other follows it as it moves; a video a second behind (a long round trip
    /// under heavy loss) is caught up with in 2.5 s.
    static let stepMicroseconds: Int64 = 40_000
    static let stepPeriodMicroseconds: Int64 = 100_000

    /// How far a delay may move in `elapsed` microseconds of clock time at the one pace
    /// (``stepMicroseconds`` per ``stepPeriodMicroseconds``), counting at most one period: the
    /// floors here and the video's render delay both move by it.
    static func pace(elapsedMicroseconds elapsed: Int64) -> Int64 {
        stepMicroseconds * min(max(elapsed, 0), stepPeriodMicroseconds) / stepPeriodMicroseconds
    }

    /// What is decided for one stream: the least delay it plays at (its *floor*, in the units
    /// of ``StreamPlayoutTiming/delayMicroseconds``), and its own delay when that was decided.
    struct StreamFloor {
        /// The receiver plays at this delay or at its own, whichever is longer.
        var floorMicroseconds: Int64 = 0
        /// The stream's own delay at the last decision.
        var ownMicroseconds: Int64 = 0
        /// The delay added for sync at the last decision: how far the floor lies above the
        /// stream's own delay.
        var addedMicroseconds: Int64 { max(0, floorMicroseconds - ownMicroseconds) }

        /// Moves the floor toward what `common` (the latency both streams should play at) asks
        /// of the stream, at most `step`:
        /// - In sync with another stream (a common latency and the stream's timing): from where
        ///   it plays now (the longer of its floor and its own delay) toward its own delay plus
        ///   the difference. A stream held back does not move when its own delay changes, and
        ///   the later stream's own drop is taken a step at a time, so the one held back for it
        ///   comes down with it.
        /// - Alone (no common latency, or no timing: one stream, or a sender clock not trusted
        ///   any more): its own delay counts at once, and what it had added runs down a step at
        ///   a time (without a timing, above the last own delay known).
        mutating func decide(_ timing: StreamPlayoutTiming?, common: Int64?, step: Int64) {
            guard let timing, let common else {
                let added = LipSync.step(addedMicroseconds, toward: 0, by: step)
                if let timing { ownMicroseconds = timing.delayMicroseconds }
                // Never above where it was: an own delay that rises meanwhile covers the rest.
                floorMicroseconds = added > 0 ? min(floorMicroseconds, ownMicroseconds + added) : 0
                return
            }
            ownMicroseconds = timing.delayMicroseconds
            let target = ownMicroseconds + LipSync.capped(common - timing.latencyMicroseconds)
            floorMicroseconds = LipSync.step(max(floorMicroseconds, ownMicroseconds), toward: target, by: step)
        }
    }

    /// The floors handed to the audio's playout and to the video's rendering.
    private(set) var audio = StreamFloor()
    private(set) var video = StreamFloor()
    /// The delay added to the audio's playout and to the video's rendering at the last decision.
    var audioAddedMicroseconds: Int64 { audio.addedMicroseconds }
    var videoAddedMicroseconds: Int64 { video.addedMicroseconds }
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

    /// Decides the floors at clock time `now` from the two streams' timings (nil for a stream
    /// not received, or not yet placed on the sender's clock). With
    /// `alignedToLatencyMicroseconds` (the latency of the slowest stream of a group of users, as
    /// a channel composite aligns them), each stream is held back to that latency instead, as
    /// far as the cap allows. Returns whether either floor changed.
    ///
    /// A floor, not a delay added to the stream's own: when a stream's own delay jumps between
    /// two decisions (one late packet raises the audio's jitter target for half a second), it
    /// plays at the longer of the two, so a stream already held back for the other does not
    /// move at all; added to the own delay, it moved by the whole jump, and the other stream
    /// could follow only a step at a time (measured: beeps 85–135 ms off their pictures through
    /// Janus under 10 % loss).
    mutating func update(
        audio audioTiming: StreamPlayoutTiming?, video videoTiming: StreamPlayoutTiming?,
        alignedToLatencyMicroseconds group: Int64? = nil, now: Int64
    ) -> Bool {
        let step = Self.pace(elapsedMicroseconds: now - (lastUpdate ?? (now - Self.stepPeriodMicroseconds)))
        lastUpdate = now
        let before = (audio.floorMicroseconds, video.floorMicroseconds)
        // The latency both streams should play at; nil: each at its own.
        var common: Int64? = group
        if group == nil, let audioTiming, let videoTiming {
            common = max(audioTiming.latencyMicroseconds, videoTiming.latencyMicroseconds)
        }
        isSynced = audioTiming != nil && videoTiming != nil
        audio.decide(audioTiming, common: common, step: step)
        video.decide(videoTiming, common: common, step: step)
        if isSynced, let audioTiming, let videoTiming {
            offsetMicroseconds =
                (audioTiming.latencyMicroseconds + audio.addedMicroseconds)
                - (videoTiming.latencyMicroseconds + video.addedMicroseconds)
        } else {
            offsetMicroseconds = nil
        }
        return (audio.floorMicroseconds, video.floorMicroseconds) != before
    }

    /// A delay to add, within 0…``maximumAddedMicroseconds``.
    fileprivate static func capped(_ delay: Int64) -> Int64 { min(max(delay, 0), maximumAddedMicroseconds) }

    fileprivate static func step(_ value: Int64, toward target: Int64, by most: Int64) -> Int64 {
        value + min(max(target - value, -most), most)
    }
}
