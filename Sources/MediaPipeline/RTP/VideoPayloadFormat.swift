/// What the RTP side knows of one video codec's payload format: the descriptor each packet of
/// a frame carries; where a packet's frame data begins, whether it begins a frame and a
/// keyframe, a frame's picture size, and where the picture numbering lies that a forwarder
/// rewrites. One type per codec (``VP8PayloadFormat``, RFC 7741; ``VP9PayloadFormat``, RFC
/// 9628), asked by the packetizer, the frame assembler and the layer forwarder instead of each
/// switching on the codec, as libwebrtc has a packetizer and a depacketizer per codec. A new
/// codec is a new conforming type and a case in ``MediaCodec/videoPayloadFormat``.
protocol VideoPayloadFormat {
    /// The payload descriptor the format puts before each packet's piece of a frame.
    associatedtype Descriptor: PayloadDescriptorWriting

    /// The descriptor of `frame`'s packets, numbered `pictureId` (15 bits), as its first packet
    /// carries it: the largest of them, which sizes the pieces.
    static func descriptor(of frame: EncodedFrame, pictureId: UInt16) -> Descriptor

    /// Makes `descriptor` that of a packet holding the first piece of the frame, the last, both
    /// or neither.
    static func mark(_ descriptor: inout Descriptor, first: Bool, last: Bool)

    /// How the packet whose payload is `payload` starts; nil when its descriptor cannot be read.
    static func describe(_ payload: UnsafeRawBufferPointer) -> VideoPayloadStart?

    /// The picture size a frame carries, if it tells one: `payload` is the frame's first
    /// packet's payload, `start` what ``describe(_:)`` said of it.
    static func pictureSize(_ payload: UnsafeRawBufferPointer, _ start: VideoPayloadStart) -> (width: Int, height: Int)?

    /// Where `payload`'s picture id and its temporal layer 0 index lie, as offsets into it.
    static func numberingPlaces(_ payload: UnsafeRawBufferPointer) -> VideoNumberingPlaces
}

/// How a video packet starts (``VideoPayloadFormat/describe(_:)``).
struct VideoPayloadStart: Equatable {
    /// Where the frame data begins, after the payload descriptor.
    var dataOffset: Int
    /// Whether the packet begins a frame (of the base spatial layer).
    var startsFrame: Bool
    /// Whether that frame is a keyframe: false for a packet that begins none.
    var startsKeyframe: Bool
}

/// Where a packet's picture numbering lies (``VideoPayloadFormat/numberingPlaces(_:)``): offsets
/// into the payload, each nil when the packet does not carry it whole.
struct VideoNumberingPlaces: Equatable {
    var pictureId: Int?
    /// Whether the picture id takes 15 bits (two bytes) or 7 (one).
    var pictureIdIs15Bit = true
    /// TL0PICIDX.
    var layerZeroIndex: Int?
}

extension MediaCodec {
    /// The payload format of a video codec; nil for audio.
    var videoPayloadFormat: (any VideoPayloadFormat.Type)? {
        switch self {
        case .vp8: VP8PayloadFormat.self
        case .vp9: VP9PayloadFormat.self
        case .opus: nil
        }
    }
}

/// VP8 over RTP (RFC 7741).
enum VP8PayloadFormat: VideoPayloadFormat {
    /// X with a 15-bit PictureID: one partition-less frame split anywhere (section 4.2).
    static func descriptor(of frame: EncodedFrame, pictureId: UInt16) -> VP8PayloadDescriptor {
        var descriptor = VP8PayloadDescriptor()
        descriptor.pictureId = pictureId
        return descriptor
    }

    /// S marks the frame's first packet (the start of partition 0).
    static func mark(_ descriptor: inout VP8PayloadDescriptor, first: Bool, last: Bool) {
        descriptor.startOfPartition = first
    }

    /// A frame begins at the start of partition 0; it is a keyframe when the VP8 payload
    /// header's P bit is clear (RFC 7741 section 4.3).
    static func describe(_ payload: UnsafeRawBufferPointer) -> VideoPayloadStart? {
        guard let descriptor = try? VP8PayloadDescriptor(parsing: payload) else { return nil }
        let offset = descriptor.byteCount
        let starts = descriptor.startsFrame
        let keyframe =
            starts && VP8PayloadDescriptor.isKeyframe(frameStart: UnsafeRawBufferPointer(rebasing: payload[offset...]))
        return VideoPayloadStart(dataOffset: offset, startsFrame: starts, startsKeyframe: keyframe)
    }

