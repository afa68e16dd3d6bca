import Foundation
import Testing

@testable import MediaPipeline

/// The writer behind `pipebench receive OUT.y4m --md5`: pictures as a video frame observer sees
/// them, into a Y4M file and MD5s.
@Suite("Decoded pictures into Y4M and MD5s")
struct DecodedVideoWriterTests {
    private let key = StreamKey(channelId: "c", uid: 1)

    private func picture(_ width: Int, _ height: Int, luma: UInt8) throws -> I420Buffer {
        let picture = try I420Buffer(width: width, height: height)
        picture.withMutableView { $0.fill(y: luma, u: 128, v: 128) }
        return picture
    }

    @Test("the frame rate comes from the first two RTP timestamps; other streams are not written")
    func frameRate() throws {
        // A sender rounding each frame to the tick steps 2,999 or 3,001 at 30 fps: still 30 fps.
        for (ticks, rate) in [
            (3000, (30, 1)), (2999, (30, 1)), (3001, (30, 1)), (3003, (30000, 1001)), (3600, (25, 1)), (0, (30, 1)),
            (3800, (5921, 250)),
        ] {
            let folder = TemporaryFolder()
            let writer = DecodedVideoWriter(path: folder.file("out.y4m"), computeMD5: true, stream: key)
            let pictures = try (0..<3).map { try picture(161, 91, luma: UInt8(16 + 60 * $0)) }
            for (index, picture) in pictures.enumerated() {
                picture.withView {
                    writer.remoteVideoFrame($0, stream: key, rtpTimestamp: UInt32(1000 + index * ticks))
                    writer.remoteVideoFrame($0, stream: StreamKey(channelId: "c", uid: 2), rtpTimestamp: 0)
                }
            }
            let (frames, md5s) = try writer.finish()
            #expect(frames == 3 && md5s == pictures.map { $0.withView { $0.md5() } })
            let reader = try Y4MReader(path: folder.file("out.y4m"))
            #expect(reader.header.frameRateNumerator == rate.0 && reader.header.frameRateDenominator == rate.1)
            var read: [String] = []
            while let frame = try reader.readFrame() { read.append(frame.withView { $0.md5() }) }
            #expect(read == md5s)
        }
    }

    @Test("a size change, or no picture at all, is an error naming the file, and no file is left")
    func failures() throws {
        let folder = TemporaryFolder()
        let path = folder.file("out.y4m")
        let writer = DecodedVideoWriter(path: path, computeMD5: false, stream: key)
        for (width, height) in [(64, 48), (64, 48), (32, 24)] {
            try picture(width, height, luma: 80).withView { writer.remoteVideoFrame($0, stream: key, rtpTimestamp: 0) }
        }
        do {
            _ = try writer.finish()
            Issue.record("a size change was written")
        } catch let error as MediaError {
            #expect(error.description.contains(path) && error.description.contains("64x48 to 32x24 at frame 3"))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        let empty = DecodedVideoWriter(path: path, computeMD5: true, stream: key)
        expectMediaError(naming: path) { _ = try empty.finish() }
        #expect(!FileManager.default.fileExists(atPath: path))
        // Only MD5s: nothing to write, nothing missing.
        let digestsOnly = DecodedVideoWriter(path: nil, computeMD5: true, stream: key)
        #expect(try digestsOnly.finish().md5s.isEmpty)
    }
}
