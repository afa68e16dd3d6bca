import Dispatch
import Foundation
import Synchronization

/// Renders an engine's video on a thread of its own, every 5 ms until stopped, so that decoding
/// (and a video frame observer's work, such as writing every picture to a file) never holds up
/// the audio playout another thread pulls: a playout pulled late catches up in a burst, runs
/// ahead of the packets and drops the next one as late.
final class VideoRenderThread: Sendable {
    private let engine: MediaEngine
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts rendering `engine`'s video.
    init(engine: MediaEngine) {
        self.engine = engine
        let thread = Thread { [self] in
            while !stopping.load(ordering: .acquiring) {
                engine.renderVideo()
                usleep(5_000)
            }
            finished.signal()
        }
        thread.name = "MediaPipeline video render"
        thread.start()
    }

    /// Stops the thread and waits until its last render is done; then renders once more on the
    /// caller's thread (what came meanwhile). Later calls do nothing.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopping.store(true, ordering: .releasing)
        finished.wait()
        engine.renderVideo()
    }
}
