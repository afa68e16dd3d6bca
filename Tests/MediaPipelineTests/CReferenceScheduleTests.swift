import CCodecBaseline
import Foundation
import MediaPipeline
import MediaPipelineTesting
import Testing

@Suite(
    "The capacity's C reference: the pictures it decodes, on the layer SubscriberLoad sends", .timeLimit(.minutes(2)))
struct CReferenceScheduleTests {
    /// The sample media, loaded and encoded once for the suite.
    private static let media = Result { try SampleMedia(speechWAV: Fixtures.speechWAV, videoIVF: Fixtures.motionIVF) }

    /// A C session of `users` on one thread fed `frames`, one on every `step`-th picture of a loop
    /// of `loop` pictures; nil with the C side's message when it refused.
    private static func session(
        _ media: SampleMedia, users: Int, frames: [EncodedFrame], loop: Int, step: Int
    ) -> (session: OpaquePointer?, error: String) {
        let opus = media.opusPackets.laidEndToEnd
        let vp8 = frames.laidEndToEnd
        var message = [CChar](repeating: 0, count: 256)
        let made = mp_capacity_reference_create(
            Int32(users), 1, opus.bytes, opus.offsets, Int32(media.opusPackets.count), vp8.bytes, vp8.offsets,
            Int32(frames.count), Int32(media.videoFrameRate), Int32(loop), Int32(step), 320, 180, &message,
            message.count)
        return (made, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    @Test(
        "over two loops of the sample, the low layer decodes each low frame twice, as SubscriberLoad sends them (two in a row where an odd loop wraps); the high layer every picture"
    )
    func decodesWhatSubscriberLoadSends() throws {
        let media = try Self.media.get()
        let low = try media.lowVP8Frames()
        let pictures = media.vp8Frames.count
        // An odd loop: SubscriberLoad's low frames fall on pictures 0, 2, ..., pictures - 1, then
        // 0 again, so a loop carries (pictures + 1) / 2 of them, one more than every other picture.
        #expect(pictures % 2 == 1 && low.count == (pictures + 1) / 2, "\(pictures) pictures, \(low.count) low frames")
        // Picture k is due at k × (1_000_000 / 15) µs, on the first 10 ms tick at or after it: the
        // ticks before the one picture 2 × pictures (the third loop's first) falls on.
        let ticks = (2 * pictures * (1_000_000 / media.videoFrameRate) + 9_999) / 10_000
        for (frames, step, expected) in [
            (low, media.lowLayerPictureStep, 2 * low.count), (media.vp8Frames, 1, 2 * pictures),
        ] {
            let made = Self.session(media, users: 2, frames: frames, loop: pictures, step: step)
            let session = try #require(made.session, "C reference refused: \(made.error)")
            defer { mp_capacity_reference_destroy(session) }
            var decodedTicks = 0
            for _ in 0..<ticks {
                let result = mp_capacity_reference_advance(session)
                #expect(result >= 0, "C reference failed: \(String(cString: mp_capacity_reference_error(session)))")
                decodedTicks += Int(result)
            }
            #expect(decodedTicks == expected, "step \(step): \(decodedTicks) pictures decoded in \(ticks) ticks")
            #expect(mp_capacity_reference_pictures_rendered(session) == 2 * Int64(expected))
            #expect(mp_capacity_reference_users_decoding(session) == 2)
        }
    }

    @Test("a loop of no pictures is refused, with the message naming it")
    func refusesEmptyLoop() throws {
        let media = try Self.media.get()
        let made = Self.session(media, users: 1, frames: media.vp8Frames, loop: 0, step: 1)
        #expect(made.session == nil)
        #expect(made.error.contains("loop of 0 pictures"), "\(made.error)")
    }
}
