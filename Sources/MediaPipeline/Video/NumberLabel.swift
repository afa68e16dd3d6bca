/// Draws a number in plain digits (a 3×5 pixel font, scaled) on a dark box, into a picture:
/// how a composed grid shows which user each tile is.
public enum NumberLabel {
    /// The digits 0-9, five rows of three pixels each (bit 2 is the left column).
    private static let font: [[UInt8]] = [
        [7, 5, 5, 5, 7], [2, 6, 2, 2, 7], [7, 1, 7, 4, 7], [7, 1, 7, 1, 7], [5, 5, 7, 1, 1],
        [7, 4, 7, 1, 7], [7, 4, 7, 5, 7], [7, 1, 1, 1, 1], [7, 5, 7, 5, 7], [7, 5, 7, 1, 7],
    ]

    /// The size in pixels the label of `number` takes at `scale` (pixels per font pixel).
    public static func size(of number: UInt32, scale: Int) -> (width: Int, height: Int) {
        let digits = String(number).count
        return ((digits * 4 + 1) * scale, 7 * scale)
    }

    /// Draws `number` with its top-left corner at (`x`, `y`), each font pixel `scale` pixels
    /// wide: light digits on a dark box, the box's chroma neutral. Whatever falls outside the
    /// picture is clipped.
    public static func draw(_ number: UInt32, into view: I420MutableView, x: Int, y: Int, scale: Int) {
        let scale = max(1, scale)
        let (boxWidth, boxHeight) = size(of: number, scale: scale)
        let left = max(0, x)
        let top = max(0, y)
        let right = min(view.width, x + boxWidth)
        let bottom = min(view.height, y + boxHeight)
        guard right > left, bottom > top else { return }
        for row in top..<bottom {
            for column in left..<right { view.y[row * view.strideY + column] = 16 }
        }
        for row in (top / 2)..<((bottom + 1) / 2) {
            for column in (left / 2)..<((right + 1) / 2) {
                view.u[row * view.strideU + column] = 128
                view.v[row * view.strideV + column] = 128
            }
        }
        for (index, digit) in String(number).utf8.enumerated() {
            let glyph = font[Int(digit - UInt8(ascii: "0"))]
            let glyphX = x + (1 + index * 4) * scale
            for (glyphRow, bits) in glyph.enumerated() {
                for glyphColumn in 0..<3 where bits & (4 >> glyphColumn) != 0 {
                    let px = glyphX + glyphColumn * scale
                    let py = y + (1 + glyphRow) * scale
                    // The font pixel, clipped to the box (itself clipped to the picture).
                    let (rowStart, rowEnd) = (max(top, py), min(bottom, py + scale))
                    let (columnStart, columnEnd) = (max(left, px), min(right, px + scale))
                    guard rowStart < rowEnd, columnStart < columnEnd else { continue }
                    for row in rowStart..<rowEnd {
                        for column in columnStart..<columnEnd { view.y[row * view.strideY + column] = 235 }
                    }
                }
            }
        }
    }
}
