import CCodecBaseline
import MediaPipeline
import MediaPipelineTesting

/// The session capacity's C reference: the media work of a ``SubscriberLoad`` (every user's Opus
/// packets and VP8 frames decoded, the audio mixed every 10 ms, each picture scaled into the
/// user's 320x180 canvas in hidden mode) done directly on libopus, libvpx and libyuv with no
/// engine, on the same number of threads. It replays the same sample packets and frames on the
/// same schedule. Owns the C session; used by the thread that advances it.
final class CapacityReferenceSession {
    /// The C session.
    private let session: OpaquePointer
    /// Remote users decoded.
    let users: Int

    /// A session of `users` users on `threads` threads, each rendered into a `canvasWidth` ×
    /// `canvasHeight` canvas from `layer`: the sample's VP8 frames at its frame rate, or its low
    /// layer (``SampleMedia/lowVP8Frames()``) on the pictures of the sample's loop whose number
    /// is a multiple of ``SampleMedia/lowLayerPictureStep``, as a ``SubscriberLoad`` with dual
    /// stream sends them. The media are copied into the C session.
    /// - Throws: ``MediaError/Code/codecFailure`` naming what the C side could not make.
    init(
        media: SampleMedia, users: Int, threads: Int, layer: VideoStreamType = .high, canvasWidth: Int = 320,
        canvasHeight: Int = 180
    ) throws {
        let opus = media.opusPackets.laidEndToEnd
        let frames = layer == .low ? try media.lowVP8Frames() : media.vp8Frames
        let pictureStep = layer == .low ? media.lowLayerPictureStep : 1
        let vp8 = frames.laidEndToEnd
        var message = [CChar](repeating: 0, count: 256)
        let made = opus.bytes.withUnsafeBufferPointer { opusBytes in
            opus.offsets.withUnsafeBufferPointer { opusOffsets in
                vp8.bytes.withUnsafeBufferPointer { vp8Bytes in
                    vp8.offsets.withUnsafeBufferPointer { vp8Offsets in
                        message.withUnsafeMutableBufferPointer { text in
                            mp_capacity_reference_create(
                                Int32(users), Int32(threads), opusBytes.baseAddress, opusOffsets.baseAddress,
                                Int32(media.opusPackets.count), vp8Bytes.baseAddress, vp8Offsets.baseAddress,
                                Int32(frames.count), Int32(media.videoFrameRate), Int32(media.vp8Frames.count),
                                Int32(pictureStep), Int32(canvasWidth), Int32(canvasHeight), text.baseAddress,
                                text.count)
                        }
                    }
                }
            }
        }
        guard let made else {
            let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw MediaError(.codecFailure, "C reference: \(text)")
        }
        session = made
        self.users = users
    }

    deinit { mp_capacity_reference_destroy(session) }

    /// Advances the session by 10 ms, as ``SubscriberLoad/advance()`` does; returns whether
    /// video was decoded and rendered in this tick.
    /// - Throws: ``MediaError/Code/codecFailure`` with the C side's message when a decode failed.
    @discardableResult
    func advance() throws -> Bool {
        let result = mp_capacity_reference_advance(session)
        guard result >= 0 else {
            throw MediaError(.codecFailure, "C reference: \(String(cString: mp_capacity_reference_error(session)))")
        }
        return result == 1
    }

    /// Advances the session by `ticks` ticks; returns the wall seconds they took and how many
    /// of them decoded video.
    func advance(ticks: Int) throws -> (seconds: Double, videoTicks: Int) {
        let (videoTicks, seconds) = try measure {
            var videoTicks = 0
            for _ in 0..<ticks {
                if try advance() { videoTicks += 1 }
            }
            return videoTicks
        }
        return (seconds, videoTicks)
    }

    /// The wall seconds the session's rounds (its decodes across the threads) took so far on the
    /// thread that advances it: the rest of its advances is its serial work, the mix.
    var roundSeconds: Double { Double(mp_capacity_reference_round_nanoseconds(session)) / 1e9 }

    /// Audio packets and pictures decoded so far (for ``checkDecoded(ticks:videoTicks:since:)``).
    var decodedSoFar: (packets: Int, pictures: Int) { (audioPacketsDecoded, picturesRendered) }

    /// Throws unless every user is decoding and, since `before`, `ticks` ticks (starting on an
    /// even one) of which `videoTicks` had video decoded every packet and picture they were due.
    /// - Throws: ``MediaError/Code/codecFailure`` naming what was missing.
    func checkDecoded(ticks: Int, videoTicks: Int, since before: (packets: Int, pictures: Int)) throws {
        guard usersDecoding == users else {
            throw MediaError(.codecFailure, "C reference: only \(usersDecoding) of \(users) users are decoding")
        }
        let packets = audioPacketsDecoded - before.packets
        let pictures = picturesRendered - before.pictures
        guard packets == users * ((ticks + 1) / 2), pictures == users * videoTicks else {
            throw MediaError(
                .codecFailure,
                "C reference: \(packets) packets and \(pictures) pictures decoded in \(ticks) ticks of \(users) users, "
                    + "not \(users * ((ticks + 1) / 2)) and \(users * videoTicks)")
        }
    }

    /// Users that decoded audio and rendered video and never failed a decode.
    var usersDecoding: Int { Int(mp_capacity_reference_users_decoding(session)) }
    /// Opus packets decoded so far, all users together.
    var audioPacketsDecoded: Int { Int(mp_capacity_reference_audio_packets_decoded(session)) }
    /// Pictures decoded and rendered so far, all users together.
    var picturesRendered: Int { Int(mp_capacity_reference_pictures_rendered(session)) }
}

extension BenchCapacity {
    /// One trial of the C reference, timed as the engine's trial is: ``warmUpTicks`` of session
    /// warm-up, then ``seconds`` timed; session seconds per wall-clock second. Checks that every
    /// user decoded, and that the timed ticks decoded every packet and frame they were due.
    func referenceRealtimeFactor(users: Int, threads: Int, layer: VideoStreamType = .high) throws -> Double {
        let session = try warmedUpReference(users: users, threads: threads, layer: layer)
        let before = session.decodedSoFar
        let ticks = Int((seconds * 100).rounded())
        let (elapsed, videoTicks) = try session.advance(ticks: ticks)
        try session.checkDecoded(ticks: ticks, videoTicks: videoTicks, since: before)
        return Double(ticks) / 100 / elapsed
    }

    /// A C reference session of `users` on `threads` showing `layer`, advanced ``warmUpTicks``:
    /// decoders warmed, first keyframe decoded (as ``warmedUpLoad(users:threads:layer:)`` warms
    /// the engine's).
    func warmedUpReference(
        users: Int, threads: Int, layer: VideoStreamType = .high
    ) throws -> CapacityReferenceSession {
        let session = try CapacityReferenceSession(media: media, users: users, threads: threads, layer: layer)
        for _ in 0..<Self.warmUpTicks { try session.advance() }
        return session
    }
}
