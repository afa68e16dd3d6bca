import Foundation
import MediaPipeline

/// Settings of a simulated multi-channel session.
public struct SimulationConfiguration: Sendable {
    /// Channels, each with ``usersPerChannel`` remote broadcasters.
    public var channels = 2
    /// Remote broadcasters per channel, each replaying the sample media.
    public var usersPerChannel = 3
    /// Session length in seconds of the virtual clock.
    public var durationSeconds = 3.0
    /// Canvas size for every remote user, and its render mode.
    public var canvasWidth = 320, canvasHeight = 180
    /// How remote pictures are fitted into canvases.
    public var renderMode = RenderMode.hidden
    /// Whether the local user publishes (in the first channel) besides subscribing everywhere.
    public var localPublishes = true
    /// What the network does between every remote user and the local user (both ways).
    public var link = LinkConditions()
    /// Fixes every random choice of the session (link impairments, SSRCs), so the same seed
    /// replays the same session exactly.
    public var seed: UInt64 = 1

    /// The defaults: 2 channels × 3 users for 3 s.
    public init() {}

    func validate() throws {
        guard (1...64).contains(channels) else {
            throw MediaError(.invalidArgument, "channels \(channels) is outside 1...64")
        }
        guard (1...256).contains(usersPerChannel) else {
            throw MediaError(.invalidArgument, "users per channel \(usersPerChannel) is outside 1...256")
        }
        guard durationSeconds > 0, durationSeconds <= 3600 else {
            throw MediaError(.invalidArgument, "duration \(durationSeconds) s is outside (0, 3600]")
        }
        guard (16...3840).contains(canvasWidth), (16...2160).contains(canvasHeight) else {
            throw MediaError(
                .invalidArgument, "canvas size \(canvasWidth)x\(canvasHeight) is outside 16x16...3840x2160")
        }
        try link.validate()
    }
}

/// One statistics report the local user received during a simulated session (each channel
/// reports every 2 s: each remote user's audio and video, then the channel's).
public struct StatisticsRecord: Sendable {
    /// What was reported.
    public enum Kind: Sendable {
        case channel(RtcStats)
        case audio(RemoteAudioStats)
        case video(RemoteVideoStats)
    }
    /// The channel reporting.
    public var channelId: String
    /// Session time when the report came, in milliseconds.
    public var sessionMs: Int64
    public var kind: Kind
}

/// What a simulated session did, per channel.
public struct SimulationReport: Sendable {
    /// One channel's figures.
    public struct ChannelReport: Sendable {
        /// The channel.
        public var channelId: String
        /// Remote broadcasters seen at the end.
        public var users: Int
        /// The local user's statistics in the channel.
        public var stats: ChannelStats
        /// Remote stream state changes reported (audio and video).
        public var stateChanges: Int
        /// Streams whose audio and video both reached DECODING.
        public var streamsDecoding: Int
        /// Canvas frames rendered in the channel.
        public var canvasFramesRendered: Int
        /// What the links from the channel's remote users to the local user did.
        public var link: LinkStatistics
    }

    /// Per channel, in creation order.
    public var channels: [ChannelReport]
    /// Virtual seconds simulated.
    public var durationSeconds: Double
    /// The local engine's counters.
    public var localStatistics: EngineStatistics
    /// Peak of the playout mix.
    public var playoutPeak: Int
    /// Every statistics report received, in order.
    public var statistics: [StatisticsRecord]
}

/// Runs a multi-channel session on a ``LocalHub`` and a ``VirtualClock``: remote broadcasters in
/// every channel replay the sample media; the local user subscribes everywhere, publishes in the
/// first channel, mixes all audio and renders every remote user into a canvas.
public final class SessionSimulator {
    /// The settings.
    public let configuration: SimulationConfiguration
    /// The local user's engine.
    public let local: MediaEngine
    /// The local user's channels, in order.
    public let channels: [MediaChannel]
    private let hub: LocalHub
    private let clock = VirtualClock()
    private let media: SampleMedia
    /// The remote users: their engines and their own media (users differ to eye and ear).
    private var remotes: [(engine: MediaEngine, media: UserMedia)] = []
    private let eventCounter: Counter

