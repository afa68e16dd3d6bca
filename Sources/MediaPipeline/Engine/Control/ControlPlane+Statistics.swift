/// Statistics every 2 s, as Agora reports them: per channel (``RtcStats``) and per remote
/// user's audio and video (``RemoteAudioStats``, ``RemoteVideoStats``), delivered as events and
/// kept as the last report for the API. Decided in a playout round: its first control section
/// names the channels due and their users' receivers (``statisticsJobs(into:due:)``), the
/// round reads the receivers without the control lock (``StatisticsJob/read()``), and its second
/// section reports from those readings and the plane's own counts.
extension ControlPlane {
    static let statisticsIntervalMicroseconds: Int64 = 2_000_000

    /// Whether channel `c`'s statistics are due.
    private func statisticsDue(_ c: Int) -> Bool {
        guard channels[c].joined && !channels[c].joining else { return false }
        return now - (channels[c].lastStatisticsAt ?? channels[c].joinedAt) >= Self.statisticsIntervalMicroseconds
    }

    /// Names the channels whose statistics are due (`due`) and their users with receivers
    /// (`jobs`), in channel and join order: the round reads the receivers, then
    /// ``reportStatistics(_:_:)`` reports exactly these channels. Takes no receiver's lock.
    /// Allocates nothing once `jobs` and `due` have grown.
    func statisticsJobs(into jobs: inout [StatisticsJob], due: inout [ChannelRef]) {
        for c in channels.indices where statisticsDue(c) {
            due.append(channels[c].ref)
            for u in channels[c].users.indices where channels[c].users[u].receivesAny {
                jobs.append(
                    StatisticsJob(
                        ref: channels[c].ref, uid: channels[c].users[u].uid, ids: channels[c].users[u].receiving))
            }
        }
    }

    /// Reports the statistics of the channels `due` (still joined) from `jobs`, both made by
    /// ``statisticsJobs(into:due:)`` and read since. A user who came, or whose receivers changed,
    /// since the jobs were made reports no audio or video statistics this time.
    mutating func reportStatistics(_ due: [ChannelRef], _ jobs: [StatisticsJob]) {
        var next = 0
        for ref in due {
            // This channel's jobs lie together, in join order, where the last channel's ended.
            let start = next
            while next < jobs.count, jobs[next].ref == ref { next += 1 }
            guard let c = index(ref), channels[c].joined, !channels[c].joining else { continue }
            let elapsed = now - (channels[c].lastStatisticsAt ?? channels[c].joinedAt)
            channels[c].lastStatisticsAt = now
            // The jobs' reads took the audio arrivals in, without the control lock.
            for u in channels[c].users.indices { takeTally(c, u) }
            // Users keep their order: each one's job is the next that reads it (those of users
            // gone meanwhile are passed over).
            var cursor = start
            for u in channels[c].users.indices {
                var reading = ReceptionReading()
                if let j = jobs[cursor..<next].firstIndex(where: { $0.reads(channels[c].users[u]) }) {
                    reading = jobs[j].reading
                    cursor = j + 1
                } else if channels[c].users[u].receivesAny {
                    continue  // its receivers are newer than the jobs: its next report covers it
                }
                var loss: Double?
                if let audio = reading.audio {
                    let report = audioStatistics(c, u, audio, elapsed: elapsed)
                    channels[c].users[u].lastAudioStats = report
                    emit(c, .remoteAudioStats(report))
                    if channels[c].users[u].fallback.level == .audioOnly { loss = report.packetLossRatePercent }
                }
                if let video = reading.video {
                    let report = videoStatistics(c, u, video, elapsed: elapsed)
                    channels[c].users[u].lastVideoStats = report
                    emit(c, .remoteVideoStats(report))
                    // Loss on the network (what the NACKs made up), or what was lost for good
                    // when nothing is resent.
                    loss =
                        channels[c].users[u].fallback.firstWayLossPercent(
                            missing: video.firstWayMissing, counted: video.firstWayCounted)
                        ?? report.packetLossRatePercent
                }
                if loss == nil && channels[c].users[u].fallback.level == .audioOnly {
                    loss = 0  // no audio to measure by: the video is tried again
                }
                if let loss { updateSubscribeFallback(c, u, lossPercent: loss) }
            }
            emit(c, .rtcStats(channelStatistics(c, elapsed: elapsed)))
        }
    }

    private static func kbps(_ bytes: Int64, _ elapsed: Int64) -> Int {
        elapsed > 0 ? Int(bytes * 8 * 1000 / elapsed) : 0
    }

    private static func percent(_ part: Int64, _ whole: Int64) -> Double {
        whole > 0 ? Double(part) * 100 / Double(whole) : 0
    }

