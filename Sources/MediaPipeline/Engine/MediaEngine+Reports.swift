/// RTCP reports: receivers tell publishers what arrived (RR, once a second per remote user),
/// publishers tell receivers their clocks (SR, once a second per stream), and publishers learn
/// the round trip and the loss their subscribers see. All of it without allocation.
extension MediaEngine {
    /// How often reports go out, in microseconds (RFC 3550 allows any interval; libwebrtc uses
    /// one second for video).
    static let reportIntervalMicroseconds: Int64 = 1_000_000

    /// Names, in the playout round, each remote user of each channel whose receiver report
    /// interval has passed, with its receivers as the receive router has them
    /// (``ReceiverReportJob``). Call from the playout round, inside a control input: it takes
    /// no receiver's lock.
    func queueReceiverReports(_ plane: inout ControlPlane, _ round: inout PlayoutRound) {
        let now = plane.now
        for c in plane.channels.indices {
            guard plane.channels[c].joined, !plane.channels[c].joining,
                now - plane.channels[c].lastReceiverReportAt >= Self.reportIntervalMicroseconds
            else { continue }
            plane.channels[c].lastReceiverReportAt = now
            let (channelId, localUid) = (plane.channels[c].id, plane.channels[c].uid)
            let table = routeSnapshot
            for u in plane.channels[c].users.indices where plane.channels[c].users[u].receivesAny {
                let uid = plane.channels[c].users[u].uid
                round.reportJobs.append(
                    ReceiverReportJob(
                        channelId: channelId, localUid: localUid, uid: uid,
                        receivers: table.receivers(channelId: channelId, uid: uid)))
            }
        }
    }

    /// Writes and sends the receiver reports ``queueReceiverReports(_:_:)`` named, reading their
    /// receivers, at the clock's time now (sender reports are taken at their arrival's time: a
    /// report block must not date from before the last one it answers). Call from the playout
    /// round without the control lock.
    func sendQueuedReports(_ round: inout PlayoutRound) {
        guard !round.reportJobs.isEmpty else { return }
        let now = self.now
        for job in round.reportJobs {
            let audio = job.receivers.audio?.withInbox { $0.statistics.reportBlock(nowMicroseconds: now) }
            let video = job.receivers.video?.inbox.withLock { $0.statistics.reportBlock(nowMicroseconds: now) }
            guard audio != nil || video != nil else { continue }
            // With a reference time, so the publisher's answer tells this receiver the round
            // trip its NACKs need.
            let report = RTCPCompound.receiverReport(
                ssrc: rtp.feedbackSSRC, audio, video,
                referenceTime: video != nil && configuration.videoRetransmission
                    ? NTPTime.timestamp(microseconds: ntpMicroseconds(now)) : nil, in: &round.reportRecycler)
            transport.sendRTCP(report, channelId: job.channelId, from: job.localUid, to: job.uid)
        }
        round.reportJobs.removeAll(keepingCapacity: true)
    }

    /// Sends a sender report for the local stream of `kind` to every target when its interval
    /// has passed: the clock's NTP time now beside the RTP timestamp of the media captured now
    /// (`mediaMicrosecondsNow`), so both streams of the publisher map onto one clock and a
    /// receiver can align them. Call from a push, with the publisher.
    func sendSenderReportIfDue(_ kind: MediaKind, mediaMicrosecondsNow: Int64, _ publisher: Publisher) {
        let now = self.now
        guard let packetizer = kind == .audio ? publisher.audioPacketizer : publisher.videoPacketizer,
            now - publisher.lastSenderReportAt[kind] >= Self.reportIntervalMicroseconds
        else { return }
        publisher.lastSenderReportAt[kind] = now
        let report = RTCPCompound.senderReport(
            ssrc: rtp.ssrc(kind), ntpTimestamp: NTPTime.timestamp(microseconds: ntpMicroseconds(now)),
            rtpTimestamp: packetizer.rtpTimestamp(microseconds: mediaMicrosecondsNow),
            packetCount: UInt32(truncatingIfNeeded: publisher.packetsSent[kind]),
            octetCount: UInt32(truncatingIfNeeded: publisher.payloadBytesSent[kind]), in: &publisher.reportRecycler)
        for target in publisher.targets {
            transport.sendRTCP(report, channelId: target.channelId, from: target.uid, to: MediaEngine.everyone)
        }
    }

    /// The recipient that sends RTCP to every member receiving media in the channel.
    static let everyone: UInt32 = 0
}