    /// What the local user's channel events said: state changes counted, statistics reports
    /// kept with the session time they came at (storage reserved for the whole session, so
    /// keeping them allocates nothing).
    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var changes: [String: Int] = [:]
        private var records: [StatisticsRecord] = []
        /// Reports handed to ``drain(_:)`` so far.
        private var drained = 0
        init(expectedRecords: Int) { records.reserveCapacity(expectedRecords) }
        func add(_ channelId: String) { lock.withLock { changes[channelId, default: 0] += 1 } }
        func count(_ channelId: String) -> Int { lock.withLock { changes[channelId] ?? 0 } }
        func report(_ record: StatisticsRecord) { lock.withLock { records.append(record) } }
        /// Passes each report kept since the last call to `body`.
        func drain(_ body: ((StatisticsRecord) -> Void)?) {
            let fresh = lock.withLock { () -> ArraySlice<StatisticsRecord>? in
                defer { drained = records.count }
                return body == nil || drained == records.count ? nil : records[drained...]
            }
            if let fresh, let body { fresh.forEach(body) }
        }
        var all: [StatisticsRecord] { lock.withLock { records } }
    }

    /// Channel ids used by the simulation.
    public static func channelId(_ index: Int) -> String { "channel-\(index + 1)" }

    /// Sets up the session: every user joined, canvases bound.
    public init(configuration: SimulationConfiguration, media: SampleMedia) throws {
        try configuration.validate()
        self.configuration = configuration
        self.media = media
        // Per channel every 2 s: each user's audio and video, and the channel's.
        let intervals = Int(configuration.durationSeconds / 2) + 1
        eventCounter = Counter(
            expectedRecords: intervals * configuration.channels * (2 * configuration.usersPerChannel + 1))
        hub = LocalHub(clock: clock, seed: configuration.seed)
        var settings = EngineConfiguration()
        settings.randomSeed = configuration.seed
        local = try MediaEngine(transport: hub, clock: clock, configuration: settings)
        var channels: [MediaChannel] = []
        var variants: [UserMedia] = []
        for index in 0..<configuration.channels {
            let id = Self.channelId(index)
            for user in 0..<configuration.usersPerChannel {
                settings.randomSeed = configuration.seed &+ UInt64(1 + index * 1000 + user)
                let remote = try MediaEngine(transport: hub, clock: clock, configuration: settings)
                let channel = try remote.createChannel(id)
                try channel.join(
                    uid: UInt32(1000 + index * 1000 + user),
                    options: ChannelMediaOptions(autoSubscribeAudio: false, autoSubscribeVideo: false))
                let variant = index * configuration.usersPerChannel + user
                if variants.count < SampleMedia.userVariants { variants.append(try media.userMedia(variant: variant)) }
                remotes.append((remote, variants[variant % SampleMedia.userVariants]))
            }
            let channel = try local.createChannel(id)
            let counter = eventCounter
            let clock = clock
            channel.setEventHandler { event in
                let kind: StatisticsRecord.Kind
                switch event {
                case .remoteAudioStateChanged, .remoteVideoStateChanged:
                    counter.add(id)
                    return
                case .rtcStats(let stats): kind = .channel(stats)
                case .remoteAudioStats(let stats): kind = .audio(stats)
                case .remoteVideoStats(let stats): kind = .video(stats)
                default: return
                }
                counter.report(StatisticsRecord(channelId: id, sessionMs: clock.nowMicroseconds / 1000, kind: kind))
            }
            let publishes = configuration.localPublishes && index == 0
            if !publishes { try channel.setClientRole(.audience) }
            try channel.join(uid: 1, options: publishes ? ChannelMediaOptions() : .subscribeOnly)
            for user in 0..<configuration.usersPerChannel {
                try hub.setLinkConditions(
                    configuration.link, channelId: id, publisher: UInt32(1000 + index * 1000 + user), receiver: 1)
                _ = try local.setupRemoteVideo(
                    VideoCanvas(
                        channelId: id, uid: UInt32(1000 + index * 1000 + user), width: configuration.canvasWidth,
                        height: configuration.canvasHeight, renderMode: configuration.renderMode))
            }
            channels.append(channel)
        }
        self.channels = channels
    }

    /// Runs the session. `playout` receives each 10 ms of the mix; `videoTick` is called after
    /// each video frame has been rendered into the canvases; `statistics` gets each statistics
    /// report as it comes (every 2 s per channel); `progress` gets 0...1.
    public func run(
        playout: ((UnsafeBufferPointer<Int16>) throws -> Void)? = nil, videoTick: (() throws -> Void)? = nil,
        statistics: ((StatisticsRecord) -> Void)? = nil, progress: ((Double) -> Void)? = nil
    ) throws -> SimulationReport {
        let ticks = Int((configuration.durationSeconds * 100).rounded())
        var mix = [Int16](repeating: 0, count: local.playoutFrameSampleCount)
        var peak = 0
        let videoPeriod = Int64(1_000_000 / media.videoFrameRate)
        var nextVideo: Int64 = 0
        var videoIndex = 0
        for tick in 0..<ticks {
            let now = clock.nowMicroseconds
            if tick % 2 == 0 {
                for remote in remotes {
                    // Replayed packets get the session's time, so the looped sample keeps a
                    // steadily advancing clock like a live sender (the bytes are shared, not copied).
                    let packets = remote.media.opusPackets
                    let packet = packets[(tick / 2) % packets.count]
                    try remote.engine.pushEncodedFrame(packet.restamped(now))
                }
            }
            try local.pushAudio(media.audioFrames[tick % media.audioFrames.count])
            let videoDue = now >= nextVideo
            if videoDue {
                for remote in remotes {
                    let frames = remote.media.vp8Frames
                    try remote.engine.pushEncodedFrame(frames[videoIndex % frames.count].restamped(now))
                }
                try local.pushVideo(media.pictures[videoIndex % media.pictures.count], timestampMicroseconds: now)
                videoIndex += 1
                nextVideo += videoPeriod
            }
            try mix.withUnsafeMutableBufferPointer { buffer in
                local.pullPlayout(into: buffer)
                for sample in buffer { peak = max(peak, abs(Int(sample))) }
                try playout?(UnsafeBufferPointer(buffer))
            }
            if videoDue {
                local.renderVideo()
                try videoTick?()
            }
            eventCounter.drain(statistics)
            clock.advance(byMicroseconds: 10_000)
            hub.deliverDue()
            if tick % 50 == 0 { progress?(Double(tick) / Double(ticks)) }
        }
        progress?(1)
        let reports = channels.map { channel -> SimulationReport.ChannelReport in
            let users = channel.remoteUsers
            let decoding = users.filter {
                channel.remoteState($0, .audio) == .decoding && channel.remoteState($0, .video) == .decoding
            }
            let rendered = local.canvases(inChannel: channel.channelId).reduce(0) { $0 + $1.framesRendered }
            var link = LinkStatistics()
            for uid in users {
                guard let one = hub.linkStatistics(channelId: channel.channelId, publisher: uid, receiver: 1)
                else { continue }
                link.packetsOffered += one.packetsOffered
                link.packetsLost += one.packetsLost
                link.packetsDuplicated += one.packetsDuplicated
            }
            return SimulationReport.ChannelReport(
                channelId: channel.channelId, users: users.count, stats: channel.statistics,
                stateChanges: eventCounter.count(channel.channelId), streamsDecoding: decoding.count,
                canvasFramesRendered: rendered, link: link)
        }
        return SimulationReport(
            channels: reports, durationSeconds: Double(ticks) / 100, localStatistics: local.statistics,
            playoutPeak: peak, statistics: eventCounter.all)
    }

    /// Tears the session down (every engine leaves).
    public func finish() {
        local.destroy()
        for remote in remotes { remote.engine.destroy() }
        remotes.removeAll()
    }
}
