import Foundation
import Testing

@testable import MediaPipeline

/// Every frame a video encoder produced, in order, as libvpx gave it (before the engine
/// packetizes it): its MD5, size and codec.
private final class EncodedFrameLog: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [(md5: String, size: Int, codec: MediaCodec, keyframe: Bool)] = []

    func append(_ frame: EncodedFrame) {
        var digest = MD5()
        digest.update(frame.bytes)
        let entry = (digest.finalize(), frame.bytes.count, frame.codec, frame.isKeyframe)
        lock.withLock { frames.append(entry) }
    }

    var all: [(md5: String, size: Int, codec: MediaCodec, keyframe: Bool)] { lock.withLock { frames } }
}

/// A video encoder that logs every frame the encoder it wraps produces.
private final class LoggingVideoEncoder: VideoEncoding {
    let wrapped: VideoEncoding
    let log: EncodedFrameLog

    init(_ wrapped: VideoEncoding, _ log: EncodedFrameLog) {
        self.wrapped = wrapped
        self.log = log
    }

    func encode(_ picture: I420View, timestampMicroseconds: Int64?, forceKeyframe: Bool) throws -> EncodedFrame {
        let frame = try wrapped.encode(
            picture, timestampMicroseconds: timestampMicroseconds, forceKeyframe: forceKeyframe)
        log.append(frame)
        return frame
    }

    func setBitrate(_ bitsPerSecond: Int) throws { try wrapped.setBitrate(bitsPerSecond) }
}

/// The codecs the engine's video decoders were made for, in order.
private final class DecoderCodecLog: @unchecked Sendable {
    private let lock = NSLock()
    private var codecs: [VideoCodec] = []
    func append(_ codec: VideoCodec) { lock.withLock { codecs.append(codec) } }
    var all: [VideoCodec] { lock.withLock { codecs } }
}

/// The MD5 (as `vpxdec --md5 --i420` sums a frame) of every picture the engine decoded.
private final class DecodedPictureLog: VideoFrameObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var digests: [String] = []

    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32) {
        let digest = picture.md5()
        lock.withLock { digests.append(digest) }
    }

    var md5s: [String] { lock.withLock { digests } }
}

/// An engine configuration that publishes VP9, logging what its encoder produces and which
/// decoders it makes.
private func vp9Configuration(encoded: EncodedFrameLog? = nil, decoders: DecoderCodecLog? = nil)
    -> EngineConfiguration
{
    var configuration = EngineConfiguration()
    configuration.videoCodec = .vp9
    if let encoded {
        configuration.codecs.makeVideoEncoder = {
            LoggingVideoEncoder(try CodecFactory.libraries.makeVideoEncoder($0), encoded)
        }
    }
    if let decoders {
        configuration.codecs.makeVideoDecoder = { codec, threads in
            decoders.append(codec)
            return try CodecFactory.libraries.makeVideoDecoder(codec, threads)
        }
    }
    return configuration
}

