internal import CVpx

/// A VP8 or VP9 encoder over libvpx in realtime mode: exactly one packet per input frame.
///
/// Not thread-safe: use one encoder from one thread at a time.
public final class VPXEncoder {
    /// The settings the encoder was created with.
    public let configuration: VPXEncoderConfiguration
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private var handleTally: HandleTally?
    private var image = vpx_image_t()
    private var keyframePending = false
    private var nextPTS: Int64 = 0
    /// Storage of the frames handed out, reused once they are released.
    private var recycler = ByteRecycler(slotCount: 24, capacity: 16 * 1024)

    /// Creates an encoder.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a setting out of range,
    ///   ``MediaError/Code/codecFailure`` if libvpx refuses it.
    public init(configuration: VPXEncoderConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
        let iface = configuration.codec == .vp8 ? vpx_codec_vp8_cx() : vpx_codec_vp9_cx()
        var cfg = vpx_codec_enc_cfg_t()
        try VPXStatus.check(vpx_codec_enc_config_default(iface, &cfg, 0), nil, "vpx_codec_enc_config_default")
        cfg.g_w = UInt32(configuration.width)
        cfg.g_h = UInt32(configuration.height)
        // One tick per frame: timestamps are frame numbers, as IVF stores them.
        cfg.g_timebase.num = Int32(configuration.frameRateDenominator)
        cfg.g_timebase.den = Int32(configuration.frameRateNumerator)
        cfg.g_threads = UInt32(configuration.threads)
        cfg.g_lag_in_frames = 0  // one packet out for each frame in
        cfg.g_pass = VPX_RC_ONE_PASS
        cfg.g_error_resilient = configuration.errorResilient ? vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT) : 0
        cfg.rc_end_usage = VPX_CBR
        cfg.rc_target_bitrate = UInt32((configuration.bitrateBitsPerSecond + 500) / 1000)
        cfg.rc_dropframe_thresh = 0  // never drop: exactly one packet per frame
        cfg.rc_resize_allowed = 0
        cfg.rc_min_quantizer = 2  // WebRTC's range
        cfg.rc_max_quantizer = 56
        cfg.rc_undershoot_pct = 100
        cfg.rc_overshoot_pct = 15
        cfg.rc_buf_initial_sz = 500  // WebRTC's buffer model, in ms
        cfg.rc_buf_optimal_sz = 600
        cfg.rc_buf_sz = 1000
        cfg.kf_mode = VPX_KF_AUTO
        cfg.kf_min_dist = 0
        cfg.kf_max_dist = UInt32(configuration.keyframeIntervalFrames)

