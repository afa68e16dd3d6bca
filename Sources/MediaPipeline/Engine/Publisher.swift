/// The local media's encoders, packetizers and their scratch state. Each local frame is encoded
/// and packetized once, here, whatever the number of channels, subscribers and relays; the same
/// packets go to every destination. Owned by the engine's `local` lock: the push calls take
/// turns on it.
final class Publisher: @unchecked Sendable {
    let configuration: EngineConfiguration
    let identity: RTPIdentity
    var audioPacketizer: RTPPacketizer?
    var videoPacketizer: RTPPacketizer?
    /// Per stream: packets and payload bytes sent (for sender reports), and when the last
    /// sender report went (clock microseconds).
    var packetsSent = PerMedia<Int64>(0)
    var payloadBytesSent = PerMedia<Int64>(0)
    var lastSenderReportAt = PerMedia<Int64>(.min / 2)
    var reportRecycler = ByteRecycler(slotCount: 16, capacity: 28)
    var audioEncoder: AudioEncoding?
    /// Which encoded audio frames go out while the encoder is in DTX.
    var audioDiscontinuity = DiscontinuousTransmission()
    /// Interleaved PCM waiting for a whole Opus frame.
    var pcm: [Int16]
    var pcmFill = 0
    /// Samples per channel encoded so far (the next packet's timestamp).
    var audioPosition: Int64 = 0
    var videoEncoder: VideoEncoding?
    /// The size ``videoEncoder`` was made for.
    var videoEncoderSize = (width: 0, height: 0)
    /// The video bitrate and the audio expected loss the encoders have now.
    var videoBitrate = 0
    var audioExpectedLossPercent = 0
    /// How many earlier frames each audio packet repeats (RFC 2198; 0: plain Opus packets), and
    /// the last two Opus frames sent, oldest first (shared, not copied, until packetized).
    var audioRedundancyDistance = 0
    private var recentAudio: [EncodedFrame] = []
    /// Where the current frame goes: the local stream of its kind in each channel it is sent
    /// to, the publishing channel first. Reused between frames.
    var targets: [MediaStreamID] = []
    /// The publishing channel the current frame is counted in.
    var targetChannel: ChannelRef?
    /// The low video layer, in dual stream mode.
    var lowLayer: LowVideoLayer?
    /// The low layer's packetizer, kept while the mode is off or reconfigured: its numbers go on
    /// where they stopped, as a forwarder still on the low layer expects.
    var lowPacketizer: RTPPacketizer?
    /// Where low-layer packets went: each is told when the mode is turned off, even one no
    /// longer a target then.
    var lowTargets: [MediaStreamID] = []

    init(configuration: EngineConfiguration, identity: RTPIdentity) {
        self.configuration = configuration
        self.identity = identity
        pcm = [Int16](repeating: 0, count: configuration.audio.samplesPerFrame * configuration.audio.channelCount)
        recentAudio.reserveCapacity(2)
    }

    /// The video encoder for pictures of `width` × `height`, created or recreated as needed.
    func videoEncoder(width: Int, height: Int) throws -> VideoEncoding {
        if let encoder = videoEncoder, videoEncoderSize == (width, height) { return encoder }
        let settings = VideoEncoderSettings(
            codec: configuration.videoCodec, width: width, height: height,
            frameRateNumerator: configuration.videoFrameRate,
            bitrateBitsPerSecond: videoBitrate > 0 ? videoBitrate : configuration.videoBitrateBitsPerSecond,
            keyframeIntervalFrames: configuration.videoKeyframeIntervalFrames, speed: configuration.videoSpeed)
        videoEncoder = nil  // free the old handle before making a new one
        let encoder = try configuration.codecs.makeVideoEncoder(settings)
        videoEncoder = encoder
        videoEncoderSize = (width, height)
        return encoder
    }

    /// The packetizer of `codec`'s stream, created (or recreated for another video codec) as needed.
    func packetize(_ frame: EncodedFrame, _ emit: (RTPPacket) -> Void) throws {
        let codec = frame.codec
        if codec == .opus {
            if audioPacketizer == nil { audioPacketizer = try identity.packetizer(for: .opus) }
            if audioRedundancyDistance > 0 {
                try audioPacketizer!.packetize(
                    frame, redundantPayloadType: RTPPayloadType.red,
                    earlier: recentAudio.suffix(audioRedundancyDistance),
                    emit)
            } else {
                try audioPacketizer!.packetize(frame, emit)
            }
            if recentAudio.count == 2 { recentAudio.removeFirst() }
            recentAudio.append(frame)
        } else {
            if videoPacketizer?.codec != codec { videoPacketizer = try identity.packetizer(for: codec) }
            try videoPacketizer!.packetize(frame, emit)
        }
    }
}

