/// What the packet path counts of one remote user's media without the control lock: the
/// arrivals since the control plane last took them into its statistics (``ArrivalTally/take()``).
struct ArrivalCounts: Sendable, Equatable {
    var packets: Int64 = 0
    /// Payload bytes of packets a receiver took.
    var audioBytes: Int64 = 0, videoBytes: Int64 = 0
    /// Payload bytes of packets with no receiver to take them (counted for the channel only).
    var unreceivedAudioBytes: Int64 = 0, unreceivedVideoBytes: Int64 = 0
    /// Audio frames queued (a packet carrying redundancy may give more than one).
    var audioFrames: Int64 = 0
    /// Video frames assembled.
    var videoFrames: Int64 = 0
    /// Packets the receivers gave up on, audio and video.
    var packetsLost: Int64 = 0
    /// Video frames dropped before decoding (incomplete, or after a gap).
    var videoFramesDropped: Int64 = 0
}

/// One remote user's ``ArrivalCounts``, in their own lock (a leaf: nothing is called while it is
/// held). Lives as long as the user does in its channel, across receivers, as the control plane's
/// counters did.
final class ArrivalTally: Sendable {
    private let counts = LockedValue(ArrivalCounts())

    init() {}

    /// Counts a packet of `kind` with `bytes` payload bytes that no receiver took.
    func unreceived(_ kind: MediaKind, bytes: Int) {
        counts.withLock {
            $0.packets += 1
            if kind == .audio {
                $0.unreceivedAudioBytes += Int64(bytes)
            } else {
                $0.unreceivedVideoBytes += Int64(bytes)
            }
        }
    }

    /// Counts an audio packet of `bytes` payload bytes that gave `frames` frames and found
    /// `lost` packets lost.
    func audioArrived(bytes: Int, frames: Int, lost: Int64) {
        counts.withLock {
            $0.packets += 1
            $0.audioBytes += Int64(bytes)
            $0.audioFrames += Int64(frames)
            $0.packetsLost += lost
        }
    }

    /// Counts a video packet of `bytes` payload bytes and what the receiver made of it.
    func videoArrived(bytes: Int, _ progress: VideoReceiver.Progress) {
        counts.withLock {
            $0.packets += 1
            $0.videoBytes += Int64(bytes)
            $0.videoFrames += Int64(progress.frames)
            $0.packetsLost += progress.packetsLost
            $0.videoFramesDropped += progress.framesDropped
        }
    }

    /// The counts since the last call, and zero from now on.
    func take() -> ArrivalCounts {
        counts.withLock { counts in
            defer { counts = ArrivalCounts() }
            return counts
        }
    }
}

/// Where the packet path takes one remote user's packets, as the control plane last decided.
struct ReceiveRoute: Sendable {
    let audio: AudioReceiver?
    let video: VideoReceiver?
    let tally: ArrivalTally
    /// Per kind: whether the control plane has nothing to decide on a packet's arrival. False
    /// while the stream's state is STOPPED or its subscribe state is not SUBSCRIBED: the first
    /// packet then goes through the control plane, which moves them (STARTING, SUBSCRIBED) and
    /// publishes a route that is settled.
    let settled: PerMedia<Bool>

    /// What a delivered packet asks of the control plane: feedback to count and send.
    struct Feedback {
        /// A NACK the receiver wrote.
        var nack: [UInt8]?
        /// The video receiver waits for a keyframe and dropped frames since it last asked: a
        /// keyframe request may be due.
        var keyframeWanted = false
    }

    /// Hands `packet` of `kind`, arrived at clock time `now`, to the receiver of its kind (if
    /// any) and counts it in the tally: the one delivery of both paths, with the control lock
    /// (a packet that needs a decision) or without it.
    func deliver(_ packet: RTPPacket, _ kind: MediaKind, now: Int64) -> Feedback {
        let bytes = packet.payloadByteCount
        if kind == .audio, let audio {
            let arrived = audio.receive(packet, now: now)
            tally.audioArrived(bytes: bytes, frames: arrived.frames, lost: arrived.packetsLost)
            return Feedback(nack: arrived.nack)
        }
        if kind == .video, let video {
            let progress = video.receive(packet, now: now)
            tally.videoArrived(bytes: bytes, progress)
            return Feedback(nack: progress.nack, keyframeWanted: progress.keyframeWanted)
        }
        tally.unreceived(kind, bytes: bytes)
        return Feedback()
    }
}

/// The receive router: an immutable snapshot of where every joined channel's remote users'
/// packets go, which the control plane replaces (under its lock) whenever users, receivers or
/// the states that need a decision on arrival change. Transports' packets reach their
/// receivers through it without the control lock: a lookup of the channel and the user, then
/// the receiver's own inbox lock.
final class ReceiveRoutes: Sendable {
    /// Per joined channel, its users' routes.
    private let channels: [(id: String, users: [UInt32: ReceiveRoute])]

    /// Routes for `channels`.
    init(_ channels: [(id: String, users: [UInt32: ReceiveRoute])]) { self.channels = channels }

    /// No channel.
    static let empty = ReceiveRoutes([])

    /// The route of `uid`'s packets in `channelId`; nil when the channel is not joined or the
    /// user is not known there (the control plane then sees the packet itself).
    func route(channelId: String, uid: UInt32) -> ReceiveRoute? {
        for channel in channels where channel.id == channelId { return channel.users[uid] }
        return nil
    }
}
