import Testing

@testable import MediaPipeline

@Suite("Audio arrivals: the packet path appends, the receiver takes them in")
struct PendingArrivalsTests {
    /// `count` 20 ms Opus packets as RTP, and their media times.
    private func rtpPackets(_ count: Int) throws -> [RTPPacket] {
        var packetizer = try RTPPacketizer(codec: .opus, ssrc: 7, payloadType: RTPPayloadType.opus)
        var packets: [RTPPacket] = []
        for frame in try encodedTone(count, with: try OpusEncoder()) {
            try packetizer.packetize(frame) { packets.append($0) }
        }
        return packets
    }

    @Test(
        "packets wait until the receiver's next access, keep their arrival times, are counted once, and a full list is taken in by the packet path itself"
    )
    func deferredArrival() throws {
        let packets = try rtpPackets(40)
        let tally = ArrivalTally()
        let receiver = try AudioReceiver(sampleRate: 48000, channelCount: 2, tally: tally)
        // Each packet 30 to 38 ms after its media time.
        func arrival(_ index: Int) -> Int64 { Int64(index) * 20_000 + 30_000 + Int64(index % 3) * 4_000 }
        for (index, packet) in packets.prefix(PendingArrivals.capacity).enumerated() {
            receiver.arrive(packet, now: arrival(index))
        }
        // Nothing taken in yet: nothing counted.
        #expect(tally.take() == ArrivalCounts())
        // The next packet finds the list full: the list, then the packet, go in at once.
        let capacity = PendingArrivals.capacity
        receiver.arrive(packets[capacity], now: arrival(capacity))
        let first = tally.take()
        #expect(first.packets == Int64(capacity + 1) && first.audioFrames == Int64(capacity + 1))
        let payload = packets.prefix(capacity + 1).reduce(0) { $0 + $1.payloadByteCount }
        #expect(first.audioBytes == Int64(payload))
        for index in (capacity + 1)..<packets.count {
            receiver.arrive(packets[index], now: arrival(index))
        }
        // Read after the last arrival: the receiver holds what one fed each packet at its
        // arrival gets, arrival times included (the delay estimate and the jitter are made
        // from them).
        let direct = try AudioReceiver(sampleRate: 48000, channelCount: 2)
        for (index, packet) in packets.enumerated() { _ = direct.receive(packet, now: arrival(index)) }
        func state(_ receiver: AudioReceiver) -> [Int64?] {
            receiver.withInbox {
                [
                    Int64($0.queue.count), $0.delays.minimumTransitMicroseconds, $0.delays.targetDelayMicroseconds,
                    $0.statistics.jitterMicroseconds, $0.packetsLost,
                ]
            }
        }
        let deferred = state(receiver)
        #expect(deferred == state(direct))
        #expect(deferred[0] == Int64(packets.count) && (deferred[3] ?? 0) > 0)
        let rest = tally.take()
        #expect(rest.packets == Int64(packets.count - capacity - 1) && rest.packetsLost == 0)
        #expect(tally.take() == ArrivalCounts())
    }
}
