/// One Opus packet waiting in a jitter buffer.
struct QueuedAudio: Timestamped {
    let frame: EncodedFrame
    /// Media time covered, from the packet's TOC (microseconds).
    let durationMicroseconds: Int64
    /// Clock time it arrived.
    let arrivalMicroseconds: Int64
    /// Its unwrapped RTP sequence number (nil for a frame queued without one).
    var sequence: Int64? = nil
    var timestampMicroseconds: Int64 { frame.timestampMicroseconds }
}
