import Foundation

/// Which packets of one video stream a receiver still asks for, and when (generic NACK,
/// RFC 4585 6.2.1), in the manner of libwebrtc's NackRequester:
///
/// - a gap in the sequence numbers puts every missing number on the list, asked for once the
///   link's usual reordering has had time to bring it: twice the interarrival jitter, or the
///   0.95 quantile of how late overtaken packets came before being asked for, whichever is
///   longer (libwebrtc waits a number of packets; a retransmission here is the packet itself,
///   so only packets that came unasked tell reordering apart);
/// - each is asked for again once a round trip (and a jitter margin) has passed without it, at most
///   ``maximumRetries`` times, then dropped (the frame buffer has given up on it by then);
/// - a number that arrives (reordered, or retransmitted) leaves the list;
/// - the stream's start moves back with the frame assembler's while no frame is out yet (a
///   packet that overtook the first ones came first): the numbers between the new start and
///   the earliest noted are missing too (libwebrtc's list begins at the first packet to arrive,
///   and never asks for what it overtook);
/// - a list that would grow past ``maximumEntries`` is cleared and the caller asks for a
///   keyframe instead (retransmitting that much would take longer than a new picture).
///
/// Sequence numbers are unwrapped (``SequenceUnwrapper``) by the caller. The list's storage
/// starts small and grows with the longest list seen (at most ``maximumEntries``): steady
/// state allocates nothing, and a stream that loses little keeps little.
struct NackTracker {
    static let maximumEntries = 1000
    static let maximumRetries = 10
    /// The round trip assumed until one is measured (libwebrtc's default).
    static let defaultRoundTripMicroseconds: Int64 = 100_000

    private struct Entry {
        let sequence: Int64
        /// When the gap showed it missing (clock microseconds).
        let missingSince: Int64
        /// When it was last asked for (clock microseconds); `.min` before the first time.
        var askedAt: Int64
        var retries: Int
    }

    /// Missing numbers in ascending order.
    private var entries: [Entry] = []
    private var newest: Int64?
    /// The earliest number noted since the start (or reset).
    private var oldest: Int64?
    /// The round trip to the publisher, which paces repeated requests.
    var roundTripMicroseconds = defaultRoundTripMicroseconds
    /// How long the sender ignores a repeated request for a packet it retransmitted (an SFU's
    /// de-duplication window; 0 when it answers every request).
    var repeatIgnoredMicroseconds: Int64 = 0
    /// A request is repeated once its answer is overdue: a round trip, the jitter and 5 ms, and
    /// no sooner than the sender's ``repeatIgnoredMicroseconds`` (plus 3 ms) are over, since a
    /// sooner one would be ignored.
    private var retryInterval: Int64 {
        let overdue = roundTripMicroseconds + jitterMicroseconds + 5_000
        return repeatIgnoredMicroseconds > 0 ? max(repeatIgnoredMicroseconds + 3_000, overdue) : overdue
    }
    /// Numbers asked for (each request of each number counts).
    private(set) var requests: Int64 = 0
    /// Numbers that arrived after being asked for.
    private(set) var recovered: Int64 = 0

    /// How late overtaken packets came after their gap showed, in 10 ms buckets (0...200 ms),
    /// forgetting slowly; and the wait before a first request it gives.
    private var reorderDelays = DecayingHistogram(bucketCount: 21)
    private var learnedReorderWait: Int64 = 0
    /// The receiver's interarrival jitter (RFC 3550), which sets the least reorder wait and the
    /// margin before a request is repeated.
    var jitterMicroseconds: Int64 = 0
    /// How long a gap waits before its first request.
    var reorderWaitMicroseconds: Int64 { min(150_000, max(learnedReorderWait, 2 * jitterMicroseconds)) }

    /// Packets that went missing on their first way and packets counted, over roughly the
    /// last 500 to 1,000 sequence numbers (both halve as they pass 1,000).
    private var missingRecently = 0.0
    private var countedRecently = 0.0
    /// The same since the start, undecayed: a report's interval is the difference of two reads.
    private(set) var firstWayMissing: Int64 = 0
    private(set) var firstWayCounted: Int64 = 0

    /// Entries the list's storage starts with.
    static let initialCapacity = 16

    init() { entries.reserveCapacity(Self.initialCapacity) }

    /// The share of packets lost on their first way lately (what retransmission has to make up).
    var lossFraction: Double { countedRecently > 0 ? missingRecently / countedRecently : 0 }

    /// How many rounds of requests a missing packet needs to arrive with 99.5 % certainty, when
    /// each request and each retransmission is lost as often as packets are (at least 3, at most
    /// ``maximumRetries``).
    var roundsNeeded: Int {
        let failure = 1 - (1 - lossFraction) * (1 - lossFraction)
        guard failure > 0.01 else { return 3 }
        let rounds = (log(0.005) / log(failure)).rounded(.up)
        return Int(min(Double(Self.maximumRetries), max(3, rounds)))
    }

