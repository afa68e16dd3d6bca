import ArgumentParser
import MediaPipeline

/// `pipebench bench`: codec throughput through MediaPipeline against the same work in C.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench", abstract: "Measure codec throughput (placeholder).")
    func run() throws { throw ValidationError("bench is not built yet") }
}

