/// What a receiver knows of one RTP stream, for its reception reports (RFC 3550 6.4.1, with
/// the loss and jitter computations of its appendices A.3 and A.8): packets expected and
/// received, the extended highest sequence number, interarrival jitter, and the last sender
/// report for round-trip time.
struct ReceptionStatistics {
    /// The stream's SSRC (from its latest packet).
    private(set) var ssrc: UInt32 = 0
    private let clockRate: Int64
    private var sequences = SequenceUnwrapper()
    private var firstSequence: Int64?
    private var highestSequence: Int64 = 0
    /// Packets received (duplicates included, as RFC 3550 counts them).
    private(set) var received: Int64 = 0
    private var expectedAtLastReport: Int64 = 0
    private var receivedAtLastReport: Int64 = 0
    /// Interarrival jitter in RTP timestamp units.
    private(set) var jitter: Double = 0
    private var lastTransit: Int64?
    /// The middle 32 bits of the last sender report's NTP time, and when it arrived.
    private var lastSenderReport: UInt32 = 0
    private var lastSenderReportArrival: Int64 = 0

    init(clockRate: Int) { self.clockRate = Int64(clockRate) }

    /// The interarrival jitter in microseconds.
    var jitterMicroseconds: Int64 { Int64(jitter) * 1_000_000 / clockRate }

    /// Packets expected so far (from the first sequence number to the highest).
    var expected: Int64 { firstSequence.map { highestSequence - $0 + 1 } ?? 0 }

    /// Counts a packet arrived at clock time `arrivalMicroseconds`.
    mutating func count(_ header: RTPHeader, arrivalMicroseconds: Int64) {
        if header.ssrc != ssrc && received > 0 { self = ReceptionStatistics(clockRate: Int(clockRate)) }
        ssrc = header.ssrc
        let sequence = sequences.unwrap(header.sequenceNumber)
        if firstSequence == nil {
            firstSequence = sequence
            highestSequence = sequence
        }
        let inOrder = sequence >= highestSequence
        highestSequence = max(highestSequence, sequence)
        received += 1
        // Only packets in order count toward jitter: a packet that comes after a later one may
        // be a retransmission, whose transit includes a round trip (libwebrtc leaves
        // retransmissions out too).
        guard inOrder else { return }
        // Transit time in RTP units; jitter follows its changes with gain 1/16.
        let arrival = arrivalMicroseconds * clockRate / 1_000_000
        let transit = arrival - Int64(header.timestamp)
        if let last = lastTransit {
            let change = Double(abs(Int64(Int32(truncatingIfNeeded: transit - last))))
            jitter += (change - jitter) / 16
        }
        lastTransit = transit
    }

    /// Notes a sender report of this stream (its NTP time) arrived at `arrivalMicroseconds`.
    mutating func senderReport(ntpTimestamp: UInt64, arrivalMicroseconds: Int64) {
        lastSenderReport = UInt32(truncatingIfNeeded: ntpTimestamp >> 16)
        lastSenderReportArrival = arrivalMicroseconds
    }

    /// The report block for now, and the interval it closes.
    mutating func reportBlock(nowMicroseconds: Int64) -> RTCPReportBlock? {
        guard let first = firstSequence else { return nil }
        let expected = highestSequence - first + 1
        let expectedInterval = expected - expectedAtLastReport
        let receivedInterval = received - receivedAtLastReport
        expectedAtLastReport = expected
        receivedAtLastReport = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction =
            expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        let delay =
            lastSenderReport == 0
            ? 0 : UInt32(truncatingIfNeeded: max(0, nowMicroseconds - lastSenderReportArrival) * 65_536 / 1_000_000)
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction,
            cumulativeLost: Int32(clamping: expected - received),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highestSequence - 65_536),
            jitter: UInt32(jitter), lastSenderReport: lastSenderReport, delaySinceLastSenderReport: delay)
    }
}

/// NTP timestamps (RFC 3550 4: seconds since 1900 in the upper 32 bits, the fraction in the
/// lower), made from the engine's clock and its wall-clock origin (``MediaClock/originUnixMicroseconds``),
/// so different senders' reports share one time line as far as their clocks agree; a round trip measured
/// against one's own reports needs no common epoch.
enum NTPTime {
    /// 1970-01-01 UTC in NTP time: microseconds since 1900-01-01 (RFC 868's 2,208,988,800 s).
    static let unixEpochMicroseconds: Int64 = 2_208_988_800_000_000

    /// The microseconds an NTP timestamp stands for (from the NTP epoch, or from the clock's
    /// origin for timestamps made by ``timestamp(microseconds:)``).
    static func microseconds(_ timestamp: UInt64) -> Int64 {
        // (Swift's shifts bind tighter than its products: the parentheses are needed.)
        Int64(timestamp >> 32) * 1_000_000 + Int64(((timestamp & 0xFFFF_FFFF) * 1_000_000) >> 32)
    }

    /// The NTP timestamp of clock time `microseconds`.
    static func timestamp(microseconds: Int64) -> UInt64 {
        let seconds = UInt64(microseconds / 1_000_000)
        let fraction = (UInt64(microseconds % 1_000_000) << 32) / 1_000_000
        return seconds << 32 | fraction
    }

    /// The round trip, in microseconds, that a report block tells its sender at clock time
    /// `nowMicroseconds` (RFC 3550 6.4.1: now - LSR - DLSR, in 1/65536 s); nil without a sender
    /// report to refer to.
    static func roundTripMicroseconds(_ block: RTCPReportBlock, nowMicroseconds: Int64) -> Int64? {
        roundTripMicroseconds(
            lastReport: block.lastSenderReport, delay: block.delaySinceLastSenderReport,
            nowMicroseconds: nowMicroseconds)
    }

    /// The round trip an answer to one's own report tells at clock time `nowMicroseconds`:
    /// now - `lastReport` - `delay`, all in 1/65536 s (RFC 3550 6.4.1 for LSR/DLSR, RFC 3611 4.5
    /// for LRR/DLRR); nil when `lastReport` is 0 (no report to refer to).
    static func roundTripMicroseconds(lastReport: UInt32, delay: UInt32, nowMicroseconds: Int64) -> Int64? {
        guard lastReport != 0 else { return nil }
        let now = UInt32(truncatingIfNeeded: timestamp(microseconds: nowMicroseconds) >> 16)
        let units = Int64(Int32(bitPattern: now &- lastReport &- delay))
        return max(0, units * 1_000_000 / 65_536)
    }
}
