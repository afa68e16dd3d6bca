import Foundation
import Testing

@testable import MediaPipeline

/// A packet of `payloadType` carrying `payload` (sequence 1, timestamp 0).
private func packet(_ payloadType: UInt8, _ payload: [UInt8]) throws -> RTPPacket {
    try RTPPacket([0x80, 0x80 | payloadType, 0, 1, 0, 0, 0, 0, 0, 0, 0x5E, 0xED] + payload)
}

/// `format`'s reading of `payload`.
private func describe(_ format: any VideoPayloadFormat.Type, _ payload: [UInt8]) -> VideoPayloadStart? {
    payload.withUnsafeBytes { format.describe($0) }
}

/// The frames of `path` and, for each, whether ffprobe calls its packet a keyframe.
private func framesWithReferenceKeyflags(_ path: String) throws -> [(bytes: [UInt8], key: Bool)] {
    let flags = try reference(
        "/usr/bin/ffprobe",
        ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags", "-of", "csv=p=0", path]
    ).split(separator: "\n").map { $0.hasPrefix("K") }
    let reader = try IVFReader(path: path)
    var frames: [(bytes: [UInt8], key: Bool)] = []
    while let frame = try reader.readFrame() {
        try #require(frames.count < flags.count, "\(path) holds more frames than ffprobe lists")
        frames.append((frame.bytes, flags[frames.count]))
    }
    #expect(frames.count == flags.count)
    return frames
}

/// `frames` frames of the sample, encoded by ffmpeg's libvpx wrapper as `codec` with a keyframe
/// every 6 frames.
private func referenceEncoded(_ codec: String, frames: Int, in folder: TemporaryFolder) throws -> String {
    let path = folder.file("\(codec).ivf")
    _ = try reference(
        "/usr/bin/ffmpeg",
        [
            "-v", "error", "-y", "-i", Fixtures.motionIVF, "-frames:v", String(frames), "-c:v", codec, "-g", "6",
            "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k", path,
        ])
    return path
}

