import MediaPipeline

/// The fan-out path on its own: one publishing engine and `subscribers` engines that join its
/// channel on a ``LocalHub`` as audience and subscribe to it. What the publisher pushes is
/// encoded once (or arrives encoded) and reaches every subscriber's receive queue by reference;
/// `pipebench bench` and the benchmarks time it per subscriber.
public final class FanOutLoad {
    /// The publishing engine (uid 1, broadcaster, audio and video).
    public let publisher: MediaEngine
    /// The transport, with its delivery counter.
    public let hub: LocalHub
    private let subscribers: [MediaEngine]
    /// The channel everyone is in.
    public static let channelId = "fan-out"

    /// Joins the publisher and `subscribers` subscribing engines, all on one virtual clock; every
    /// link from the publisher gets `link` (conditions that hold packets back are refused: the
    /// clock never moves here).
    public init(subscribers count: Int, link: LinkConditions = LinkConditions()) throws {
        guard (1...10_000).contains(count) else {
            throw MediaError(.invalidArgument, "subscribers \(count) is outside 1...10000")
        }
        let (hub, clock) = (LocalHub(), VirtualClock())
        self.hub = hub
        publisher = try MediaEngine(transport: hub, clock: clock)
        try publisher.createChannel(Self.channelId).join(uid: 1)
        subscribers = try (0..<count).map { index in
            let engine = try MediaEngine(transport: hub, clock: clock)
            let channel = try engine.createChannel(Self.channelId)
            try channel.setClientRole(.audience)
            try channel.join(uid: UInt32(100 + index), options: .subscribeOnly)
            return engine
        }
        playoutFrame = .allocate(capacity: publisher.playoutFrameSampleCount)
        playoutFrame.initialize(repeating: 0)
        if link != LinkConditions() {
            for index in 0..<count {
                try hub.setLinkConditions(link, channelId: Self.channelId, publisher: 1, receiver: UInt32(100 + index))
            }
        }
    }

    /// One 10 ms playout frame, reused by ``playOut()``.
    private let playoutFrame: UnsafeMutableBufferPointer<Int16>

    /// Runs every subscriber's playout tick once (one 10 ms frame pulled), on the calling thread:
    /// where the packets delivered since its last tick enter its jitter buffer. The fan-out path
    /// itself only hands each subscriber a reference; a benchmark runs this between the pushes
    /// it times, as the subscribers' own threads would.
    public func playOut() {
        for engine in subscribers { engine.pullPlayout(into: playoutFrame) }
    }

    deinit {
        playoutFrame.deallocate()
        for engine in subscribers { engine.destroy() }
        publisher.destroy()
    }
}
