// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "MediaPipeline",
    products: [
        .library(name: "MediaPipeline", targets: ["MediaPipeline"]),
        // Fixtures, load generators, the session simulator and a scripted transport, for the
        // tests, the benchmarks and pipebench: not part of the library's API.
        .library(name: "MediaPipelineTesting", targets: ["MediaPipelineTesting"]),
        .executable(name: "pipebench", targets: ["pipebench"]),
        // The direct-C twins of the codec paths, for the benchmark package (Benchmarks/).
        .library(name: "CCodecBaseline", targets: ["CCodecBaseline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // `swift package generate-documentation`: the DocC catalog in Sources/MediaPipeline/MediaPipeline.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System libraries: module map + one shim header each (Debian's -dev packages).
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVpx", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CYuv", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The Janus API's HTTP client (HTTP/1.1 with kept-alive connections, HTTPS through OpenSSL).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The WebRTC transport's C libraries: libnice (ICE), libsrtp2 (SRTP), OpenSSL's libssl (DTLS).
        .systemLibrary(name: "CNice", pkgConfig: "nice", providers: [.apt(["libnice-dev"])]),
        .systemLibrary(name: "CSrtp", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // Their C glue (plain C types only in its headers: GLib and OpenSSL stay inside).
        .target(name: "CWebRTC", dependencies: ["CNice", "CSrtp", "COpenSSL"]),
        // UDP sockets for RTP: batched receive (poll + recvmmsg into a caller's slab) and send.
        .target(name: "CNetShim"),
        .target(
            name: "MediaPipeline",
            dependencies: [
                "COpus", "CVpx", "CSoxr", "CYuv", "CZlib", "CCrypto", "CCurl", "CNetShim", "CWebRTC",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "MediaPipelineTesting", dependencies: ["MediaPipeline"]),
        // The same codec work written directly in C, so `pipebench bench` and Benchmarks/ can
        // report the wrappers' cost as a ratio measured in one run; and the session capacity's C
        // reference (libopus, libvpx and libyuv with no engine), for `pipebench bench`.
        .target(
            name: "CCodecBaseline",
            dependencies: ["COpus", "CVpx", "CYuv"]
        ),
        // Counts heap allocations in pipebench's process, for `pipebench bench`.
        .target(name: "CAllocationCounter"),
        .executableTarget(
            name: "pipebench",
            dependencies: [
                "MediaPipeline",
                "MediaPipelineTesting",
                "CCodecBaseline",
                "CAllocationCounter",
                // The SRTP bench calls libsrtp2 directly, as the C floor.
                "CWebRTC", "CSrtp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "MediaPipelineTests",
            dependencies: [
                "MediaPipeline", "MediaPipelineTesting", "CCodecBaseline",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