@Suite("Video payload formats: one reading of VP8 and VP9 packets for the assembler and the forwarder")
struct VideoPayloadFormatTests {
    @Test(
        "VP8: the frame tag's P bit after the descriptor tells a keyframe; a descriptor with nothing after it is unreadable"
    )
    func vp8Keyframes() throws {
        // X, S, partition 0; I with a 15-bit PictureID; nothing after it.
        let descriptorOnly: [UInt8] = [0x90, 0x80, 0x80, 0x01]
        #expect(describe(VP8PayloadFormat.self, descriptorOnly) == nil)
        #expect(!VideoLayerForwarder.startsKeyframe(try packet(RTPPayloadType.vp8, descriptorOnly)))
        // With a frame tag: P clear is a keyframe, P set is not.
        #expect(
            describe(VP8PayloadFormat.self, descriptorOnly + [0x10])
                == VideoPayloadStart(dataOffset: 4, startsFrame: true, startsKeyframe: true))
        #expect(VideoLayerForwarder.startsKeyframe(try packet(RTPPayloadType.vp8, descriptorOnly + [0x10])))
        #expect(describe(VP8PayloadFormat.self, descriptorOnly + [0x11])?.startsKeyframe == false)
        // Partition 1, or not the start of partition 0: no frame starts.
        #expect(describe(VP8PayloadFormat.self, [0x91, 0x80, 0x80, 0x01, 0x10])?.startsFrame == false)
        #expect(describe(VP8PayloadFormat.self, [0x80, 0x80, 0x80, 0x01, 0x10])?.startsFrame == false)
        // A descriptor cut inside its PictureID cannot be read.
        #expect(describe(VP8PayloadFormat.self, [0x90, 0x80, 0x80]) == nil)
    }

    @Test("VP8: the PictureID and TL0PICIDX are found where RFC 7741 puts them, and only when whole")
    func vp8NumberingPlaces() {
        func places(_ payload: [UInt8]) -> VideoNumberingPlaces {
            payload.withUnsafeBytes { VP8PayloadFormat.numberingPlaces($0) }
        }
        #expect(places([0x90, 0xC0, 0x81, 0x23, 0x07, 0x10]) == VideoNumberingPlaces(pictureId: 2, layerZeroIndex: 4))
        #expect(
            places([0x90, 0x80, 0x23, 0x10])
                == VideoNumberingPlaces(pictureId: 2, pictureIdIs15Bit: false, layerZeroIndex: nil))
        #expect(places([0x90, 0x80, 0x81]).pictureId == nil)  // a 15-bit id cut after its first byte
        #expect(places([0x10, 0x10]) == VideoNumberingPlaces())  // no extension: nothing to rewrite
    }

    @Test(
        "VP9: a frame ffmpeg packetized (P clear on every frame) is a keyframe only when its bitstream says so, for the assembler and the forwarder alike"
    )
    func vp9KeyframesAsFFmpegSendsThem() throws {
        let folder = TemporaryFolder()
        let frames = try framesWithReferenceKeyflags(try referenceEncoded("libvpx-vp9", frames: 14, in: folder))
        #expect(frames.filter(\.key).count == 3, "ffmpeg's keyframes every 6 frames")
        for (index, frame) in frames.enumerated() {
            // rtpenc_vp9.c's one-byte descriptor: B and E (a frame in one packet), P never set.
            let payload = [0x0C] + frame.bytes
            let start = try #require(describe(VP9PayloadFormat.self, payload))
            #expect(start.startsFrame && start.dataOffset == 1)
            #expect(start.startsKeyframe == frame.key, "frame \(index)")
            #expect(
                VideoLayerForwarder.startsKeyframe(try packet(RTPPayloadType.vp9, payload)) == frame.key,
                "frame \(index) at the forwarder")
        }
        // P set (inter-picture predicted) is never a keyframe, whatever the bitstream.
        let keyframe = try #require(frames.first { $0.key })
        #expect(describe(VP9PayloadFormat.self, [0x4C] + keyframe.bytes)?.startsKeyframe == false)
        // A frame of spatial layer 1 starts no frame of the base layer: I, L, B, E with a
        // 7-bit PictureID, then SID 1 in the layer byte and TL0PICIDX.
        let upper = describe(VP9PayloadFormat.self, [0xAC, 0x05, 0x02, 0x00] + keyframe.bytes)
        #expect(upper?.startsFrame == false && upper?.startsKeyframe == false)
    }

    @Test(
        "VP8 and VP9 frames libvpx encoded, packetized by the engine: the first packet's keyframe and size match ffprobe's"
    )
    func engineFramesAgainstFFprobe() throws {
        let folder = TemporaryFolder()
        for (name, codec) in [("libvpx", MediaCodec.vp8), ("libvpx-vp9", MediaCodec.vp9)] {
            let path = try referenceEncoded(name, frames: 13, in: folder)
            let frames = try framesWithReferenceKeyflags(path)
            let size = try reference(
                "/usr/bin/ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                    path,
                ]
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(size == "640,360")
            let format = try #require(codec.videoPayloadFormat)
            var packetizer = try RTPPacketizer(codec: codec, ssrc: 7, payloadType: RTPPayloadType.of(codec))
            for (index, frame) in frames.enumerated() {
                let encoded = EncodedFrame(
                    bytes: frame.bytes, codec: codec, isKeyframe: frame.key,
                    timestampMicroseconds: Int64(index) * 66_666,
                    durationMicroseconds: 66_666, width: frame.key ? 640 : 0, height: frame.key ? 360 : 0)
                var packets: [RTPPacket] = []
                try packetizer.packetize(encoded) { packets.append($0) }
                let first = try #require(packets.first)
                let start = try #require(first.withUnsafePayload { format.describe($0) })
                #expect(start.startsFrame && start.startsKeyframe == frame.key, "\(codec) frame \(index)")
                for later in packets.dropFirst() {
                    #expect(later.withUnsafePayload { format.describe($0)?.startsFrame } == false)
                }
                // VP8 reads the size from the keyframe's own header; VP9 from the scalability
                // structure the packetizer writes from the frame's size, with keyframes only.
                let pictureSize = first.withUnsafePayload { format.pictureSize($0, start) }
                if frame.key {
                    #expect(pictureSize?.width == 640 && pictureSize?.height == 360, "\(codec) keyframe \(index)")
                } else {
                    #expect(pictureSize == nil, "\(codec) delta frame \(index) tells a size")
                }
            }
        }
    }
}
