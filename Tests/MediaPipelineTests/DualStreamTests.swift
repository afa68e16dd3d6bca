import Foundation
import Testing

@testable import MediaPipeline

/// A picture each frame of which is easy to tell from its neighbours: a still gradient with a
/// bright square that moves a tenth of the width per frame.
func movingSquarePicture(width: Int, height: Int, frame: Int) throws -> I420Buffer {
    let buffer = try I420Buffer(width: width, height: height)
    let side = width / 8
    let left = (frame * width / 10) % (width - side)
    let top = height / 2 - side / 2 + (frame % 3 - 1) * side / 2
    buffer.withMutableView { view in
        for y in 0..<height {
            for x in 0..<width {
                let inside = x >= left && x < left + side && y >= top && y < top + side
                view.y[y * view.strideY + x] = inside ? 235 : UInt8(16 + (x + y) * 150 / (width + height))
            }
        }
        for y in 0..<view.chromaHeight {
            for x in 0..<view.chromaWidth {
                view.u[y * view.strideU + x] = UInt8(96 + x * 64 / view.chromaWidth)
                view.v[y * view.strideV + x] = UInt8(160 - y * 64 / view.chromaHeight)
            }
        }
    }
    return buffer
}

/// Records every decoded picture of the viewer: when it came, its size, and its PSNR against
/// the picture the publisher captured at its timestamp (scaled to its size as the low layer
/// scales) and against the pictures before and after it.
final class LayerObserver: VideoFrameObserver, @unchecked Sendable {
    struct Picture {
        let atMicroseconds: Int64
        let width: Int, height: Int
        let frame: Int
        /// When the publisher captured it (its timestamp on the test's clock).
        let capturedMicroseconds: Int64
        let psnr: Double
        /// The best PSNR against the captured pictures one before and one after.
        let neighbourPSNR: Double
    }
    private let lock = NSLock()
    private var recorded: [Picture] = []
    private let clock: VirtualClock
    private let timestampOffset: UInt32
    private let frameMicroseconds: Int64
    let width: Int, height: Int

    init(clock: VirtualClock, timestampOffset: UInt32, frameMicroseconds: Int64, width: Int, height: Int) {
        (self.clock, self.timestampOffset, self.frameMicroseconds) = (clock, timestampOffset, frameMicroseconds)
        (self.width, self.height) = (width, height)
    }

    var pictures: [Picture] { lock.withLock { recorded } }

    /// The captured picture `frame`, at `width` × `height` as the publisher's scaler makes it.
    func source(_ frame: Int, width: Int, height: Int) throws -> I420Buffer {
        let full = try movingSquarePicture(width: self.width, height: self.height, frame: frame)
        guard width != self.width || height != self.height else { return full }
        let scaled = try I420Buffer(width: width, height: height)
        full.withView { source in
            scaled.withMutableView { target in
                PictureScaler.scale(
                    source, .init(x: 0, y: 0, width: self.width, height: self.height), into: target,
                    .init(x: 0, y: 0, width: width, height: height))
            }
        }
        return scaled
    }

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        let micros = Int64(rtpTimestamp &- timestampOffset) * 1000 / 90
        let frame = Int((micros + frameMicroseconds / 2) / frameMicroseconds)
        func psnr(_ index: Int) -> Double {
            guard index >= 0, let source = try? source(index, width: picture.width, height: picture.height) else {
                return 0
            }
            return source.withView { PictureQuality.psnr(reference: $0, test: picture) }
        }
        let entry = Picture(
            atMicroseconds: clock.nowMicroseconds, width: picture.width, height: picture.height, frame: frame,
            capturedMicroseconds: micros, psnr: psnr(frame), neighbourPSNR: max(psnr(frame - 1), psnr(frame + 1)))
        lock.withLock { recorded.append(entry) }
    }
}

