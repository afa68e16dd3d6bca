#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An 8-bit 4:2:0 planar picture (I420): a full-size luma plane and two chroma planes of
/// `(width + 1) / 2` × `(height + 1) / 2` samples, so odd sizes keep their last column and row.
///
/// One 64-byte-aligned allocation holds the three planes; each row starts at a multiple of 32
/// bytes (``strideY``, ``strideU``, ``strideV``). The buffer is a reference type so that a decoded
/// picture can be shared by several readers without copying; pixels are reached only inside
/// ``withView(_:)`` and ``withMutableView(_:)``.
///
/// - Warning: a buffer is `Sendable` under a contract: write it only while no other holder
///   reads it (fill it, then share it). ``I420BufferPool`` hands out only unshared buffers.
public final class I420Buffer: @unchecked Sendable {
    /// Luma width in pixels.
    public let width: Int
    /// Luma height in pixels.
    public let height: Int
    /// Bytes from one luma row to the next.
    public let strideY: Int
    /// Bytes from one U row to the next.
    public let strideU: Int
    /// Bytes from one V row to the next.
    public let strideV: Int
    private let storage: UnsafeMutableRawPointer
    private let offsetU: Int
    private let offsetV: Int

    /// The largest width or height accepted, in pixels (VP8's and VP9's limit is 16384).
    public static let maximumDimension = 16384

    /// Chroma plane width: `(width + 1) / 2`.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Chroma plane height: `(height + 1) / 2`.
    public var chromaHeight: Int { (height + 1) / 2 }
    /// Bytes of picture data without padding: `width*height + 2*chromaWidth*chromaHeight`.
    public var packedByteCount: Int { width * height + 2 * chromaWidth * chromaHeight }

    /// Allocates an uninitialised picture of `width` × `height` pixels.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a size of 0 or above ``maximumDimension``.
    public init(width: Int, height: Int) throws {
        try I420Buffer.validate(width: width, height: height)
        self.width = width
        self.height = height
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        strideY = (width + 31) & ~31
        strideU = (chromaWidth + 31) & ~31
        strideV = strideU
        offsetU = strideY * height
        offsetV = offsetU + strideU * chromaHeight
        let total = offsetV + strideV * chromaHeight
        var raw: UnsafeMutableRawPointer?
        guard posix_memalign(&raw, 64, total) == 0, let raw else {
            throw MediaError(.io, "cannot allocate \(total) bytes for a \(width)x\(height) picture")
        }
        storage = raw
    }

    deinit { free(storage) }

    /// Throws ``MediaError/Code/invalidArgument`` unless both dimensions are in 1...``maximumDimension``.
    public static func validate(width: Int, height: Int) throws {
        guard (1...maximumDimension).contains(width), (1...maximumDimension).contains(height) else {
            throw MediaError.invalidArgument(
                "picture size \(width)x\(height) is outside 1...\(maximumDimension) in each dimension")
        }
    }

    /// Calls `body` with read-only access to the planes.
    /// - Warning: the pointers must not escape `body`.
    public func withView<R>(_ body: (I420View) throws -> R) rethrows -> R {
        try body(view)
    }

    /// Calls `body` with write access to the planes.
    /// - Warning: the pointers must not escape `body`; see the type's sharing contract.
    public func withMutableView<R>(_ body: (I420MutableView) throws -> R) rethrows -> R {
        try body(
            I420MutableView(
                width: width, height: height, y: storage.assumingMemoryBound(to: UInt8.self),
                u: (storage + offsetU).assumingMemoryBound(to: UInt8.self),
                v: (storage + offsetV).assumingMemoryBound(to: UInt8.self), strideY: strideY, strideU: strideU,
                strideV: strideV))
    }

    private var view: I420View {
        I420View(
            width: width, height: height, y: UnsafePointer(storage.assumingMemoryBound(to: UInt8.self)),
            u: UnsafePointer((storage + offsetU).assumingMemoryBound(to: UInt8.self)),
            v: UnsafePointer((storage + offsetV).assumingMemoryBound(to: UInt8.self)), strideY: strideY,
            strideU: strideU, strideV: strideV)
    }

