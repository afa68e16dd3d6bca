/// The receiving side of one remote video stream: its RTP packets assembled into frames, queued
/// frames, a VP8/VP9 decoder that exists only while subscribed, keyframe recovery, and the size
/// of the last decoded picture.
///
/// Loss is seen before decoding: a frame after a gap in the sequence numbers is not decoded
/// unless it is a keyframe (libvpx would decode it against a stale reference and return a wrong
/// picture), and neither is any frame after it until a keyframe comes.
///
/// `@unchecked Sendable` under the engine's contract: a receiver is touched only by the thread
/// holding the engine lock, or, during a parallel decode that thread waits for, by the one
/// worker it was handed to.
final class VideoReceiver: @unchecked Sendable {
    private var assembler: RTPFrameAssembler
    private var queue = FrameQueue(capacity: 16)
    /// The sender's SSRC, from its latest packet (for keyframe requests).
    private(set) var remoteSSRC: UInt32 = 0
    /// True after a gap, until a keyframe arrives: frames in between are dropped unseen.
    private(set) var awaitingKeyframe = false
    /// Frames dropped before decoding: incomplete, or after a gap and before a keyframe.
    private(set) var framesDroppedBeforeDecode: Int64 = 0
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

    init(threads: Int, reorderWaitMicroseconds: Int64) {
        self.threads = threads
        assembler = RTPFrameAssembler(codec: .vp8, gapWaitMicroseconds: reorderWaitMicroseconds)
    }

    /// Sequence numbers never received, over every stream this receiver has seen.
    var packetsLost: Int64 { packetsLostInEarlierStreams + assembler.packetsLost }
    private var packetsLostInEarlierStreams: Int64 = 0

    /// True while the receiver cannot show a correct new picture without a keyframe.
    var wantsKeyframe: Bool { needsKeyframe || awaitingKeyframe }

    /// Takes one RTP packet arrived at clock time `now`; returns the frames it completed.
    func receive(_ packet: RTPPacket, now: Int64) -> Int {
        guard let codec = RTPPayloadType.codec(packet.header.payloadType), codec.kind == .video else { return 0 }
        if packet.header.ssrc != remoteSSRC || codec != assembler.codec {
            // A new stream (another sender or codec): nothing of the old one is a reference.
            packetsLostInEarlierStreams += assembler.packetsLost
            assembler = RTPFrameAssembler(codec: codec, gapWaitMicroseconds: assembler.gapWaitMicroseconds)
            if remoteSSRC != 0 { awaitingKeyframe = true }
            remoteSSRC = packet.header.ssrc
        }
        let incompleteBefore = assembler.framesIncomplete
        var frames = 0
        assembler.insert(packet, now: now) { assembled in
            frames += 1
            enqueue(assembled)
        }
        framesDroppedBeforeDecode += assembler.framesIncomplete - incompleteBefore
        return frames
    }

    /// Gives up on missing packets whose wait is over; returns the frames handed on.
    func poll(now: Int64) -> Int {
        let incompleteBefore = assembler.framesIncomplete
        var frames = 0
        assembler.poll(now: now) { assembled in
            frames += 1
            enqueue(assembled)
        }
        framesDroppedBeforeDecode += assembler.framesIncomplete - incompleteBefore
        return frames
    }

    var hasDecoder: Bool { decoder != nil }
    var hasQueuedFrames: Bool { !queue.isEmpty }

    func release() {
        decoder = nil
        queue.removeAll()
        needsKeyframe = true
    }

    /// Queues an assembled frame. A frame that cannot be decoded without a keyframe first is
    /// dropped and counted in ``droppedSinceRequest`` (the engine then asks for a keyframe).
    private func enqueue(_ assembled: AssembledFrame) {
        let frame = assembled.frame
        if frame.isKeyframe {
            awaitingKeyframe = false
        } else if assembled.followsGap {
            awaitingKeyframe = true
        }
        if awaitingKeyframe {
            droppedSinceRequest += 1
            framesDroppedBeforeDecode += 1
            return
        }
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
                try frame.withUnsafeBytes { bytes in
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
