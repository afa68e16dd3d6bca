internal import CVpx

/// A VP8 or VP9 decoder over libvpx. Any picture size, odd ones included, and size changes
/// mid-stream (at a keyframe) are handled.
///
/// Not thread-safe: use one decoder from one thread at a time.
public final class VPXDecoder {
    /// The codec this decoder reads.
    public let codec: VideoCodec
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private var handleTally: HandleTally?
    private var pool: I420BufferPool?
    private let poolCapacity: Int
    /// Frames decoded so far.
    public private(set) var framesDecoded = 0

    /// Creates a decoder.
    /// - Parameter codec: VP8 or VP9.
    /// - Parameter threads: decoder threads, 1...64.
    /// - Parameter outputPoolCapacity: how many decoded pictures returned by ``decode(_:)-([UInt8])`` may be
    ///   held at once.
    public init(codec: VideoCodec, threads: Int = 1, outputPoolCapacity: Int = 4) throws {
        guard (1...64).contains(threads) else {
            throw MediaError.invalidArgument("decoder threads \(threads) is outside 1...64")
        }
        self.codec = codec
        self.poolCapacity = outputPoolCapacity
        var cfg = vpx_codec_dec_cfg_t(threads: UInt32(threads), w: 0, h: 0)
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        let status = cvpx_codec_dec_init(context, codec == .vp8 ? vpx_codec_vp8_dx() : vpx_codec_vp9_dx(), &cfg, 0)
        guard status == VPX_CODEC_OK else {
            let error = VPXStatus.error(status, context, "vpx_codec_dec_init")
            context.deallocate()
            throw error
        }
        handleTally = LiveCodecHandles.opened()
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
        LiveCodecHandles.closed(handleTally)
    }

    /// Decodes one compressed frame and calls `body` with each picture it yields (normally one;
    /// none for a frame that is not shown). Returns how many pictures were yielded.
    ///
    /// The view points into libvpx's own buffers: nothing is copied.
    /// - Warning: the view must not escape `body`; it is invalid after the next decode.
    @discardableResult
    public func decode(_ packet: UnsafeRawBufferPointer, _ body: (I420View) throws -> Void) throws -> Int {
        guard let data = packet.baseAddress, packet.count > 0 else {
            throw MediaError.invalidArgument("empty \(codec) frame")
        }
        guard packet.count <= Int(UInt32.max) else { throw MediaError.invalidArgument("\(codec) frame is too large") }
        let status = vpx_codec_decode(context, data.assumingMemoryBound(to: UInt8.self), UInt32(packet.count), nil, 0)
        guard status == VPX_CODEC_OK else {
            throw VPXStatus.error(status, context, "\(codec) decode of frame \(framesDecoded)")
        }
        var iterator: vpx_codec_iter_t? = nil
        var yielded = 0
        while let image = vpx_codec_get_frame(context, &iterator) {
            let img = image.pointee
            guard img.fmt == VPX_IMG_FMT_I420, let y = img.planes.0, let u = img.planes.1, let v = img.planes.2 else {
                throw MediaError.unsupported(
                    "\(codec) frame \(framesDecoded) is not 8-bit 4:2:0 (libvpx image format \(img.fmt.rawValue))")
            }
            framesDecoded += 1
            yielded += 1
            try body(
                I420View(
                    width: Int(img.d_w), height: Int(img.d_h), y: UnsafePointer(y), u: UnsafePointer(u),
                    v: UnsafePointer(v), strideY: Int(img.stride.0), strideU: Int(img.stride.1),
                    strideV: Int(img.stride.2)))
        }
        return yielded
    }

    /// Decodes one compressed frame into a pooled ``I420Buffer`` (one copy of the picture);
    /// returns nil for a frame that yields no picture.
    public func decode(_ packet: [UInt8]) throws -> I420Buffer? {
        var result: I420Buffer?
        _ = try packet.withUnsafeBytes { raw in
            try decode(raw) { view in
                if pool == nil || pool!.width != view.width || pool!.height != view.height {
                    pool = try I420BufferPool(width: view.width, height: view.height, capacity: poolCapacity)
                }
                let buffer = try pool!.acquire()
                buffer.copy(from: view)
                result = buffer
            }
        }
        return result
    }

    /// Decodes an ``EncodedFrame`` (see ``decode(_:)-([UInt8])``).
    public func decode(_ frame: EncodedFrame) throws -> I420Buffer? { try decode(frame.bytes) }
}
