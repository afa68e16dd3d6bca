/// The remote audio or video state machine of one stream (Agora's `REMOTE_*_STATE`), reporting
/// only real transitions: nothing is reported as STOPPED before the stream ever started, and a
/// repeated state is not reported again.
struct RemoteStreamTracker {
    private(set) var state: RemoteStreamState = .stopped
    /// True once the stream has left STOPPED at least once.
    private(set) var everStarted = false
    /// The reason the next STARTING/DECODING pair will carry (why the stream is coming back).
    var resumeReason: RemoteStreamStateReason = .internal

    /// Moves to `new` for `reason`; returns the transition to report, if any.
    mutating func move(to new: RemoteStreamState, _ reason: RemoteStreamStateReason) -> (
        RemoteStreamState, RemoteStreamStateReason
    )? {
        guard new != state else { return nil }
        if new == .stopped && !everStarted { return nil }
        state = new
        if new != .stopped { everStarted = true }
        return (new, reason)
    }
}
