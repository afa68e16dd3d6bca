extension MediaEngine {
    /// Samples in one playout frame (10 ms × channels).
    public var playoutFrameSampleCount: Int { playoutSamplesPerChannel * configuration.playoutChannelCount }

    /// Produces the next 10 ms of playout: every subscribed, unmuted remote stream of every
    /// joined channel, decoded, gain-adjusted, mixed and limited. The local user's own stream is
    /// never part of it. Channel mixes and volume indications advance with it. Decoding and the
    /// final mix run without the engine's control lock; concurrent calls play out one after the
    /// other. The audio observer is called afterwards, with no lock held, on copies.
    /// - Precondition: `output` holds ``playoutFrameSampleCount`` samples.
    /// - Complexity: allocates nothing in steady state.
    public func pullPlayout(into output: UnsafeMutableBufferPointer<Int16>) {
        precondition(output.count == playoutFrameSampleCount, "playout output must hold one 10 ms frame")
        // Audio NACKs come due between arrivals (a reorder wait after the gap showed).
        var requests: [ControlPlane.FeedbackRequest] = []
        let (decided, observer, observed) = playout.withLock { round in
            let conceal = Int64(configuration.audioConcealMs) * 1000
            // Under the control lock: take the streams to decode, and those fading out.
            let observer: AudioFrameObserver? = withControl { plane in
                round.decode.reset()
                round.streams.removeAll(keepingCapacity: true)
                round.decode.concealUpToMicroseconds = conceal
                round.decode.now = plane.now
                round.lipSync.removeAll(keepingCapacity: true)
                plane.lipSyncJobs(into: &round.lipSync)
                round.statistics.removeAll(keepingCapacity: true)
                round.statisticsChannels.removeAll(keepingCapacity: true)
                plane.statisticsJobs(into: &round.statistics, due: &round.statisticsChannels)
                findReceivers(&round.lipSync, &round.statistics)
                let table = routeSnapshot
                for c in plane.channels.indices where plane.channels[c].joined {
                    let ref = plane.channels[c].ref
                    for u in plane.channels[c].users.indices {
                        guard let id = plane.channels[c].users[u].receiving.audio else { continue }
                        let uid = plane.channels[c].users[u].uid
                        guard let receiver = table.route(channelId: ref.id, uid: uid)?.audio else { continue }
                        round.decode.append(receiver)
                        round.streams.append(StreamSlot(ref: ref, uid: uid, hint: (c, u), id: id, receiver: receiver))
                    }
                }
                receiverStore.takeFadingOut(into: &round.fading)
                return plane.observer
            }
            // Decode every stream's next 10 ms, independent streams in parallel ...
            audioWorkers.run(round.decode.receivers.count, on: round.decode)
            for j in round.lipSync.indices { round.lipSync[j].readTimings() }
            for j in round.statistics.indices { round.statistics[j].read() }
            round.mixInputs.value.removeAll(keepingCapacity: true)
            round.channelMixes.reset()
            let observed = observer.map { _ in round.spareObserved.popLast() ?? ObservedAudio() }
            observed?.reset()
            // ... then, as one input, report and gather the mix in channel and join order.
            var decided: Bool = withControl { plane in
                let before = plane.decisions
                let freeze = Int64(configuration.audioFreezeMs) * 1000
                let recordsStreams = recordings.recordsStreams
                var index = 0
                for c in plane.channels.indices where plane.channels[c].joined {
                    let ref = plane.channels[c].ref
                    let channelStart = round.mixInputs.value.count
                    // Streams of channels left meanwhile play nothing more.
                    while index < round.streams.count, round.streams[index].ref != ref,
                        !plane.isJoined(round.streams[index].ref)
                    {
                        index += 1
                    }
                    // This channel's streams, in the order they were taken.
                    while index < round.streams.count, round.streams[index].ref == ref {
                        let (slot, nack) = (round.streams[index], round.decode.nacks[index])
                        index += 1
                        // A stream released meanwhile plays nothing more, and asks for nothing.
                        guard let u = plane.userIndex(c, slot.uid, hint: slot.hint.user),
                            plane.channels[c].users[u].receiving.audio == slot.id
                        else { continue }
                        if let nack, let request = plane.audioFeedback(c, u, nack: nack) { requests.append(request) }
                        if recordsStreams { reportStreamRecordingFailure(&plane, c, u, .audio) }
                        guard plane.audioDecoded(c, u, slot.receiver, freezeMicroseconds: freeze) else { continue }
                        let (key, volume) = (plane.channels[c].users[u].key, plane.channels[c].users[u].volume)
                        let samples = UnsafeBufferPointer(slot.receiver.frame)
                        observed?.append(samples, stream: key, rtpTimestamp: slot.receiver.frameRTPTimestamp)
                        round.mixInputs.value.append(MixerInput(key: key, samples: samples, gain: volume))
                    }
                    if plane.channels[c].keepsMix {
                        round.channelMixes.add(
                            ref, hint: c, inputs: channelStart..<round.mixInputs.value.count,
                            publishes: plane.channels[c].mixEnabled,
                            measuresPeaks: plane.channels[c].volumeIntervalMs > 0)
                    }
                }
                plane.stats.playoutFrames += 1
                plane.synchronizeRemoteUsers(&round.lipSync)
                queueReceiverReports(&plane, &round)
                plane.reportStatistics(round.statisticsChannels, round.statistics)
                return plane.decisions != before
            }
            sendQueuedReports(&round)
            // The floors decided reach the receivers for the next tick.
            for job in round.lipSync { job.applyFloors() }
            round.lipSync.removeAll(keepingCapacity: true)
            round.statistics.removeAll(keepingCapacity: true)
            round.statisticsChannels.removeAll(keepingCapacity: true)
            // After destroy() recordings take nothing more (they are still stopped, and written, by the app).
            round.channelRecorders = recordings.channelRecorders
            // Channel mixes, with the playout round held (rounds run one at a time), not the
            // control lock: each channel that keeps one, for the app's copies, the channel's
            // composite recording (silence while it is not joined) and its volume indication.
            round.channelMixes.mix(
                round.mixInputs.value, publishingTo: channelMixFrames, recorders: round.channelRecorders)
            if round.channelMixes.measuresPeaks {
                decided =
                    withControl { plane in
                        let before = plane.decisions
                        for job in round.channelMixes.jobs {
                            plane.measuredChannelMix(job, round.mixInputs.value, peaks: round.channelMixes.inputPeaks)
                        }
                        return plane.decisions != before
                    } || decided
            }
            // Composites are encoded here too.
            for recorder in round.channelRecorders { recorder.addMix() }
            let failedRecording = reportRecordingFailures(round.channelRecorders)
            round.channelRecorders = []
            // Streams that just stopped play one more frame, fading to silence.
            let now = round.decode.now
            for (key, receiver) in round.fading
            where receiver.produce(now: now, concealUpToMicroseconds: conceal) != .none {
                let input = MixerInput(key: key, samples: UnsafeBufferPointer(receiver.frame), gain: 0)
                round.mixInputs.value.append(input)
            }
            round.mixer.value.mix(round.mixInputs.value, into: output)
            round.mixInputs.value.removeAll(keepingCapacity: true)
            // The inputs pointed into these receivers' frames: a receiver released meanwhile
            // (its user gone) lives until here.
            round.streams.removeAll(keepingCapacity: true)
            round.decode.reset()
            for (_, receiver) in round.fading { receiver.release() }
            round.fading.removeAll(keepingCapacity: true)
            return (decided || failedRecording, observer, observed)
        }
        // The observer runs with no lock held, on copies (another pull may already be decoding).
        if let observer, let observed {
            observed.deliver(to: observer)
            observer.mixedAudioFrame(UnsafeBufferPointer(output))
            playout.withLock { $0.spareObserved.append(observed) }
        }
        for request in requests { sendFeedback(request) }
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
            ($0.stats.playoutFrames - 1) * Int64(playoutSamplesPerChannel)
        }
    }
}
