/// What a channel of a ``JanusTransport`` knows of its connection's health: whether Janus
/// answers, whether the session is gone, since when the channel is RECONNECTING, and when each
/// connection was last rebuilt. Owned by the channel's ``JanusLegControl``.
struct JanusLegHealth {
    /// How often the health is looked at.
    static let tickMilliseconds = 250
    /// A subscription silent this long after an outage (no RTP, no RTCP: Janus sends reports
    /// every second while media flows) is made anew.
    static let silenceMicroseconds: Int64 = 1_000_000
    /// The least time between two rebuilds of one connection, and between two rejoins.
    static let retryInterval = Duration.seconds(3)
    /// How often Janus is asked whether it answers, and how long it may take: the long-poll
    /// alone notices an outage only when its request times out.
    static let probeInterval = Duration.seconds(2)
    static let probeTimeout = Duration.seconds(2)
    /// While RECONNECTING, Janus is asked more often, so media comes back soon after the path.
    static let reconnectingProbeInterval = Duration.milliseconds(500)

    /// Janus does not answer the event loop for now.
    var signallingInterrupted = false
    /// The client whose session is gone, until the room is joined again on a new one.
    var lostClient: JanusSignalling?
    /// When the channel became RECONNECTING (nil while CONNECTED).
    var reconnectingSince: ContinuousClock.Instant?
    /// When the room was last joined again.
    var lastRejoin: ContinuousClock.Instant?
    /// When each connection was last made anew (nil key: the publication).
    var lastRebuild: [UInt32?: ContinuousClock.Instant] = [:]
    /// When Janus was last asked whether it answers (a keepalive), and when it last did.
    var lastProbe: ContinuousClock.Instant?
    var lastProbeAnswered: ContinuousClock.Instant?
    /// Whether a probe is on its way (one at a time).
    var probing = false
    /// Since when every probe was answered (nil while Janus does not answer).
    var answeringSince: ContinuousClock.Instant?
    /// Set when the channel became RECONNECTING: the connections' paths may have died with
    /// the outage, so silent ones are made anew once Janus answers again.
    var recovering = false
    /// How long Janus must have answered before a silent connection is made anew: media that
    /// was only held up by the outage resumes by itself as soon as the path is back.
    static let answeringBeforeRebuild = Duration.milliseconds(500)
}

/// Which of a channel's connections: a remote publisher's subscription, or (nil) the
/// publication.
typealias JanusConnectionKey = UInt32?

extension JanusLegControl {
    /// What happened to the session of `client` (ignored when it is no longer the current one).
    func sessionChanged(_ event: JanusSessionEvent, _ client: JanusSignalling) {
        guard client === transport.signalling else { return }
        switch event {
        case .interrupted: health.signallingInterrupted = true
        case .restored: health.signallingInterrupted = false
        case .timedOut, .lost: health.lostClient = client
        }
    }

    /// Looks at the channel's health: RECONNECTING while Janus does not answer (or answers an
    /// error) or the session is gone, CONNECTED again when it answers and every connection that
    /// should be there is, FAILED after the reconnect timeout. A silent subscription alone is
    /// the remote publisher's trouble (its stream goes FROZEN), not this side's connection.
    /// Once Janus answers again it repairs what it can: a lost session is joined anew, missing
    /// connections are made, and subscriptions still silent a second after an interruption are
    /// made anew (their ICE pair may have died with the outage).
    func checkHealth(leg: JanusChannelLeg) async {
        let now = ContinuousClock.now
        probe(now)
        let missing = missingConnections(leg)
        if let lost = health.lostClient, health.lastRejoin.map({ now - $0 >= JanusLegHealth.retryInterval }) ?? true {
            health.lastRejoin = now
            await rejoin(after: lost, leg: leg)
        } else if health.lostClient == nil, let since = health.answeringSince {
            var stale = missing
            if health.recovering && now - since >= JanusLegHealth.answeringBeforeRebuild {
                stale += silentConnections(leg, longerThan: JanusLegHealth.silenceMicroseconds)
                health.recovering = false
            }
            for key in stale where health.lastRebuild[key].map({ now - $0 >= JanusLegHealth.retryInterval }) ?? true {
                await rebuild(key, leg: leg)
            }
        }
        let healthy = health.lostClient == nil && !health.signallingInterrupted && missing.isEmpty
        if !healthy && health.reconnectingSince == nil {
            health.reconnectingSince = now
            health.recovering = true
            let why =
                health.lostClient != nil
                ? "session lost"
                : health.signallingInterrupted ? "Janus unreachable" : "missing: \(missing.map(Self.name))"
            transport.logger.info("channel '\(channelId)' reconnecting: \(why)")
            endpoint?.transportConnectionStateChanged(channelId: channelId, state: .reconnecting, reason: .interrupted)
        } else if healthy, health.reconnectingSince != nil {
            health.reconnectingSince = nil
            transport.logger.info("channel '\(channelId)' connected again")
            endpoint?.transportConnectionStateChanged(channelId: channelId, state: .connected, reason: .joinSuccess)
        }
        if let since = health.reconnectingSince,
            now - since > .milliseconds(Int64(transport.configuration.reconnectTimeoutSeconds * 1000))
        {
            transport.logger.warning("channel '\(channelId)' failed: not reconnected in time")
            endpoint?.transportConnectionStateChanged(channelId: channelId, state: .failed, reason: .joinFailed)
            leaving = true
        }
    }

    /// A connection's name in the log.
    nonisolated static func name(_ key: JanusConnectionKey) -> String { key.map { "user \($0)" } ?? "publication" }