    private mutating func audioStatistics(_ c: Int, _ u: Int, _ audio: ReceptionReading.Audio, elapsed: Int64)
        -> RemoteAudioStats
    {
        let (counters, expected, lost, target) = (
            audio.counters, audio.expected, audio.lost, audio.targetDelayMicroseconds
        )
        var reception = channels[c].users[u].reception
        let last = reception.lastAudio
        var report = RemoteAudioStats(channelId: channels[c].id, uid: channels[c].users[u].uid)
        let halfRoundTrip = ((channels[c].users[u].roundTripMicroseconds ?? 0) + 1000) / 2000
        report.networkTransportDelayMs = halfRoundTrip
        let delayTicks = counters.delayTicks - last.delayTicks
        if delayTicks > 0 {
            report.jitterBufferDelayMs = (counters.delaySumMicroseconds - last.delaySumMicroseconds) / delayTicks / 1000
        }
        report.targetDelayMs = target / 1000
        let ticks = counters.ticks + counters.silentTicks - last.ticks - last.silentTicks
        let notDecoded =
            counters.concealedTicks + counters.silentTicks - last.concealedTicks - last.silentTicks
        report.audioLossRatePercent = Self.percent(notDecoded, ticks)
        report.packetLossRatePercent = Self.percent(
            lost - reception.lastAudioLost, expected - reception.lastAudioExpected)
        report.receivedBitrateKbps = Self.kbps(reception.audioBytes - reception.lastAudioBytes, elapsed)
        if ticks > 0 {
            reception.audioActiveMs += ticks * 10
            if report.audioLossRatePercent >= 4 { reception.audioFrozenMs += ticks * 10 }
        }
        report.totalFrozenTimeMs = reception.audioFrozenMs
        report.totalActiveTimeMs = reception.audioActiveMs
        report.frozenRatePercent = Self.percent(reception.audioFrozenMs, reception.audioActiveMs)
        report.frames = counters.ticks + counters.silentTicks
        report.framesConcealed = counters.concealedTicks + counters.silentTicks
        report.framesConcealedSilent = counters.silentConcealedTicks
        report.packetsRecoveredByFEC = counters.packetsRecovered
        report.quality = NetworkQuality.of(
            lossPercent: report.audioLossRatePercent, delayMs: halfRoundTrip + report.jitterBufferDelayMs,
            received: reception.audioBytes > reception.lastAudioBytes)
        reception.lastAudio = counters
        (reception.lastAudioExpected, reception.lastAudioLost) = (expected, lost)
        reception.lastAudioBytes = reception.audioBytes
        channels[c].users[u].reception = reception
        return report
    }

    private mutating func videoStatistics(_ c: Int, _ u: Int, _ video: ReceptionReading.Video, elapsed: Int64)
        -> RemoteVideoStats
    {
        let (expected, lost) = (video.expected, video.lost)
        var reception = channels[c].users[u].reception
        var report = RemoteVideoStats(channelId: channels[c].id, uid: channels[c].users[u].uid)
        report.rxStreamType = channels[c].users[u].rxStreamType
        report.delayMs = ((channels[c].users[u].roundTripMicroseconds ?? 0) + 1000) / 2000
        report.width = channels[c].users[u].reportedWidth
        report.height = channels[c].users[u].reportedHeight
        report.receivedBitrateKbps = Self.kbps(reception.videoBytes - reception.lastVideoBytes, elapsed)
        let seconds = Double(elapsed) / 1_000_000
        report.decoderOutputFrameRate =
            Double(reception.videoFramesDecoded - reception.lastVideoFramesDecoded) / seconds
        report.rendererOutputFrameRate =
            Double(reception.videoFramesRendered - reception.lastVideoFramesRendered) / seconds
        report.packetLossRatePercent = Self.percent(
            lost - reception.lastVideoLost, expected - reception.lastVideoExpected)
        report.totalFrozenTimeMs = reception.videoFrozenMs(now: now)
        report.totalActiveTimeMs = reception.firstVideoFrameAt.map { (now - $0) / 1000 } ?? 0
        report.frozenRatePercent = Self.percent(report.totalFrozenTimeMs, report.totalActiveTimeMs)
        report.nacksSent = reception.nacksSent
        report.keyframeRequestsSent = reception.keyframeRequestsSent
        report.framesDecoded = reception.videoFramesDecoded
        report.framesDroppedBeforeDecode = reception.videoFramesDropped
        let sync = channels[c].users[u].lipSync
        report.isAVSynced = sync.isSynced
        report.avSyncOffsetMs = (sync.offsetMicroseconds ?? 0) / 1000
        report.syncDelayMs = (sync.videoAddedMicroseconds - sync.audioAddedMicroseconds) / 1000
        report.renderDelayMs = video.renderDelayMicroseconds / 1000
        reception.lastVideoFramesDecoded = reception.videoFramesDecoded
        reception.lastVideoFramesRendered = reception.videoFramesRendered
        (reception.lastVideoExpected, reception.lastVideoLost) = (expected, lost)
        reception.lastVideoBytes = reception.videoBytes
        channels[c].users[u].reception = reception
        return report
    }

    private mutating func channelStatistics(_ c: Int, elapsed: Int64) -> RtcStats {
        let stats = channels[c].stats
        var report = RtcStats()
        report.durationMs = channels[c].elapsedMs(now)
        report.txBytes = stats.txAudioBytes + stats.txVideoBytes
        report.rxBytes = stats.rxAudioBytes + stats.rxVideoBytes
        report.txKBitRate = Self.kbps(report.txBytes - channels[c].lastStatisticsBytes.tx, elapsed)
        report.rxKBitRate = Self.kbps(report.rxBytes - channels[c].lastStatisticsBytes.rx, elapsed)
        report.userCount = channels[c].users.count
        report.roundTripTimeMs = stats.roundTripTimeMs
        report.txPacketLossRatePercent = Double(stats.txPacketLossPercent)
        let received = stats.rxPackets - channels[c].lastStatisticsPackets.received
        let lost = stats.rxPacketsLost - channels[c].lastStatisticsPackets.lost
        report.rxPacketLossRatePercent = Self.percent(lost, received + lost)
        channels[c].lastStatisticsBytes = (report.txBytes, report.rxBytes)
        channels[c].lastStatisticsPackets = (stats.rxPackets, stats.rxPacketsLost)
        return report
    }
}
