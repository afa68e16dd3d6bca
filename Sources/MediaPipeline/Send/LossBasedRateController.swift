/// How the publisher's encoders follow the loss its subscribers report (RTCP receiver reports),
/// in the manner of libwebrtc's loss-based bandwidth estimate:
///
/// - video bitrate: above 10 % loss it drops by half the loss (at most once per 300 ms plus a
///   round trip, so a report is answered before the next cut); when no report of the last
///   second showed 2 % or more, it rises by 8 % (plus 1 kbit/s); always within the bounds;
/// - audio: Opus in-band FEC is on while the smoothed loss is 1 % or more, and the encoder's
///   expected loss follows the smoothed loss (so it invests in redundancy as much as needed);
///   from 2 % each packet also repeats the frame before it (RFC 2198 redundancy, as libwebrtc's
///   RED for Opus), from 8 % the two before it (a burst of two, or a packet and its successor's
///   copy lost together, is still rebuilt; in-band FEC covers one packet back, and speech only).
///   A transport whose subscribers' loss never reaches the publisher (an SFU) sets a floor
///   under the expected loss (``TransportFeedbackProfile/audioExpectedLossFloorPercent``).
///
/// Decisions are taken when reports arrive; the next encoded frame compares them with what its
/// encoder has, so the thread carrying RTCP never touches an encoder.
struct LossBasedRateController {
    let minimumBitsPerSecond: Int
    let maximumBitsPerSecond: Int
    /// The video bitrate decided.
    private(set) var videoBitsPerSecond: Int
    /// The loss, smoothed over reports (0...1), and the expected loss given to the audio
    /// encoder (percent).
    private(set) var smoothedLoss = 0.0
    private(set) var audioExpectedLossPercent: Int
    /// The least expected loss, whatever the reports say (percent).
    let audioExpectedLossFloorPercent: Int
    /// How many earlier frames each audio packet repeats (0, 1 or 2).
    private(set) var audioRedundancyDistance = 0
    /// The most the receivers let the video use (an SFU's REMB), and until when (clock
    /// microseconds): a cap not renewed for 5 s lapses.
    private(set) var remoteCapBitsPerSecond: Int?
    private var remoteCapUntil: Int64 = 0
    /// How long a receiver's cap holds without being renewed.
    static let remoteCapMicroseconds: Int64 = 5_000_000
    private var lastDecrease: Int64 = .min / 2
    private var windowStart: Int64?
    private var worstInWindow = 0.0

    init(
        startBitsPerSecond: Int, minimumBitsPerSecond: Int, maximumBitsPerSecond: Int,
        audioExpectedLossFloorPercent: Int = 0
    ) {
        self.audioExpectedLossFloorPercent = min(50, max(0, audioExpectedLossFloorPercent))
        audioExpectedLossPercent = self.audioExpectedLossFloorPercent
        self.minimumBitsPerSecond = min(minimumBitsPerSecond, maximumBitsPerSecond)
        self.maximumBitsPerSecond = maximumBitsPerSecond
        videoBitsPerSecond = max(self.minimumBitsPerSecond, min(maximumBitsPerSecond, startBitsPerSecond))
    }

    /// A subscriber reported `fractionLost` (0...1) of the local streams' packets at clock time
    /// `now`, with the round trip known then.
    mutating func report(fractionLost: Double, roundTripMicroseconds: Int64, now: Int64) {
        worstInWindow = max(worstInWindow, fractionLost)
        if fractionLost > 0.10, now - lastDecrease >= 300_000 + roundTripMicroseconds {
            setVideo(Int(Double(videoBitsPerSecond) * (1 - 0.5 * fractionLost)), now: now)
            lastDecrease = now
        }
        let start = windowStart ?? now
        windowStart = start
        if now - start >= 1_000_000 {
            if worstInWindow < 0.02 && now - lastDecrease >= 1_000_000 {
                setVideo(videoBitsPerSecond + videoBitsPerSecond * 8 / 100 + 1_000, now: now)
            }
            windowStart = now
            worstInWindow = 0
        }
        smoothedLoss += (fractionLost - smoothedLoss) * 0.3
        let reported = smoothedLoss < 0.01 ? 0 : min(50, Int((smoothedLoss * 100).rounded(.up)))
        audioExpectedLossPercent = max(audioExpectedLossFloorPercent, reported)
        audioRedundancyDistance = smoothedLoss >= 0.08 ? 2 : smoothedLoss >= 0.02 ? 1 : 0
    }

    /// A receiver asks the video to stay within `bitsPerSecond` (REMB) at clock time `now`:
    /// the bitrate drops to it at once (not below the minimum) and rises past it only after the
    /// cap lapses.
    mutating func cap(bitsPerSecond: Int, now: Int64) {
        remoteCapBitsPerSecond = bitsPerSecond
        remoteCapUntil = now + Self.remoteCapMicroseconds
        setVideo(videoBitsPerSecond, now: now)
    }

    private mutating func setVideo(_ bitsPerSecond: Int, now: Int64? = nil) {
        var ceiling = maximumBitsPerSecond
        if let cap = remoteCapBitsPerSecond {
            if let now, now > remoteCapUntil {
                remoteCapBitsPerSecond = nil
            } else {
                ceiling = min(ceiling, cap)
            }
        }
        videoBitsPerSecond = max(minimumBitsPerSecond, min(ceiling, bitsPerSecond))
    }
}
