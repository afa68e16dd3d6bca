extension MediaEngine {
    /// Samples in one playout frame (10 ms × channels).
    public var playoutFrameSampleCount: Int { playoutMixer.samplesPerChannel * playoutMixer.channelCount }

    /// Produces the next 10 ms of playout: every subscribed, unmuted remote stream of every
    /// joined channel, decoded, gain-adjusted, mixed and limited. The local user's own stream is
    /// never part of it. Channel mixes and volume indications advance with it. Decoding, the
    /// final mix and the audio observer run without the engine's control lock; concurrent calls
    /// play out one after the other.
    /// - Precondition: `output` holds ``playoutFrameSampleCount`` samples.
    /// - Complexity: allocates nothing in steady state.
    public func pullPlayout(into output: UnsafeMutableBufferPointer<Int16>) {
        precondition(output.count == playoutFrameSampleCount, "playout output must hold one 10 ms frame")
        let hadEvents: Bool = playoutLock.withLock {
            let conceal = Int64(configuration.audioConcealMs) * 1000
            // Under the control lock: take the streams to decode, and those fading out.
            let observer: AudioFrameObserver? = lock.withLock {
                audioRound.receivers.removeAll(keepingCapacity: true)
                audioReports.removeAll(keepingCapacity: true)
                audioRound.concealUpToMicroseconds = conceal
                for id in channelOrder {
                    guard let state = channels[id], state.joined else { continue }
                    for uid in state.userOrder {
                        guard let user = state.users[uid], let receiver = user.audio else { continue }
                        audioRound.receivers.append(receiver)
                        audioReports.append((state, user, receiver))
                    }
                }
                fadingRound.append(contentsOf: fadingOut)
                fadingOut.removeAll(keepingCapacity: true)
                return self.observer
            }
            // Decode every stream's next 10 ms, independent streams in parallel ...
            audioWorkers.run(audioRound.receivers.count, on: audioRound)
            audioRound.receivers.removeAll(keepingCapacity: true)
            mixInputs.removeAll(keepingCapacity: true)
            observedFrames.removeAll(keepingCapacity: true)
            // ... then, under the control lock, report and gather the mix in channel and join order.
            let hadEvents: Bool = lock.withLock {
                let before = actions.count
                let freeze = Int64(configuration.audioFreezeMs) * 1000
                var index = 0
                for id in channelOrder {
                    guard let state = channels[id], state.joined else { continue }
                    channelMixInputs.removeAll(keepingCapacity: true)
                    // This channel's streams, in the order they were taken.
                    while index < audioReports.count, audioReports[index].state === state {
                        let (_, user, receiver) = audioReports[index]
                        index += 1
                        // A stream released meanwhile plays nothing more.
                        guard user.audio === receiver, state.users[user.uid] === user else { continue }
                        switch receiver.lastOutput {
                        case .audio:
                            state.stats.audioFramesDecoded += 1
                            reportDecoding(state, user, .audio)
                        case .concealed:
                            break
                        case .none:
                            if receiver.failed {
                                if user.trackers.audio.state != .failed, let failure = receiver.failure {
                                    // Once per failure, with its cause: the event only says INTERNAL.
                                    actions.append(.warning("user \(user.uid) audio: \(failure)", channelId: state.id))
                                }
                                report(state, user, .audio, .failed, .internal)
                            } else if receiver.starvedMicroseconds > freeze && user.trackers.audio.state == .decoding {
                                report(state, user, .audio, .frozen, .networkCongestion)
                            }
                            continue
                        }
                        let samples = UnsafeBufferPointer(receiver.frame)
                        if observer != nil { observedFrames.append((user.key, samples)) }
                        let input = MixerInput(key: user.key, samples: samples, gain: user.volume)
                        mixInputs.append(input)
                        if state.mixer != nil {
                            channelMixInputs.append(input)
                            if state.volumeIntervalMs > 0 { user.peakLevel = max(user.peakLevel, peak(samples)) }
                        }
                    }
                    if let mixer = state.mixer {
                        state.mix.withUnsafeMutableBufferPointer { mixer.mix(channelMixInputs, into: $0) }
                        if state.volumeIntervalMs > 0 { advanceVolumeIndication(state) }
                    }
                }
                stats.playoutFrames += 1
                queueReceiverReports(now: self.now)
                return actions.count != before
            }
            sendQueuedReports()
            audioReports.removeAll(keepingCapacity: true)
            // Streams that just stopped play one more frame, fading to silence.
            for (key, receiver) in fadingRound where receiver.produce(concealUpToMicroseconds: conceal) != .none {
                mixInputs.append(MixerInput(key: key, samples: UnsafeBufferPointer(receiver.frame), gain: 0))
            }
            playoutMixer.mix(mixInputs, into: output)
            mixInputs.removeAll(keepingCapacity: true)
            for (_, receiver) in fadingRound { receiver.release() }
            fadingRound.removeAll(keepingCapacity: true)
            if let observer {
                for (key, samples) in observedFrames { observer.remoteAudioFrame(samples, stream: key) }
                observer.mixedAudioFrame(UnsafeBufferPointer(output))
                observedFrames.removeAll(keepingCapacity: true)
            }
            return hadEvents
        }
        if hadEvents { flushActions() }
    }

    /// Produces the next 10 ms of playout into `frame`, resizing it in place.
    public func pullPlayout(into frame: inout AudioFrame) {
        let count = playoutFrameSampleCount
        if frame.samples.count != count {
            frame.samples.removeAll(keepingCapacity: true)
            frame.samples.append(contentsOf: repeatElement(0, count: count))
        }
        frame.sampleRate = configuration.playoutSampleRate
        frame.channelCount = configuration.playoutChannelCount
        frame.samples.withUnsafeMutableBufferPointer { pullPlayout(into: $0) }
        frame.timestampSamples = lock.withLock { (stats.playoutFrames - 1) * Int64(playoutMixer.samplesPerChannel) }
    }

    private func peak(_ samples: UnsafeBufferPointer<Int16>) -> Int16 {
        var peak: Int16 = 0
        for sample in samples { peak = max(peak, sample == .min ? .max : abs(sample)) }
        return peak
    }

    /// Counts 10 ms towards the channel's volume indication and reports when the interval is full.
    private func advanceVolumeIndication(_ state: ChannelState) {
        state.mixPeak = max(state.mixPeak, state.mix.withUnsafeBufferPointer { peak($0) })
        state.volumeElapsedMs += 10
        guard state.volumeElapsedMs >= state.volumeIntervalMs else { return }
        var speakers: [AudioVolumeInfo] = []
        for uid in state.userOrder {
            guard let user = state.users[uid] else { continue }
            let volume = Int(user.peakLevel) * 255 / 32767
            if volume > 0 { speakers.append(AudioVolumeInfo(uid: uid, volume: volume)) }
            user.peakLevel = 0
        }
        speakers.sort { $0.volume != $1.volume ? $0.volume > $1.volume : $0.uid < $1.uid }
        if speakers.count > 3 { speakers.removeLast(speakers.count - 3) }
        emit(state, .audioVolumeIndication(speakers: speakers, totalVolume: Int(state.mixPeak) * 255 / 32767))
        state.mixPeak = 0
        state.volumeElapsedMs = 0
    }
}
