import ArgumentParser
import Foundation
import Logging
import MediaPipeline
import MediaPipelineTesting

#if canImport(Glibc)
    import Glibc
#endif

/// `pipebench join URL`: a live client of channels on a Janus server.
struct JoinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join channels (Janus VideoRoom rooms) as a live participant: publish in one, subscribe in several.",
        discussion:
            "URL is the Janus API (http://127.0.0.1:8088/janus; scripts/janus.sh starts a local one). Publishes the "
            + "bundled samples in real time (--variant picks a user's own picture and voice) in the --publish "
            + "channel; every joined channel's remote users are subscribed to, mixed and rendered. Writes into "
            + "--output CHANNEL.webm per channel (its grid of remote users and its mix, as `simulate` "
            + "does). Prints each channel event as it comes (with --events-json, one JSON object a line on "
            + "standard output) and the statistics every 2 s on standard error. Ends after --duration or on "
            + "Ctrl-C, leaving every channel; the files are written whole.")

    @Argument(help: "The Janus API URL.") var url: String
    @Option(help: "The channel to publish in (a broadcaster there).") var publish: String?
    @Option(
        help: "Channels to subscribe in, comma-separated (the publishing channel is subscribed as well).",
        transform: { $0.split(separator: ",").map(String.init) })
    var subscribe: [String] = []
    @Option(
        help: "Relay the published streams into these channels too, comma-separated (up to four).",
        transform: { $0.split(separator: ",").map(String.init) })
    var relay: [String] = []
    @Option(help: "This user's uid (0: one is chosen).") var uid: UInt32 = 0
    @Option(help: "Which user's media to publish: 0 is the samples' own, 1-7 others.") var variant = 0
    @Option(help: "Seconds to stay.") var duration = 10.0
    @Flag(
        help: ArgumentHelp(
            "Encode the samples live (the engine's encoders, which answer keyframe requests) instead of publishing "
                + "the variant's pre-encoded frames."))
    var encode = false
    @Flag(
        help: ArgumentHelp(
            "Encode the audio live (with the in-band FEC the server's profile asks for) and publish the variant's "
                + "pre-encoded video."))
    var encodeAudio = false
    @Option(
        help: ArgumentHelp(
            "Publish this Y4M's pictures (looped, encoded live) instead of the samples'.", valueName: "FILE.y4m"))
    var video: String?
    @Option(
        help: ArgumentHelp(
            "Publish this WAV (48 kHz, mono or stereo; looped, encoded live) instead of the samples' speech.",
            valueName: "FILE.wav"))
    var audio: String?
    @Flag(
        help: ArgumentHelp(
            "Dual stream mode: the video also goes out as a low stream (a quarter of the area, half the frame "
                + "rate), as the second encoding of a simulcast Janus forwards per subscriber. Live-encoded video "
                + "is scaled and encoded again; the pre-encoded samples (--variant 0) send their own low layer."))
    var dualStream = false
    @Option(
        help: ArgumentHelp(
            "The video layer asked of every remote user not named by --at (setRemoteDefaultVideoStreamType): "
                + "high or low.", valueName: "LAYER"))
    var remoteVideoType = "high"
    @Option(
        help: ArgumentHelp(
            "What remote video falls back to on a poor downlink (setRemoteSubscribeFallbackOption): disabled, "
                + "video-low (the default) or audio-only.", valueName: "OPTION"))
    var fallback = "video-low"
    @Option(
        help: ArgumentHelp(
            "Milliseconds between this engine's keyframe requests for one remote stream while it waits for a "
                + "keyframe (keyframeRequestIntervalMs).", valueName: "MS"))
    var keyframeRequestInterval = EngineConfiguration().keyframeRequestIntervalMs
    @Option(help: "Folder for the outputs (created if missing).") var output = "out/join"
    @Option(help: "Local address ICE uses (repeatable; default: every interface).") var localAddress: [String] = []
    @Option(help: "UDP ports the peer connections bind, FIRST-LAST (default: any).") var ports: String?
    @Option(
        name: [.customLong("token"), .customLong("pin")],
        help: "The join's token (joinChannelByToken): a Janus room's pin.")
    var token: String?
    @Option(
        help: "PEM file of the authorities an https Janus's certificate is checked against (default: the system's).")
    var trustedCertificates: String?
    @Option(help: "Seconds a channel may stay reconnecting before it fails.") var reconnectTimeout = 60.0
    @Option(help: "Janus's session_timeout in seconds (a session unreachable this long is joined anew).")
    var sessionTimeout = 60.0
    @Option(name: .customLong("samples"), help: "Folder with the bundled samples.") var samplesOption: String?
    @Flag(help: "Numeric room and participant ids (a VideoRoom without string_ids): channels must be numbers.")
    var numericIds = false
    @Option(
        name: .customLong("at"),
        help: ArgumentHelp(
            "SECONDS:ACTION, repeatable: mute-audio, unmute-audio, mute-video, unmute-video (the publishing "
                + "channel), dual-stream-on, dual-stream-off, mute-remote-audio:UID, unmute-remote-audio:UID, mute-remote-video:UID, "
                + "unmute-remote-video:UID, high-video:UID, low-video:UID (every channel), audience:CHANNEL, "
                + "broadcaster:CHANNEL, leave:CHANNEL."))
    var actions: [String] = []
    @Flag(
        help: ArgumentHelp(
            "Record each remote user's streams as received, without re-encoding, into user-CHANNEL-UID.webm in the "
                + "output folder."))
    var recordUsers = false
    @Flag(help: "Print events as JSON lines on standard output.") var eventsJson = false
    @Flag(help: "Log signalling and the engine's decisions (debug level) on standard error.") var verbose = false
    @Flag(help: "Print each decoded remote picture's MD5 (as vpxdec --md5 --i420) with its channel and uid.")
    var md5 = false

    func run() throws {
        var channels = subscribe
        if let publish, !channels.contains(publish) { channels.insert(publish, at: 0) }
        guard !channels.isEmpty else { throw ValidationError("name a channel: --publish or --subscribe") }
        guard (0..<SampleMedia.userVariants).contains(variant) else {
            throw ValidationError("--variant \(variant) is outside 0...\(SampleMedia.userVariants - 1)")
        }
        guard let defaultVideoType = ["high": VideoStreamType.high, "low": .low][remoteVideoType] else {
            throw ValidationError("--remote-video-type '\(remoteVideoType)' is not high or low")
        }
        let fallbacks: [String: StreamFallbackOptions] = [
            "disabled": .disabled, "video-low": .videoStreamLow, "audio-only": .audioOnly,
        ]
        guard let fallbackOption = fallbacks[fallback] else {
            throw ValidationError("--fallback '\(fallback)' is not disabled, video-low or audio-only")
        }
        guard keyframeRequestInterval > 0 else {
            throw ValidationError(
                "--keyframe-request-interval \(keyframeRequestInterval) is not a positive number of ms")
        }
        let samples = try SampleFolder.locate(samplesOption)
        let sampleMedia = try SampleMedia(
            speechWAV: "\(samples)/speech-48k-stereo.wav", videoIVF: "\(samples)/motion-640x360.ivf")
        let media = try sampleMedia.userMedia(variant: variant)
        var source = JoinSource(samples: sampleMedia)
        if let video { try source.loadVideo(video) }
        if let audio { try source.loadAudio(audio) }
        let encodeVideo = encode || video != nil
        let encodeAudioLive = encode || encodeAudio || audio != nil
        let recordingFrameRate = max(
            1, (source.frameRateNumerator + source.frameRateDenominator / 2) / source.frameRateDenominator)
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)

        var settings = JanusTransportConfiguration(url: url)
        settings.numericIds = numericIds
        settings.localAddresses = localAddress
        settings.reconnectTimeoutSeconds = reconnectTimeout
        settings.sessionTimeoutSeconds = sessionTimeout
        settings.trustedCertificatesPath = trustedCertificates
        if let ports {
            let bounds = ports.split(separator: "-").compactMap { Int($0) }
            guard bounds.count == 2, bounds[0] >= 1, bounds[0] <= bounds[1], bounds[1] <= 65535 else {
                throw ValidationError("--ports '\(ports)' is not FIRST-LAST within 1...65535")
            }
            settings.localPorts = bounds[0]...bounds[1]
        }
        var logger = Logger(label: "MediaPipeline")
        logger.logLevel = verbose ? .debug : .warning
        let transport = try JanusTransport(configuration: settings, logger: logger)
        defer { transport.close() }
        var engineSettings = EngineConfiguration()
        engineSettings.logger = logger
        engineSettings.keyframeRequestIntervalMs = keyframeRequestInterval
        let engine = try MediaEngine(transport: transport, clock: WallClock(), configuration: engineSettings)
        defer { engine.destroy() }
        // The pre-encoded low layer is the samples' own pictures' (SampleMedia.lowVP8Frames):
        // low frame i is high frame i × lowLayerPictureStep.
        var lowFrames: [EncodedFrame] = []
        if dualStream {
            if !encodeVideo && publish != nil {
                guard variant == 0 else {
                    throw ValidationError(
                        "--dual-stream with pre-encoded video needs --variant 0 (only the samples' own pictures "
                            + "have a low layer), or --encode")
                }
                lowFrames = try sampleMedia.lowVP8Frames()
            }
            try engine.enableDualStreamMode(true)
        }
        engine.setRemoteSubscribeFallbackOption(fallbackOption)
        let printer = EventPrinter(json: eventsJson)
        if md5 { engine.setVideoFrameObserver(printer) }

        var joined: [MediaChannel] = []
        for channelId in channels {
            let channel = try engine.createChannel(channelId)
            channel.setEventHandler { printer.print(channelId, $0) }
            if defaultVideoType != .high { try channel.setRemoteDefaultVideoStreamType(defaultVideoType) }
            if channelId == publish {
                try channel.setClientRole(.broadcaster)
                try channel.join(token: token, uid: uid)
            } else {
                try channel.setClientRole(.audience)
                try channel.join(token: token, uid: uid, options: .subscribeOnly)
            }
            joined.append(channel)
        }
        var schedule = try actions.map(ScheduledAction.init(parsing:)).sorted { $0.seconds < $1.seconds }
        var relaying = relay.isEmpty
        guard relay.isEmpty || publish != nil else { throw ValidationError("--relay needs --publish") }
        Interruption.catchSignals()
        var recordings: [ChannelRecording] = []
        var userRecordings: [StreamKey: StreamRecording] = [:]
        let clock = ContinuousClock()
        let start = clock.now
        let videoPeriodMicroseconds = Int64(1_000_000 / sampleMedia.videoFrameRate)
        var videoIndex = 0
        var playout = AudioFrame(silenceOf: 480, sampleRate: 48000, channelCount: 2)
        var tick = 0
        while !Interruption.wasRaised && Double(tick) * 0.01 < duration
            && printer.failures.count < channels.count
        {
            // Recordings start once their channel is joined (the join is answered asynchronously).
            for channelId in channels where !recordings.contains(where: { $0.channelId == channelId }) {
                if let recording = try? engine.startChannelRecording(
                    channelId: channelId, path: "\(output)/\(channelId).webm", width: 640, height: 360,
                    framesPerSecond: recordingFrameRate)
                {
                    recordings.append(recording)
                }
            }
            // The relay starts once the publishing channel is joined.
            if !relaying, let publish, printer.joinedChannels.contains(publish),
                let channel = zip(channels, joined).first(where: { $0.0 == publish })?.1
            {
                try channel.startChannelMediaRelay(relay.map { ChannelMediaRelayDestination(channelId: $0) })
                relaying = true
            }
            // Each remote user gets a canvas (the channel recording's grid draws the canvases)
            // and, with --record-users, a recording of its tracks.
            for user in printer.takeJoinedUsers() {
                _ = try? engine.setupRemoteVideo(
                    VideoCanvas(channelId: user.channelId, uid: user.uid, width: 640, height: 360, renderMode: .fit))
                if recordUsers && userRecordings[user] == nil {
                    userRecordings[user] = try? engine.startRecording(
                        channelId: user.channelId, uid: user.uid,
                        path: "\(output)/user-\(user.channelId)-\(user.uid).webm")
                }
            }
            let elapsed = clock.now - start
            let now = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
            while let next = schedule.first, Double(now) / 1_000_000 >= next.seconds {
                schedule.removeFirst()
                try next.apply(
                    engine: engine, channels: Dictionary(uniqueKeysWithValues: zip(channels, joined)),
                    publishing: publish)
            }
            // The looped samples get the session's time, so the stream's clock advances steadily
            // as a live sender's does.
            // Audio is stamped by its sample count (20 ms a packet), not by when the loop came
            // round: a receiver's jitter buffer reads uneven steps as gaps and overlaps.
            if publish != nil && encodeAudioLive {
                try engine.pushAudio(source.audioFrames[tick % source.audioFrames.count])
            } else if publish != nil && tick % 2 == 0 {
                try engine.pushEncodedFrame(
                    media.opusPackets[(tick / 2) % media.opusPackets.count].restamped(Int64(tick / 2) * 20_000))
            }
            let videoDue =
                now
                >= (encodeVideo
                    ? source.pictureTimeMicroseconds(videoIndex) : Int64(videoIndex) * videoPeriodMicroseconds)
            if videoDue {
                if publish != nil && encodeVideo {
                    try engine.pushVideo(
                        source.pictures[videoIndex % source.pictures.count], timestampMicroseconds: now)
                } else if publish != nil {
                    let position = videoIndex % media.vp8Frames.count
                    let timestamp = Int64(videoIndex) * videoPeriodMicroseconds
                    try engine.pushEncodedFrame(media.vp8Frames[position].restamped(timestamp))
                    let step = sampleMedia.lowLayerPictureStep
                    if !lowFrames.isEmpty && position % step == 0 {
                        try engine.pushEncodedFrame(lowFrames[position / step].restamped(timestamp), layer: .low)
                    }
                }
                videoIndex += 1
            }
            engine.pullPlayout(into: &playout)
            // Rendered every tick, as a display would: each picture reaches its canvas (and the
            // channel recording) within 10 ms of when it is due, not at the next local frame.
            engine.renderVideo()
            tick += 1
            let ahead = start + .milliseconds(10 * tick) - clock.now
            let microseconds = ahead.components.seconds * 1_000_000 + ahead.components.attoseconds / 1_000_000_000_000
            if microseconds > 0 { usleep(UInt32(microseconds)) }
        }
        if verbose {
            for connection in transport.statistics { printError("janus connection: \(connection)") }
        }
        for channel in joined { try? channel.leave() }
        for recording in recordings { try engine.stopChannelRecording(recording) }
        for recording in userRecordings.values { try engine.stopRecording(recording) }
        if let failure = printer.failures.first {
            throw EngineError(failure.code, "channel '\(failure.channelId)': \(failure.message)")
        }
        if let pending = channels.first(where: { !printer.joinedChannels.contains($0) }) {
            throw EngineError(.notReady, "channel '\(pending)': the join was not answered within --duration")
        }
    }
}