/// A source that arrives encoded in both layers (a camera that encodes a simulcast): each
/// picture and its scaling to the low layer's size, as the engine's low layer scales it, each
/// encoded by its own VP8 encoder; keyframes on the same pictures, every 10 (it cannot make
/// one on request). Each picture's high frame is pushed first, or its low one (`lowFirst`).
struct EncodedLayers {
    let low = LowVideoStreamConfiguration().size(width: DualStreamTests.width, height: DualStreamTests.height)
    let highEncoder: VPXEncoder
    let lowEncoder: VPXEncoder
    var lowFirst = false

    init() throws {
        highEncoder = try VPXEncoder(
            configuration: VPXEncoderConfiguration(
                codec: .vp8, width: DualStreamTests.width, height: DualStreamTests.height))
        lowEncoder = try VPXEncoder(
            configuration: VPXEncoderConfiguration(codec: .vp8, width: low.width, height: low.height))
    }

    /// Pushes picture `frame`, captured at `at` microseconds, to `engine` in both layers
    /// (`observer` makes the pictures).
    func push(_ frame: Int, at: Int64, _ engine: MediaEngine, _ observer: LayerObserver) throws {
        let keyframe = frame % 10 == 0
        let high = try highEncoder.encode(
            try observer.source(frame, width: DualStreamTests.width, height: DualStreamTests.height),
            timestampMicroseconds: at, forceKeyframe: keyframe)
        let lowFrame = try lowEncoder.encode(
            try observer.source(frame, width: low.width, height: low.height), timestampMicroseconds: at,
            forceKeyframe: keyframe)
        if lowFirst { try engine.pushEncodedFrame(lowFrame, layer: .low) }
        try engine.pushEncodedFrame(high)
        if !lowFirst { try engine.pushEncodedFrame(lowFrame, layer: .low) }
    }
}

@Suite("Dual stream: a publisher's low stream, chosen per subscriber")
struct DualStreamTests {
    /// 320x180 pictures every 70 ms (one in 7 ticks): the low stream is 160x90.
    static let (width, height, frameTicks) = (320, 180, 7)

    /// A publisher (uid 1) in dual stream mode and a viewer (uid 2) in channel `a`, with an
    /// observer of the viewer's pictures.
    struct Session {
        let session: TestSession
        let host: TestUser
        let viewer: TestUser
        let observer: LayerObserver
        var tick = 0

        /// `viewerDefault` is the viewer's default remote video type, set before it joins.
        init(
            dualStream: Bool = true, conditions: LinkConditions? = nil, seed: UInt64 = 7,
            viewerDefault: VideoStreamType = .high
        ) throws {
            session = TestSession(seed: seed)
            host = try session.user()
            viewer = try session.user()
            if dualStream { try host.engine.enableDualStreamMode(true) }
            try host.join("a", uid: 1)
            if viewerDefault != .high { try viewer.channel("a").setRemoteDefaultVideoStreamType(viewerDefault) }
            try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
            if let conditions {
                try session.hub.setLinkConditions(conditions, channelId: "a", publisher: 1, receiver: 2)
            }
            observer = try Self.observe(session, host: host, viewer: viewer)
        }

        /// An observer of `viewer`'s pictures of `host`'s video, set on the viewer's engine.
        static func observe(_ session: TestSession, host: TestUser, viewer: TestUser) throws -> LayerObserver {
            let observer = LayerObserver(
                clock: session.clock,
                timestampOffset: try host.engine.rtp.packetizer(for: .vp8).rtpTimestamp(microseconds: 0),
                frameMicroseconds: Int64(DualStreamTests.frameTicks) * 10_000, width: DualStreamTests.width,
                height: DualStreamTests.height)
            viewer.engine.setVideoFrameObserver(observer)
            return observer
        }

        /// Runs `ticks` × 10 ms: the host pushes a picture every ``frameTicks`` ticks (at the
        /// clock time its frame number says), the viewer renders and plays out every tick.
        mutating func run(ticks: Int, audio: Bool = false) throws {
            for _ in 0..<ticks {
                if audio { try host.pushAudio() }
                if tick % DualStreamTests.frameTicks == 0 {
                    let frame = tick / DualStreamTests.frameTicks
                    try host.engine.pushVideo(
                        try movingSquarePicture(
                            width: DualStreamTests.width, height: DualStreamTests.height, frame: frame),
                        timestampMicroseconds: Int64(frame) * Int64(DualStreamTests.frameTicks) * 10_000)
                }
                finishTick()
            }
        }

