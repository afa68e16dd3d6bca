import Testing

@testable import MediaPipeline

@Suite("Encoded frame storage recycling")
struct EncodedFrameRecyclingTests {
    private func address(_ frame: EncodedFrame) -> UnsafeRawPointer? {
        frame.bytes.withUnsafeBytes { $0.baseAddress }
    }

    @Test("frames still held keep their bytes while the encoder goes on")
    func heldFramesAreNeverOverwritten() throws {
        let encoder = try OpusEncoder()
        let tone = testTone(samplesPerChannel: 960 * 100)
        var frames: [EncodedFrame] = []
        var snapshots: [[UInt8]] = []
        try tone.withUnsafeBufferPointer { pcm in
            for index in 0..<100 {
                let slice = UnsafeBufferPointer(rebasing: pcm[(index * 1920)..<((index + 1) * 1920)])
                let frame = try encoder.encode(slice, timestampMicroseconds: Int64(index) * 20_000)
                frames.append(frame)
                snapshots.append(frame.bytes.map { $0 })  // an element-wise copy, not shared storage
            }
        }
        // 100 frames held across a ring of 64: each wrap had to give the slot fresh storage.
        for (frame, snapshot) in zip(frames, snapshots) { #expect(frame.bytes == snapshot) }
        #expect(Set(frames.map(address)).count == 100)
        // The held frames decode like an independent encode of the same audio.
        let reference = try OpusEncoder()
        try tone.withUnsafeBufferPointer { pcm in
            for index in 0..<100 {
                let slice = UnsafeBufferPointer(rebasing: pcm[(index * 1920)..<((index + 1) * 1920)])
                let again = try reference.encode(slice, timestampMicroseconds: 0)
                #expect(again.bytes == frames[index].bytes)
            }
        }
    }

    @Test("released frames give their storage back: the ring's 24 slots are reused in place")
    func releasedStorageIsReused() throws {
        let encoder = try VPXEncoder(configuration: VPXEncoderConfiguration(codec: .vp8, width: 64, height: 48))
        var firstRound: [UnsafeRawPointer?] = []
        var secondRound: [UnsafeRawPointer?] = []
        for index in 0..<48 {
            let frame = try encoder.encode(try syntheticPicture(width: 64, height: 48, frame: index))
            #expect(frame.byteCount > 0)
            if index < 24 { firstRound.append(address(frame)) } else { secondRound.append(address(frame)) }
        }
        #expect(firstRound == secondRound)
    }
}
