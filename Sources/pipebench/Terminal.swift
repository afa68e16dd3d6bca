#if canImport(Glibc)
    import Glibc
#endif

/// A progress bar on standard error, drawn only when it is a terminal.
enum Terminal {
    // The command line runs on one thread; nothing else touches this flag.
    nonisolated(unsafe) private static var drawn = false
    nonisolated(unsafe) private static var lastDrawn = ""
    static let isInteractive = isatty(2) == 1

    /// Draws `label [#####.....] 42%` in place.
    static func progress(_ label: String, _ fraction: Double) {
        guard isInteractive else { return }
        let clamped = max(0, min(1, fraction))
        let width = 30
        let filled = Int(clamped * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = "\r\(label) [\(bar)] \(Int(clamped * 100))%"
        guard line != lastDrawn else { return }  // redraw only when something visible changed
        writeStandardError(line)
        lastDrawn = line
        drawn = true
    }

    /// Erases the bar so the next line starts clean.
    static func clearProgress() {
        guard drawn else { return }
        writeStandardError("\r\u{1B}[K")
        drawn = false
        lastDrawn = ""
    }
}