        context = .allocate(capacity: 1)  // libvpx keeps pointers into the context: never move it
        context.initialize(to: vpx_codec_ctx_t())
        let status = cvpx_codec_enc_init(context, iface, &cfg, 0)
        guard status == VPX_CODEC_OK else {
            let error = VPXStatus.error(status, context, "vpx_codec_enc_init")
            context.deallocate()
            throw error
        }
        handleTally = LiveCodecHandles.opened()
        do {
            try VPXStatus.check(cvpx_set_cpuused(context, Int32(configuration.speed)), context, "set cpu-used")
            if configuration.codec == .vp8 {
                try VPXStatus.check(cvpx_set_static_threshold(context, 1), context, "set static threshold")
                try VPXStatus.check(cvpx_set_max_intra_bitrate_pct(context, 300), context, "set max intra bitrate")
            } else {
                // AQ mode 3 is cyclic refresh, as WebRTC uses for realtime VP9.
                try VPXStatus.check(cvpx_vp9_set_aq_mode(context, 3), context, "set AQ mode")
                try VPXStatus.check(
                    cvpx_vp9_set_row_mt(context, configuration.threads > 1 ? 1 : 0), context, "set row-mt")
            }
        } catch {
            vpx_codec_destroy(context)
            context.deallocate()
            LiveCodecHandles.closed(handleTally)
            throw error
        }
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
        LiveCodecHandles.closed(handleTally)
    }

    /// Makes the next encoded frame a keyframe (as when a receiver asks for one).
    public func requestKeyframe() { keyframePending = true }

    /// Encodes one picture; returns its packet.
    ///
    /// - Parameter picture: a picture of the configured size; it is read, not copied.
    /// - Parameter timestampMicroseconds: the picture's presentation time, carried into the
    ///   result. Frames are numbered internally for libvpx's rate control.
    /// - Parameter forceKeyframe: make this frame a keyframe.
    /// - Complexity: allocates nothing in steady state: the frame's bytes live in storage the
    ///   encoder reuses once earlier frames have been released (a ring of 24: more than a receiver queues).
    public func encode(
        _ picture: I420View, timestampMicroseconds: Int64? = nil, forceKeyframe: Bool = false
    ) throws -> EncodedFrame {
        guard picture.width == configuration.width, picture.height == configuration.height else {
            throw MediaError.invalidArgument(
                "picture is \(picture.width)x\(picture.height); the encoder was configured for "
                    + "\(configuration.width)x\(configuration.height)")
        }
        // Wrap the caller's planes without copying: vpx_img_wrap sets up the descriptor, then the
        // plane pointers and strides are pointed at the view's own layout.
        let y = UnsafeMutablePointer(mutating: picture.y)
        guard vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(picture.width), UInt32(picture.height), 1, y) != nil else {
            throw MediaError(.codecFailure, "vpx_img_wrap refused a \(picture.width)x\(picture.height) picture")
        }
        image.planes = (y, UnsafeMutablePointer(mutating: picture.u), UnsafeMutablePointer(mutating: picture.v), nil)
        image.stride = (Int32(picture.strideY), Int32(picture.strideU), Int32(picture.strideV), 0)

        let pts = nextPTS
        nextPTS += 1
        let keyframe = forceKeyframe || keyframePending
        keyframePending = false
        let flags: vpx_enc_frame_flags_t = keyframe ? cvpx_eflag_force_kf() : 0
        try VPXStatus.check(
            vpx_codec_encode(context, &image, pts, 1, flags, cvpx_dl_realtime()), context, "vpx_codec_encode")

        var bytes: [UInt8] = []
        var isKeyframe = false
        var packets = 0
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let frame = packet.pointee.data.frame
            packets += 1
            bytes = recycler.bytes(copying: UnsafeRawBufferPointer(start: frame.buf, count: frame.sz))
            isKeyframe = (frame.flags & cvpx_frame_is_key()) != 0
        }
        guard packets == 1 else {
            throw MediaError(
                .codecFailure, "libvpx produced \(packets) packets for frame \(pts); exactly 1 was expected")
        }
        let rate = (Int64(configuration.frameRateNumerator), Int64(configuration.frameRateDenominator))
        return EncodedFrame(
            bytes: bytes, codec: configuration.codec.mediaCodec, isKeyframe: isKeyframe,
            timestampMicroseconds: timestampMicroseconds ?? pts * 1_000_000 * rate.1 / rate.0,
            durationMicroseconds: 1_000_000 * rate.1 / rate.0, width: configuration.width, height: configuration.height)
    }

    /// Encodes one picture held in an ``I420Buffer``.
    public func encode(
        _ picture: I420Buffer, timestampMicroseconds: Int64? = nil, forceKeyframe: Bool = false
    ) throws -> EncodedFrame {
        try picture.withView {
            try encode($0, timestampMicroseconds: timestampMicroseconds, forceKeyframe: forceKeyframe)
        }
    }

    /// Changes the target bitrate, in bits per second, from the next frame on.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        guard (1000...100_000_000).contains(bitsPerSecond) else {
            throw MediaError.invalidArgument("video bitrate \(bitsPerSecond) bit/s is outside 1000...100000000")
        }
        guard var cfg = context.pointee.config.enc?.pointee else {
            throw MediaError(.codecFailure, "libvpx encoder has no configuration to update")
        }
        cfg.rc_target_bitrate = UInt32((bitsPerSecond + 500) / 1000)
        try VPXStatus.check(vpx_codec_enc_config_set(context, &cfg), context, "vpx_codec_enc_config_set")
    }

    /// Whether libvpx runs in error-resilient mode, as it holds the setting.
    public var isErrorResilient: Bool { (context.pointee.config.enc?.pointee.g_error_resilient ?? 0) != 0 }
    /// Encoder threads, as libvpx holds the setting.
    public var threadCount: Int { Int(context.pointee.config.enc?.pointee.g_threads ?? 0) }
    /// The longest keyframe distance in frames, as libvpx holds the setting.
    public var keyframeIntervalFrames: Int { Int(context.pointee.config.enc?.pointee.kf_max_dist ?? 0) }

    /// The target bitrate libvpx holds now, in bits per second.
    public var bitrateBitsPerSecond: Int { Int(context.pointee.config.enc?.pointee.rc_target_bitrate ?? 0) * 1000 }
}

/// libvpx status codes to ``MediaError``.
enum VPXStatus {
    static func error(_ status: vpx_codec_err_t, _ context: UnsafeMutablePointer<vpx_codec_ctx_t>?, _ operation: String)
        -> MediaError
    {
        var reason = String(cString: vpx_codec_err_to_string(status))
        if let context, let detail = vpx_codec_error_detail(context) {
            reason += ": " + String(cString: detail)
        }
        return MediaError(.codecFailure, "\(operation) failed: \(reason)", codecStatus: Int32(status.rawValue))
    }

    static func check(_ status: vpx_codec_err_t, _ context: UnsafeMutablePointer<vpx_codec_ctx_t>?, _ operation: String)
        throws
    {
        if status != VPX_CODEC_OK { throw error(status, context, operation) }
    }
}
