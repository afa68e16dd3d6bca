/// The VP8 payload descriptor at the start of every VP8 RTP payload (RFC 7741 section 4.2).
///
/// ```
///       0 1 2 3 4 5 6 7
///      |X|R|N|S|R| PID | (required)
///  X:  |I|L|T|K| RSV   |
///  I:  |M| PictureID   | (M: 15-bit PictureID, a second byte follows)
///      |   PictureID   |
///  L:  |   TL0PICIDX   |
///  T/K:|TID|Y| KEYIDX  |
/// ```
public struct VP8PayloadDescriptor: Sendable, Equatable {
    /// N: the frame is not used as a reference by any other frame.
    public var nonReference = false
    /// S: the packet starts a VP8 partition (with ``partitionIndex`` 0: starts the frame).
    public var startOfPartition = false
    /// PID: the partition the packet's first byte belongs to, 0...7.
    public var partitionIndex: UInt8 = 0
    /// The PictureID, 7 or 15 bits, if present.
    public var pictureId: UInt16?
    /// True when ``pictureId`` is written in 15 bits (M = 1).
    public var pictureIdIs15Bit = true
    /// TL0PICIDX, if present.
    public var temporalLayerZeroIndex: UInt8?
    /// TID, if present (with Y, the layer sync bit).
    public var temporalLayerId: UInt8?
    /// Y: the frame depends only on the base layer's last keyframe.
    public var layerSync = false
    /// KEYIDX, if present.
    public var keyIndex: UInt8?

    /// A descriptor with only the required byte.
    public init() {}

    /// True when the packet holds the start of a frame (S set, partition 0).
    public var startsFrame: Bool { startOfPartition && partitionIndex == 0 }

    /// Bytes the descriptor takes.
    public var byteCount: Int {
        var count = 1
        if pictureId != nil || temporalLayerZeroIndex != nil || temporalLayerId != nil || keyIndex != nil {
            count += 1
            if pictureId != nil { count += pictureIdIs15Bit ? 2 : 1 }
            if temporalLayerZeroIndex != nil { count += 1 }
            if temporalLayerId != nil || keyIndex != nil { count += 1 }
        }
        return count
    }

    /// Parses the descriptor at the start of `payload`.
    /// - Throws: ``MediaError/Code/truncated`` when the payload ends inside the descriptor or holds
    ///   nothing after it.
    public init(parsing payload: UnsafeRawBufferPointer) throws {
        func need(_ count: Int) throws {
            guard payload.count > count else {
                throw MediaError(
                    .truncated,
                    "VP8 payload of \(payload.count) bytes ends inside its descriptor or holds no frame data")
            }
        }
        try need(1)
        let first = payload[0]
        nonReference = first & 0x20 != 0
        startOfPartition = first & 0x10 != 0
        partitionIndex = first & 0x07
        guard first & 0x80 != 0 else { return }
        try need(2)
        let extensions = payload[1]
        var offset = 2
        if extensions & 0x80 != 0 {
            try need(offset + 1)
            if payload[offset] & 0x80 != 0 {
                try need(offset + 2)
                pictureId = payload.uint16(at: offset) & 0x7FFF
                pictureIdIs15Bit = true
                offset += 2
            } else {
                pictureId = UInt16(payload[offset])
                pictureIdIs15Bit = false
                offset += 1
            }
        }
        if extensions & 0x40 != 0 {
            try need(offset + 1)
            temporalLayerZeroIndex = payload[offset]
            offset += 1
        }
        if extensions & 0x30 != 0 {
            try need(offset + 1)
            let byte = payload[offset]
            if extensions & 0x20 != 0 {
                temporalLayerId = byte >> 6
                layerSync = byte & 0x20 != 0
            }
            if extensions & 0x10 != 0 { keyIndex = byte & 0x1F }
        }
    }

    /// Writes the descriptor at the start of `bytes`; returns the bytes written (``byteCount``).
    @discardableResult
    public func write(into bytes: UnsafeMutableRawBufferPointer) -> Int {
        let extended = byteCount > 1
        bytes[0] =
            (extended ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionIndex & 0x07)
        guard extended else { return 1 }
        var extensions: UInt8 = 0
        if pictureId != nil { extensions |= 0x80 }
        if temporalLayerZeroIndex != nil { extensions |= 0x40 }
        if temporalLayerId != nil { extensions |= 0x20 }
        if keyIndex != nil { extensions |= 0x10 }
        bytes[1] = extensions
        var offset = 2
        if let pictureId {
            if pictureIdIs15Bit {
                bytes.put(0x8000 | (pictureId & 0x7FFF), at: offset)
                offset += 2
            } else {
                bytes[offset] = UInt8(pictureId & 0x7F)
                offset += 1
            }
        }
        if let temporalLayerZeroIndex {
            bytes[offset] = temporalLayerZeroIndex
            offset += 1
        }
        if temporalLayerId != nil || keyIndex != nil {
            bytes[offset] = ((temporalLayerId ?? 0) & 0x03) << 6 | (layerSync ? 0x20 : 0) | ((keyIndex ?? 0) & 0x1F)
            offset += 1
        }
        return offset
    }

    /// Whether the VP8 frame data starting at `frameStart` (the first packet's data after the
    /// descriptor) is a keyframe: the P bit of the VP8 payload header is 0 (RFC 7741 section 4.3).
    static func isKeyframe(frameStart: UnsafeRawBufferPointer) -> Bool {
        guard let first = frameStart.first else { return false }
        return first & 0x01 == 0
    }

    /// The picture size in a VP8 keyframe's header (RFC 6386 section 9.1), if `frameStart` holds it.
    static func keyframeSize(frameStart bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard bytes.count >= 10, bytes[3] == 0x9D, bytes[4] == 0x01, bytes[5] == 0x2A else { return nil }
        let width = Int(UInt16(bytes[6]) | UInt16(bytes[7]) << 8) & 0x3FFF
        let height = Int(UInt16(bytes[8]) | UInt16(bytes[9]) << 8) & 0x3FFF
        return (width, height)
    }
}