        /// The rest of a tick after the host pushed: the viewer renders and plays out (its
        /// playout round also makes the 2 s statistics), 10 ms pass, the hub delivers.
        private mutating func finishTick() {
            viewer.engine.renderVideo()
            viewer.pull()
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
            tick += 1
        }

        var channel: MediaChannel { viewer.channels["a"]! }
        var now: Int64 { session.clock.nowMicroseconds }

        /// Runs `ticks` × 10 ms as ``run(ticks:audio:)`` does, the host pushing `source`'s two
        /// encodings of each picture instead; `beforeTick` runs first in each tick.
        mutating func runEncoded(
            ticks: Int, _ source: EncodedLayers, beforeTick: (Int) throws -> Void = { _ in }
        ) throws {
            for _ in 0..<ticks {
                try beforeTick(tick)
                if tick % DualStreamTests.frameTicks == 0 {
                    try source.push(tick / DualStreamTests.frameTicks, at: Int64(tick) * 10_000, host.engine, observer)
                }
                finishTick()
            }
        }
    }

    /// Every picture shown is the one captured at its timestamp, clearly better than its
    /// neighbours: none is decoded across a gap or a switch.
    static func expectRightPictures(
        _ pictures: [LayerObserver.Picture], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let wrong = pictures.filter { $0.psnr < 30 || $0.psnr < $0.neighbourPSNR + 3 }
        #expect(
            wrong.isEmpty, "\(wrong.count) of \(pictures.count) pictures wrong: \(wrong.prefix(3))",
            sourceLocation: sourceLocation)
    }

    @Test(
        "LOW gives the low stream (a quarter of the area, half the frame rate), HIGH the full one; each switch asks for one keyframe"
    )
    func switchBothWays() throws {
        var s = try Session()
        try s.run(ticks: 210)  // past the first 2 s report
        var pictures = s.observer.pictures
        #expect(pictures.count >= 27 && pictures.allSatisfy { $0.width == 320 && $0.height == 180 })
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        let requestsBefore = s.host.engine.statistics.keyframeRequestsReceived

        try s.channel.setRemoteVideoStreamType(1, type: .low)
        let lowAskedAt = s.now
        try s.run(ticks: 200)
        pictures = s.observer.pictures
        let firstLow = try #require(pictures.firstIndex { $0.width == 160 })
        #expect(pictures[firstLow].height == 90)
        #expect(pictures[firstLow...].allSatisfy { $0.width == 160 && $0.height == 90 })
        let lowWait = pictures[firstLow].atMicroseconds - lowAskedAt
        // The request crosses the hub at once; the next low picture (two frames at most) is
        // the keyframe, shown after the render delay.
        #expect(lowWait <= 300_000, "first low picture \(lowWait / 1000) ms after asking")
        // Half the frame rate: about 7 pictures a second against 14.
        let lowCount = pictures.count - firstLow
        let lowSpan = Double(pictures.last!.atMicroseconds - pictures[firstLow].atMicroseconds) / 1e6
        #expect(abs(Double(lowCount - 1) / lowSpan - 1e6 / 140_000) < 1.5, "\(lowCount) low pictures in \(lowSpan) s")
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .low)
        #expect(s.channel.remoteVideoStats(1)?.stream == .video(channelId: "a", uid: 1, layer: .low))
        #expect(s.channel.remoteAudioStats(1)?.stream == .audio(channelId: "a", uid: 1))
        #expect(s.host.engine.statistics.keyframeRequestsReceived - requestsBefore == 1)

        try s.channel.setRemoteVideoStreamType(1, type: .high)
        let highAskedAt = s.now
        try s.run(ticks: 200)
        pictures = s.observer.pictures
        let firstHighAgain = try #require(pictures.indices.last { $0 > firstLow && pictures[$0 - 1].width == 160 })
        #expect(pictures[firstHighAgain...].allSatisfy { $0.width == 320 && $0.height == 180 })
        let highWait = pictures[firstHighAgain].atMicroseconds - highAskedAt
        #expect(highWait <= 300_000, "first high picture \(highWait / 1000) ms after asking")
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        #expect(s.host.engine.statistics.keyframeRequestsReceived - requestsBefore == 2)
        Self.expectRightPictures(pictures)
        print(
            "Dual stream: first low picture \(lowWait / 1000) ms after asking, first high \(highWait / 1000) ms; \(pictures.count) pictures, PSNR min \(pictures.map(\.psnr).min()!) dB"
        )
    }

    @Test(
        "switching under 10 % loss and 50 ms jitter: no picture decoded across a gap or a switch, the new layer within RTT + a keyframe, one keyframe request per switch",
        arguments: [7, 11, 23] as [UInt64])
    func switchUnderLoss(seed: UInt64) throws {
        // 25 ms each way (a 50 ms round trip), 50 ms jitter, 10 % loss on the media and the feedback.
        var s = try Session(conditions: LinkConditions(lossPercent: 10, delayMs: 25, jitterMs: 50), seed: seed)
        // The switches the app asks for are the subject: no fallback of the engine's own.
        s.viewer.engine.setRemoteSubscribeFallbackOption(.disabled)
        try s.run(ticks: 200)
        try s.channel.setRemoteVideoStreamType(1, type: .low)
        let lowAskedAt = s.now
        try s.run(ticks: 300)
        try s.channel.setRemoteVideoStreamType(1, type: .high)
        let highAskedAt = s.now
        try s.run(ticks: 300)
        let pictures = s.observer.pictures
        Self.expectRightPictures(pictures)
        let firstLow = try #require(pictures.first { $0.width == 160 && $0.atMicroseconds > lowAskedAt })
        let firstHigh = try #require(pictures.first { $0.width == 320 && $0.atMicroseconds > highAskedAt })
        #expect(
            pictures.filter { $0.atMicroseconds > firstLow.atMicroseconds && $0.atMicroseconds < highAskedAt }
                .allSatisfy { $0.width == 160 })
        let totals = try #require(s.channel.remoteStreamTotals(1))
        // Each picture is shown some time after its capture (the render delay, which covers the
        // jitter and a retransmission): the switch may add the round trip (50 ms) and the wait
        // for the next captured picture, which is the keyframe (up to two frames, 140 ms).
        // The delay as it stood before each switch: the most of the five pictures before it.
        func delayBefore(_ time: Int64) -> Int64 {
            pictures.filter { $0.atMicroseconds < time }.suffix(5).map { $0.atMicroseconds - $0.capturedMicroseconds }
                .max() ?? 0
        }
        let usualDelay = max(delayBefore(lowAskedAt), delayBefore(highAskedAt))
        let lowWait = firstLow.atMicroseconds - lowAskedAt
        let highWait = firstHigh.atMicroseconds - highAskedAt
        #expect(
            lowWait - usualDelay <= 190_000 && highWait - usualDelay <= 190_000,
            "first low \(lowWait / 1000) ms, first high \(highWait / 1000) ms after asking; pictures shown \(usualDelay / 1000) ms after capture"
        )
        // Numbers continuous across the switches: nothing counts as lost that a NACK could not
        // bring back (a jump at a switch would count thousands).
        #expect(totals.videoPacketsLost <= 10, "\(totals)")
        // The keyframe requests the publisher got: the viewer's own, plus one per switch.
        let received = s.host.engine.statistics.keyframeRequestsReceived
        #expect(
            received - totals.keyframeRequestsSent <= 2,
            "\(received) received, \(totals.keyframeRequestsSent) sent by the viewer")
        print(
            "Dual stream under loss: first low picture \(lowWait / 1000) ms after asking, first high \(highWait / 1000) ms, pictures shown \(usualDelay / 1000) ms after capture; \(pictures.count) pictures, PSNR min \(pictures.map(\.psnr).min() ?? 0) dB; \(totals.videoPacketsLost) lost, \(totals.nacksSent) NACKs, keyframe requests: \(received) received, \(totals.keyframeRequestsSent) from the viewer"
        )
    }

    @Test(
        "under heavy loss the video falls back to LOW, then to audio only, and climbs back step by step as the link recovers"
    )
    func fallbackAndRecovery() throws {
        var s = try Session()
        s.viewer.engine.setRemoteSubscribeFallbackOption(.audioOnly)
        let log = try #require(s.viewer.logs["a"])
        try s.run(ticks: 300, audio: true)
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        func rxTypes() -> [VideoStreamType] {
            log.statistics.compactMap { if case .remoteVideoStats(let stats) = $0 { stats.rxStreamType } else { nil } }
        }
        func fallbacks() -> [Bool] {
            log.events.compactMap {
                if case .remoteSubscribeFallbackToAudioOnly(1, let fallback) = $0 { fallback } else { nil }
            }
        }
        let reportsBefore = rxTypes().count

        // 40 % loss: the next report falls back to low, the one after to audio only.
        try s.session.hub.setLinkConditions(LinkConditions(lossPercent: 40), channelId: "a", publisher: 1, receiver: 2)
        try s.run(ticks: 600, audio: true)
        #expect(rxTypes().dropFirst(reportsBefore).contains(.low), "\(rxTypes())")
        #expect(fallbacks() == [true])
        #expect(log.remoteStates(1, .video).last.map { "\($0.0)/\($0.1)" } == "stopped/audioFallback")
        let picturesWhenOff = s.observer.pictures.count
        try s.run(ticks: 100, audio: true)
        #expect(s.observer.pictures.count <= picturesWhenOff + 1)
        // The audio goes on: the last second of playout holds the host's tone.
        #expect(s.viewer.heard.suffix(96_000).map { abs(Int($0)) }.max() ?? 0 > 4000)

        // The link recovers: two good reports bring the video back (low), two more the high stream.
        try s.session.hub.setLinkConditions(LinkConditions(), channelId: "a", publisher: 1, receiver: 2)
        try s.run(ticks: 1200, audio: true)
        #expect(fallbacks() == [true, false])
        let states = log.remoteStates(1, .video).map { "\($0.0)/\($0.1)" }
        #expect(
            states.suffix(3) == [
                "stopped/audioFallback", "starting/audioFallbackRecovery", "decoding/audioFallbackRecovery",
            ], "\(states)")
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        let after = s.observer.pictures[picturesWhenOff...]
        #expect(after.contains { $0.width == 160 } && after.last?.width == 320)
        Self.expectRightPictures(s.observer.pictures)
    }

    @Test("with fallback disabled the high stream stays through heavy loss")
    func fallbackDisabled() throws {
        var s = try Session()
        s.viewer.engine.setRemoteSubscribeFallbackOption(.disabled)
        try s.session.hub.setLinkConditions(LinkConditions(lossPercent: 40), channelId: "a", publisher: 1, receiver: 2)
        try s.run(ticks: 900, audio: true)
        let log = try #require(s.viewer.logs["a"])
        let types = log.statistics.compactMap {
            if case .remoteVideoStats(let stats) = $0 { stats.rxStreamType } else { nil }
        }
        #expect(types.count >= 3 && types.allSatisfy { $0 == .high }, "\(types)")
        #expect(s.observer.pictures.allSatisfy { $0.width == 320 })
    }

    @Test(
        "adaptive stream: a canvas of a quarter of the picture or less takes the low stream, a bigger one the high; HIGH asked for wins"
    )
    func adaptiveStream() throws {
        var s = try Session()
        let canvas = try s.viewer.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 1, width: 160, height: 90))
        try s.run(ticks: 210)
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .low)
        #expect(s.observer.pictures.suffix(5).allSatisfy { $0.width == 160 })
        #expect(canvas.framesRendered > 0)
        // A bigger canvas: the high stream.
        _ = try s.viewer.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 1, width: 320, height: 180))
        try s.run(ticks: 210)
        #expect(s.observer.pictures.suffix(5).allSatisfy { $0.width == 320 })
        // Small again, but the app asked for high.
        _ = try s.viewer.engine.setupRemoteVideo(VideoCanvas(channelId: "a", uid: 1, width: 80, height: 46))
        try s.channel.setRemoteVideoStreamType(1, type: .high)
        try s.run(ticks: 210)
        #expect(s.observer.pictures.suffix(5).allSatisfy { $0.width == 320 })
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        Self.expectRightPictures(s.observer.pictures)
    }

    @Test("LOW asked of a publisher without dual stream delivers HIGH")
    func lowWithoutDualStream() throws {
        var s = try Session(dualStream: false)
        try s.channel.setRemoteDefaultVideoStreamType(.low)
        try s.run(ticks: 210)
        let pictures = s.observer.pictures
        #expect(pictures.count >= 27 && pictures.allSatisfy { $0.width == 320 && $0.height == 180 })
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        Self.expectRightPictures(pictures)
    }

    @Test(
        "pre-encoded layers: pushEncodedFrame(_:layer: .low) is the low stream in dual stream mode, not sent without it; audio as low, or an empty frame of either layer, is refused"
    )
    func preEncodedLayers() throws {
        for dualStream in [true, false] {
            var s = try Session(dualStream: dualStream)
            try s.channel.setRemoteDefaultVideoStreamType(.low)
            let source = try EncodedLayers()
            let low = source.low
            try s.runEncoded(ticks: 280, source)
            let pictures = s.observer.pictures
            // With dual stream, the low layer from its first keyframe on (high ones before it,
            // as the viewer asked once it had joined), and only it.
            let expected = dualStream ? (low.width, low.height) : (Self.width, Self.height)
            let first = pictures.firstIndex { ($0.width, $0.height) == expected } ?? pictures.endIndex
            let sizes = pictures.map { "\($0.width)x\($0.height)" }
            #expect(first <= 10 && pictures.count - first >= 30, "dual stream \(dualStream): sizes \(sizes)")
            #expect(
                pictures[first...].allSatisfy { ($0.width, $0.height) == expected },
                "dual stream \(dualStream): sizes \(sizes)")
            #expect(s.channel.remoteVideoStats(1)?.rxStreamType == (dualStream ? .low : .high))
            Self.expectRightPictures(pictures)
            // Not a low video frame: an error naming what is wrong, no packet sent (the hub's
            // deliveries do not move; a low frame taken does move them, with dual stream).
            let opus = EncodedFrame(
                bytes: [0xFC, 0xFF, 0xFE], codec: .opus, isKeyframe: true, timestampMicroseconds: 5_000_000,
                durationMicroseconds: 20_000)
            func packetsSent() -> Int64 {
                s.session.hub.deliverDue()
                return s.session.hub.deliveries + Int64(s.session.hub.packetsInFlight)
            }
            let before = packetsSent()
            #expect(throws: MediaError.self) { try s.host.engine.pushEncodedFrame(opus, layer: .low) }
            let empty = EncodedFrame(
                bytes: [], codec: .vp8, isKeyframe: true, timestampMicroseconds: 5_000_000, durationMicroseconds: 0)
            do {
                try s.host.engine.pushEncodedFrame(empty, layer: .low)
                Issue.record("an empty low frame was taken")
            } catch let error as MediaError {
                #expect(error.code == .invalidArgument && "\(error)".contains("5000000 us is empty"), "\(error)")
            }
            // An empty high frame is refused as well, by either call.
            for push in [
                { try s.host.engine.pushEncodedFrame(empty) },
                { try s.host.engine.pushEncodedFrame(empty, layer: .high) },
            ] {
                do {
                    try push()
                    Issue.record("an empty high frame was taken")
                } catch let error as MediaError {
                    #expect(
                        error.code == .invalidArgument && "\(error)".contains("VP8 frame at 5000000 us is empty"),
                        "\(error)")
                }
            }
            #expect(packetsSent() == before)
            if dualStream {
                let lowKeyframe = try source.lowEncoder.encode(
                    try s.observer.source(0, width: low.width, height: low.height), timestampMicroseconds: 5_000_000,
                    forceKeyframe: true)
                try s.host.engine.pushEncodedFrame(lowKeyframe, layer: .low)
                #expect(packetsSent() > before)
            }
        }
    }

    @Test(
        "the codec factory is asked for each layer's encoder in codec-neutral settings: the high one as configured, the low one at a quarter of the area, half the frame rate and a fifth of the bitrate"
    )
    func encoderSettingsPerLayer() throws {
        let asked = LockedValue<[VideoEncoderSettings]>([])
        var configuration = EngineConfiguration()
        configuration.videoFrameRate = 20
        configuration.videoBitrateBitsPerSecond = 600_000
        configuration.videoKeyframeIntervalFrames = 400
        configuration.videoSpeed = -8
        configuration.codecs.makeVideoEncoder = { settings in
            asked.withLock { $0.append(settings) }
            return try CodecFactory.libraries.makeVideoEncoder(settings)
        }
        let session = TestSession()
        let host = try session.user(configuration: configuration)
        try host.engine.enableDualStreamMode(true)
        try host.join("a", uid: 1)
        try host.engine.pushVideo(
            try movingSquarePicture(width: Self.width, height: Self.height, frame: 0), timestampMicroseconds: 0)
        let high = VideoEncoderSettings(
            codec: .vp8, width: Self.width, height: Self.height, frameRateNumerator: 20,
            bitrateBitsPerSecond: 600_000, keyframeIntervalFrames: 400, speed: -8)
        let low = VideoEncoderSettings(
            codec: .vp8, width: Self.width / 2, height: Self.height / 2, frameRateNumerator: 10,
            bitrateBitsPerSecond: 120_000, keyframeIntervalFrames: 200, speed: -8)
        #expect(asked.withLock { $0 } == [high, low])
        // The library's encoder takes them as they are.
        let vpx = VPXEncoderConfiguration(low)
        #expect(
            vpx.codec == .vp8 && vpx.width == 160 && vpx.height == 90 && vpx.frameRateNumerator == 10
                && vpx.frameRateDenominator == 1 && vpx.bitrateBitsPerSecond == 120_000
                && vpx.keyframeIntervalFrames == 200 && vpx.speed == -8)
    }

    @Test(
        "the default type set before joining applies from the first picture (no high picture decoded, no keyframe asked); turning dual stream off brings the viewer back to HIGH"
    )
    func defaultTypeAndDualStreamOff() throws {
        var s = try Session(viewerDefault: .low)
        let host = s.host
        try s.run(ticks: 210)  // past the first 2 s report
        // The publisher said it sends a low layer before its first picture: the viewer gets
        // the low stream from the start, as its first stream (not a switch the hub asked for).
        let lowPictures = s.observer.pictures
        #expect(lowPictures.count >= 10 && lowPictures.allSatisfy { $0.width == 160 && $0.height == 90 })
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .low)
        #expect(host.engine.statistics.keyframeRequestsReceived == 0)
        try host.engine.enableDualStreamMode(false)
        let count = s.observer.pictures.count
        try s.run(ticks: 210)  // past the next report
        let after = s.observer.pictures[count...]
        #expect(after.last.map { ($0.width, $0.height) } ?? (0, 0) == (320, 180))
        #expect(s.channel.remoteVideoStats(1)?.rxStreamType == .high)
        Self.expectRightPictures(s.observer.pictures)
    }

    @Test(
        "a dual stream publisher that leaves and joins again is forwarded LOW to its LOW viewer from its first picture back"
    )
    func lowAfterRejoin() throws {
        var s = try Session(viewerDefault: .low)
        let host = s.host
        try s.run(ticks: 70)
        try host.channels["a"]!.leave()
        try s.run(ticks: 35)  // the host pushes pictures with no channel to send them to
        let before = s.observer.pictures.count
        try host.channels["a"]!.join(uid: 1, options: .init())
        let rejoinedAt = s.now
        try s.run(ticks: 150)
        let after = s.observer.pictures[before...]
        #expect(after.count >= 7 && after.allSatisfy { $0.width == 160 && $0.height == 90 }, "\(after.map(\.width))")
        let wait = (after.first?.atMicroseconds ?? .max) - rejoinedAt
        #expect(wait <= 400_000, "first picture \(wait / 1000) ms after the host joined again")
        Self.expectRightPictures(s.observer.pictures)
    }

    @Test(
        "pre-encoded layers: once the source pushed low frames, a publisher that leaves and joins again is forwarded LOW from its first keyframe back"
    )
    func preEncodedLayersAfterRejoin() throws {
        var s = try Session(viewerDefault: .low)
        let source = try EncodedLayers()
        let low = source.low
        let (channel, observer) = (s.host.channels["a"]!, s.observer)
        var rejoinedAt = 0
        try s.runEncoded(ticks: 420, source) { tick in
            if tick == 140 { try channel.leave() }
            if tick == 175 {
                try channel.join(uid: 1, options: .init())
                rejoinedAt = observer.pictures.count
            }
        }
        let after = s.observer.pictures[rejoinedAt...]
        let sizes = after.map { "\($0.width)x\($0.height)" }
        #expect(after.count >= 20 && after.allSatisfy { $0.width == low.width && $0.height == low.height }, "\(sizes)")
        Self.expectRightPictures(s.observer.pictures)
    }

    @Test(
        "pre-encoded layers pushed low before high: a viewer asking LOW gets the low layer from the first picture, a viewer asking HIGH the high one, and neither asks for a keyframe"
    )
    func preEncodedLowBeforeHigh() throws {
        for wanted in [VideoStreamType.low, .high] {
            var s = try Session(viewerDefault: wanted)
            var source = try EncodedLayers()
            source.lowFirst = true
            try s.runEncoded(ticks: 210, source)
            let pictures = s.observer.pictures
            let size = wanted == .low ? (source.low.width, source.low.height) : (Self.width, Self.height)
            let shown = pictures.map { "\($0.frame):\($0.width)x\($0.height)" }
            // Every picture pushed (30 in 210 ticks, the last ones still on their way), from the
            // first (a keyframe of both layers) on, at the size of the layer asked for.
            #expect(
                pictures.count >= 28 && pictures.first?.frame == 0
                    && pictures.allSatisfy { ($0.width, $0.height) == size }, "\(wanted): \(shown)")
            #expect(s.host.engine.statistics.keyframeRequestsReceived == 0, "\(wanted)")
            #expect(s.channel.remoteVideoStats(1)?.rxStreamType == wanted)
            // The hub forwards the layer asked for (nil: nothing of the layered video reached the viewer).
            #expect(s.session.hub.forwardedVideoStreamType(channelId: "a", subscriber: 2, publisher: 1) == wanted)
            Self.expectRightPictures(pictures)
        }
    }

    @Test("the low stream's configuration is checked")
    func configurationChecked() throws {
        let session = TestSession()
        let host = try session.user()
        expectEngineError(.invalidArgument) { try host.engine.enableDualStreamMode(true, low: .init(sizeDivisor: 0)) }
        expectEngineError(.invalidArgument) {
            try host.engine.enableDualStreamMode(true, low: .init(frameRateDivisor: 31))
        }
        expectEngineError(.invalidArgument) {
            try host.engine.enableDualStreamMode(true, low: .init(bitrateBitsPerSecond: 5))
        }
        #expect(!host.engine.isDualStreamModeEnabled)
    }
}
