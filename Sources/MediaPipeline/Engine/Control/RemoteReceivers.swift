/// A remote user's receivers, as the media side holds them (``ReceiverStore``) and finds them
/// through the receive router: worked on and read outside the control lock (a round's jobs, an
/// RTCP datagram's reports).
struct RemoteReceivers: Sendable {
    var audio: AudioReceiver?
    var video: VideoReceiver?

    /// Neither kind is received.
    var isEmpty: Bool { audio == nil && video == nil }

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
