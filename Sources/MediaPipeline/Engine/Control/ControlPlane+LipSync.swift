/// One remote user's streams in a playout tick's lip sync (``ControlPlane/lipSyncJobs(into:)``):
/// the control plane names the user and its receivers, the media side finds them
/// (``receivers``), reads their timings and hands them the floors decided, outside the control
/// lock.
struct LipSyncJob: Sendable {
    let ref: ChannelRef
    let uid: UInt32
    /// Where the user was when the job was made (users may come and go before the decision).
    let hint: (channel: Int, user: Int)
    /// The receivers named.
    let ids: PerMedia<ReceiverID?>
    /// The receivers named, as the media side found them.
    var receivers = RemoteReceivers()
    /// Whether the user's floors are decided now; otherwise only its timing counts, toward the
    /// latency its channel's users are aligned to.
    let due: Bool
    /// The streams' timings, read by ``readTimings()``.
    var timings: (audio: StreamPlayoutTiming?, video: StreamPlayoutTiming?) = (nil, nil)
    /// The floors decided, for ``applyFloors()``; nil when they did not change.
    var floors: (audio: Int64, video: Int64)?

    init(ref: ChannelRef, uid: UInt32, hint: (Int, Int), ids: PerMedia<ReceiverID?>, due: Bool) {
        (self.ref, self.uid, self.hint, self.ids, self.due) = (ref, uid, hint, ids, due)
    }

    /// Reads the streams' timings from their receivers (media side, without the control lock).
    mutating func readTimings() {
        timings = (
            receivers.audio?.withInbox { $0.playoutTiming }, receivers.video?.inbox.withLock { $0.playoutTiming }
        )
    }

    /// Hands the floors decided to the receivers (media side, without the control lock).
    func applyFloors() {
        guard let floors else { return }
        receivers.audio?.withInbox { $0.syncFloorMicroseconds = floors.audio }
        receivers.video?.inbox.withLock { $0.syncFloorMicroseconds = floors.video }
    }
}

extension ControlPlane {
    /// Names, for every remote user of every joined channel whose lip sync decision is due, its
    /// receivers (``LipSyncJob``); in a channel recorded as a composite, every user with a
    /// receiver, since all of them are aligned with each other. Called by the playout round
    /// (every 10 ms) under the control lock, which takes no receiver's lock: the round reads the
    /// timings afterwards and ``synchronizeRemoteUsers(_:)`` decides. Each user decides every
    /// 20 ms. Allocates nothing once `jobs` has grown.
    func lipSyncJobs(into jobs: inout [LipSyncJob]) {
        for c in channels.indices where channels[c].joined {
            guard channels[c].users.contains(where: { $0.lipSync.isDue(now: now) }) else { continue }
            let aligned = compositeRecordedChannels.contains(channels[c].id)
            for u in channels[c].users.indices {
                let due = channels[c].users[u].lipSync.isDue(now: now)
                guard due || aligned, channels[c].users[u].receivesAny else { continue }
                jobs.append(
                    LipSyncJob(
                        ref: channels[c].ref, uid: channels[c].users[u].uid, hint: (c, u),
                        ids: channels[c].users[u].receiving, due: due))
            }
        }
    }

    /// Decides, from the timings read into `jobs`, the delays that keep each due user's audio
    /// and video in step (``LipSync``), and writes the floors that changed into its job. In a
    /// channel recorded as a composite, all users are aligned with each other: every stream is
    /// held back to the latency of the slowest (as far as the cap allows), so the recording
    /// shows what its senders captured at one instant together. A user gone, or whose receivers
    /// changed, since the jobs were made is left for its next turn.
    mutating func synchronizeRemoteUsers(_ jobs: inout [LipSyncJob]) {
        var start = 0
        while start < jobs.count {
            // One channel's jobs lie together.
            var end = start + 1
            while end < jobs.count, jobs[end].ref == jobs[start].ref { end += 1 }
            defer { start = end }
            guard let c = index(jobs[start].ref, hint: jobs[start].hint.channel), channels[c].joined else { continue }
            let group =
                compositeRecordedChannels.contains(channels[c].id) ? Self.slowestLatency(jobs[start..<end]) : nil
            for j in start..<end where jobs[j].due {
                guard let u = userIndex(c, jobs[j].uid, hint: jobs[j].hint.user),
                    channels[c].users[u].receiving == jobs[j].ids,
                    channels[c].users[u].lipSync.update(
                        audio: jobs[j].timings.audio, video: jobs[j].timings.video,
                        alignedToLatencyMicroseconds: group, now: now)
                else { continue }
                let sync = channels[c].users[u].lipSync
                jobs[j].floors = (sync.audio.floorMicroseconds, sync.video.floorMicroseconds)
            }
        }
    }

    /// The latency (``StreamPlayoutTiming/latencyMicroseconds``) of the slowest stream placed on
    /// its sender's clock among `jobs`; nil when none is.
    private static func slowestLatency(_ jobs: ArraySlice<LipSyncJob>) -> Int64? {
        var slowest: Int64?
        func note(_ timing: StreamPlayoutTiming?) {
            guard let latency = timing?.latencyMicroseconds else { return }
            slowest = max(slowest ?? latency, latency)
        }
        for j in jobs.indices {
            note(jobs[j].timings.audio)
            note(jobs[j].timings.video)
        }
        return slowest
    }
}