/// The pictures ffmpeg decodes from `path`'s video track, packed I420 (each picture as
/// `-f rawvideo -pix_fmt yuv420p` writes it), one after another, none dropped or repeated.
private func ffmpegPictures(_ path: String, in folder: TemporaryFolder) throws -> [UInt8] {
    let raw = folder.file(URL(fileURLWithPath: path).lastPathComponent + ".yuv")
    try reference(
        "ffmpeg",
        [
            "-nostdin", "-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-pix_fmt", "yuv420p",
            "-f", "rawvideo", raw,
        ])
    return [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
}

@Suite("Engine: VP9 published, decoded, shown and recorded", .timeLimit(.minutes(5)))
struct EngineVP9Tests {
    @Test(
        "a VP9 host: the viewer decodes it (DECODING), shows the sent picture, and records the encoder's frames byte for byte; the channel recording is VP9 too"
    )
    func publishAndRecord() throws {
        let folder = TemporaryFolder()
        let session = TestSession()
        let encoded = EncodedFrameLog()
        let decoders = DecoderCodecLog()
        let host = try session.user(configuration: vp9Configuration(encoded: encoded))
        let viewer = try session.user(configuration: vp9Configuration(decoders: decoders))
        try host.join("a", uid: 1)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let (width, height) = (320, 180)
        let canvas = try viewer.engine.setupRemoteVideo(
            VideoCanvas(channelId: "a", uid: 1, width: width, height: height, renderMode: .fill))
        let decoded = DecodedPictureLog()
        viewer.engine.setVideoFrameObserver(decoded)
        let userPath = folder.file("user-1.webm")
        let channelPath = folder.file("channel-a.webm")
        let recording = try viewer.engine.startRecording(channelId: "a", uid: 1, path: userPath)
        let channelRecording = try viewer.engine.startChannelRecording(
            channelId: "a", path: channelPath, width: width, height: height, framesPerSecond: 15, labels: false,
            videoSettings: VPXEncoderConfiguration(codec: .vp9, width: 1, height: 1))
        // 3 s of pictures at 15 fps, then 0.5 s more of audio alone, so that the last pictures
        // are shown (lip sync holds them as long as their audio). The grid as it stood at each
        // render a channel picture was due at (every 1/15 s from the start).
        let grid = try I420Buffer(width: width, height: height)
        var nextDue = session.clock.nowMicroseconds
        var shown: [String] = []
        var rendered = canvas.framesRendered
        for tick in 0..<350 {
            let now = session.clock.nowMicroseconds
            try host.pushAudio()
            if tick < 300 && tick % 7 == 0 {
                try host.pushVideo(width: width, height: height, timestamp: now)
            }
            viewer.pull()
            viewer.engine.renderVideo()
            if canvas.framesRendered != rendered {
                rendered = canvas.framesRendered
                shown.append(canvas.withLockedPicture { $0.md5() })
            }
            if now >= nextDue {
                viewer.engine.renderGrid(channelId: "a", into: grid, labels: false)
                nextDue += 66_666
            }
            session.clock.advance(byMicroseconds: 10_000)
            session.hub.deliverDue()
        }
        let written = try viewer.engine.stopRecording(recording)
        let channelWritten = try viewer.engine.stopChannelRecording(channelRecording)

        // The stream was VP9 end to end: the encoder's frames and the decoder the viewer made.
        let sent = encoded.all
        #expect(sent.count == 43, "\(sent.count) pictures encoded")  // one each 70 ms for 3 s
        #expect(sent.allSatisfy { $0.codec == .vp9 })
        #expect(decoders.all == [.vp9])
        let video = viewer.logs["a"]!.remoteStates(1, .video)
        #expect(video.map(\.0) == [.starting, .decoding], "\(video)")
        #expect(viewer.logs["a"]!.events.contains(.videoSizeChanged(uid: 1, width: width, height: height)))
        let stats = try viewer.channel("a").statistics
        #expect(stats.videoFramesDecoded == sent.count && stats.videoFramesDroppedBeforeDecode == 0, "\(stats)")

        // The canvas (fill mode, the picture's size) shows the last picture sent (seen: 57.9 dB).
        let source = try syntheticPicture(width: width, height: height, frame: host.videoFrame - 1)
        let canvasPSNR = try canvas.snapshot().withView { picture in
            source.withView { PictureQuality.psnr(reference: $0, test: picture) }
        }
        #expect(canvasPSNR >= 55, "canvas PSNR \(canvasPSNR) dB")
        #expect(shown.count >= 40, "\(shown.count) pictures shown")

        // The user recording is VP9 (and Opus) to ffprobe, and holds each frame the publisher's
        // encoder produced, byte for byte, in order (the link is lossless).
        let probe = try runTool(
            "ffprobe", ["-v", "warning", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", userPath])
        #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
        #expect(probe.stdout.split(separator: "\n") == ["vp9,\(width),\(height)", "opus"])
        #expect(written.video == Int64(sent.count), "\(written)")
        let recorded = try ffmpegPackets(userPath)[0] ?? []
        #expect(recorded.map(\.md5) == sent.map(\.md5))
        #expect(recorded.map(\.size) == sent.map(\.size))
        // Its video blocks (track 1) are keyframes where the encoder made them, as mkvinfo reads them.
        let blocks = try reference("mkvinfo", ["-a", userPath]).split(separator: "\n")
            .filter { $0.contains("Simple block:") && $0.contains("track number 1,") }
        #expect(blocks.map { $0.contains("Simple block: key,") } == sent.map(\.keyframe))
        #expect(sent.filter(\.keyframe).count == 1)
        // ffmpeg and vpxdec decode it to the pictures the engine decoded, bit for bit; the
        // canvas showed those pictures, in order.
        let engineDecoded = decoded.md5s
        #expect(engineDecoded.count == sent.count)
        #expect(try vpxdecFrameMD5s(userPath) == engineDecoded)
        let pictures = try ffmpegPictures(userPath, in: folder)
        let size = width * height * 3 / 2
        #expect(pictures.count == size * sent.count, "\(pictures.count / size) pictures decoded by ffmpeg")
        var ffmpegMD5s: [String] = []
        var worstPSNR = Double.infinity
        for index in 0..<min(sent.count, pictures.count / size) {
            let picture = try rawI420Picture(pictures, index: index, width: width, height: height)
            ffmpegMD5s.append(picture.withView { $0.md5() })
            let original = try syntheticPicture(width: width, height: height, frame: index)
            let value = picture.withView { test in original.withView { PictureQuality.psnr(reference: $0, test: test) }
            }
            worstPSNR = min(worstPSNR, value)
        }
        #expect(ffmpegMD5s == engineDecoded)
        // Against the pictures pushed: libvpx VP9 at the engine's bitrate (seen: 45.7 dB worst).
        #expect(worstPSNR >= 43, "worst PSNR of ffmpeg's decode against the source: \(worstPSNR) dB")
        var next = 0
        let outOfPlace = shown.indices.filter { index in
            guard let found = engineDecoded[next...].firstIndex(of: shown[index]) else { return true }
            next = found + 1
            return false
        }
        #expect(outOfPlace.isEmpty, "shown pictures not decoded, in order: \(outOfPlace.prefix(5)) of \(shown.count)")

        // The channel recording: VP9 of the grid's size, whose last picture is the grid the
        // engine rendered (seen: 56.0 dB, libvpx VP9 at the recording's default bitrate).
        let channelProbe = try runTool(
            "ffprobe",
            ["-v", "warning", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", channelPath])
        #expect(channelProbe.status == 0 && channelProbe.stderr.isEmpty, "\(channelProbe.stderr)")
        #expect(channelProbe.stdout.split(separator: "\n") == ["vp9,\(width),\(height)", "opus"])
        #expect(channelWritten.pictures == 53, "\(channelWritten)")  // 3.5 s at 15 fps
        let channelPictures = try ffmpegPictures(channelPath, in: folder)
        #expect(channelPictures.count == size * Int(channelWritten.pictures))
        let last = try rawI420Picture(
            channelPictures, index: Int(channelWritten.pictures) - 1, width: width, height: height)
        let gridPSNR = grid.withView { a in last.withView { PictureQuality.psnr(reference: a, test: $0) } }
        #expect(gridPSNR >= 53, "channel recording's last picture against the grid: \(gridPSNR) dB")
        print(
            "VP9 through the engine: \(sent.count) frames encoded, recorded byte for byte; canvas PSNR "
                + String(format: "%.1f", canvasPSNR) + " dB, ffmpeg's decode of the recording worst "
                + String(format: "%.1f", worstPSNR) + " dB against the source; channel recording "
                + "\(channelWritten.pictures) pictures, last "
                + String(format: "%.1f", gridPSNR) + " dB against the grid")
    }

    @Test(
        "through 2 s of 10 % loss and 20 ms delay, lost VP9 packets are asked for (NACK) and resent: no keyframe, no freeze, no picture decoded across a gap"
    )
    func lossHealedByRetransmission() throws {
        let decoders = DecoderCodecLog()
        let room = try LossyRoom(configuration: vp9Configuration(decoders: decoders))
        try room.run(ticks: 100)
        #expect(room.lossyMatchesSender)
        try room.impair(.init(lossPercent: 10, delayMs: 20))
        try room.run(ticks: 200)
        let stats = try room.lossy.channel("a").statistics
        let host = room.host.engine.statistics
        #expect(decoders.all == [.vp9, .vp9], "the two viewers' decoders: \(decoders.all)")
        #expect(stats.nacksSent > 0)
        #expect(host.packetsRetransmitted > 0 && host.bytesRetransmitted > 0)
        // Every video packet came in the end, so no frame was given up and none was decoded
        // across a gap (every picture shown is one the clean viewer showed).
        #expect(stats.rxPacketsLost > 0 && stats.videoFramesDroppedBeforeDecode == 0, "\(stats) \(host)")
        #expect(stats.keyframeRequestsSent == 0 && host.keyframesForced == 0)
        #expect(room.wrongPictures == 0)
        #expect(stats.videoFrozenMs == 0, "\(stats)")
        #expect(!room.lossy.logs["a"]!.remoteStates(1, .video).contains { $0.0 == .frozen })
        try room.healAndCheckRecovery()
        #expect(try room.clean.channel("a").statistics.nacksSent == 0)
        print(
            "VP9 over 10 % loss: \(stats.rxPacketsLost) packets lost, \(stats.nacksSent) NACKs, "
                + "\(host.packetsRetransmitted) retransmitted, \(stats.videoFramesDecoded) pictures decoded")
    }
}
