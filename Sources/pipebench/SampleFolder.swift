import ArgumentParser
import Foundation

/// Where the bundled sample media are: the folder `--samples` names, or else the first of
/// `share/pipebench/samples` beside an installed executable, `samples` beside it, the checkout's
/// `samples` above a built one (`.build/release/pipebench`), and `./samples`.
enum SampleFolder {
    /// The files every sample folder holds.
    static let required = ["speech-48k-stereo.wav", "motion-640x360.ivf"]

    /// The folder to use, or a one-line error naming where it looked.
    static func locate(_ option: String?) throws -> String {
        if let option {
            guard holdsSamples(option) else {
                throw ValidationError(
                    "--samples '\(option)' does not hold \(required.joined(separator: " and ")) "
                        + "(the checkout's samples/ folder does)")
            }
            return option
        }
        let candidates = searchPath()
        if let found = candidates.first(where: holdsSamples) { return found }
        throw ValidationError(
            "the sample media were not found (looked in \(candidates.joined(separator: ", "))); "
                + "pass --samples FOLDER, the checkout's samples/ folder")
    }

    private static func holdsSamples(_ folder: String) -> Bool {
        required.allSatisfy { FileManager.default.isReadableFile(atPath: "\(folder)/\($0)") }
    }

    /// The folders looked in, in order.
    private static func searchPath() -> [String] {
        var folders: [String] = []
        // The executable itself (not the name it was called by, which may be a link or on PATH).
        let executable =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent().standardizedFileURL
        folders.append(directory.deletingLastPathComponent().appendingPathComponent("share/pipebench/samples").path)
        // Up from the executable: beside it, then each folder above (a build inside a checkout).
        for _ in 0..<5 {
            folders.append(directory.appendingPathComponent("samples").path)
            let parent = directory.deletingLastPathComponent()
            if parent.path == directory.path { break }
            directory = parent
        }
        folders.append(FileManager.default.currentDirectoryPath + "/samples")
        var seen = Set<String>()
        return folders.filter { seen.insert($0).inserted }
    }
}
