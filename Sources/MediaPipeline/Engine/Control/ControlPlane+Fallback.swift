/// What a subscription falls back to when the downlink is poor (Agora's `STREAM_FALLBACK_OPTIONS`,
/// as `setRemoteSubscribeFallbackOption` takes them).
public enum StreamFallbackOptions: Int, Sendable, CaseIterable {
    /// No fallback: the stream asked for is received whatever the loss.
    case disabled = 0
    /// Under poor conditions the video falls back to the publisher's low stream (the high one
    /// for a publisher without dual stream mode).
    case videoStreamLow = 1
    /// As ``videoStreamLow``, and under worse conditions the video is not received at all
    /// until they improve (``ChannelEvent/remoteSubscribeFallbackToAudioOnly(uid:isFallbackOrRecover:)``).
    case audioOnly = 2
}

/// How far one remote user's subscription has fallen back.
enum SubscribeFallbackLevel: Int, Sendable, Comparable {
    case none = 0
    case videoLow, audioOnly

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The fallback decision for one remote user, taken at each statistics report from the share
/// of packets the network lost in the interval (before retransmission): a step down when it
/// reaches ``videoLowLossPercent`` (then ``audioOnlyLossPercent`` on the low stream), a step
/// back up after ``reportsToRecover`` reports in a row under ``recoveredLossPercent``. The
/// low stream and retransmissions carry 10 % loss without a freeze (the dual stream tests), so
/// the thresholds sit above it.
struct SubscribeFallback: Sendable {
    static let videoLowLossPercent = 15.0
    static let audioOnlyLossPercent = 30.0
    static let recoveredLossPercent = 5.0
    static let reportsToRecover = 2

    private(set) var level = SubscribeFallbackLevel.none
    private var goodReports = 0
    /// The video receiver's first-way loss counts at the last report.
    private var lastFirstWay = (missing: Int64(0), counted: Int64(0))

    /// The share of video packets lost on their first way since the last call, in percent,
    /// from the receiver's cumulative counts (`missing` of `counted`); nil when nothing was
    /// counted (a receiver without retransmission does not count).
    mutating func firstWayLossPercent(missing: Int64, counted: Int64) -> Double? {
        if counted < lastFirstWay.counted { lastFirstWay = (0, 0) }  // a new receiver counts afresh
        defer { lastFirstWay = (missing, counted) }
        let interval = counted - lastFirstWay.counted
        return interval > 0 ? Double(missing - lastFirstWay.missing) * 100 / Double(interval) : nil
    }

    /// Takes one report's loss under `option`; returns the new level when it changed.
    mutating func report(lossPercent: Double, option: StreamFallbackOptions) -> SubscribeFallbackLevel? {
        let deepest: SubscribeFallbackLevel =
            switch option {
            case .disabled: .none
            case .videoStreamLow: .videoLow
            case .audioOnly: .audioOnly
            }
        var next = min(level, deepest)
        if lossPercent >= Self.audioOnlyLossPercent && level >= .videoLow {
            next = min(.audioOnly, deepest)
        } else if lossPercent >= Self.videoLowLossPercent {
            next = min(max(level, .videoLow), deepest)
        }
        if lossPercent < Self.recoveredLossPercent {
            goodReports += 1
            if goodReports >= Self.reportsToRecover && next > .none {
                next = SubscribeFallbackLevel(rawValue: next.rawValue - 1)!
                goodReports = 0
            }
        } else {
            goodReports = 0
        }
        guard next != level else { return nil }
        if next > level { goodReports = 0 }
        level = next
        return next
    }
}

extension ControlPlane {
    /// The layer of user `u`'s video to ask for: low while fallen back; else what the app asked
    /// for this user; else low when its canvas shows no more than the low stream holds
    /// (adaptive stream: a quarter of the high pictures' area, 320x180 before a picture);
    /// else the channel's default.
    func effectiveVideoType(_ c: Int, _ u: Int) -> VideoStreamType {
        let user = channels[c].users[u]
        if user.fallback.level >= .videoLow { return .low }
        if let asked = channels[c].remoteVideoTypes[user.uid] { return asked }
        if configuration.adaptsVideoStreamToCanvas, let canvas = canvasSizes[user.key] {
            let highArea = user.highPictureArea > 0 ? user.highPictureArea : 640 * 360
            if canvas.width * canvas.height * 4 <= highArea { return .low }
        }
        return channels[c].defaultRemoteVideoType
    }

    /// Tells the transport which layer of user `u`'s video to forward, when that changed from
    /// what it was last told (or, never told, from the channel's default).
    mutating func refreshVideoType(_ c: Int, _ u: Int) {
        guard channels[c].joined && !channels[c].joining else { return }
        let type = effectiveVideoType(c, u)
        guard type != channels[c].users[u].askedVideoType ?? channels[c].defaultRemoteVideoType else { return }
        channels[c].users[u].askedVideoType = type
        signal(
            .setRemoteVideoStreamType(
                type, channelId: channels[c].id, subscriber: channels[c].uid, publisher: channels[c].users[u].uid))
    }

    /// A canvas for `key` was bound (`size`) or unbound (nil): the layer may follow its size.
    mutating func canvasChanged(_ key: StreamKey, size: (width: Int, height: Int)?) {
        canvasSizes[key] = size
        guard let c = joinedIndex(key.channelId), let u = userIndex(c, key.uid) else { return }
        refreshVideoType(c, u)
    }

    /// Takes a statistics report's loss for user `u` (its video's, or its audio's while the
    /// video is off) into the fallback decision, and carries out a change: the video layer
    /// asked for, and the video stopped or resumed around audio only, with Agora's events.
    mutating func updateSubscribeFallback(_ c: Int, _ u: Int, lossPercent: Double) {
        let old = channels[c].users[u].fallback.level
        guard let new = channels[c].users[u].fallback.report(lossPercent: lossPercent, option: subscribeFallbackOption)
        else { return }
        let uid = channels[c].users[u].uid
        refreshVideoType(c, u)
        if new == .audioOnly {
            subscriptionChanged(c, publisher: uid, .video, subscribed: false)
            if channels[c].users[u].receiving.video != nil { stopReceiving(c, u, .video, reason: .audioFallback) }
            emit(c, .remoteSubscribeFallbackToAudioOnly(uid: uid, isFallbackOrRecover: true))
        } else if old == .audioOnly {
            emit(c, .remoteSubscribeFallbackToAudioOnly(uid: uid, isFallbackOrRecover: false))
            guard !channels[c].users[u].muted.video else { return }
            subscriptionChanged(c, publisher: uid, .video, subscribed: true)
            channels[c].users[u].trackers.video.resumeReason = .audioFallbackRecovery
            startReceiving(c, u, .video)
        }
    }
}