    /// Fills the picture from another view of the same size, row by row.
    /// - Precondition: `source` has this buffer's width and height.
    public func copy(from source: I420View) {
        precondition(source.width == width && source.height == height, "copy needs pictures of one size")
        withMutableView { target in
            I420View.copyPlane(source.y, source.strideY, target.y, target.strideY, width, height)
            I420View.copyPlane(source.u, source.strideU, target.u, target.strideU, chromaWidth, chromaHeight)
            I420View.copyPlane(source.v, source.strideV, target.v, target.strideV, chromaWidth, chromaHeight)
        }
    }
}

/// Read-only access to the three planes of an I420 picture.
///
/// - Warning: a view borrows memory it does not own; it is valid only inside the closure that
///   handed it out.
public struct I420View {
    /// Luma width and height in pixels.
    public let width: Int, height: Int
    /// First byte of each plane.
    public let y: UnsafePointer<UInt8>, u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>
    /// Bytes from one row to the next, per plane.
    public let strideY: Int, strideU: Int, strideV: Int

    /// Creates a view over planes owned elsewhere.
    public init(
        width: Int, height: Int, y: UnsafePointer<UInt8>, u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>,
        strideY: Int, strideU: Int, strideV: Int
    ) {
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
        self.strideY = strideY
        self.strideU = strideU
        self.strideV = strideV
    }

    /// Chroma plane width: `(width + 1) / 2`.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Chroma plane height: `(height + 1) / 2`.
    public var chromaHeight: Int { (height + 1) / 2 }

    /// Calls `body` with each visible row of Y, then U, then V, as `vpxdec --i420` writes them.
    public func forEachPackedRow(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        for row in 0..<height { try body(UnsafeRawBufferPointer(start: y + row * strideY, count: width)) }
        for row in 0..<chromaHeight { try body(UnsafeRawBufferPointer(start: u + row * strideU, count: chromaWidth)) }
        for row in 0..<chromaHeight { try body(UnsafeRawBufferPointer(start: v + row * strideV, count: chromaWidth)) }
    }

    /// The MD5 of the visible planes, packed: equal to `vpxdec --md5 --i420`'s per-frame sum.
    public func md5() -> String {
        var digest = MD5()
        forEachPackedRow { digest.update($0) }
        return digest.finalize()
    }

    static func copyPlane(
        _ source: UnsafePointer<UInt8>, _ sourceStride: Int, _ target: UnsafeMutablePointer<UInt8>,
        _ targetStride: Int, _ width: Int, _ height: Int
    ) {
        if sourceStride == targetStride {
            memcpy(target, source, sourceStride * (height - 1) + width)
            return
        }
        for row in 0..<height { memcpy(target + row * targetStride, source + row * sourceStride, width) }
    }
}

/// Write access to the three planes of an I420 picture.
///
/// - Warning: valid only inside the closure that handed it out.
public struct I420MutableView {
    /// Luma width and height in pixels.
    public let width: Int, height: Int
    /// First byte of each plane.
    public let y: UnsafeMutablePointer<UInt8>, u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>
    /// Bytes from one row to the next, per plane.
    public let strideY: Int, strideU: Int, strideV: Int

    /// Chroma plane width: `(width + 1) / 2`.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Chroma plane height: `(height + 1) / 2`.
    public var chromaHeight: Int { (height + 1) / 2 }

    /// The same planes, read-only.
    public var readOnly: I420View {
        I420View(
            width: width, height: height, y: UnsafePointer(y), u: UnsafePointer(u), v: UnsafePointer(v),
            strideY: strideY, strideU: strideU, strideV: strideV)
    }

    /// Fills the picture with one colour.
    public func fill(y luma: UInt8, u cb: UInt8, v cr: UInt8) {
        for row in 0..<height { memset(y + row * strideY, Int32(luma), width) }
        for row in 0..<chromaHeight {
            memset(u + row * strideU, Int32(cb), chromaWidth)
            memset(v + row * strideV, Int32(cr), chromaWidth)
        }
    }
}
