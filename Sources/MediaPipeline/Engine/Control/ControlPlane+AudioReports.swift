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
    }

    mutating func enableChannelMix(_ ref: ChannelRef, _ enabled: Bool) throws {
        let c = try usable(ref)
        channels[c].mixEnabled = enabled
    }

    /// The serial of channel `ref`'s mix, for a copy of it into an output of `outputSamples`
    /// samples, which must be a mix's `frameSamples` (the mix itself is the media side's,
    /// ``ChannelMixFrames``).
    func channelMixToCopy(_ ref: ChannelRef, outputSamples: Int, frameSamples: Int) throws -> Int {
        let c = try usable(ref)
        guard channels[c].mixEnabled else {
            throw EngineError(.notReady, "channel '\(ref.id)' keeps no mix: call enableChannelMix(true) first")
        }
        guard outputSamples == frameSamples else {
            throw EngineError(
                .invalidArgument, "channel mix output holds \(outputSamples) samples; \(frameSamples) needed")
        }
        return ref.serial
    }

    /// Takes what a playout round measured of channel `job`'s mix (its streams' peaks, in
    /// `peaks` beside `inputs`) into its volume indication, and advances it by 10 ms.
    mutating func measuredChannelMix(_ job: ChannelMixRound.Job, _ inputs: [MixerInput], peaks: [Int16]) {
        guard job.measuresPeaks, let c = index(job.ref, hint: job.hint), channels[c].joined,
            channels[c].volumeIntervalMs > 0
        else { return }
        for i in job.inputs {
            if let u = userIndex(c, inputs[i].key.uid) {
                channels[c].users[u].peakLevel = max(channels[c].users[u].peakLevel, peaks[i])
            }
        }
        channels[c].mixPeak = max(channels[c].mixPeak, job.mixPeak)
        advanceVolumeIndication(c)
    }

    /// Counts 10 ms towards channel `c`'s volume indication and reports when the interval is full.
    private mutating func advanceVolumeIndication(_ c: Int) {
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
