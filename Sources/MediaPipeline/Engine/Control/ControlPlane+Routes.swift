/// The receive router's side of the control plane: the snapshot it publishes, and the arrival
/// counts the packet path keeps outside its lock, which it takes into its statistics before
/// reading them.
extension ControlPlane {
    /// Users, receivers or the states that need a decision on arrival changed: the engine
    /// publishes a new ``ReceiveRoutes`` before the control lock is released.
    mutating func routingChanged() { routesChanged = true }

    /// The routes of every joined channel as they are now, to the receivers `receivers` finds
    /// for each user (the media side's, ``ReceiverStore``): each user's receivers and tally, and
    /// per kind whether a packet needs no decision (``RemoteUser/routeSettled``).
    func makeRoutes(_ receivers: (StreamKey) -> RemoteReceivers) -> ReceiveRoutes {
        var table: [(id: String, users: [UInt32: ReceiveRoute])] = []
        for channel in channels where channel.joined {
            var users: [UInt32: ReceiveRoute] = [:]
            users.reserveCapacity(channel.users.count)
            for user in channel.users {
                let found = receivers(user.key)
                users[user.uid] = ReceiveRoute(
                    audio: found.audio, video: found.video, tally: user.tally, settled: user.routeSettled)
            }
            table.append((channel.id, users))
        }
        return ReceiveRoutes(table)
    }

    /// Takes what the packet path counted for user `u` of channel `c` into the statistics, as
    /// far as its receivers took the packets in (those still pending count next time).
    mutating func takeTally(_ c: Int, _ u: Int) {
        let counts = channels[c].users[u].tally.take()
        guard counts != ArrivalCounts() else { return }
        channels[c].stats.rxPackets += counts.packets
        channels[c].stats.rxAudioBytes += counts.audioBytes + counts.unreceivedAudioBytes
        channels[c].stats.rxVideoBytes += counts.videoBytes + counts.unreceivedVideoBytes
        channels[c].stats.rxAudioFrames += counts.audioFrames
        channels[c].stats.rxVideoFrames += counts.videoFrames
        channels[c].stats.rxPacketsLost += counts.packetsLost
        channels[c].stats.videoFramesDroppedBeforeDecode += counts.videoFramesDropped
        channels[c].users[u].reception.audioBytes += counts.audioBytes
        channels[c].users[u].reception.videoBytes += counts.videoBytes
        channels[c].users[u].reception.videoFramesDropped += counts.videoFramesDropped
    }

    /// The packet path's receiver of `uid` in `channelId` asked for feedback (a NACK, or it waits
    /// for a keyframe): counted, and the request to send if one is due.
    mutating func feedbackAfterArrival(
        channelId: String, uid: UInt32, _ kind: MediaKind, _ feedback: ReceiveRoute.Feedback
    ) -> FeedbackRequest? {
        guard let c = joinedIndex(channelId), let u = userIndex(c, uid) else { return nil }
        return arrivalFeedback(c, u, kind, feedback)
    }
}
