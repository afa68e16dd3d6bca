import ArgumentParser
import MediaPipeline

/// `pipebench bench`: codec throughput through MediaPipeline against the same work in C.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench", abstract: "Measure codec throughput (placeholder).")
    func run() throws { throw ValidationError("bench is not built yet") }
}

/// `pipebench samples`: the main job until the engine exists.
struct SamplesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "samples", abstract: "Round-trip the bundled samples.")
    func run() throws { throw ValidationError("samples is not built yet") }
}
