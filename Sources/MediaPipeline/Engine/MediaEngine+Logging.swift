import Logging

extension MediaEngine {
    /// Logs what an event says, with the channel as metadata: membership and failures at info
    /// or above, state changes at debug; per-frame reports (volume indications) not at all.
    /// Called while actions are carried out, with no lock held.
    func log(_ event: ChannelEvent, channelId: String) {
        switch event {
        case .audioVolumeIndication, .rtcStats, .remoteAudioStats, .remoteVideoStats:
            return  // periodic reports: not logged, and nothing built for them
        default:
            break
        }
        let logger = configuration.logger
        let metadata: Logger.Metadata = ["channel": "\(channelId)"]
        switch event {
        case .joinSuccess(let uid, let elapsedMs):
            logger.info("joined as uid \(uid) after \(elapsedMs) ms", metadata: metadata)
        case .leave(let stats):
            logger.info(
                "left after \(stats.durationMs) ms: \(stats.rxPackets) packets received, \(stats.rxPacketsLost) lost",
                metadata: metadata)
        case .connectionStateChanged(let state, let reason):
            logger.info("connection \(state) (\(reason))", metadata: metadata)
        case .error(let code, let message):
            logger.error("\(message) [\(code)]", metadata: metadata)
        case .userJoined(let uid, _):
            logger.debug("user \(uid) joined", metadata: metadata)
        case .userOffline(let uid, let reason):
            logger.debug("user \(uid) offline (\(reason))", metadata: metadata)
        case .clientRoleChanged(let old, let new):
            logger.info("role \(old) -> \(new)", metadata: metadata)
        case .remoteAudioStateChanged(let uid, let state, let reason, _):
            let level: Logger.Level = state == .failed ? .warning : .debug
            logger.log(level: level, "user \(uid) audio \(state) (\(reason))", metadata: metadata)
        case .remoteVideoStateChanged(let uid, let state, let reason, _):
            let level: Logger.Level = state == .failed ? .warning : .debug
            logger.log(level: level, "user \(uid) video \(state) (\(reason))", metadata: metadata)
        case .channelMediaRelayStateChanged(let state):
            logger.log(level: state == .failure ? .warning : .info, "media relay \(state)", metadata: metadata)
        case .channelMediaRelayEvent(let event):
            logger.debug("media relay event \(event)", metadata: metadata)
        case .localPublishStateChanged(let kind, let old, let new, _):
            logger.debug("publishing \(kind) \(old) -> \(new)", metadata: metadata)
        case .remoteSubscribeStateChanged(let uid, let kind, let old, let new, _):
            logger.debug("subscription to user \(uid) \(kind) \(old) -> \(new)", metadata: metadata)
        case .videoSizeChanged(let uid, let width, let height):
            logger.debug("user \(uid) video \(width)x\(height)", metadata: metadata)
        case .firstRemoteAudioFrame(let uid, let elapsedMs, let sinceSubscribeMs):
            logger.debug(
                "user \(uid) first audio \(elapsedMs) ms after the join, \(sinceSubscribeMs) ms after subscribing",
                metadata: metadata)
        case .firstRemoteVideoFrame(let uid, let width, let height, let elapsedMs, let sinceSubscribeMs):
            logger.debug(
                "user \(uid) first picture (\(width)x\(height)) \(elapsedMs) ms after the join, \(sinceSubscribeMs) ms after subscribing",
                metadata: metadata)
        case .recordingStarted(let uid, let path):
            logger.info("recording user \(uid) to \(path)", metadata: metadata)
        case .recordingStopped(let uid, let path, let audioFrames, let videoFrames):
            logger.info(
                "recorded user \(uid) to \(path): \(audioFrames) audio packets, \(videoFrames) video frames",
                metadata: metadata)
        case .recordingFailed(let uid, let path, let message):
            logger.error("recording user \(uid) to \(path) failed: \(message)", metadata: metadata)
        case .remoteSubscribeFallbackToAudioOnly(let uid, let fallback):
            logger.info(
                "user \(uid): \(fallback ? "audio only, the downlink is poor" : "video again, the downlink recovered")",
                metadata: metadata)
        case .audioVolumeIndication, .rtcStats, .remoteAudioStats, .remoteVideoStats:
            break
        }
    }
}
