extension ControlPlane {
    /// Decides, for every remote user of every joined channel whose decision is due, the delays
    /// that keep its audio and video in step (``LipSync``), and hands their floors to its receivers.
    /// In a channel recorded as a composite, all users are aligned with each other: every stream
    /// is held back to the latency of the slowest (as far as the cap allows), so the recording
    /// shows what its senders captured at one instant together. Called by the playout round
    /// (every 10 ms); each user decides every 20 ms. Allocates nothing.
    mutating func synchronizeRemoteUsers() {
        for c in channels.indices where channels[c].joined {
            guard channels[c].users.contains(where: { $0.lipSync.isDue(now: now) }) else { continue }
            let channelId = channels[c].id
            let group = recordings.recordsChannel(channelId) ? slowestLatencyMicroseconds(c) : nil
            for u in channels[c].users.indices where channels[c].users[u].lipSync.isDue(now: now) {
                let user = channels[c].users[u]
                guard user.audio != nil || user.video != nil else { continue }
                let audio = user.audio?.withInbox { $0.playoutTiming }
                let video = user.video?.inbox.withLock { $0.playoutTiming }
                guard
                    channels[c].users[u].lipSync.update(
                        audio: audio, video: video, alignedToLatencyMicroseconds: group, now: now)
                else { continue }
                let sync = channels[c].users[u].lipSync
                user.audio?.withInbox { $0.syncFloorMicroseconds = sync.audio.floorMicroseconds }
                user.video?.inbox.withLock { $0.syncFloorMicroseconds = sync.video.floorMicroseconds }
            }
        }
    }

    /// The latency (``StreamPlayoutTiming/latencyMicroseconds``) of the slowest stream placed on
    /// its sender's clock among channel `c`'s users; nil when none is.
    private func slowestLatencyMicroseconds(_ c: Int) -> Int64? {
        var slowest: Int64?
        func note(_ timing: StreamPlayoutTiming?) {
            guard let latency = timing?.latencyMicroseconds else { return }
            slowest = max(slowest ?? latency, latency)
        }
        for user in channels[c].users {
            note(user.audio?.withInbox { $0.playoutTiming })
            note(user.video?.inbox.withLock { $0.playoutTiming })
        }
        return slowest
    }
}
