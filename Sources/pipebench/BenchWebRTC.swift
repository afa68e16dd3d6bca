import MediaPipeline

/// The WebRTC row of `pipebench bench` (`--only webrtc`): one 1,200-byte RTP packet sent by one
/// WebRTC connection and received by another on 127.0.0.1 (ICE over libnice, DTLS-SRTP), the
/// whole path timed and its heap allocations counted on every thread (the sender's protect and
/// send, libnice's receive on the loop thread, demultiplexing, unprotecting, the handler). Of
/// `repeats` runs of 20,000 packets after a warm-up, the fastest time and the fewest
/// allocations are reported; the target for allocations is 0.
struct BenchWebRTC {
    let repeats: Int
    let progress: (String, Double) -> Void
    var count = 20_000

    func row() throws -> BenchRow {
        try BenchMeasure.checkCounter()
        var fastest = Double.infinity
        var fewest = Double.infinity
        for run in 0..<max(1, min(repeats, 3)) {
            progress("WebRTC send and receive over loopback", Double(run) / Double(max(1, min(repeats, 3))))
            let result = try WebRTCLoopbackProbe.run(count: count) { BenchMeasure.allocations }
            fastest = min(fastest, result.nanosecondsPerPacket)
            fewest = min(fewest, result.allocationsPerPacket)
        }
        return BenchRow(
            section: "webrtc", path: "WebRTC send + receive 1200 B RTP", unit: "packet",
            microsecondsPerUnit: fastest / 1000, cMicrosecondsPerUnit: nil,
            speed: 1_200 * 8 / fastest * 1000, speedUnit: "Mbit/s", allocationsPerUnit: fewest)
    }
}
