import Foundation
import Testing

@testable import MediaPipeline

/// A picture whose luma columns are `value(x)` and whose chroma is neutral.
private func columns(width: Int, height: Int, _ value: (Int) -> UInt8) throws -> I420Buffer {
    let buffer = try I420Buffer(width: width, height: height)
    buffer.withMutableView { view in
        view.fill(y: 0, u: 128, v: 128)
        for y in 0..<height { for x in 0..<width { view.y[y * view.strideY + x] = value(x) } }
    }
    return buffer
}

private func lumaRows(_ canvas: CanvasBuffer) -> [[UInt8]] {
    canvas.withLockedPicture { view in
        (0..<view.height).map { y in (0..<view.width).map { view.y[y * view.strideY + $0] } }
    }
}

@Suite("Canvas rendering", .timeLimit(.minutes(5)))
struct CanvasTests {
    @Test("fit letterboxes a wide picture with black bars of exact height")
    func fitBars() throws {
        let canvas = try CanvasBuffer(VideoCanvas(channelId: "c", uid: 1, width: 100, height: 100, renderMode: .fit))
        try columns(width: 160, height: 90) { _ in 200 }.withView { canvas.render($0) }
        let rows = lumaRows(canvas)
        // 160x90 → 100 wide, 56.25 → 56 rows high (even), centred: 22 black rows, 56 picture rows, 22 black rows.
        for (index, row) in rows.enumerated() {
            let expected: UInt8 = (22..<78).contains(index) ? 200 : CanvasBlack.y
            #expect(row.allSatisfy { $0 == expected }, "row \(index)")
        }
        canvas.withLockedPicture { view in
            #expect(view.u[0] == CanvasBlack.u && view.v[0] == CanvasBlack.v)
        }
    }

    @Test("fit pillarboxes a tall picture")
    func fitPillars() throws {
        let canvas = try CanvasBuffer(VideoCanvas(channelId: "c", uid: 1, width: 320, height: 180, renderMode: .fit))
        try columns(width: 90, height: 160) { _ in 180 }.withView { canvas.render($0) }
        // 90x160 → 180 high, 101.25 → 102 wide (even), x = (320 − 102) / 2 = 109 → 108 (even).
        for row in lumaRows(canvas) {
            #expect(row[0..<108].allSatisfy { $0 == CanvasBlack.y })
            #expect(row[108..<210].allSatisfy { $0 == 180 })
            #expect(row[210...].allSatisfy { $0 == CanvasBlack.y })
        }
    }

    @Test("hidden crops the overflow, centred, and covers the whole canvas")
    func hiddenCrop() throws {
        let canvas = try CanvasBuffer(VideoCanvas(channelId: "c", uid: 1, width: 100, height: 100, renderMode: .hidden))
        // 160x90 into 100x100: keep a centred 90x90 (x from 34 to 124, even), drop the sides.
        let source = try columns(width: 160, height: 90) { x in x < 34 ? 50 : (x >= 124 ? 100 : 200) }
        source.withView { canvas.render($0) }
        #expect(lumaRows(canvas).allSatisfy { $0.allSatisfy { $0 == 200 } })
        // Wider crop markers one pixel inside the kept region do show up.
        let edged = try columns(width: 160, height: 90) { x in x == 34 ? 10 : 200 }
        edged.withView { canvas.render($0) }
        #expect(lumaRows(canvas).allSatisfy { $0.contains { $0 < 200 } })
    }

    @Test("fill stretches to the canvas")
    func fillStretch() throws {
        let canvas = try CanvasBuffer(VideoCanvas(channelId: "c", uid: 1, width: 64, height: 32, renderMode: .fill))
        try columns(width: 16, height: 16) { x in x < 8 ? 40 : 220 }.withView { canvas.render($0) }
        // 4x horizontal upscaling interpolates across the edge; away from it the values are exact.
        for row in lumaRows(canvas) {
            #expect(row[0..<30].allSatisfy { $0 == 40 })
            #expect(row[34...].allSatisfy { $0 == 220 })
            #expect(zip(row, row.dropFirst()).allSatisfy { $0 <= $1 })
        }
    }

    @Test("mirror flips left and right")
    func mirror() throws {
        let canvas = try CanvasBuffer(
            VideoCanvas(channelId: "c", uid: 1, width: 64, height: 32, renderMode: .fill, mirrorMode: .enabled))
        try columns(width: 64, height: 32) { x in UInt8(x * 2) }.withView { canvas.render($0) }
        let expected: [UInt8] = (0..<64).map { (x: Int) -> UInt8 in UInt8((63 - x) * 2) }
        for row in lumaRows(canvas) { #expect(row == expected) }
    }

    @Test("rebinding changes the size and mode; PNG and Y4M exports are read by ffmpeg")
    func rebindAndExport() throws {
        let canvas = try CanvasBuffer(VideoCanvas(channelId: "c", uid: 1, width: 64, height: 32, renderMode: .fill))
        try canvas.reconfigure(VideoCanvas(channelId: "c", uid: 1, width: 48, height: 48, renderMode: .fit))
        try columns(width: 64, height: 32) { _ in 235 }.withView { canvas.render($0) }
        #expect(canvas.canvas.width == 48 && canvas.framesRendered == 1)
        let folder = TemporaryFolder()
        try canvas.writePNG(path: folder.file("c.png"))
        try canvas.writeY4M(path: folder.file("c.y4m"))
        // ffmpeg decodes the PNG: white (Y 235) rows in the middle, black (Y 16) bars.
        try reference(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", folder.file("c.png"), "-f", "rawvideo", "-pix_fmt", "rgb24",
                folder.file("c.rgb"),
            ])
        let rgb = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder.file("c.rgb"))))
        #expect(rgb.count == 48 * 48 * 3)
        #expect(rgb[0] == 0 && rgb[(24 * 48 + 24) * 3] == 255)
        let probe = try reference(
            "ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", folder.file("c.y4m")])
        #expect(probe.trimmingCharacters(in: .whitespacesAndNewlines) == "48,48")
    }

    @Test("a grid places N×N cells row by row")
    func grid() throws {
        #expect(GridLayout(count: 1, width: 100, height: 100).dimension == 1)
        #expect(GridLayout(count: 4, width: 100, height: 100).dimension == 2)
        #expect(GridLayout(count: 5, width: 100, height: 100).dimension == 3)
        let canvases = try (0..<4).map { index in
            let canvas = try CanvasBuffer(
                VideoCanvas(channelId: "c", uid: UInt32(index), width: 32, height: 32, renderMode: .fill))
            try columns(width: 32, height: 32) { _ in UInt8(50 + index * 40) }.withView { canvas.render($0) }
            return canvas
        }
        let target = try I420Buffer(width: 64, height: 64)
        GridRenderer.render(canvases, into: target)
        target.withView { view in
            #expect(view.y[0] == 50)  // top left
            #expect(view.y[40] == 90)  // top right
            #expect(view.y[40 * view.strideY] == 130)  // bottom left
            #expect(view.y[40 * view.strideY + 40] == 170)  // bottom right
        }
    }
}
