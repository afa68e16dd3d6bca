/// The channel calls: each is one input to the control plane, then its actions carried out.
extension MediaEngine {
    /// Runs control input `body` and carries out what it decided.
    func input<R>(_ body: (inout ControlPlane) throws -> R) rethrows -> R {
        defer { flushActions() }
        return try withControl(body)
    }

    /// Starts joining: returns at once; the transport's answer comes back as an input, at once
    /// or later.
    func join(_ ref: ChannelRef, uid: UInt32, token: String?, options: ChannelMediaOptions) throws {
        let request = try input { try $0.join(ref, options: options) }
        transport.join(
            channelId: ref.id, uid: uid, token: token, role: request.role, media: request.media, receivesMedia: true,
            endpoint: endpoint
        ) { [weak self] result in
            self?.input { $0.joinAnswered(ref, attempt: request.attempt, result: result) }
        }
    }

    func leave(_ ref: ChannelRef) throws {
        try input { plane in
            takeAudioArrivals(channelId: ref.id)
            try plane.leave(ref)
        }
    }

    func setRole(_ ref: ChannelRef, _ role: ClientRole) throws { try input { try $0.setRole(ref, role) } }

    func muteLocal(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) throws {
        try input { try $0.muteLocal(ref, kind, mute) }
    }

    func muteRemote(_ ref: ChannelRef, _ uid: UInt32, _ kind: MediaKind, _ mute: Bool) throws {
        try input { try $0.muteRemote(ref, uid, kind, mute) }
    }

    func muteAll(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) throws {
        try input { try $0.muteAll(ref, kind, mute) }
    }

    func setDefaultMute(_ ref: ChannelRef, _ kind: MediaKind, _ mute: Bool) {
        input { $0.setDefaultMute(ref, kind, mute) }
    }

    func setVolume(_ ref: ChannelRef, _ uid: UInt32, _ volume: Int) throws {
        guard (0...400).contains(volume) else {
            throw EngineError(.invalidArgument, "playback volume \(volume) for uid \(uid) is outside 0...400")
        }
        try input { try $0.setVolume(ref, uid, volume) }
    }

    func enableVolumeIndication(_ ref: ChannelRef, _ intervalMs: Int) throws {
        try input { try $0.enableVolumeIndication(ref, intervalMs) }
    }

    func enableChannelMix(_ ref: ChannelRef, _ enabled: Bool) throws {
        try input { try $0.enableChannelMix(ref, enabled) }
    }

    func copyChannelMix(_ ref: ChannelRef, into output: UnsafeMutableBufferPointer<Int16>) throws {
        let serial = try control.withLock {
            try $0.channelMixToCopy(ref, outputSamples: output.count, frameSamples: playoutFrameSampleCount)
        }
        channelMixFrames.copy(serial, into: output)
    }

    /// A read of channel `ref`'s state (a default when it is gone), with what the packet path
    /// counted taken into its statistics. The packets that arrived are taken into the audio
    /// receivers' jitter buffers first, without the control lock, so the counts are whole.
    func read<R>(_ ref: ChannelRef, _ body: (ChannelState) -> R, otherwise: R) -> R {
        for receivers in routes.withLock({ $0.receivers(inChannel: ref.id) }) { receivers.audio?.takeArrivals() }
        return control.withLock { plane in
            guard let c = plane.index(ref) else { return otherwise }
            for u in plane.channels[c].users.indices { plane.takeTally(c, u) }
            return body(plane.channels[c])
        }
    }
}