extension MediaEngine {
    /// Fills `publisher.targets` with where local `kind` goes now.
    func collectTargets(_ kind: MediaKind, _ publisher: Publisher) {
        withControl { publisher.targetChannel = $0.collectTargets(kind, into: &publisher.targets) }
    }

    /// Pushes 10 ms (or any whole number of samples) of local audio. It is encoded once into
    /// Opus frames and sent to the publishing channel and its relay destinations; nothing is
    /// encoded while no channel publishes audio.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a frame in another format than
    ///   ``EngineConfiguration/audio``.
    /// - Complexity: allocates nothing in steady state.
    public func pushAudio(_ frame: AudioFrame) throws {
        let format = configuration.audio
        guard frame.sampleRate == format.sampleRate, frame.channelCount == format.channelCount else {
            throw MediaError.invalidArgument(
                "local audio is \(frame.sampleRate) Hz × \(frame.channelCount); the engine takes \(format.sampleRate) Hz × \(format.channelCount)"
            )
        }
        try local.withLock { publisher in
            collectTargets(.audio, publisher)
            guard !publisher.targets.isEmpty else {
                publisher.pcmFill = 0
                // When publishing resumes, its first DTX frame goes out again.
                publisher.audioDiscontinuity = DiscontinuousTransmission()
                return
            }
            var consumed = 0
            while consumed < frame.samples.count {
                let take = min(publisher.pcm.count - publisher.pcmFill, frame.samples.count - consumed)
                for i in 0..<take { publisher.pcm[publisher.pcmFill + i] = frame.samples[consumed + i] }
                publisher.pcmFill += take
                consumed += take
                if publisher.pcmFill == publisher.pcm.count {
                    publisher.pcmFill = 0
                    try encodeAndSendAudio(
                        publisher, framesPushedAfter: (frame.samples.count - consumed) / format.channelCount)
                }
            }
        }
        flushActions()
    }

    /// Encodes the buffered audio and sends it. The push that completed it ends
    /// `framesPushedAfter` frames (per channel) later: its last sample is the one captured now,
    /// which places the stream's media time on the clock for the sender reports.
    private func encodeAndSendAudio(_ publisher: Publisher, framesPushedAfter: Int) throws {
        if publisher.audioEncoder == nil {
            publisher.audioEncoder = try configuration.codecs.makeAudioEncoder(configuration.audio)
        }
        guard let encoder = publisher.audioEncoder else { return }
        let loss = rateControl.withLock { $0.audioExpectedLossPercent }
        if loss != publisher.audioExpectedLossPercent {
            try encoder.protect(expectedLossPercent: loss)
            publisher.audioExpectedLossPercent = loss
        }
        let rate = Int64(configuration.audio.sampleRate)
        let frame = try publisher.pcm.withUnsafeBufferPointer { pcm in
            try encoder.encode(pcm, timestampMicroseconds: publisher.audioPosition * 1_000_000 / rate)
        }
        publisher.audioPosition += Int64(encoder.samplesPerFrame)
        guard publisher.audioDiscontinuity.shouldSend(frame) else {
            withControl { $0.audioFrameWithheld() }
            return
        }
        let capturedNow = (publisher.audioPosition + Int64(framesPushedAfter)) * 1_000_000 / rate
        send(frame, encodedHere: true, mediaMicrosecondsNow: capturedNow, publisher)
    }