    /// Missing numbers waiting.
    var count: Int { entries.count }

    /// Notes the arrival of `sequence`. `streamStart` is where the frame assembler has the
    /// stream start while that may still move back (``RTPFrameAssembler/openStart``): when it is
    /// `sequence` and earlier than any number noted, the numbers in between are missing.
    /// Returns false when the gap it opened is too large to ask for (the list was cleared: ask
    /// for a keyframe).
    mutating func received(_ sequence: Int64, now: Int64, streamStart: Int64? = nil) -> Bool {
        guard let last = newest, let first = oldest else {
            newest = sequence
            oldest = sequence
            return true
        }
        if sequence < first && streamStart == sequence {
            return startsEarlier(at: sequence, before: first, now: now)
        }
        if sequence <= last {
            // Reordered or retransmitted: no longer missing.
            if let index = position(of: sequence) {
                let entry = entries[index]
                if entry.askedAt == .min {
                    // Came before it was asked for: overtaken, not lost.
                    noteReordering(now - entry.missingSince)
                } else {
                    recovered += 1
                }
                entries.remove(at: index)
            }
            return true
        }
        newest = sequence
        let missing = sequence - last - 1
        guard noteMissing(missing) else { return false }
        for number in (last + 1)..<sequence {
            entries.append(Entry(sequence: number, missingSince: now, askedAt: .min, retries: 0))
        }
        return true
    }

    /// Counts `missing` numbers found missing (of `missing` + 1 expected). Returns false, the
    /// list cleared, when they would not all fit in it: too many to ask for.
    private mutating func noteMissing(_ missing: Int64) -> Bool {
        countMissing(missing, of: missing + 1)
        guard missing > 0 else { return true }
        guard entries.count + Int(min(missing, Int64(Self.maximumEntries))) <= Self.maximumEntries else {
            entries.removeAll(keepingCapacity: true)
            return false
        }
        return true
    }

    /// Notes `sequence`, the stream's start now, earlier than `first`, the earliest noted: the
    /// numbers between are missing since `now`, ahead of the list. Returns false when there are
    /// too many to ask for (the list was cleared).
    private mutating func startsEarlier(at sequence: Int64, before first: Int64, now: Int64) -> Bool {
        oldest = sequence
        let missing = first - sequence - 1
        guard noteMissing(missing) else { return false }
        // Ahead of the later numbers, within the storage reserved up front.
        let numbers = ((sequence + 1)..<first).lazy.map {
            Entry(sequence: $0, missingSince: now, askedAt: .min, retries: 0)
        }
        entries.insert(contentsOf: numbers, at: 0)
        return true
    }

    /// Adds `missing` numbers lost on their first way, of `counted`, to the recent loss.
    private mutating func countMissing(_ missing: Int64, of counted: Int64) {
        missingRecently += Double(missing)
        countedRecently += Double(counted)
        firstWayMissing += missing
        firstWayCounted += counted
        if countedRecently > 1_000 {
            missingRecently /= 2
            countedRecently /= 2
        }
    }

    /// Forgets the numbers below `sequence` (the frame buffer gave up on them, or a keyframe
    /// makes them useless).
    mutating func forget(before sequence: Int64) {
        var drop = 0
        while drop < entries.count, entries[drop].sequence < sequence { drop += 1 }
        if drop > 0 { entries.removeFirst(drop) }
    }

    /// Forgets the missing numbers and where the stream stood (a new stream, or an outage whose
    /// packets are not asked for); the loss estimate stays.
    mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        newest = nil
        oldest = nil
    }

    /// Appends to `batch` the numbers (16 bits, as on the wire) to ask for at clock time
    /// `now`: never asked, or asked a round trip ago. Marks them asked; drops those asked
    /// ``maximumRetries`` times. At most `limit` numbers.
    mutating func takeDue(now: Int64, into batch: inout [UInt16], limit: Int) {
        var index = 0
        while index < entries.count, batch.count < limit {
            if isDue(entries[index], now: now) {
                batch.append(UInt16(truncatingIfNeeded: entries[index].sequence))
                requests += 1
                entries[index].askedAt = now
                entries[index].retries += 1
                if entries[index].retries >= Self.maximumRetries {
                    entries.remove(at: index)
                    continue
                }
            }
            index += 1
        }
    }

    private func isDue(_ entry: Entry, now: Int64) -> Bool {
        entry.askedAt == .min
            ? now - entry.missingSince >= reorderWaitMicroseconds : now - entry.askedAt >= retryInterval
    }

    /// Counts one overtaken packet that came `delay` after its gap showed.
    private mutating func noteReordering(_ delay: Int64) {
        reorderDelays.add(bucket: Int(max(0, delay) / 10_000), weight: 0.01)
        learnedReorderWait = Int64(reorderDelays.bucket(atQuantile: 0.95) + 1) * 10_000
    }

    private func position(of sequence: Int64) -> Int? {
        // Binary search: the list is ascending.
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < entries.count && entries[low].sequence == sequence ? low : nil
    }
}
