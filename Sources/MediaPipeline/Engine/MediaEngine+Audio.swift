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
        let decided: Bool = playoutLock.withLock {
            let conceal = Int64(configuration.audioConcealMs) * 1000
            // Under the control lock: take the streams to decode, and those fading out.
            let observer: AudioFrameObserver? = control.withLock { plane in
                audioRound.receivers.removeAll(keepingCapacity: true)
                audioReports.removeAll(keepingCapacity: true)
                audioRound.concealUpToMicroseconds = conceal
                for c in plane.channels.indices where plane.channels[c].joined {
                    for u in plane.channels[c].users.indices {
                        guard let receiver = plane.channels[c].users[u].audio else { continue }
                        audioRound.receivers.append(receiver)
                        audioReports.append(
                            StreamSlot(
                                ref: plane.channels[c].ref, uid: plane.channels[c].users[u].uid, hint: (c, u),
                                receiver: receiver))
                    }
                }
                fadingRound.append(contentsOf: plane.fadingOut)
                plane.fadingOut.removeAll(keepingCapacity: true)
                return plane.observer
            }
            // Decode every stream's next 10 ms, independent streams in parallel ...
            audioWorkers.run(audioRound.receivers.count, on: audioRound)
            audioRound.receivers.removeAll(keepingCapacity: true)
            mixInputs.removeAll(keepingCapacity: true)
            observedFrames.removeAll(keepingCapacity: true)
            // ... then, as one input, report and gather the mix in channel and join order.
            let decided: Bool = withControl { plane in
                let before = plane.actionCount
                let freeze = Int64(configuration.audioFreezeMs) * 1000
                var index = 0
                for c in plane.channels.indices where plane.channels[c].joined {
                    let ref = plane.channels[c].ref
                    channelMixInputs.removeAll(keepingCapacity: true)
                    // Streams of channels left meanwhile play nothing more.
                    while index < audioReports.count, audioReports[index].ref != ref,
                        !plane.isJoined(audioReports[index].ref)
                    {
                        index += 1
                    }
                    // This channel's streams, in the order they were taken.
                    while index < audioReports.count, audioReports[index].ref == ref {
                        let slot = audioReports[index]
                        index += 1
                        // A stream released meanwhile plays nothing more.
                        guard let u = plane.userIndex(c, slot.uid, hint: slot.hint.user),
                            plane.channels[c].users[u].audio === slot.receiver,
                            plane.audioDecoded(c, u, slot.receiver, freezeMicroseconds: freeze)
                        else { continue }
                        let user = plane.channels[c].users[u]
                        let samples = UnsafeBufferPointer(slot.receiver.frame)
                        if observer != nil { observedFrames.append((user.key, samples)) }
                        let input = MixerInput(key: user.key, samples: samples, gain: user.volume)
                        mixInputs.append(input)
                        if plane.channels[c].mixer != nil { channelMixInputs.append(input) }
                    }
                    plane.mixChannel(c, channelMixInputs)
                }
                plane.stats.playoutFrames += 1
                queueReceiverReports(&plane)
                return plane.actionCount != before
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
            return decided
        }
        if decided { flushActions() }
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
        frame.timestampSamples = control.withLock {
            ($0.stats.playoutFrames - 1) * Int64(playoutMixer.samplesPerChannel)
        }
    }
}