/// An action `pipebench join --at` takes at a time in the session.
private struct ScheduledAction {
    var seconds: Double
    var action: String
    var argument: String?

    init(parsing text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count >= 2, let seconds = Double(parts[0]), seconds >= 0 else {
            throw ValidationError("--at '\(text)' is not SECONDS:ACTION")
        }
        self.seconds = seconds
        action = parts[1]
        argument = parts.count > 2 ? parts[2] : nil
        let plain = ["mute-audio", "unmute-audio", "mute-video", "unmute-video", "dual-stream-on", "dual-stream-off"]
        let withUid = [
            "mute-remote-audio", "unmute-remote-audio", "mute-remote-video", "unmute-remote-video", "high-video",
            "low-video",
        ]
        let withChannel = ["audience", "broadcaster", "leave"]
        if plain.contains(action) { return }
        if withUid.contains(action), let argument, UInt32(argument) != nil { return }
        if withChannel.contains(action), argument != nil { return }
        throw ValidationError("--at '\(text)': unknown action or missing UID/CHANNEL")
    }

    func apply(engine: MediaEngine, channels: [String: MediaChannel], publishing: String?) throws {
        func channel(_ id: String?) throws -> MediaChannel {
            guard let id, let channel = channels[id] else {
                throw ValidationError("--at \(action): channel '\(id ?? "")' is not joined by this command")
            }
            return channel
        }
        switch action {
        case "mute-audio", "unmute-audio": try channel(publishing).muteLocalAudioStream(action == "mute-audio")
        case "mute-video", "unmute-video": try channel(publishing).muteLocalVideoStream(action == "mute-video")
        case "dual-stream-on", "dual-stream-off": try engine.enableDualStreamMode(action == "dual-stream-on")
        case "audience": try channel(argument).setClientRole(.audience)
        case "broadcaster": try channel(argument).setClientRole(.broadcaster)
        case "leave": try channel(argument).leave()
        case "high-video", "low-video":
            let uid = UInt32(argument ?? "") ?? 0
            for channel in channels.values {
                try? channel.setRemoteVideoStreamType(uid, type: action == "low-video" ? .low : .high)
            }
        default:
            let uid = UInt32(argument ?? "") ?? 0
            let mute = action.hasPrefix("mute")
            for channel in channels.values {
                if action.hasSuffix("audio") {
                    try? channel.muteRemoteAudioStream(uid, mute: mute)
                } else {
                    try? channel.muteRemoteVideoStream(uid, mute: mute)
                }
            }
        }
    }
}

