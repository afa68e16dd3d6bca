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
    @Test("each codec's names are the specifications' (rtpmap, Matroska CodecID, IVF fourcc) and read back to it")
    func codecNames() {
        // RFC 7587 section 7 (opus/48000/2), RFC 7741 section 6.1 (VP8/90000), RFC 9628 (VP9/90000);
        // Matroska's codec mappings; the IVF fourccs vpxenc writes.
        let expected: [(MediaCodec, rtpmap: String, matroska: String, ivf: String?)] = [
            (.opus, "opus/48000/2", "A_OPUS", nil), (.vp8, "VP8/90000", "V_VP8", "VP80"),
            (.vp9, "VP9/90000", "V_VP9", "VP90"),
        ]
        #expect(expected.map(\.0) == MediaCodec.allCases)
        for (codec, rtpmap, matroska, ivf) in expected {
            #expect(codec.rtpChannels == (codec == .opus ? 2 : 1))
            #expect(codec.matroskaCodecID == matroska)
            #expect(codec.ivfFourCC == ivf)
            // rtpmap's names are read without regard to case (RFC 4566); the others exactly.
            #expect(MediaCodec(rtpEncodingName: codec.rtpEncodingName.uppercased()) == codec)
            #expect(MediaCodec(rtpEncodingName: codec.rtpEncodingName.lowercased()) == codec)
            #expect(MediaCodec(matroskaCodecID: matroska) == codec)
            #expect(MediaCodec(matroskaCodecID: matroska.lowercased()) == nil)
            if let ivf { #expect(MediaCodec(ivfFourCC: ivf) == codec) }
            // The rtpmap line a session description writes for the codec's format.
            let format = SessionDescription.Media.Format(payloadType: 100, codec: codec)
            #expect(format.codec == codec)
            let description = SessionDescription(
                connectionAddress: "127.0.0.1",
                media: [SessionDescription.Media(kind: codec.kind.rawValue, port: 9, formats: [format])])
            #expect(description.text.contains("a=rtpmap:100 \(rtpmap)\r\n"), "\(description.text)")
        }
        #expect(MediaCodec(rtpEncodingName: "H264") == nil)
        #expect(MediaCodec(rtpEncodingName: "red") == nil)
        #expect(MediaCodec(matroskaCodecID: "V_MPEG4/ISO/AVC") == nil)
        #expect(MediaCodec(ivfFourCC: "AV01") == nil)
        #expect(VideoCodec.allCases.map(\.fourcc) == ["VP80", "VP90"])
    }

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

    @Test("the engine hands its audio settings, not a library's, to the encoder factory")
    func audioSettingsReachFactory() throws {
        let seen = LockedValue<[AudioEncoderSettings]>([])
        var configuration = EngineConfiguration()
        configuration.audio = AudioEncoderSettings(
            sampleRate: 48_000, channelCount: 2, frameDurationMicroseconds: 10_000, bitrateBitsPerSecond: 24_000,
            content: .speech)
        configuration.codecs.makeAudioEncoder = { settings in
            seen.withLock { $0.append(settings) }
            return try CodecFactory.libraries.makeAudioEncoder(settings)
        }
        let session = TestSession()
        let host = try session.user(configuration: configuration)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        try session.run(ticks: 30, publishers: [host])
        #expect(seen.withLock { $0 } == [configuration.audio])
        // 10 ms frames: one encoded per push.
        #expect(host.engine.statistics.audioFramesEncoded == 30)
        // The library's factory hands them to libopus as this configuration.
        let opus = OpusEncoderConfiguration(configuration.audio)
        #expect(opus.application == .voip && opus.frameDurationMicroseconds == 10_000)
        #expect(opus.bitrateBitsPerSecond == 24_000 && !opus.discontinuousTransmission)
        try expectHears(viewer, [host], exact: true)
    }

    @Test("audio settings out of range are refused when the engine is made, naming the field")
    func audioSettingsRefused() throws {
        let session = TestSession()
        for (settings, named) in [
            (AudioEncoderSettings(channelCount: 3), "channel count 3"),
            (AudioEncoderSettings(frameDurationMicroseconds: 15_000), "15.0 ms"),
            (AudioEncoderSettings(bitrateBitsPerSecond: 100), "100 bit/s"),
        ] {
            var configuration = EngineConfiguration()
            configuration.audio = settings
            expectMediaError(naming: named) {
                _ = try MediaEngine(transport: session.hub, clock: session.clock, configuration: configuration)
            }
        }
    }

    @Test("with DTX, silence goes out as a few packets, and the subscriber neither loses nor freezes")
    func discontinuousTransmission() throws {
        var configuration = EngineConfiguration()
        configuration.audio.content = .speech
        configuration.audio.discontinuousTransmission = true
        let session = TestSession()
        let host = try session.user(configuration: configuration)
        let viewer = try session.user()
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        func run(ticks: Int, amplitude: Double) throws {
            for _ in 0..<ticks {
                try host.pushAudio(amplitude: amplitude)
                viewer.pull()
                session.clock.advance(byMicroseconds: 10_000)
                session.hub.deliverDue()
            }
        }
        try run(ticks: 100, amplitude: 8000)
        let talking = host.engine.statistics
        #expect(talking.audioFramesSent == 50)
        let silenceStart = viewer.heard.count
        try run(ticks: 300, amplitude: 0)
        let silent = host.engine.statistics
        // After the tone's last packets have played out, what plays is near silence.
        let quietPeak = viewer.heard[(silenceStart + 48_000)...].map { abs(Int($0)) }.max() ?? 0
        #expect(quietPeak < 500, "peak \(quietPeak) in silence")
        // 150 frames of silence were encoded; libopus leaves DTX for a comfort-noise update
        // every 400 ms, and the first DTX frame after each goes out.
        #expect(silent.audioFramesEncoded - talking.audioFramesEncoded == 150)
        let sentInSilence = silent.audioFramesSent - talking.audioFramesSent
        #expect(sentInSilence < 40, "\(sentInSilence) of 150 silent frames sent")
        let heardBefore = viewer.heard.count
        try run(ticks: 100, amplitude: 8000)
        // Nothing was lost, and the audio never froze: each first DTX frame went out, so the
        // receiver took the silence for the sender's (300 ms without packets freezes otherwise).
        let totals = try #require(try viewer.channel("a").remoteStreamTotals(1))
        #expect(totals.audioPacketsLost == 0)
        #expect(!viewer.logs["a"]!.remoteStates(1, .audio).contains { $0.0 == .frozen || $0.0 == .failed })
        // The tone is back at its level in the last half second.
        let tail = viewer.heard.suffix(48_000)
        let peak = tail.map { abs(Int($0)) }.max() ?? 0
        #expect(peak > 6000 && peak < 10_000, "peak \(peak)")
        #expect(viewer.heard.count == heardBefore + 100 * 960)
    }
}
