/// Which encoded Opus frames a sender in discontinuous transmission (DTX) sends. An Opus
/// packet of at most two bytes carries no audio: the encoder is in DTX. The first such frame
/// goes out, so receivers learn that the silence is the sender's and not a loss (they then play
/// comfort noise, ``AudioReceiver``); the ones after it are withheld until audio comes back. So
/// libwebrtc's Opus wrapper sends, and browsers' receivers expect.
struct DiscontinuousTransmission {
    /// The last frame was a DTX frame.
    private(set) var inDTX = false

    /// Whether `frame` goes out.
    mutating func shouldSend(_ frame: EncodedFrame) -> Bool {
        guard frame.byteCount <= 2 else {
            inDTX = false
            return true
        }
        defer { inDTX = true }
        return !inDTX
    }
}
