// swift-tools-version:6.1
// libFuzzer harnesses for MediaPipeline's file parsers and its RTP/RTCP readers (see ../docs/testing.md, "Fuzzing").
// Build: swift build --package-path Fuzz --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "MediaPipelineFuzz",
    dependencies: [.package(path: "../")],
    targets: [
        .executableTarget(
            name: "FuzzContainers",
            dependencies: [.product(name: "MediaPipeline", package: root.lastPathComponent)]
        ),
        .executableTarget(
            name: "FuzzPackets",
            dependencies: [.product(name: "MediaPipeline", package: root.lastPathComponent)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
