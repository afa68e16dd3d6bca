import Testing

@testable import MediaPipeline

@Suite("Engine: playout in the format the app asks for, local audio in the format it set", .timeLimit(.minutes(5)))
struct EnginePlayoutFormatTests {
    /// A viewer whose engine plays out (and takes local audio) at `rate` with `channels`.
    private func viewer(_ session: TestSession, rate: Int, channels: Int) throws -> TestUser {
        var configuration = EngineConfiguration()
        configuration.audio.sampleRate = rate
        configuration.audio.channelCount = channels
        configuration.playoutSampleRate = rate
        configuration.playoutChannelCount = channels
        return try session.user(configuration: configuration)
    }

    @Test(
        "pullPlayout at 8, 16, 24 and 48 kHz, mono or stereo: 10 ms frames of that format, the host's reference decode at that format sample for sample",
        arguments: [(8000, 1), (16000, 1), (24000, 2), (48000, 1)])
    func formats(rate: Int, channels: Int) throws {
        let session = TestSession()
        let host = try session.user(frequency: 300)
        try host.join("a", uid: 1)
        let viewer = try viewer(session, rate: rate, channels: channels)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        #expect(viewer.engine.playoutFrameSampleCount == rate / 100 * channels)
        try session.run(ticks: 40, publishers: [host])
        var frame = AudioFrame(samples: [], sampleRate: 48000, channelCount: 2)
        viewer.engine.pullPlayout(into: &frame)
        #expect(
            frame.sampleRate == rate && frame.channelCount == channels && frame.samples.count == rate / 100 * channels)
        // What Opus's own decoder makes of the host's packets at this rate and channel count.
        let match = try expectHears(viewer, [host], exact: true)
        print("playout at \(rate) Hz × \(channels): \(match)")
    }

    @Test("local audio in another format than the engine's is refused, naming both formats; nothing is sent")
    func refusedPushFormat() throws {
        let session = TestSession()
        let host = try viewer(session, rate: 16000, channels: 1)
        try host.join("a", uid: 1)
        let watcher = try session.user()
        try watcher.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        for (rate, channels) in [(48000, 2), (16000, 2), (44100, 1)] {
            let frame = AudioFrame(
                samples: [Int16](repeating: 1000, count: rate / 100 * channels), sampleRate: rate,
                channelCount: channels)
            expectMediaError(naming: "\(rate) Hz × \(channels)", "16000 Hz × 1") { try host.engine.pushAudio(frame) }
        }
        #expect(host.engine.statistics.audioFramesEncoded == 0)
        // The engine's own format goes through: four pushes of 10 ms, two Opus frames of 20 ms.
        let good = AudioFrame(samples: [Int16](repeating: 1000, count: 160), sampleRate: 16000, channelCount: 1)
        for _ in 0..<4 { try host.engine.pushAudio(good) }
        #expect(host.engine.statistics.audioFramesEncoded == 2)
    }

    @Test("an engine whose local audio rate is not its playout rate, or a rate Opus does not take, is refused")
    func refusedConfigurations() throws {
        let session = TestSession()
        var mismatched = EngineConfiguration()
        mismatched.playoutSampleRate = 16000
        expectMediaError(naming: "16000 Hz") {
            _ = try MediaEngine(transport: session.hub, clock: session.clock, configuration: mismatched)
        }
        var unsupported = EngineConfiguration()
        unsupported.audio.sampleRate = 44100
        unsupported.playoutSampleRate = 44100
        expectMediaError(naming: "44100") {
            _ = try MediaEngine(transport: session.hub, clock: session.clock, configuration: unsupported)
        }
    }
}