    /// Asks Janus whether it answers (a keepalive on the current session), at most every
    /// retry interval, without waiting: the answer comes back as an input.
    private func probe(_ now: ContinuousClock.Instant) {
        let interval =
            health.reconnectingSince == nil ? JanusLegHealth.probeInterval : JanusLegHealth.reconnectingProbeInterval
        guard !health.probing, health.lastProbe.map({ now - $0 >= interval }) ?? true, let input else { return }
        health.lastProbe = now
        health.probing = true
        let signalling = transport.signalling
        Task {
            let answered = (try? await signalling.keepalive(timeout: JanusLegHealth.probeTimeout)) != nil
            input.yield(.probed(answered, signalling))
        }
    }

    /// Janus answered a probe of `client`'s session, or did not.
    func probed(_ answered: Bool, _ client: JanusSignalling) {
        health.probing = false
        guard client === transport.signalling else { return }
        if answered {
            health.lastProbeAnswered = ContinuousClock.now
            if health.answeringSince == nil { health.answeringSince = ContinuousClock.now }
            health.signallingInterrupted = false
        } else {
            health.answeringSince = nil
            health.signallingInterrupted = true
        }
    }

    /// The connections that should be there and are not: a subscription to each publisher
    /// that sends something (when this side receives media), the publication of a
    /// broadcaster with media. Other users' doings are not this side's connection: a publisher
    /// that unpublished (in its grace period, before it counts as left or audience) has no
    /// subscription to miss, nor has one whose feed Janus said does not exist (not started
    /// yet, or gone: asked again, or settled by the room's events).
    func missingConnections(_ leg: JanusChannelLeg) -> [JanusConnectionKey] {
        var missing: [JanusConnectionKey] = []
        if role == .broadcaster, !media.isEmpty, leg.publication.withLock({ $0 }) == nil { missing.append(nil) }
        guard receivesMedia else { return missing }
        let subscribed = leg.subscriptions.withLock { Set($0.keys) }
        for (uid, sends) in publishers
        where !sends.isEmpty && !subscribed.contains(uid) && unpublished[uid] == nil && feedNotReady[uid] == nil {
            missing.append(uid)
        }
        return missing
    }

    /// The subscriptions silent for longer than `microseconds` (counted from their making when
    /// nothing came yet). A subscription to a publisher that sends nothing (both streams muted)
    /// is left out, as is one whose streams the engine muted remotely (Janus sends none of
    /// them), and so is the publication: Janus sends a publisher no regular reports (it
    /// asks for keyframes and caps the bitrate now and then), so its silence says nothing; its
    /// failure shows as ICE or DTLS failing, a hangup, or Janus not answering the probes.
    func silentConnections(_ leg: JanusChannelLeg, longerThan microseconds: Int64) -> [JanusConnectionKey] {
        var silent: [JanusConnectionKey] = []
        for (uid, subscription) in leg.subscriptions.withLock({ $0 })
        where !(publishers[uid] ?? []).isEmpty && !wantsNothing(of: uid)
            && subscription.connection.microsecondsSinceLastReceive > microseconds
        {
            silent.append(uid)
        }
        return silent
    }

    /// A connection went down. A subscription's counts only when it is the current one (a
    /// replaced subscription's handle hangs up as it goes); the publication's only when it was
    /// not just made anew (unpublishing hangs up the old one).
    func hungUp(_ key: JanusConnectionKey, handleId: UInt64, leg: JanusChannelLeg) async {
        if let uid = key {
            guard leg.subscriptions.withLock({ $0[uid] })?.handle.id == handleId else { return }
        } else if let last = health.lastRebuild[key], ContinuousClock.now - last < JanusLegHealth.retryInterval {
            return
        }
        transport.logger.info("\(key.map { "subscription to \($0)" } ?? "publication") in '\(channelId)' went down")
        await rebuild(key, leg: leg)
    }

    /// Makes a connection anew: subscribes to the publisher again, or publishes again.
    func rebuild(_ key: JanusConnectionKey, leg: JanusChannelLeg) async {
        health.lastRebuild[key] = ContinuousClock.now
        if let uid = key {
            guard publishers[uid] != nil else { return }
            transport.logger.info("subscription to \(uid) in '\(channelId)' made anew")
            await closeSubscription(uid, leg: leg)
            if receivesMedia { await subscribe(uid, leg: leg) }
        } else {
            guard role == .broadcaster, !media.isEmpty else { return }
            transport.logger.info("publication in '\(channelId)' made anew")
            let publication = leg.publication.withLock { publication in
                defer { publication = nil }
                return publication
            }
            publication?.connection.close()
            _ = try? await handle?.unpublish()
            await publish(leg: leg)
        }
    }

    /// Joins the room again on a new session (the old one is gone), with the same uid; then
    /// subscribes and publishes again. Publishers that left meanwhile are reported dropped.
    /// Tried again at the next look when it fails (Janus may still be unreachable, or still
    /// hold the old participant).
    func rejoin(after lost: JanusSignalling, leg: JanusChannelLeg) async {
        _ = transport.renewSignalling(replacing: lost)
        for uid in leg.subscriptions.withLock({ Array($0.keys) }) { await closeSubscription(uid, leg: leg) }
        let publication = leg.publication.withLock { publication in
            defer { publication = nil }
            return publication
        }
        publication?.connection.close()
        handle = nil
        do {
            _ = try await join(leg: leg)
        } catch {
            transport.logger.info("rejoining '\(channelId)' failed, tried again: \(error)")
            return
        }
        health.lostClient = nil
        health.signallingInterrupted = false
        transport.logger.info("channel '\(channelId)' joined again on a new Janus session")
        forwardRoomEvents()
        for uid in publishers.keys where !publishersAtJoin.contains(uid) {
            await gone(uid, reason: .dropped, leg: leg)
        }
        await subscribeAndPublish(leg: leg)
    }
}
