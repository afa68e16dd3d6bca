import Foundation
import Testing

@testable import MediaPipeline

/// Counts what passes through the codecs it wraps.
private final class CodecCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    func add(_ key: String) { lock.withLock { counts[key, default: 0] += 1 } }
    subscript(key: String) -> Int { lock.withLock { counts[key] ?? 0 } }
}

private final class CountingVideoDecoder: VideoDecoding {
    let inner: VideoDecoding
    let counts: CodecCounts
    init(_ inner: VideoDecoding, _ counts: CodecCounts) {
        self.inner = inner
        self.counts = counts
    }
    func decode(_ packet: UnsafeRawBufferPointer, _ body: (I420View) throws -> Void) throws -> Int {
        counts.add("video decode")
        return try inner.decode(packet, body)
    }
}

private final class CountingAudioEncoder: AudioEncoding {
    let inner: AudioEncoding
    let counts: CodecCounts
    init(_ inner: AudioEncoding, _ counts: CodecCounts) {
        self.inner = inner
        self.counts = counts
    }
    var samplesPerFrame: Int { inner.samplesPerFrame }
    func encode(_ pcm: UnsafeBufferPointer<Int16>, timestampMicroseconds: Int64) throws -> EncodedFrame {
        counts.add("audio encode")
        return try inner.encode(pcm, timestampMicroseconds: timestampMicroseconds)
    }
}

@Suite("Engine: codec seams")
struct EngineCodecSeamTests {
    @Test("the engine encodes and decodes through its codec factory")
    func factory() throws {
        let counts = CodecCounts()
        var codecs = CodecFactory.libraries
        codecs.makeVideoDecoder = { CountingVideoDecoder(try CodecFactory.libraries.makeVideoDecoder($0, $1), counts) }
        codecs.makeAudioEncoder = { CountingAudioEncoder(try CodecFactory.libraries.makeAudioEncoder($0), counts) }
        var configuration = EngineConfiguration()
        configuration.codecs = codecs
        let session = TestSession()
        let host = try session.user(configuration: configuration)
        let viewer = try session.user(configuration: configuration)
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 40, video: true, publishers: [host])
        #expect(counts["audio encode"] == 20)
        #expect(Int64(counts["video decode"]) == (try viewer.channel("a").statistics.videoFramesDecoded))
        #expect(counts["video decode"] >= 5)
        try expectHears(viewer, [host], exact: true)
    }

    @Test("a decoder that fails is reported as FAILED (INTERNAL), never as a picture")
    func failingDecoder() throws {
        final class Broken: VideoDecoding {
            func decode(_ packet: UnsafeRawBufferPointer, _ body: (I420View) throws -> Void) throws -> Int {
                throw MediaError(.codecFailure, "scripted failure")
            }
        }
        var configuration = EngineConfiguration()
        configuration.codecs.makeVideoDecoder = { _, _ in Broken() }
        let session = TestSession()
        let host = try session.user()
        let viewer = try session.user(configuration: configuration)
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let canvas = try viewer.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 1, width: 64, height: 36))
        try session.run(ticks: 20, video: true, publishers: [host])
        #expect(viewer.logs["a"]!.remoteStates(1, .video).map(\.0) == [.starting, .failed])
        #expect(canvas.framesRendered == 0)
    }
}
