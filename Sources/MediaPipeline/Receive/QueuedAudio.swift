/// One Opus packet waiting in a jitter buffer.
struct QueuedAudio: Timestamped, Sendable {
    let frame: EncodedFrame
    /// Media time covered, from the packet's TOC (microseconds).
    let durationMicroseconds: Int64
    /// Clock time it arrived.
    let arrivalMicroseconds: Int64
    /// Its unwrapped RTP sequence number (nil for a frame queued without one).
    var sequence: Int64? = nil
    /// True for a copy of a lost packet carried by a later one (RFC 2198 redundancy).
    var isRedundantCopy = false
    var timestampMicroseconds: Int64 { frame.timestampMicroseconds }
}