    /// Pushes one local picture. It is encoded once and sent to the publishing channel and its
    /// relay destinations; nothing is encoded while no channel publishes video. A keyframe is
    /// forced when a subscriber asked for one (at most once per
    /// ``EngineConfiguration/keyframeRequestIntervalMs``).
    public func pushVideo(_ picture: I420Buffer, timestampMicroseconds: Int64) throws {
        try local.withLock { publisher in
            let layered = publisher.lowLayer != nil
            let (force, forceLow) = withControl { plane in
                publisher.targetChannel = plane.collectTargets(.video, into: &publisher.targets)
                let sending = !publisher.targets.isEmpty
                return (sending && plane.takeKeyframeRequest(), sending && layered && plane.takeLowKeyframeRequest())
            }
            guard !publisher.targets.isEmpty else { return }
            let encoder = try publisher.videoEncoder(width: picture.width, height: picture.height)
            let bitrate = rateControl.withLock { $0.videoBitsPerSecond }
            if bitrate != publisher.videoBitrate {
                try encoder.setBitrate(bitrate)
                publisher.videoBitrate = bitrate
            }
            let frame = try picture.withView {
                try encoder.encode($0, timestampMicroseconds: timestampMicroseconds, forceKeyframe: force)
            }
            // Destinations hear of the low layer before the first high picture, so that each
            // subscriber gets the layer it wants from the start.
            if layered { announceLowLayer(publisher) }
            send(frame, encodedHere: true, publisher)
            if layered { encodeAndSendLow(picture, timestampMicroseconds, forceKeyframe: forceLow, bitrate, publisher) }
        }
        flushActions()
    }

    /// Encodes and sends the low layer's frame of `picture`, if the low frame rate takes it. A
    /// picture the low encoder refuses (a size it cannot take) turns the mode off, logged: the
    /// high stream, already sent, goes on.
    private func encodeAndSendLow(
        _ picture: I420Buffer, _ timestampMicroseconds: Int64, forceKeyframe: Bool, _ highBitrate: Int,
        _ publisher: Publisher
    ) {
        do {
            guard
                let low = try publisher.lowLayer?.encode(
                    picture, timestampMicroseconds: timestampMicroseconds, forceKeyframe: forceKeyframe,
                    engine: configuration, highBitrate: highBitrate)
            else { return }
            sendLow(low, publisher)
        } catch {
            configuration.logger.warning("dual stream mode turned off: the low stream cannot be encoded: \(error)")
            stopLowLayer(publisher)
        }
    }

    /// Turns the low layer off and tells every destination it went to.
    func stopLowLayer(_ publisher: Publisher) {
        publisher.lowLayer = nil
        for target in publisher.lowTargets {
            transport.setSendsLowVideo(false, channelId: target.channelId, uid: target.uid)
        }
        publisher.lowTargets.removeAll()
    }

    /// Tells every target that a low layer comes to it, at each picture: a word per picture
    /// costs little, and a destination that forgot (the user left the channel and joined it
    /// again) hears it again before its first picture. Notes the targets for the mode's end.
    private func announceLowLayer(_ publisher: Publisher) {
        for target in publisher.targets {
            if !publisher.lowTargets.contains(target.withLayer(.low)) {
                publisher.lowTargets.append(target.withLayer(.low))
            }
            transport.setSendsLowVideo(true, channelId: target.channelId, uid: target.uid)
        }
    }

    /// Packetizes a low-layer frame and sends its packets to every target as the low layer,
    /// keeping them for NACKs.
    private func sendLow(_ frame: EncodedFrame, _ publisher: Publisher) {
        let keepsHistory = configuration.videoRetransmission
        let now = self.now
        do {
            if publisher.lowPacketizer?.codec != frame.codec {
                publisher.lowPacketizer = try rtp.lowVideoPacketizer(for: frame.codec)
            }
            try publisher.lowPacketizer?.packetize(frame) { packet in
                if keepsHistory { retransmitter.withLock { $0.lowHistory.store(packet, now: now) } }
                for target in publisher.targets { transport.send(packet, stream: target.withLayer(.low)) }
            }
        } catch {
            return  // an encoder's empty frame (pushed ones are refused before): nothing to send
        }
    }

    /// Publishes an already encoded frame (Opus, VP8 or VP9) as the local stream, for sources
    /// that arrive encoded (a file being replayed, a camera that encodes). Keyframe requests
    /// are counted but cannot be honoured. Nothing is sent while no channel publishes the
    /// frame's kind.
    /// - Throws: ``MediaError/Code/invalidArgument`` for an empty frame.
    public func pushEncodedFrame(_ frame: EncodedFrame) throws {
        try Self.refuseEmpty(frame, layer: "")
        local.withLock { publisher in
            collectTargets(frame.codec.kind, publisher)
            // A source that pushes low frames too (dual stream mode, low frames pushed before)
            // says so before each high one, as pictures pushed raw do; before its first low
            // frame nothing is said: a source that pushes none must still be forwarded high.
            if frame.codec.kind == .video, publisher.lowLayer != nil, !publisher.lowTargets.isEmpty {
                announceLowLayer(publisher)
            }
            send(frame, encodedHere: false, publisher)
        }
        flushActions()
    }

