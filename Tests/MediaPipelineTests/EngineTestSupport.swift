import Foundation
import Testing

@testable import MediaPipeline

/// Events of one channel, recorded in order.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [ChannelEvent] = []

    init(_ channel: MediaChannel) {
        channel.setEventHandler { [weak self] event in self?.append(event) }
    }

    private func append(_ event: ChannelEvent) { lock.withLock { recorded.append(event) } }

    /// Every event but connection state changes (those are in ``connectionStates``) and the
    /// periodic statistics (in ``statistics``).
    var events: [ChannelEvent] { lock.withLock { recorded.filter { !$0.isConnectionStateChange } } }

    /// The connection state changes, as (state, reason) pairs.
    var connectionStates: [(ConnectionState, ConnectionChangedReason)] {
        lock.withLock {
            recorded.compactMap {
                if case .connectionStateChanged(let state, let reason) = $0 { (state, reason) } else { nil }
            }
        }
    }

    /// The periodic statistics events, in order.
    var statistics: [ChannelEvent] {
        lock.withLock {
            recorded.filter {
                switch $0 {
                case .rtcStats, .remoteAudioStats, .remoteVideoStats: true
                default: false
                }
            }
        }
    }

    /// Removes and returns what was recorded so far (connection state changes aside).
    func take() -> [ChannelEvent] {
        lock.withLock {
            defer { recorded.removeAll() }
            return recorded.filter { !$0.isConnectionStateChange }
        }
    }

    /// The remote audio (or video) state changes of `uid`, as (state, reason) pairs.
    func remoteStates(_ uid: UInt32, _ kind: MediaKind) -> [(RemoteStreamState, RemoteStreamStateReason)] {
        events.compactMap { event in
            switch event {
            case .remoteAudioStateChanged(let u, let state, let reason, _) where kind == .audio && u == uid:
                (state, reason)
            case .remoteVideoStateChanged(let u, let state, let reason, _) where kind == .video && u == uid:
                (state, reason)
            default: nil
            }
        }
    }
}

/// A user: an engine with its channels and a synthetic media source.
final class TestUser {
    let engine: MediaEngine
    let frequency: Double
    var audioPosition = 0
    var videoFrame = 0
    var channels: [String: MediaChannel] = [:]
    var logs: [String: EventLog] = [:]
    var playout: [Int16]
    /// Everything this user pushed (48 kHz stereo, interleaved), for reference decodes.
    var sent: [Int16] = []
    /// Everything this user's playout gave (48 kHz stereo, interleaved), pull after pull.
    var heard: [Int16] = []

    init(
        _ session: TestSession, frequency: Double = 440, configuration: EngineConfiguration = .init(),
        transport: MediaTransport? = nil
    ) throws {
        engine = try MediaEngine(
            transport: transport ?? session.hub, clock: session.clock, configuration: configuration)
        self.frequency = frequency
        playout = [Int16](repeating: 0, count: engine.playoutFrameSampleCount)
    }

    @discardableResult
    func channel(_ id: String) throws -> MediaChannel {
        if let channel = channels[id] { return channel }
        let channel = try engine.createChannel(id)
        channels[id] = channel
        logs[id] = EventLog(channel)
        return channel
    }

    func join(_ id: String, uid: UInt32, options: ChannelMediaOptions = .init(), role: ClientRole = .broadcaster) throws
    {
        let channel = try self.channel(id)
        try channel.setClientRole(role)
        try channel.join(uid: uid, options: options)
    }

    /// Pushes 10 ms of this user's tone.
    func pushAudio(amplitude: Double = 8000) throws {
        var samples = [Int16](repeating: 0, count: 960)
        for i in 0..<480 {
            let value = Int16(amplitude * sin(2 * .pi * frequency * Double(audioPosition + i) / 48000))
            samples[2 * i] = value
            samples[2 * i + 1] = value
        }
        audioPosition += 480
        sent += samples
        try engine.pushAudio(AudioFrame(samples: samples, sampleRate: 48000, channelCount: 2))
    }

    /// Where this user's pictures start in the ``syntheticPicture(width:height:frame:)``
    /// sequence: users with different offsets send different pictures.
    var pictureOffset = 0

    func pushVideo(width: Int = 160, height: Int = 90, timestamp: Int64) throws {
        try engine.pushVideo(
            try syntheticPicture(width: width, height: height, frame: videoFrame + pictureOffset),
            timestampMicroseconds: timestamp)
        videoFrame += 1
    }

    /// Pulls 10 ms of playout into ``playout``.
    func pull() {
        playout.withUnsafeMutableBufferPointer { engine.pullPlayout(into: $0) }
        heard += playout
    }

    var playoutPeak: Int { playout.map { abs(Int($0)) }.max() ?? 0 }
}

/// A hub, a virtual clock and users, stepped in 10 ms ticks.
final class TestSession {
    let clock: VirtualClock
    let hub: LocalHub
    var users: [TestUser] = []
    private var tick = 0

    init(seed: UInt64 = 7, clock: VirtualClock = VirtualClock()) {
        self.clock = clock
        hub = LocalHub(clock: clock, seed: seed)
    }

    func user(
        frequency: Double = 440, configuration: EngineConfiguration = .init(), transport: MediaTransport? = nil
    ) throws -> TestUser {
        let user = try TestUser(self, frequency: frequency, configuration: configuration, transport: transport)
        users.append(user)
        return user
    }

    /// A broadcaster (uid 1) and an audience member (uid 2) in channel `a`.
    func hostAndViewer() throws -> (host: TestUser, viewer: TestUser) {
        let host = try user()
        let viewer = try user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        return (host, viewer)
    }

    /// Runs `ticks` × 10 ms: every user pushes audio (and video at 15 fps), pulls playout and renders video.
    func run(ticks: Int, video: Bool = false, publishers: [TestUser]? = nil) throws {
        for _ in 0..<ticks {
            for user in publishers ?? users {
                try user.pushAudio()
                if video && tick % 7 == 0 { try user.pushVideo(timestamp: clock.nowMicroseconds) }
            }
            for user in users {
                user.pull()
                if video { user.engine.renderVideo() }
            }
            clock.advance(byMicroseconds: 10_000)
            hub.deliverDue()
            tick += 1
        }
    }
}

/// Expects `body` to throw an ``EngineError`` with `code`.
func expectEngineError(
    _ code: EngineError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as EngineError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

extension ChannelEvent {
    /// The code of an error event, nil for other events.
    var errorCode: EngineError.Code? {
        if case .error(let code, _) = self { code } else { nil }
    }

    /// Connection state changes and the periodic statistics, which the event sequences under
    /// test leave aside.
    var isConnectionStateChange: Bool {
        switch self {
        case .connectionStateChanged, .rtcStats, .remoteAudioStats, .remoteVideoStats: true
        default: false
        }
    }
}
