/// Which video layer the engine wants of each remote publisher in a channel (Agora's
/// `setRemoteVideoStreamType` and `setRemoteDefaultVideoStreamType`), as Janus is told it: a
/// substream of the publisher's simulcast.
struct JanusLayerChoices: Sendable {
    /// The layer of publishers not named.
    var defaultType: VideoStreamType = .high
    /// The layers asked for by name.
    var chosen: [UInt32: VideoStreamType] = [:]

    /// The layer wanted of `uid`.
    func type(of uid: UInt32) -> VideoStreamType { chosen[uid] ?? defaultType }

    /// Janus's substream for `type`: 0 is the lowest encoding, 2 the highest Janus knows (its
    /// default; with two encodings, the high one).
    static func substream(_ type: VideoStreamType) -> Int64 { type == .low ? 0 : 2 }

    /// Whether Janus must be told `wanted` when it was last told `told` (nil: nothing, so it
    /// climbs to the highest, which a high wish needs no word for).
    static func needsTelling(told: VideoStreamType?, wanted: VideoStreamType) -> Bool {
        told != wanted && !(told == nil && wanted == .high)
    }

    /// The layer a substream Janus switched to is: the lowest is the low layer.
    static func type(ofSubstream substream: Int64) -> VideoStreamType { substream == 0 ? .low : .high }
}

extension JanusLegControl {
    /// Remembers which layer the engine wants of `publisher` (nil: the default for publishers
    /// not named), from any thread, for the subscriptions made later too.
    nonisolated func setLayerNow(_ type: VideoStreamType, publisher: UInt32?) {
        layerChoices.withLock { choices in
            if let publisher {
                choices.chosen[publisher] = type
            } else {
                choices.defaultType = type
            }
        }
    }

    /// Tells Janus the substream the engine wants of `publisher`'s video (nil: of every
    /// publisher subscribed to).
    func tellLayers(_ publisher: UInt32?, leg: JanusChannelLeg) async {
        let uids = publisher.map { [$0] } ?? leg.subscriptions.withLock { Array($0.keys) }.sorted()
        for uid in uids { await tellLayer(uid, leg: leg) }
    }

    /// Tells Janus which substream of `uid`'s video to send on its subscription (`configure`
    /// with `streams: [{mid, substream}]`): it switches on that substream's next keyframe, asks
    /// the publisher for one, and sends an event naming the substream when it switched. Only
    /// when it changed; a new subscription is told only a low wish, before it starts (Janus
    /// starts from the first keyframe of any substream and climbs to the highest; the
    /// `substream` of a subscriber's join is taken without asking the publisher for a keyframe,
    /// so the low layer came only at its next periodic one). With `layer`, that layer
    /// instead of the wish (the watchdog's high). Janus ignores it for a publisher that sends
    /// one encoding: that one comes, as Agora delivers the high stream of a publisher without
    /// dual stream mode.
    func tellLayer(_ uid: UInt32, leg: JanusChannelLeg, as layer: VideoStreamType? = nil) async {
        guard let subscription = leg.subscriptions.withLock({ $0[uid] }), let mid = subscription.mids[.video] else {
            return
        }
        let wanted = layer ?? layerChoices.withLock { $0.type(of: uid) }
        let told = subscription.toldLayer.withLock { $0 }
        guard JanusLayerChoices.needsTelling(told: told, wanted: wanted) else {
            if layer == nil { subscription.lowLayerRetellAt.withLock { $0 = nil } }
            return
        }
        do {
            try await requestSubstream(wanted, mid: mid, on: subscription)
            subscription.toldLayer.withLock { $0 = wanted }
            if layer == nil { subscription.lowLayerRetellAt.withLock { $0 = nil } }
            transport.logger.debug("asked Janus for the \(wanted) video of \(uid) in '\(channelId)'")
        } catch {
            transport.log("asking Janus for the \(wanted) video of \(uid) in '\(channelId)' failed: \(error)")
        }
    }

    /// How long video may stop on a subscription told the low substream, while its other media
    /// still comes, before Janus is asked for the high one.
    static let silentLowLayerMicroseconds: Int64 = 1_000_000
    /// How recent the subscription's last packet of any kind must be for a silent low layer to
    /// count as stopped (its publisher's audio still comes), not as the connection stalling.
    static let otherMediaMicroseconds: Int64 = 500_000
    /// How long after that the low wish is told again.
    static let lowLayerRetellDelay = Duration.seconds(2)

