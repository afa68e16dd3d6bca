/// A remote user's receivers, as the control plane hands them to the media side: named in a
/// control input, worked on and read after the control lock is released (a round's jobs, an
/// RTCP datagram's reports).
struct RemoteReceivers: Sendable {
    var audio: AudioReceiver?
    var video: VideoReceiver?

    /// Neither kind is received.
    var isEmpty: Bool { audio == nil && video == nil }

    /// Whether `other` names the same receivers (none of them replaced since).
    func isSame(as other: RemoteReceivers) -> Bool { audio === other.audio && video === other.video }

    /// Hands the user's sender reports (its clock, for lip sync and for the round trip our
    /// reports let it measure) and the round trip to it that `reader` found, arrived at `now`.
    func take(_ reader: FeedbackReader, now: Int64) {
        note(reader.senderReports.first, now)
        note(reader.senderReports.second, now)
        if let roundTrip = reader.roundTripToPublisherMicroseconds { video?.setRoundTrip(microseconds: roundTrip) }
    }

    private func note(_ report: SenderReportSummary?, _ now: Int64) {
        guard let report else { return }
        audio?.senderReport(
            ssrc: report.ssrc, ntpTimestamp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp,
            arrivalMicroseconds: now)
        video?.senderReport(
            ssrc: report.ssrc, ntpTimestamp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp,
            arrivalMicroseconds: now)
    }
}

extension RemoteUser {
    /// The user's receivers now.
    var receivers: RemoteReceivers { RemoteReceivers(audio: audio, video: video) }
}