    /// A keyframe's header holds its size (RFC 6386 section 9.1).
    static func pictureSize(_ payload: UnsafeRawBufferPointer, _ start: VideoPayloadStart) -> (width: Int, height: Int)?
    {
        guard start.startsKeyframe, start.dataOffset <= payload.count else { return nil }
        return VP8PayloadDescriptor.keyframeSize(
            frameStart: UnsafeRawBufferPointer(rebasing: payload[start.dataOffset...]))
    }

    static func numberingPlaces(_ payload: UnsafeRawBufferPointer) -> VideoNumberingPlaces {
        var places = VideoNumberingPlaces()
        let end = payload.count
        guard end > 1, payload[0] & 0x80 != 0 else { return places }
        let extensions = payload[1]
        var at = 2
        if extensions & 0x80 != 0, at < end {
            places.pictureIdIs15Bit = payload[at] & 0x80 != 0
            if at + (places.pictureIdIs15Bit ? 1 : 0) < end { places.pictureId = at }
            at += places.pictureIdIs15Bit ? 2 : 1
        }
        if extensions & 0x40 != 0, at < end { places.layerZeroIndex = at }
        return places
    }
}

/// VP9 over RTP (RFC 9628).
enum VP9PayloadFormat: VideoPayloadFormat {
    /// Flexible mode off, a 15-bit PictureID, P set on a delta frame; a keyframe of known size
    /// carries its scalability structure (section 4.2.1) in its first packet.
    static func descriptor(of frame: EncodedFrame, pictureId: UInt16) -> VP9PayloadDescriptor {
        var descriptor = VP9PayloadDescriptor()
        descriptor.pictureId = pictureId
        descriptor.interPicturePredicted = !frame.isKeyframe
        if frame.isKeyframe && frame.width > 0 {
            descriptor.scalability = VP9PayloadDescriptor.ScalabilityStructure(width: frame.width, height: frame.height)
        }
        return descriptor
    }

    /// B and E mark the frame's first and last packets; the scalability structure goes with the
    /// first only.
    static func mark(_ descriptor: inout VP9PayloadDescriptor, first: Bool, last: Bool) {
        descriptor.startOfFrame = first
        descriptor.endOfFrame = last
        if !first { descriptor.scalability = nil }
    }

    /// A frame begins at the start of a base-layer frame; it is a keyframe when it is not
    /// inter-picture predicted (P clear, section 4.2) and the bitstream says so too (frame_type
    /// KEY_FRAME, VP9 section 6.2): ffmpeg's packetizer (rtpenc_vp9.c) leaves P clear on every
    /// frame.
    static func describe(_ payload: UnsafeRawBufferPointer) -> VideoPayloadStart? {
        guard let descriptor = try? VP9PayloadDescriptor(parsing: payload) else { return nil }
        let offset = descriptor.byteCount
        let baseLayer = descriptor.layer.map { $0.spatialId == 0 } ?? true
        let starts = descriptor.startOfFrame && baseLayer
        let firstByte = offset < payload.count ? payload[offset] : nil
        let keyframe =
            starts && !descriptor.interPicturePredicted && VideoBitstream.isKeyframe(firstByte: firstByte, codec: .vp9)
        return VideoPayloadStart(dataOffset: offset, startsFrame: starts, startsKeyframe: keyframe)
    }

    /// The scalability structure holds the size (section 4.2.1; a sender includes it with a
    /// keyframe at least).
    static func pictureSize(_ payload: UnsafeRawBufferPointer, _ start: VideoPayloadStart) -> (width: Int, height: Int)?
    {
        guard let descriptor = try? VP9PayloadDescriptor(parsing: payload) else { return nil }
        return descriptor.scalability?.sizes.first
    }

    /// The picture id follows the first byte when I is set; TL0PICIDX is not rewritten.
    static func numberingPlaces(_ payload: UnsafeRawBufferPointer) -> VideoNumberingPlaces {
        var places = VideoNumberingPlaces()
        guard payload.count > 1, payload[0] & 0x80 != 0 else { return places }
        places.pictureIdIs15Bit = payload[1] & 0x80 != 0
        if !places.pictureIdIs15Bit || payload.count > 2 { places.pictureId = 1 }
        return places
    }
}
