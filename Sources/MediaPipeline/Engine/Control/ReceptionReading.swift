/// What a statistics report reads of one remote user's receivers: values, read on the media side
/// (``StatisticsJob/read()``) without the control lock, which the control plane then turns into
/// Agora's statistics (``ControlPlane/reportStatistics(_:_:)``).
struct ReceptionReading: Sendable {
    /// The audio receiver's playout counters, packets expected and lost, and target delay.
    struct Audio: Sendable {
        var counters: AudioPlayoutCounters
        var expected: Int64
        var lost: Int64
        var targetDelayMicroseconds: Int64
    }
    /// The video receiver's packets expected and lost, what its NACKs found missing the first
    /// time they looked and how many packets they looked at, and its render delay.
    struct Video: Sendable {
        var expected: Int64
        var lost: Int64
        var firstWayMissing: Int64
        var firstWayCounted: Int64
        var renderDelayMicroseconds: Int64
    }
    var audio: Audio?
    var video: Video?
}

/// One remote user whose statistics a playout tick reports: the control plane names the user
/// and its receivers (``ControlPlane/statisticsJobs(into:due:)``), the media side finds them
/// (``receivers``) and reads them.
struct StatisticsJob: Sendable {
    let ref: ChannelRef
    let uid: UInt32
    /// The receivers named.
    let ids: PerMedia<ReceiverID?>
    /// The receivers named, as the media side found them.
    var receivers = RemoteReceivers()
    /// What ``read()`` found.
    var reading = ReceptionReading()

    init(ref: ChannelRef, uid: UInt32, ids: PerMedia<ReceiverID?>) {
        (self.ref, self.uid, self.ids) = (ref, uid, ids)
    }

    /// Reads the receivers (media side, without the control lock). The audio receiver first
    /// takes in the packets that arrived, so the arrival counts the control plane takes next
    /// are whole.
    mutating func read() {
        if let audio = receivers.audio {
            let counters = audio.counters
            reading.audio = audio.withInbox {
                ReceptionReading.Audio(
                    counters: counters, expected: $0.statistics.expected, lost: $0.packetsLost,
                    targetDelayMicroseconds: $0.delays.targetDelayMicroseconds)
            }
        }
        reading.video = receivers.video?.inbox.withLock {
            ReceptionReading.Video(
                expected: $0.statistics.expected, lost: $0.packetsLost, firstWayMissing: $0.nack.firstWayMissing,
                firstWayCounted: $0.nack.firstWayCounted, renderDelayMicroseconds: $0.renderDelayMicroseconds)
        }
    }

    /// Whether this job read `user`'s receivers now.
    func reads(_ user: RemoteUser) -> Bool { user.uid == uid && user.receiving == ids }
}
