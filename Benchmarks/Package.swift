// swift-tools-version:6.1
// Throughput and allocation benchmarks (ordo-one/benchmark) for MediaPipeline's hot paths. A
// nested package, so that apps linking MediaPipeline never resolve the benchmark stack.
// From this folder:
//   swift package benchmark                       every suite: wall clock, throughput, mallocs
//   swift package benchmark thresholds check      the committed malloc thresholds (CI)
import Foundation
import PackageDescription

/// SwiftPM names the root package after its checkout folder: derive it rather than hard-code it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "MediaPipelineBenchmarks",
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The bundled samples, decoded and encoded once, shared by the suites.
        .target(
            name: "BenchmarkFixtures",
            dependencies: [
                .product(name: "MediaPipeline", package: root), .product(name: "MediaPipelineTesting", package: root),
            ],
            path: "Fixtures"
        ),
        // Opus, VP8 and VP9 through MediaPipeline, each beside its twin calling libopus/libvpx from C.
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                "BenchmarkFixtures",
                .product(name: "MediaPipeline", package: root),
                .product(name: "CCodecBaseline", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CodecBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The mixer, fan-out, canvas rendering and the full subscriber tick.
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                "BenchmarkFixtures",
                .product(name: "MediaPipeline", package: root),
                .product(name: "MediaPipelineTesting", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
