import Foundation
import Logging
import Testing

@testable import MediaPipeline

/// A log handler that keeps what it is given.
private struct CapturingLogHandler: LogHandler {
    final class Store: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [(Logger.Level, String, Logger.Metadata?)] = []
        func append(_ line: (Logger.Level, String, Logger.Metadata?)) { lock.withLock { lines.append(line) } }
        var all: [(level: Logger.Level, message: String, metadata: Logger.Metadata?)] { lock.withLock { lines } }
    }
    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        store.append((event.level, "\(event.message)", event.metadata))
    }
}

@Suite("Engine: logging")
struct EngineLoggingTests {
    @Test("joins, state changes, keyframe requests and failures with their cause are logged; frames are not")
    func logged() throws {
        let store = CapturingLogHandler.Store()
        var configuration = EngineConfiguration()
        configuration.logger = Logger(label: "test") { _ in CapturingLogHandler(store: store) }
        let session = TestSession()
        let host = try session.user()
        try host.join("a", uid: 1)
        let viewer = try session.user(configuration: configuration)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 30, video: true, publishers: [host])
        // Undecodable audio: the warning names the codec's complaint.
        try host.engine.pushEncodedFrame(
            EncodedFrame(
                bytes: [0xFF, 0xFF, 0xFF, 0xFF], codec: .opus, isKeyframe: true,
                timestampMicroseconds: session.clock.nowMicroseconds, durationMicroseconds: 20_000))
        for _ in 0..<10 {
            viewer.pull()
            session.clock.advance(byMicroseconds: 10_000)
        }
        try viewer.channel("a").leave()
        let lines = store.all
        #expect(lines.contains { $0.level == .info && $0.message == "joined as uid 2 after 0 ms" })
        #expect(lines.contains { $0.message == "connection connected (joinSuccess)" })
        #expect(lines.contains { $0.level == .debug && $0.message == "user 1 video decoding (internal)" })
        #expect(
            lines.contains {
                $0.level == .warning && $0.message == "user 1 audio: opus_decode failed: corrupted stream (-4)"
            })
        #expect(lines.contains { $0.level == .warning && $0.message == "user 1 audio failed (internal)" })
        #expect(lines.contains { $0.level == .info && $0.message.hasPrefix("left after 400 ms") })
        #expect(lines.allSatisfy { $0.metadata?["channel"] == "a" })
        // Nothing per frame: 30 ticks of media made a few dozen lines, not hundreds.
        #expect(lines.count < 40, "\(lines.count) lines")
    }
}
