import MediaPipeline

extension Array where Element == EncodedFrame {
    /// The frames' bytes laid end to end, with the offset of each frame and of the end (count + 1
    /// offsets): the layout the C references (CCodecBaseline) take their media in.
    public var laidEndToEnd: (bytes: [UInt8], offsets: [Int]) {
        var bytes: [UInt8] = []
        var offsets = [0]
        for frame in self {
            bytes += frame.bytes
            offsets.append(bytes.count)
        }
        return (bytes, offsets)
    }
}