    /// Publishes an already encoded video frame as one layer of the local stream, for sources
    /// that arrive encoded in two layers (a replayed recording of both, a camera that encodes
    /// a simulcast). `.high` is ``pushEncodedFrame(_:)``. `.low` frames go out as the low
    /// stream in dual stream mode (``enableDualStreamMode(_:low:)``; the low configuration's
    /// size, rate and bitrate are the source's business then, and its codec should be the high
    /// frames'); they are not sent while the mode is off, as Agora sends no low stream then.
    /// One source feeds the low stream: pushed low frames and
    /// ``pushVideo(_:timestampMicroseconds:)``'s own low layer are not to be mixed. Keyframe
    /// requests for either layer are counted but cannot be honoured.
    /// - Throws: ``MediaError/Code/invalidArgument`` for an empty frame, or a `.low` frame that
    ///   is audio.
    public func pushEncodedFrame(_ frame: EncodedFrame, layer: VideoStreamType) throws {
        guard layer == .low else { return try pushEncodedFrame(frame) }
        guard frame.codec.kind == .video else {
            throw MediaError.invalidArgument("a \(frame.codec) frame cannot be the low video stream")
        }
        try Self.refuseEmpty(frame, layer: "low ")
        local.withLock { publisher in
            guard publisher.lowLayer != nil else { return }
            collectTargets(.video, publisher)
            guard !publisher.targets.isEmpty else { return }
            announceLowLayer(publisher)
            sendLow(frame, publisher)
        }
        flushActions()
    }

    /// Refuses an empty pushed frame before anything is taken or sent (the packetizer refuses
    /// one too, but a send swallows that, as it must for an encoder's empty output).
    private static func refuseEmpty(_ frame: EncodedFrame, layer: String) throws {
        guard frame.bytes.isEmpty else { return }
        throw MediaError.invalidArgument(
            "the \(layer)\(frame.codec) frame at \(frame.timestampMicroseconds) us is empty")
    }

    /// Packetizes `frame` once and sends every packet to every target, counting it (and its
    /// encoding, when `encodedHere`). `mediaMicrosecondsNow` is the stream's media time being
    /// captured now (by default the frame's: a picture or an encoded frame is pushed as it is
    /// captured or due), the sender reports' NTP ↔ RTP pair.
    private func send(
        _ frame: EncodedFrame, encodedHere: Bool, mediaMicrosecondsNow: Int64? = nil, _ publisher: Publisher
    ) {
        guard !publisher.targets.isEmpty else { return }
        let kind = frame.codec.kind
        var packets: Int64 = 0
        let keepsHistory = kind == .video && configuration.videoRetransmission
        let now = self.now
        if kind == .audio && configuration.audioRedundancy {
            // Encoded here or not, audio packets repeat earlier frames as the reported loss asks.
            publisher.audioRedundancyDistance = rateControl.withLock { $0.audioRedundancyDistance }
        }
        do {
            try publisher.packetize(frame) { packet in
                packets += 1
                publisher.payloadBytesSent[kind] += Int64(packet.payloadByteCount)
                // Kept before it leaves: a NACK may come back before the next packet is sent.
                if keepsHistory { retransmitter.withLock { $0.history.store(packet, now: now) } }
                for target in publisher.targets { transport.send(packet, stream: target) }
            }
        } catch {
            return  // an encoder's empty frame (pushed ones are refused before): nothing to send
        }
        publisher.packetsSent[kind] += packets
        sendSenderReportIfDue(
            kind, mediaMicrosecondsNow: mediaMicrosecondsNow ?? frame.timestampMicroseconds, publisher)
        guard let ref = publisher.targetChannel else { return }
        let (byteCount, targetCount) = (frame.byteCount, publisher.targets.count)
        withControl {
            $0.frameSent(
                ref, kind, byteCount: byteCount, packets: packets, targetCount: targetCount, encodedHere: encodedHere)
        }
    }
}
