// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "dlpipe",
    products: [
        .library(name: "DLPipe", targets: ["DLPipe"]),
        .executable(name: "dlpipe", targets: ["DLPipeCLI"]),
        .executable(name: "dlpipe-example", targets: ["DLPipeExample"]),
    ],
    targets: [
        // C libraries from Debian, reached only through these system library targets.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPosix"),
        // The engine: queue, state machine, transport, naming. C stays internal.
        .target(name: "DLPipe", dependencies: ["CCurl", "CCrypto", "CPosix"]),
        // The command-line tool.
        .executableTarget(name: "DLPipeCLI", dependencies: ["DLPipe"]),
        // A small program that uses the library the way an app would.
        .executableTarget(name: "DLPipeExample", dependencies: ["DLPipe"]),
        .testTarget(name: "DLPipeTests", dependencies: ["DLPipe"]),
        .testTarget(name: "EndToEndTests", dependencies: ["DLPipe"], exclude: ["README.md"]),
    ]
)