    /// Keeps each subscription on the layer wanted, on the health tick:
    /// - A wish Janus was not told (a `configure` that failed) is told again.
    /// - A low subscription whose video stops while its publisher's other media still comes
    ///   (it turned dual stream mode off) is told the high substream: Janus only falls back
    ///   from a higher substream to a lower one, so it would stay on the silent low one. Two
    ///   seconds later the low wish is told again, which Janus takes as "switch on the low
    ///   substream's next keyframe" and meanwhile goes on forwarding the high one: a publisher
    ///   without a low stream is delivered high, as Agora does, and one that turns the mode on
    ///   again is delivered low. A publisher that sends video alone is judged by its video.
    func reviveSilentLowLayers(leg: JanusChannelLeg) async {
        let now = ContinuousClock.now
        for (uid, subscription) in leg.subscriptions.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let wanted = layerChoices.withLock { $0.type(of: uid) }
            let told = subscription.toldLayer.withLock { $0 }
            if let retell = subscription.lowLayerRetellAt.withLock({ $0 }) {
                if now >= retell { await tellLayer(uid, leg: leg) }  // clears the retell once told
                continue
            }
            if JanusLayerChoices.needsTelling(told: told, wanted: wanted) {
                await tellLayer(uid, leg: leg)
                continue
            }
            guard wanted == .low, told == .low else { continue }
            if subscription.mapper.videoLayer == .high {
                await reaskLow(uid, subscription, now: now)
                continue
            }
            subscription.lowLayerReasked.withLock { $0 = nil }
            let media = publishers[uid] ?? []
            let notWanted = unwanted.withLock { $0[uid] ?? [] }
            guard media.contains(.video), !notWanted.contains(.video),
                let silent = subscription.mapper.microsecondsSinceLastVideoPacket,
                silent > Self.silentLowLayerMicroseconds
            else { continue }
            let audioComes = media.contains(.audio) && !notWanted.contains(.audio)
            if audioComes && subscription.mapper.microsecondsSinceLastPacket > Self.otherMediaMicroseconds { continue }
            transport.logger.debug(
                "the low video of \(uid) in '\(channelId)' is silent for \(silent / 1000) ms: high asked for")
            await tellLayer(uid, leg: leg, as: .high)
            subscription.lowLayerRetellAt.withLock { $0 = now + Self.lowLayerRetellDelay }
        }
    }

    /// How long a low wish Janus has not acted on waits before it is asked for again; the wait
    /// doubles each time, up to ``lowLayerReaskLongest``.
    static let lowLayerReaskFirst = Duration.seconds(3)
    static let lowLayerReaskLongest = Duration.seconds(60)

    /// Asks Janus again for the low substream of `uid` while it still forwards the high one:
    /// Janus asks the publisher for a keyframe only when told, and a wish told before the
    /// subscription received anything (the keyframe request answered before the subscription
    /// could take it, or sent before the low layer began) would otherwise wait for the low
    /// layer's next periodic keyframe. Each request makes Janus ask the publisher for a
    /// keyframe, so the waits double: a publisher without a low layer pays a few keyframes.
    private func reaskLow(_ uid: UInt32, _ subscription: JanusSubscription, now: ContinuousClock.Instant) async {
        guard let mid = subscription.mids[.video] else { return }
        // The first tick that sees it only starts the wait: a wish just told is being acted on.
        guard let (last, wait) = subscription.lowLayerReasked.withLock({ $0 }) else {
            subscription.lowLayerReasked.withLock { $0 = (now, Self.lowLayerReaskFirst) }
            return
        }
        guard now - last >= wait else { return }
        subscription.lowLayerReasked.withLock { $0 = (now, min(wait * 2, Self.lowLayerReaskLongest)) }
        do {
            try await requestSubstream(.low, mid: mid, on: subscription)
            transport.logger.debug("asked Janus again for the low video of \(uid) in '\(channelId)'")
        } catch {
            transport.log("asking Janus again for the low video of \(uid) in '\(channelId)' failed: \(error)")
        }
    }

    /// Tells Janus to send `type`'s substream of the video section `mid` on `subscription`.
    private func requestSubstream(_ type: VideoStreamType, mid: String, on subscription: JanusSubscription) async throws
    {
        let stream: JSONValue = .object(["mid": .string(mid), "substream": .int(JanusLayerChoices.substream(type))])
        _ = try await subscription.handle.configure(extra: ["streams": .array([stream])])
    }
}