/// Prints channel events and decoded pictures' MD5s as they come, one line each.
private final class EventPrinter: VideoFrameObserver, Sendable {
    private let json: Bool
    private let start = ContinuousClock.now
    private let lines = Guarded<Int>(0)
    private let failed = Guarded<[(channelId: String, code: EngineError.Code, message: String)]>([])
    private let joinedUsers = Guarded<[StreamKey]>([])
    private let joined = Guarded<Set<String>>([])

    /// The channels whose join succeeded.
    var joinedChannels: Set<String> { joined.withLock { $0 } }

    /// The remote users announced since the last call.
    func takeJoinedUsers() -> [StreamKey] {
        joinedUsers.withLock { users in
            defer { users.removeAll() }
            return users
        }
    }

    init(json: Bool) { self.json = json }

    /// The channels whose join failed, with the error.
    var failures: [(channelId: String, code: EngineError.Code, message: String)] { failed.withLock { $0 } }

    func print(_ channelId: String, _ event: ChannelEvent) {
        let elapsed = ContinuousClock.now - start
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        // A refused join brings an error event naming the cause (after its failed state); a
        // joined channel whose connection is lost for good only its failed state.
        if case .error(let code, let message) = event {
            failed.withLock { failed in
                if !failed.contains(where: { $0.channelId == channelId }) { failed.append((channelId, code, message)) }
            }
        }
        if case .connectionStateChanged(.failed, let reason) = event, joinedChannels.contains(channelId) {
            failed.withLock { failed in
                if !failed.contains(where: { $0.channelId == channelId }) {
                    failed.append((channelId, .notReady, "the connection failed (\(reason))"))
                }
            }
        }
        if case .joinSuccess = event { _ = joined.withLock { $0.insert(channelId) } }
        if case .userJoined(let uid, _) = event {
            joinedUsers.withLock { $0.append(StreamKey(channelId: channelId, uid: uid)) }
        }
        // "remoteVideoStateChanged(uid: 11, state: starting, …)": the case, then its values.
        let text = "\(event)".replacingOccurrences(of: "MediaPipeline.", with: "")
        if json {
            let name = String(text.prefix { $0 != "(" })
            let object: [String: Any] = ["ms": ms, "channel": channelId, "event": name, "text": text]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            emit(String(decoding: data, as: UTF8.self))
        } else {
            emit("\(ms) ms \(channelId): \(text)")
        }
    }

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        let digest = picture.md5()
        if json {
            let elapsed = ContinuousClock.now - start
            let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            emit(
                "{\"channel\":\"\(stream.channelId)\",\"height\":\(picture.height),\"md5\":\"\(digest)\","
                    + "\"ms\":\(ms),\"rtpTimestamp\":\(rtpTimestamp),\"uid\":\(stream.uid),\"width\":\(picture.width)}"
            )
        } else {
            emit("frame \(stream.channelId) \(stream.uid) \(picture.width)x\(picture.height) \(digest)")
        }
    }

    /// One line on standard output, whole even when several threads print.
    private func emit(_ line: String) {
        lines.withLock { count in
            count += 1
            var text = line + "\n"
            text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
        }
    }

}