/// A remote stream's sender report: its SSRC and the NTP ↔ RTP pair.
struct SenderReportSummary {
    var ssrc: UInt32
    var ntpTimestamp: UInt64
    var rtpTimestamp: UInt32
}

/// What one RTCP datagram says to this engine: keyframe requests for its video, sender
/// reports of remote streams, and the round trip and loss its own streams' receivers report.
struct FeedbackReader: RTCPVisitor {
    let audioSSRC: UInt32
    let videoSSRC: UInt32
    /// The low video layer's SSRC (dual stream mode).
    let lowVideoSSRC: UInt32
    /// The local user's RTCP SSRC as a receiver: DLRR answers addressed to it.
    let feedbackSSRC: UInt32
    /// NTP time now (microseconds since 1900): answers to the engine's reports are measured against it.
    let ntpNowMicroseconds: Int64
    var keyframeWanted = false
    /// Whether a keyframe of the low video layer is asked for.
    var lowKeyframeWanted = false
    /// Whether a NACK asks for packets of the local video (either layer).
    var nackForVideo = false
    /// A receiver reference time (RRTR) to answer: the reporter's SSRC and NTP time.
    var receiverReferenceTime: (UInt32, UInt64)?
    /// The round trip to the sender of this feedback as a publisher, from its DLRR answer to
    /// the local user's reference time.
    var roundTripToPublisherMicroseconds: Int64?
    /// The sender of the XR being read.
    var extendedReportSSRC: UInt32 = 0
    /// Up to two sender reports (a user's audio and video).
    var senderReports: (first: SenderReportSummary?, second: SenderReportSummary?) = (nil, nil)
    /// The last round trip reported on one of this engine's streams, and the worst loss fraction.
    var roundTripMicroseconds: Int64?
    var fractionLost: UInt8?
    /// The most the receiver (an SFU's REMB) lets the local video use, in bits per second.
    var maximumBitrate: Int?

    mutating func receiverEstimatedMaximumBitrate<Sources: Sequence<UInt32>>(bitsPerSecond: UInt64, ssrcs: Sources) {
        var concernsVideo = true
        for ssrc in ssrcs {
            concernsVideo = ssrc == videoSSRC
            if concernsVideo { break }
        }
        guard concernsVideo else { return }
        maximumBitrate = Int(min(bitsPerSecond, UInt64(Int.max)))
    }

    mutating func senderReport(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32
    ) {
        let report = SenderReportSummary(ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp)
        if senderReports.first == nil {
            senderReports.first = report
        } else if senderReports.second == nil {
            senderReports.second = report
        }
    }

    mutating func reportBlock(_ block: RTCPReportBlock, from reporter: UInt32) {
        guard block.ssrc == audioSSRC || block.ssrc == videoSSRC else { return }
        if let roundTrip = NTPTime.roundTripMicroseconds(block, nowMicroseconds: ntpNowMicroseconds) {
            roundTripMicroseconds = roundTrip
        }
        fractionLost = max(fractionLost ?? 0, block.fractionLost)  // the worse of the user's streams
    }

    mutating func nack(senderSSRC: UInt32, mediaSSRC: UInt32) {
        if mediaSSRC == videoSSRC || mediaSSRC == lowVideoSSRC { nackForVideo = true }
    }

    mutating func extendedReport(ssrc: UInt32) { extendedReportSSRC = ssrc }

    mutating func receiverReferenceTime(ntpTimestamp: UInt64) {
        receiverReferenceTime = (extendedReportSSRC, ntpTimestamp)
    }

    mutating func delaySinceLastReceiverReport(_ item: RTCPPacket.DLRRItem) {
        guard item.ssrc == feedbackSSRC,
            let roundTrip = NTPTime.roundTripMicroseconds(
                lastReport: item.lastReceiverReport, delay: item.delay, nowMicroseconds: ntpNowMicroseconds)
        else { return }
        roundTripToPublisherMicroseconds = roundTrip
    }

    mutating func pictureLossIndication(senderSSRC: UInt32, mediaSSRC: UInt32) {
        if mediaSSRC == videoSSRC { keyframeWanted = true }
        if mediaSSRC == lowVideoSSRC { lowKeyframeWanted = true }
    }

    mutating func fullIntraRequestEntry(_ entry: RTCPPacket.FullIntraRequestEntry) {
        if entry.ssrc == videoSSRC { keyframeWanted = true }
        if entry.ssrc == lowVideoSSRC { lowKeyframeWanted = true }
    }
}
