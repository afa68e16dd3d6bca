extension ControlPlane {
    /// Decides, for every remote user of every joined channel whose decision is due, the delays
    /// that keep its audio and video in step (``LipSync``), and hands them to its receivers.
    /// Called by the playout round (every 10 ms); each user decides every 100 ms. Allocates
    /// nothing.
    mutating func synchronizeRemoteUsers() {
        for c in channels.indices where channels[c].joined {
            for u in channels[c].users.indices where channels[c].users[u].lipSync.isDue(now: now) {
                let user = channels[c].users[u]
                guard user.audio != nil || user.video != nil else { continue }
                let audio = user.audio?.inbox.withLock { $0.playoutTiming }
                let video = user.video?.inbox.withLock { $0.playoutTiming }
                guard channels[c].users[u].lipSync.update(audio: audio, video: video, now: now) else { continue }
                let sync = channels[c].users[u].lipSync
                user.audio?.inbox.withLock { $0.syncDelayMicroseconds = sync.audioAddedMicroseconds }
                user.video?.inbox.withLock { $0.syncDelayMicroseconds = sync.videoAddedMicroseconds }
            }
        }
    }
}
