import Foundation
import MediaPipeline
import MediaPipelineTesting
import Testing

@Suite("Session capacity on the low layer: dual stream users shown in 320x180 canvases", .timeLimit(.minutes(4)))
struct LowLayerCapacityTests {
    /// The sample media, loaded and encoded once for the suite.
    private static let media = Result { try SampleMedia(speechWAV: Fixtures.speechWAV, videoIVF: Fixtures.motionIVF) }

    @Test(
        "the sample's low layer: every other picture at a quarter of the area, keyframes where the high frames have them, about a fifth of the bitrate"
    )
    func sampleLowLayer() throws {
        let media = try Self.media.get()
        let low = try media.lowVP8Frames()
        #expect(media.lowLayerPictureStep == 2)
        #expect(media.lowLayerSize.width == 320 && media.lowLayerSize.height == 180)
        #expect(low.count == (media.pictures.count + 1) / 2)
        #expect(low.allSatisfy { $0.width == 320 && $0.height == 180 && $0.codec == .vp8 })
        // Low frame i is picture 2i, stamped with its time.
        #expect(
            low.enumerated().allSatisfy { $0.element.timestampMicroseconds == Int64(2 * $0.offset) * 1_000_000 / 15 })
        let highKeyframes = media.vp8Frames.indices.filter { media.vp8Frames[$0].isKeyframe }
        let lowKeyframes = low.indices.filter { low[$0].isKeyframe }.map { $0 * 2 }
        #expect(
            lowKeyframes == highKeyframes.filter { $0 % 2 == 0 } && lowKeyframes.first == 0,
            "\(lowKeyframes) \(highKeyframes)")
        // 7.5 frames per second: about 100 kbit/s against the high frames' 500.
        func kilobitsPerSecond(_ frames: [EncodedFrame], framesPerSecond: Double) -> Double {
            Double(frames.reduce(0) { $0 + $1.byteCount } * 8) / (Double(frames.count) / framesPerSecond) / 1000
        }
        let lowRate = kilobitsPerSecond(low, framesPerSecond: 7.5)
        let highRate = kilobitsPerSecond(media.vp8Frames, framesPerSecond: 15)
        #expect(
            lowRate > 60 && lowRate < 140 && lowRate < highRate / 3, "low \(lowRate) kbit/s, high \(highRate) kbit/s")
        #expect(
            try media.lowVP8Frames().first?.withUnsafeBytes { Array($0) } == low.first?.withUnsafeBytes { Array($0) })
    }

    @Test(
        "with dual stream, every user of a SubscriberLoad decodes the low layer at 320x180 and the hub forwards nothing else"
    )
    func subscriberLoadOnTheLowLayer() throws {
        let media = try Self.media.get()
        let users = 4
        let load = try SubscriberLoad(media: media, users: users, decodeThreads: 2, dualStream: true)
        for _ in 0..<100 { load.advance() }
        // The low layer from its first keyframe shown: at the latest the sample's next (picture
        // 30, 2 s in), as the replay does not answer keyframe requests.
        let waited = load.advance(untilEveryUserShows: .low, maximumTicks: 210)
        #expect(load.usersShowing(.low) == users, "after \(waited) more ticks")
        // Past the next 2 s report, whose interval saw the low layer only.
        for _ in 0..<410 { load.advance() }
        try load.checkEveryUserShows(.low)
        #expect(load.usersShowing(.high) == 0)

        // The same users on one layer, for the bitrate the high layer takes.
        let high = try SubscriberLoad(media: media, users: users, decodeThreads: 2)
        for _ in 0..<(100 + waited + 410) { high.advance() }
        try high.checkEveryUserShows(.high)
        for uid in (0..<UInt32(users)).map({ 1000 + $0 }) {
            let lowStats = try #require(load.channel.remoteVideoStats(uid))
            let highStats = try #require(high.channel.remoteVideoStats(uid))
            #expect(lowStats.rxStreamType == .low && lowStats.width == 320 && lowStats.height == 180)
            #expect(highStats.rxStreamType == .high && highStats.width == 640 && highStats.height == 360)
            // Only the low layer came: about 100 kbit/s, against the high layer's 500.
            #expect(
                lowStats.receivedBitrateKbps > 0 && lowStats.receivedBitrateKbps * 3 < highStats.receivedBitrateKbps,
                "user \(uid): \(lowStats.receivedBitrateKbps) kbit/s on the low layer, \(highStats.receivedBitrateKbps) on the high"
            )
        }
    }

    @Test("a load not shown from the layer a trial measures fails it with a typed error")
    func layerMismatchIsTyped() throws {
        let media = try Self.media.get()
        // Dual stream, once shown from the low layer: nothing is shown from the high one.
        let dual = try SubscriberLoad(media: media, users: 2, decodeThreads: 1, dualStream: true)
        for _ in 0..<100 { dual.advance() }
        dual.advance(untilEveryUserShows: .low, maximumTicks: 210)
        try dual.checkEveryUserShows(.low)
        let error = try #require(throws: SubscriberLoad.LayerMismatch.self) { try dual.checkEveryUserShows(.high) }
        #expect(error.layer == .high && error.users == 2 && error.decoding == 2 && error.showing == 0)
        #expect(error.example?.contains("low layer forwarded, 320x180 shown") == true, "\(error)")
        // One layer: nothing is shown from the low one.
        let single = try SubscriberLoad(media: media, users: 2, decodeThreads: 1)
        for _ in 0..<100 { single.advance() }
        try single.checkEveryUserShows(.high)
        #expect(throws: SubscriberLoad.LayerMismatch.self) { try single.checkEveryUserShows(.low) }
    }
}
