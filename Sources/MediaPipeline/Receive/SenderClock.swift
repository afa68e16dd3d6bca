/// What one remote stream's sender reports say about its clock: how the stream's RTP
/// timestamps relate to the sender's NTP clock, which all streams of one sender share (RFC 3550
/// 6.4.1). libwebrtc's `RtpToNtpEstimator` and GStreamer's rtpbin keep the same relation to
/// align a sender's audio and video.
///
/// The last report's pair is kept as it came, so a report that arrives before the stream's
/// first packet still counts once packets give the media time line. A report whose pair
/// disagrees with the one before by more than ``jumpMicroseconds`` (after the time elapsed
/// between them is taken out) is a jump (the sender restarted its clock or its timestamps):
/// the relation is not trusted until a report confirms the new one.
struct SenderClock {
    /// The last report: NTP time in microseconds, and its RTP timestamp.
    private var last: (ntpMicroseconds: Int64, rtpTimestamp: UInt32)?
    /// Whether the last two reports agree (or the last is the first).
    private(set) var confirmed = false
    /// Reports taken, and jumps seen.
    private(set) var reports = 0, jumps = 0
    let clockRate: Int

    /// Two reports further apart than this disagree. Clock drift between reports a second
    /// apart is far smaller; a sender's capture jitter is a few milliseconds.
    static let jumpMicroseconds: Int64 = 50_000

    init(clockRate: Int) { self.clockRate = clockRate }

    /// Takes a sender report's NTP timestamp and RTP timestamp.
    mutating func report(ntpTimestamp: UInt64, rtpTimestamp: UInt32) {
        let ntp = NTPTime.microseconds(ntpTimestamp)
        reports += 1
        if let previous = last {
            let media = Int64(Int32(bitPattern: rtpTimestamp &- previous.rtpTimestamp)) * 1_000_000 / Int64(clockRate)
            confirmed = abs(media - (ntp - previous.ntpMicroseconds)) <= Self.jumpMicroseconds
            if !confirmed { jumps += 1 }
        } else {
            confirmed = true
        }
        last = (ntp, rtpTimestamp)
    }

    /// The stream's media time minus the sender's NTP time (microseconds), when it can be
    /// relied on; `mediaMicroseconds` gives the media time of an RTP timestamp (nil before the
    /// stream's first packet).
    func trustedOffsetMicroseconds(_ mediaMicroseconds: (UInt32) -> Int64?) -> Int64? {
        guard confirmed, let last, let media = mediaMicroseconds(last.rtpTimestamp) else { return nil }
        return media - last.ntpMicroseconds
    }

    /// Forgets the relation (a new stream from the sender).
    mutating func reset() {
        last = nil
        confirmed = false
    }
}

/// How late one remote stream plays, in the terms that align a sender's streams.
struct StreamPlayoutTiming {
    /// The stream's ``SenderClock`` offset (media − sender NTP).
    var senderOffsetMicroseconds: Int64
    /// The fastest transit seen (arrival clock − media time).
    var minimumTransitMicroseconds: Int64
    /// How long after its fastest arrival media plays, without the delay added for sync.
    var delayMicroseconds: Int64

    /// When media captured at sender NTP time `t` plays, on the local clock, minus `t`: the
    /// sender-to-playout latency up to a constant (the unknown offset between the two clocks),
    /// which is the same for every stream of one sender, so two of them compare.
    var latencyMicroseconds: Int64 { senderOffsetMicroseconds + minimumTransitMicroseconds + delayMicroseconds }
}
