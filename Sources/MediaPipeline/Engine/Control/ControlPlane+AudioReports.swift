/// Per-channel audio reports: the channel's own mix and the volume indication.
extension ControlPlane {
    mutating func enableVolumeIndication(_ ref: ChannelRef, _ intervalMs: Int) throws {
        let c = try usable(ref)
        if intervalMs <= 0 {
            channels[c].volumeIntervalMs = 0
        } else {
            guard intervalMs >= 10 else {
                throw EngineError(.invalidArgument, "volume indication interval \(intervalMs) ms is below 10 ms")
            }
            channels[c].volumeIntervalMs = (intervalMs + 5) / 10 * 10
        }
        channels[c].volumeElapsedMs = 0
        try prepareChannelMixer(c)
    }

    mutating func enableChannelMix(_ ref: ChannelRef, _ enabled: Bool) throws {
        let c = try usable(ref)
        channels[c].mixEnabled = enabled
        try prepareChannelMixer(c)
    }

    private mutating func prepareChannelMixer(_ c: Int) throws {
        guard channels[c].mixEnabled || channels[c].volumeIntervalMs > 0 else {
            channels[c].mixer = nil
            return
        }
        guard channels[c].mixer == nil else { return }
        let mixer = try AudioMixer(
            sampleRate: configuration.playoutSampleRate, channelCount: configuration.playoutChannelCount)
        channels[c].mixer = LockOwned(mixer)
        channels[c].mix = [Int16](repeating: 0, count: mixer.samplesPerChannel * mixer.channelCount)
    }

    func copyChannelMix(_ ref: ChannelRef, into output: UnsafeMutableBufferPointer<Int16>) throws {
        let c = try usable(ref)
        guard channels[c].mixEnabled else {
            throw EngineError(.notReady, "channel '\(ref.id)' keeps no mix: call enableChannelMix(true) first")
        }
        guard output.count == channels[c].mix.count else {
            throw EngineError(
                .invalidArgument, "channel mix output holds \(output.count) samples; \(channels[c].mix.count) needed")
        }
        _ = output.update(fromContentsOf: channels[c].mix)
    }

    /// Mixes `inputs` (channel `c`'s streams of this tick) into its mix and advances its volume
    /// indication; nothing when the channel keeps no mix.
    mutating func mixChannel(_ c: Int, _ inputs: [MixerInput]) {
        guard let mixer = channels[c].mixer else { return }
        channels[c].mix.withUnsafeMutableBufferPointer { mixer.value.mix(inputs, into: $0) }
        guard channels[c].volumeIntervalMs > 0 else { return }
        for input in inputs {
            if let u = userIndex(c, input.key.uid) {
                channels[c].users[u].peakLevel = max(channels[c].users[u].peakLevel, Self.peak(input.samples))
            }
        }
        advanceVolumeIndication(c)
    }

    /// The largest magnitude in `samples`.
    static func peak(_ samples: UnsafeBufferPointer<Int16>) -> Int16 {
        var peak: Int16 = 0
        for sample in samples { peak = max(peak, sample == .min ? .max : abs(sample)) }
        return peak
    }

    /// Counts 10 ms towards channel `c`'s volume indication and reports when the interval is full.
    private mutating func advanceVolumeIndication(_ c: Int) {
        let mixPeak = channels[c].mix.withUnsafeBufferPointer { Self.peak($0) }
        channels[c].mixPeak = max(channels[c].mixPeak, mixPeak)
        channels[c].volumeElapsedMs += 10
        guard channels[c].volumeElapsedMs >= channels[c].volumeIntervalMs else { return }
        var speakers: [AudioVolumeInfo] = []
        for u in channels[c].users.indices {
            let volume = Int(channels[c].users[u].peakLevel) * 255 / 32767
            if volume > 0 { speakers.append(AudioVolumeInfo(uid: channels[c].users[u].uid, volume: volume)) }
            channels[c].users[u].peakLevel = 0
        }
        speakers.sort { $0.volume != $1.volume ? $0.volume > $1.volume : $0.uid < $1.uid }
        if speakers.count > 3 { speakers.removeLast(speakers.count - 3) }
        emit(c, .audioVolumeIndication(speakers: speakers, totalVolume: Int(channels[c].mixPeak) * 255 / 32767))
        channels[c].mixPeak = 0
        channels[c].volumeElapsedMs = 0
    }
}
