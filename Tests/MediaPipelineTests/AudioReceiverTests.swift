import Testing

@testable import MediaPipeline

@Suite("Audio receiver")
struct AudioReceiverTests {
    private func packets(_ count: Int) throws -> [EncodedFrame] {
        let encoder = try OpusEncoder()
        let pcm = testTone(samplesPerChannel: 960 * count)
        var result: [EncodedFrame] = []
        for index in 0..<count {
            let samples = Array(pcm[(index * 1920)..<((index + 1) * 1920)])
            let frame = AudioFrame(
                samples: samples, sampleRate: 48000, channelCount: 2, timestampSamples: Int64(index * 960))
            result.append(try encoder.encode(frame))
        }
        return result
    }

    private func play(_ receiver: AudioReceiver, ticks: Int) -> [Int16] {
        var out: [Int16] = []
        for _ in 0..<ticks {
            _ = receiver.produce(concealUpToMicroseconds: 100_000)
            out += Array(receiver.frame)
        }
        return out
    }

    @Test("packets that overtake each other are put back in order; duplicates are dropped")
    func reordering() throws {
        let stream = try packets(10)
        let inOrder = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        for packet in stream { inOrder.enqueue(packet) }
        let shuffled = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        for index in [1, 0, 3, 2, 2, 5, 4, 7, 6, 9, 8] { shuffled.enqueue(stream[index]) }
        #expect(shuffled.latePackets == 1)
        #expect(play(shuffled, ticks: 20) == play(inOrder, ticks: 20))
    }

    @Test("a packet whose time was already concealed is late and dropped")
    func latePacket() throws {
        let stream = try packets(6)
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        receiver.enqueue(stream[0])
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .audio)
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .audio)
        // Packet 1 is missing when its time comes: concealed.
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .concealed)
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .concealed)
        receiver.enqueue(stream[1])  // too late now
        #expect(receiver.latePackets == 1)
        receiver.enqueue(stream[2])
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .audio)
    }

    @Test("a sender whose clock jumps back by more than a second restarts the stream instead of being dropped")
    func senderRestart() throws {
        let stream = try packets(4)
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        receiver.enqueue(stream[0])
        receiver.enqueue(stream[1])
        for _ in 0..<4 { #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .audio) }
        receiver.enqueue(stream[2].restamped(-2_000_000))
        #expect(receiver.latePackets == 0)
        #expect(receiver.produce(concealUpToMicroseconds: 100_000) == .audio)
    }
}
