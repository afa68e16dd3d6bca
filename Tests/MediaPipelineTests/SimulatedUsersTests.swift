import Foundation
import Testing

@testable import MediaPipeline
@testable import MediaPipelineTesting

@Suite("Simulated users differ, and grid tiles carry their uid")
struct SimulatedUsersTests {
    @Test("a uid label reads back as its digits, on a dark box, clipped at the picture's edge")
    func labelReadsBack() throws {
        let picture = try I420Buffer(width: 200, height: 60)
        picture.withMutableView { $0.fill(y: 128, u: 90, v: 200) }
        picture.withMutableView { NumberLabel.draw(4_097_135_028, into: $0, x: 4, y: 6, scale: 3) }
        // Read each digit back from its 3x5 cells' centres, and match it against the font.
        let glyphs: [String: [UInt8]] = [
            "0": [7, 5, 5, 5, 7], "1": [2, 6, 2, 2, 7], "2": [7, 1, 7, 4, 7], "3": [7, 1, 7, 1, 7],
            "4": [5, 5, 7, 1, 1],
            "5": [7, 4, 7, 1, 7], "6": [7, 4, 7, 5, 7], "7": [7, 1, 1, 1, 1], "8": [7, 5, 7, 5, 7],
            "9": [7, 5, 7, 1, 7],
        ]
        let read: String = picture.withView { view in
            var text = ""
            for index in 0..<10 {
                var rows: [UInt8] = []
                for row in 0..<5 {
                    var bits: UInt8 = 0
                    for column in 0..<3 {
                        let x = 4 + (1 + index * 4 + column) * 3 + 1
                        let y = 6 + (1 + row) * 3 + 1
                        guard x < view.width else { continue }
                        if view.y[y * view.strideY + x] == 235 { bits |= 4 >> UInt8(column) }
                    }
                    rows.append(bits)
                }
                text += glyphs.first { $0.value == rows }?.key ?? "?"
            }
            return text
        }
        // 10 digits take 41 × 3 = 123 pixels from x = 4: all fit in 200.
        #expect(read == "4097135028")
        picture.withView { view in
            #expect(view.y[6 * view.strideY + 4] == 16)  // the box
            #expect(view.u[3 * view.strideU + 2] == 128 && view.v[3 * view.strideV + 2] == 128)
            #expect(view.y[59 * view.strideY + 199] == 128)  // outside it, untouched
        }
        // Clipped, not crashing, at the picture's edges.
        picture.withMutableView { NumberLabel.draw(99, into: $0, x: 190, y: 55, scale: 4) }
        picture.withMutableView { NumberLabel.draw(7, into: $0, x: -20, y: -20, scale: 2) }
    }

    @Test("each simulated user's media differs from the others' in sound and picture")
    func usersDiffer() throws {
        let media = try SampleMedia(speechWAV: Fixtures.speechWAV, videoIVF: Fixtures.motionIVF)
        let users = try (0..<3).map { try media.userMedia(variant: $0) }
        #expect(users.allSatisfy { $0.opusPackets.count == media.opusPackets.count })
        #expect(users.allSatisfy { $0.vp8Frames.count == media.vp8Frames.count })
        // Decoded, no two users' speech or pictures are alike.
        func speech(_ user: UserMedia) throws -> [Int16] {
            let decoder = try OpusDecoder(sampleRate: 48000, channelCount: 2)
            var all: [Int16] = []
            var pcm = [Int16](repeating: 0, count: 5760 * 2)
            for packet in user.opusPackets {
                let count = try packet.withUnsafeBytes { bytes in
                    try pcm.withUnsafeMutableBufferPointer { try decoder.decode(bytes, into: $0) }
                }
                all += pcm[0..<count * 2]
            }
            return all
        }
        func picture(_ user: UserMedia, _ index: Int) throws -> I420Buffer {
            let decoder = try VPXDecoder(codec: .vp8)
            let copy = try I420Buffer(width: 640, height: 360)
            for frame in user.vp8Frames[0...index] {
                _ = try frame.withUnsafeBytes { try decoder.decode($0) { copy.copy(from: $0) } }
            }
            return copy
        }
        let sounds = try users.map(speech)
        let pictures = try users.map { try picture($0, 10) }
        for a in 0..<3 {
            for b in (a + 1)..<3 {
                #expect(SignalQuality.snr(reference: sounds[a], test: sounds[b]) < 3, "users \(a) and \(b)")
                let psnr = pictures[a].withView { x in
                    pictures[b].withView { PictureQuality.psnr(reference: x, test: $0) }
                }
                #expect(psnr < 20, "users \(a) and \(b): \(psnr) dB")
            }
        }
    }
}
