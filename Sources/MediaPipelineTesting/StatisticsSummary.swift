import MediaPipeline

/// A channel's statistics reports summed up: over one 2 s interval (what `pipebench simulate`
/// prints as it goes) or over a whole session (its closing table). Rates and delays are means
/// over the reports (and remote users); counts are summed over users: since subscribing in a
/// session's summary, within the interval in an interval's (``StatisticsIntervals``).
public struct ChannelStatisticsSummary: Sendable, Equatable {
    /// The channel.
    public var channelId: String
    /// Channel reports (intervals) summed.
    public var intervals = 0
    /// Means of the channel reports: received bitrate, loss of remote packets, round trip to
    /// subscribers of the local streams (0 when nobody subscribes to them).
    public var receivedKbps = 0.0, receivedPacketLossPercent = 0.0, roundTripMs = 0.0
    /// Mean over the audio reports: the network delay to the remote users (half their
    /// measured round trip).
    public var networkDelayMs = 0.0
    /// Audio, summed over users: 10 ms frames played, concealed or silent, lost packets rebuilt
    /// (FEC or redundancy), frozen time (Agora's 4 % rule).
    public var audioFrames: Int64 = 0, audioFramesConcealed: Int64 = 0
    public var audioPacketsRecovered: Int64 = 0, audioFrozenMs: Int64 = 0
    /// Audio, mean over reports: the jitter buffer's delay, and the audio frame loss rate.
    public var jitterBufferDelayMs = 0.0, audioLossRatePercent = 0.0
    /// Video, summed over users: frames decoded, frozen time (gaps over 500 ms), NACKs and
    /// keyframe requests sent.
    public var videoFramesDecoded: Int64 = 0, videoFrozenMs: Int64 = 0
    public var nacksSent: Int64 = 0, keyframeRequestsSent: Int64 = 0
    /// Video, mean over reports: frames rendered per second per user.
    public var renderedFramesPerSecond = 0.0
    /// Remote users reported on (audio or video).
    public var users = 0

    /// Audio and video frozen time per user (the sums divided by ``users``).
    public var audioFrozenMsPerUser: Int64 { audioFrozenMs / Int64(max(users, 1)) }
    public var videoFrozenMsPerUser: Int64 { videoFrozenMs / Int64(max(users, 1)) }

    /// This summary's counts less `earlier`'s (both counted since subscribing): what happened
    /// between the two. Means and rates stay this summary's.
    public func since(_ earlier: ChannelStatisticsSummary) -> ChannelStatisticsSummary {
        var interval = self
        interval.audioFrames -= earlier.audioFrames
        interval.audioFramesConcealed -= earlier.audioFramesConcealed
        interval.audioPacketsRecovered -= earlier.audioPacketsRecovered
        interval.audioFrozenMs -= earlier.audioFrozenMs
        interval.videoFramesDecoded -= earlier.videoFramesDecoded
        interval.videoFrozenMs -= earlier.videoFrozenMs
        interval.nacksSent -= earlier.nacksSent
        interval.keyframeRequestsSent -= earlier.keyframeRequestsSent
        return interval
    }

    /// Sums `records` per channel, in the order channels first reported.
    public static func summarize(_ records: some Sequence<StatisticsRecord>) -> [ChannelStatisticsSummary] {
        var order: [String] = []
        var channel: [String: [RtcStats]] = [:]
        var audio: [String: [UInt32: [RemoteAudioStats]]] = [:]
        var video: [String: [UInt32: [RemoteVideoStats]]] = [:]
        for record in records {
            if channel[record.channelId] == nil && audio[record.channelId] == nil && video[record.channelId] == nil {
                order.append(record.channelId)
            }
            switch record.kind {
            case .channel(let stats): channel[record.channelId, default: []].append(stats)
            case .audio(let stats): audio[record.channelId, default: [:]][stats.uid, default: []].append(stats)
            case .video(let stats): video[record.channelId, default: [:]][stats.uid, default: []].append(stats)
            }
        }
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        return order.map { id in
            var summary = ChannelStatisticsSummary(channelId: id)
            let reports = channel[id] ?? []
            summary.intervals = reports.count
            summary.receivedKbps = mean(reports.map { Double($0.rxKBitRate) })
            summary.receivedPacketLossPercent = mean(reports.map(\.rxPacketLossRatePercent))
            summary.roundTripMs = mean(reports.map { Double($0.roundTripTimeMs) })
            let audioReports = (audio[id] ?? [:]).values
            for reports in audioReports {
                guard let last = reports.last else { continue }
                summary.audioFrames += last.frames
                summary.audioFramesConcealed += last.framesConcealed
                summary.audioPacketsRecovered += last.packetsRecoveredByFEC
                summary.audioFrozenMs += last.totalFrozenTimeMs
            }
            summary.jitterBufferDelayMs = mean(audioReports.flatMap { $0.map { Double($0.jitterBufferDelayMs) } })
            summary.networkDelayMs = mean(audioReports.flatMap { $0.map { Double($0.networkTransportDelayMs) } })
            summary.audioLossRatePercent = mean(audioReports.flatMap { $0.map(\.audioLossRatePercent) })
            let videoReports = (video[id] ?? [:]).values
            for reports in videoReports {
                guard let last = reports.last else { continue }
                summary.videoFramesDecoded += last.framesDecoded
                summary.videoFrozenMs += last.totalFrozenTimeMs
                summary.nacksSent += last.nacksSent
                summary.keyframeRequestsSent += last.keyframeRequestsSent
            }
            summary.renderedFramesPerSecond = mean(videoReports.flatMap { $0.map(\.rendererOutputFrameRate) })
            summary.users = Set((audio[id] ?? [:]).keys).union((video[id] ?? [:]).keys).count
            return summary
        }
    }
}

/// Cuts statistics reports into intervals as they come: a channel's reports up to its channel
/// report (each interval's last) make one interval, whose counts are what happened in it.
public struct StatisticsIntervals {
    private var pending: [String: [StatisticsRecord]] = [:]
    /// Each channel's counts since subscribing at its last interval.
    private var previous: [String: ChannelStatisticsSummary] = [:]

    public init() {}

    /// Takes the next report; when it closes an interval, returns the interval's time and sums.
    public mutating func add(_ record: StatisticsRecord) -> (sessionMs: Int64, summary: ChannelStatisticsSummary)? {
        pending[record.channelId, default: []].append(record)
        guard case .channel = record.kind, let records = pending.removeValue(forKey: record.channelId),
            let cumulative = ChannelStatisticsSummary.summarize(records).first
        else { return nil }
        defer { previous[record.channelId] = cumulative }
        return (record.sessionMs, previous[record.channelId].map { cumulative.since($0) } ?? cumulative)
    }
}
