/// The receiving side of one remote video stream: queued frames, a VP8/VP9 decoder that exists
/// only while subscribed, keyframe recovery, and the size of the last decoded picture.
///
/// `@unchecked Sendable` under the engine's contract: a receiver is touched only by the thread
/// holding the engine lock, or, during a parallel decode that thread waits for, by the one
/// worker it was handed to.
final class VideoReceiver: @unchecked Sendable {
    private var queue = FrameQueue(capacity: 16)
    private var decoder: VPXDecoder?
    private let threads: Int
    /// True until a keyframe has been decoded (after subscribing, a loss or an overflow).
    private(set) var needsKeyframe = true
    /// Frames dropped while waiting for a keyframe since the last request.
    private(set) var droppedSinceRequest = 0
    /// Clock time of the last keyframe request sent (microseconds), if any.
    var lastKeyframeRequest: Int64?
    /// Size of the last decoded picture.
    private(set) var width = 0, height = 0
    /// Frames decoded since creation.
    private(set) var framesDecoded: Int64 = 0
    /// Frames rendered (the last decoded frame of each batch).
    private(set) var framesRendered: Int64 = 0
    /// True after a frame failed to decode, until one decodes again.
    private(set) var failed = false
    /// Clock time of the last decoded frame (microseconds).
    var lastDecodedAt: Int64?
    /// Frames decoded by the last ``decodeBatch(_:)`` not yet collected.
    private var batchCount = 0

    init(threads: Int) { self.threads = threads }

    var hasDecoder: Bool { decoder != nil }
    var hasQueuedFrames: Bool { !queue.isEmpty }

    func release() {
        decoder = nil
        queue.removeAll()
        needsKeyframe = true
    }

    /// Queues a frame. A frame that cannot be decoded without a keyframe first is dropped and
    /// counted in ``droppedSinceRequest`` (the engine then asks for a keyframe).
    func enqueue(_ frame: EncodedFrame) {
        if needsKeyframe && !frame.isKeyframe && queue.isEmpty {
            droppedSinceRequest += 1
            return
        }
        if queue.push(frame) != nil {
            // Overflow: the oldest frame is gone, so later frames may not decode. Start over at a keyframe.
            queue.removeAll()
            needsKeyframe = true
            droppedSinceRequest += 1
        }
    }

    func keyframeRequested() { droppedSinceRequest = 0 }

    /// Decodes every queued frame and renders the newest picture into `canvas`.
    func decodeBatch(_ canvas: CanvasBuffer?) {
        batchCount += decodeQueued { view in canvas?.render(view) }
    }

    /// The frames decoded by batches since the last call.
    func takeBatchCount() -> Int {
        defer { batchCount = 0 }
        return batchCount
    }

    /// Decodes every queued frame; calls `render` with the last picture. Returns the frames decoded.
    func decodeQueued(render: (I420View) -> Void) -> Int {
        var decodedNow = 0
        let pending = queue.count
        for index in 0..<pending {
            guard let frame = queue.pop() else { break }
            if needsKeyframe && !frame.isKeyframe { continue }
            do {
                if decoder == nil {
                    decoder = try VPXDecoder(codec: frame.codec == .vp9 ? .vp9 : .vp8, threads: threads)
                }
                try frame.bytes.withUnsafeBytes { bytes in
                    _ = try decoder!.decode(bytes) { view in
                        width = view.width
                        height = view.height
                        if index == pending - 1 {
                            render(view)
                            framesRendered += 1
                        }
                    }
                }
                needsKeyframe = false
                failed = false
                framesDecoded += 1
                decodedNow += 1
            } catch {
                failed = true
                needsKeyframe = true
                decoder = nil
            }
        }
        return decodedNow
    }
}
