/// An N×N grid of equal cells, N = ⌈√count⌉, filled row by row (the layout AgoraUIKit uses
/// for remote users).
public struct GridLayout: Sendable, Equatable {
    /// Columns and rows.
    public let dimension: Int
    /// The picture size in pixels.
    public let width: Int, height: Int

    /// The grid for `count` tiles in a `width` × `height` picture.
    public init(count: Int, width: Int, height: Int) {
        var n = 1
        while n * n < count { n += 1 }
        dimension = n
        self.width = width
        self.height = height
    }

    /// The rectangle of cell `index` (even coordinates; the last row and column take the remainder).
    public func cell(_ index: Int) -> (x: Int, y: Int, width: Int, height: Int) {
        let column = index % dimension
        let row = index / dimension
        let cellWidth = (width / dimension) & ~1
        let cellHeight = (height / dimension) & ~1
        let x = column * cellWidth
        let y = row * cellHeight
        let w = column == dimension - 1 ? width - x : cellWidth
        let h = row == dimension - 1 ? height - y : cellHeight
        return (x, y, w, h)
    }
}

/// Renders several canvases into one picture in a ``GridLayout``.
public enum GridRenderer {
    /// Draws `canvases` (in order) into `target`, each fitted into its cell in hidden mode; the
    /// rest of the picture is black. With `labels`, each cell shows its user's uid in its
    /// top-left corner (``NumberLabel``).
    public static func render(_ canvases: [CanvasBuffer], into target: I420Buffer, labels: Bool = false) {
        let layout = GridLayout(count: canvases.count, width: target.width, height: target.height)
        target.withMutableView { view in
            view.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v)
            for (index, canvas) in canvases.enumerated() {
                let cell = layout.cell(index)
                guard cell.width > 1, cell.height > 1 else { continue }
                canvas.withLockedPicture { picture in
                    let fitted = PictureScaler.layout(
                        sourceWidth: picture.width, sourceHeight: picture.height, targetWidth: cell.width,
                        targetHeight: cell.height, mode: .hidden)
                    let rect = PictureScaler.Rect(x: cell.x, y: cell.y, width: cell.width, height: cell.height)
                    PictureScaler.scale(picture, fitted.source, into: view, rect)
                }
                if labels {
                    let scale = max(1, cell.height / 60)
                    NumberLabel.draw(
                        canvas.canvas.uid, into: view, x: cell.x + 2 * scale, y: cell.y + 2 * scale, scale: scale)
                }
            }
        }
    }
}
