import ArgumentParser
import MediaPipeline

#if canImport(Glibc)
    import Glibc
#endif

/// `pipebench`: encode and decode media files with MediaPipeline, inspect them, and measure it.
@main
struct Pipebench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipebench",
        abstract: "Simulate multi-channel sessions, encode, decode and inspect media files, and benchmark codec paths.",
        subcommands: [
            SimulateCommand.self, EncodeCommand.self, DecodeCommand.self, InfoCommand.self, RoundTripCommand.self,
            RemuxCommand.self, ComposeCommand.self, SendCommand.self, ReceiveCommand.self, JoinCommand.self,
            BenchCommand.self,
            MatrixCommand.self,
        ])

    /// Runs the command; every failure is one line on standard error and a non-zero exit.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)  // --help, --version
            }
            let message = (error as? MediaError)?.description ?? Self.message(for: error)
            let oneLine = message.split(whereSeparator: \.isNewline).joined(separator: " ")
            Terminal.clearProgress()
            printError("pipebench: error: \(oneLine)")
            Glibc.exit(code.rawValue == 0 ? 1 : code.rawValue)
        }
    }
}

/// Prints a line to standard error.
func printError(_ text: String) { writeStandardError(text + "\n") }

/// Writes text to standard error, unbuffered.
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
