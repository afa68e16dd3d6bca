internal import CYuv

/// Scales, crops and mirrors I420 pictures with libyuv (box filtering, as WebRTC uses).
enum PictureScaler {
    /// A rectangle in luma pixels. Kept on even coordinates where possible so chroma stays aligned.
    struct Rect: Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    /// Where the source (cropped to `source`) lands in a `targetWidth` × `targetHeight` canvas for `mode`.
    static func layout(
        sourceWidth: Int, sourceHeight: Int, targetWidth: Int, targetHeight: Int, mode: RenderMode
    ) -> (source: Rect, target: Rect) {
        let full = Rect(x: 0, y: 0, width: sourceWidth, height: sourceHeight)
        let canvas = Rect(x: 0, y: 0, width: targetWidth, height: targetHeight)
        switch mode {
        case .fill:
            return (full, canvas)
        case .fit:
            // Uniform scale so the whole picture fits; bars on the short sides.
            var width = targetWidth
            var height = targetHeight
            if sourceWidth * targetHeight > sourceHeight * targetWidth {
                height = evenRounded(
                    Double(targetWidth) * Double(sourceHeight) / Double(sourceWidth), limit: targetHeight)
            } else {
                width = evenRounded(
                    Double(targetHeight) * Double(sourceWidth) / Double(sourceHeight), limit: targetWidth)
            }
            let x = evenFloor((targetWidth - width) / 2)
            let y = evenFloor((targetHeight - height) / 2)
            return (full, Rect(x: x, y: y, width: width, height: height))
        case .hidden:
            // Uniform scale so the canvas is covered; crop the overflowing source, centred.
            var width = sourceWidth
            var height = sourceHeight
            if sourceWidth * targetHeight > sourceHeight * targetWidth {
                width = evenRounded(
                    Double(sourceHeight) * Double(targetWidth) / Double(targetHeight), limit: sourceWidth)
            } else {
                height = evenRounded(
                    Double(sourceWidth) * Double(targetHeight) / Double(targetWidth), limit: sourceHeight)
            }
            let x = evenFloor((sourceWidth - width) / 2)
            let y = evenFloor((sourceHeight - height) / 2)
            return (Rect(x: x, y: y, width: width, height: height), canvas)
        }
    }

    private static func evenRounded(_ value: Double, limit: Int) -> Int {
        let even = Int((value / 2).rounded()) * 2
        return max(1, min(limit, even))
    }

    private static func evenFloor(_ value: Int) -> Int { value & ~1 }

    /// Scales the `sourceRect` part of `source` into the `targetRect` part of `target`.
    static func scale(
        _ source: I420View, _ sourceRect: Rect, into target: I420MutableView, _ targetRect: Rect
    ) {
        let sx = sourceRect.x / 2
        let sy = sourceRect.y / 2
        let tx = targetRect.x / 2
        let ty = targetRect.y / 2
        I420Scale(
            source.y + sourceRect.y * source.strideY + sourceRect.x, Int32(source.strideY),
            source.u + sy * source.strideU + sx, Int32(source.strideU),
            source.v + sy * source.strideV + sx, Int32(source.strideV),
            Int32(sourceRect.width), Int32(sourceRect.height),
            target.y + targetRect.y * target.strideY + targetRect.x, Int32(target.strideY),
            target.u + ty * target.strideU + tx, Int32(target.strideU),
            target.v + ty * target.strideV + tx, Int32(target.strideV),
            Int32(targetRect.width), Int32(targetRect.height), kFilterBox)
    }

    /// Copies `source` into `target` (same size) mirrored left to right.
    static func mirror(_ source: I420View, into target: I420MutableView) {
        I420Mirror(
            source.y, Int32(source.strideY), source.u, Int32(source.strideU), source.v, Int32(source.strideV),
            target.y, Int32(target.strideY), target.u, Int32(target.strideU), target.v, Int32(target.strideV),
            Int32(source.width), Int32(source.height))
    }

    /// Converts a picture to packed 8-bit RGB (R, G, B bytes per pixel), BT.601 limited range.
    static func toRGB(_ source: I420View, into rgb: UnsafeMutablePointer<UInt8>, stride: Int) {
        // libyuv names formats by little-endian word order: "RAW" is R, G, B in memory.
        I420ToRAW(
            source.y, Int32(source.strideY), source.u, Int32(source.strideU), source.v, Int32(source.strideV), rgb,
            Int32(stride), Int32(source.width), Int32(source.height))
    }
}
