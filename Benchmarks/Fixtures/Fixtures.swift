import Foundation
import MediaPipeline
import MediaPipelineTesting

/// The bundled samples, prepared once per benchmark process: speech as PCM and Opus, the
/// moving picture at 360p and 720p, and its VP8/VP9 encodings.
public enum Fixtures {
    /// The repository's samples folder.
    public static let samples: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("samples").path

    /// Speech and video prepared for replay, as `pipebench simulate` and `bench` use them:
    /// Opus 32 kbit/s 20 ms packets, VP8 640x360 15 fps 500 kbit/s frames.
    public static let media: SampleMedia = {
        do {
            return try SampleMedia(
                speechWAV: samples + "/speech-48k-stereo.wav", videoIVF: samples + "/motion-640x360.ivf")
        } catch {
            fatalError("benchmark fixtures: \(error)")
        }
    }()

    /// 48 kHz stereo speech, interleaved.
    public static let speech: [Int16] = media.audioFrames.flatMap(\.samples)

    /// The 640x360 pictures.
    public static var pictures360: [I420Buffer] { media.pictures }

    /// The same pictures scaled up to 1280x720.
    public static let pictures720: [I420Buffer] = {
        do {
            let canvas = try CanvasBuffer(
                VideoCanvas(channelId: "fixtures", uid: 1, width: 1280, height: 720, renderMode: .fill))
            return try media.pictures.map { picture in
                picture.withView { canvas.render($0) }
                return try canvas.snapshot()
            }
        } catch {
            fatalError("benchmark fixtures: \(error)")
        }
    }()

    /// `pictures` encoded with `codec` at `bitrate`, a keyframe first: the input of decode runs.
    public static func encoded(_ pictures: [I420Buffer], codec: VideoCodec, bitrate: Int) -> [EncodedFrame] {
        do {
            var settings = VPXEncoderConfiguration(codec: codec, width: pictures[0].width, height: pictures[0].height)
            settings.bitrateBitsPerSecond = bitrate
            settings.frameRateNumerator = 15
            let encoder = try VPXEncoder(configuration: settings)
            // The frames keep their storage: the encoder that would recycle it goes away here.
            return try pictures.map { try encoder.encode($0) }
        } catch {
            fatalError("benchmark fixtures: \(error)")
        }
    }

    /// Bitrate used for a picture size: 500 kbit/s at 360p, 1.5 Mbit/s at 720p (WebRTC's ladder).
    public static func bitrate(width: Int) -> Int { width >= 1280 ? 1_500_000 : 500_000 }
}
