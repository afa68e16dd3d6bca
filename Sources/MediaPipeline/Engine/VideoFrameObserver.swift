/// Receives every remote picture the engine decodes, at its own size, before any canvas scales
/// it (the role of the Agora SDK's video frame observer): for recorders, analysers and
/// compositors that need each frame rather than the canvas's latest.
///
/// Called from ``MediaEngine/renderVideo()``'s decode round, on the decode thread of the
/// picture's stream: one stream's pictures come in decoding order, from one thread at a time;
/// pictures of different streams may come at once on different threads. The render round is
/// held meanwhile (not the engine's control lock): return soon, and never call
/// ``MediaEngine/renderVideo()`` from here.
public protocol VideoFrameObserver: AnyObject, Sendable {
    /// One decoded picture of `stream`, with the sender's RTP timestamp (90 kHz). The view
    /// borrows the decoder's memory and is valid during the call only: copy what you keep.
    func remoteVideoFrame(_ picture: I420View, stream: StreamKey, rtpTimestamp: UInt32)
}
