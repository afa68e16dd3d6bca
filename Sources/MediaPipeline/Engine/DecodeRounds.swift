/// One playout tick's audio decoding: the next 10 ms of every subscribed stream, one job per
/// stream, run on the engine's decode threads. Each job touches only its own receiver; the
/// results are read afterwards from ``AudioReceiver/lastOutput``, in channel and join order.
final class AudioDecodeRound: ParallelJobSource {
    /// This round's receivers; reused between rounds so a tick allocates nothing.
    var receivers: [AudioReceiver] = []
    /// Gaps up to this long are concealed.
    var concealUpToMicroseconds: Int64 = 0

    func runJob(_ index: Int) {
        let receiver = receivers[index]
        receiver.lastOutput = receiver.produce(concealUpToMicroseconds: concealUpToMicroseconds)
    }
}

/// One render call's video decoding: every stream with queued frames decodes them and renders
/// its newest picture into its canvas, one job per stream, run on the engine's decode threads.
final class VideoDecodeRound: ParallelJobSource {
    /// This round's streams and their canvases; reused between rounds.
    var jobs: [(VideoReceiver, CanvasBuffer?)] = []

    func runJob(_ index: Int) {
        let (receiver, canvas) = jobs[index]
        receiver.decodeBatch(canvas)
    }
}
