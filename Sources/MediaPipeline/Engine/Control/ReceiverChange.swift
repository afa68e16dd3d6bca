/// Names one receiver the control plane decided to run. A decision made on what the media side
/// read of a receiver applies only if the user still has that receiver: between the read and
/// the decision it may have been released, and another made for the same user.
struct ReceiverID: Hashable, Sendable {
    let serial: UInt64
}

/// A decision on a remote user's receivers, which the engine carries out on its
/// ``ReceiverStore`` inside the control input that made it, before it publishes the receive
/// router. The control plane holds no receiver: it names them (``RemoteUser/receiving``).
enum ReceiverChange: Sendable {
    /// Start receiving `kind` from the user of `key` with a new receiver, counting what
    /// arrives in `tally`.
    case start(StreamKey, MediaKind, tally: ArrivalTally)
    /// Stop receiving `kind` from the user of `key`: audio with `fadeOut` plays one last frame
    /// at gain 0 (the remote user stopped, or the local user muted it); otherwise it goes at
    /// once (the local user leaves).
    case stop(StreamKey, MediaKind, fadeOut: Bool)
    /// A keyframe request went to the publisher of `key`'s video: its receiver counts dropped
    /// frames afresh (``VideoReceiver/keyframeRequested()``).
    case keyframeRequested(StreamKey)
}
