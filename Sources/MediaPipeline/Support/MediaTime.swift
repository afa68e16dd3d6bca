/// The range of media times read from files and packets, and overflow-free conversions between
/// time units.
///
/// A time or duration a file declares (an IVF timestamp, a WebM block's time, a CodecDelay,
/// a DefaultDuration, a DiscardPadding) may be any 64-bit value. Readers refuse, with a typed
/// error naming the field, any beyond ±``limitNanoseconds`` (about 73 years), so the sum or
/// difference of any two (a span, a time plus a duration, a delay taken off) fits in 64 bits
/// wherever it is computed. Unit conversions take the product in 128 bits, so a value whose
/// result fits never traps on the way.
enum MediaTime {
    /// The largest magnitude of a media time or duration read from a file: 2^61 ns.
    static let limitNanoseconds: Int64 = 1 << 61
    /// ``limitNanoseconds`` in microseconds.
    static let limitMicroseconds: Int64 = limitNanoseconds / 1000

    /// Whether `nanoseconds` lies within ±``limitNanoseconds``.
    static func isWithinLimit(nanoseconds: Int64) -> Bool {
        (-limitNanoseconds...limitNanoseconds).contains(nanoseconds)
    }

    /// `value` × `numerator` / `denominator`, rounded toward zero, the product taken in 128
    /// bits; nil when the result's magnitude may reach 9.0e18 (64 bits end at 9.22e18).
    /// `numerator` ≥ 0, `denominator` > 0.
    /// Allocates nothing (per-packet paths use it).
    static func scaled(_ value: Int64, by numerator: Int64, over denominator: Int64) -> Int64? {
        // The estimate is within a few parts in 10^16 of the result, so anything it puts below
        // 9.0e18 is far from Int64's ends (9.22e18) and the exact division cannot trap.
        let estimate = Double(value) * Double(numerator) / Double(denominator)
        guard abs(estimate) < 9.0e18 else { return nil }
        return denominator.dividingFullWidth(value.multipliedFullWidth(by: numerator)).quotient
    }

    /// Like ``scaled(_:by:over:)``, saturating at Int64's ends instead of failing: for clocks
    /// that only need to keep counting (an RTP timestamp wraps anyway).
    static func scaledSaturating(_ value: Int64, by numerator: Int64, over denominator: Int64) -> Int64 {
        scaled(value, by: numerator, over: denominator) ?? (value < 0 ? .min : .max)
    }

    /// `nanoseconds` (0…``limitNanoseconds``) as 48 kHz samples, rounded to the nearest.
    static func samples48k(nanoseconds: Int64) -> Int64 {
        let (seconds, rest) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return seconds * 48_000 + (rest * 48_000 + 500_000_000) / 1_000_000_000
    }
}
