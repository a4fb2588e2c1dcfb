// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "dlpipe",
    products: [
        .library(name: "DLPipe", targets: ["DLPipe"]),
        .library(name: "DLPipeLua", targets: ["DLPipeLua"]),
        .library(name: "DLPipeQueue", targets: ["DLPipeQueue"]),
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
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CLua", pkgConfig: "lua5.4",
            // libexpat and zlib: dl.xml.parse and dl.gunzip (Sources/CLua/dl_kit.h).
            providers: [.apt(["liblua5.4-dev", "libexpat1-dev", "zlib1g-dev"])]),
        .systemLibrary(
            name: "CIDN", pkgConfig: "libidn2",
            providers: [.apt(["libidn2-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        // The engine: queue, state machine, transport, naming. C stays internal.
        .target(name: "DLPipe", dependencies: ["CCurl", "CCrypto", "CPosix", "CSQLite", "CIDN"]),
        // The shared queue in PostgreSQL and its worker: a participant of the
        // engine's (`QueueParticipant`). Only what links it links libpq.
        .target(name: "DLPipeQueue", dependencies: ["DLPipe", "CPostgres"]),
        // Lua 5.4: the runtime (sandbox, budgets, values) and the bridge that
        // answers the engine's hooks with a job's handlers.
        .target(
            // DLPipeQueue: `dl.config{queue=...}` is checked as libpq reads it.
            name: "DLPipeLua", dependencies: ["DLPipe", "DLPipeQueue", "CLua"],
            resources: [
                .embedInCode("Bridge/prelude.lua"), .embedInCode("Bridge/api.lua"), .embedInCode("Bridge/kit.lua"),
                .embedInCode("Bridge/luadefs.lua"), .embedInCode("Bridge/lint.lua"),
            ]),
        // `--web`: a run's live page, /metrics and /api over libmicrohttpd.
        // Only the command line links it; library users do not.
        .target(name: "DLPipeWeb", dependencies: ["DLPipe", "CMicroHTTPD"], resources: [.embedInCode("page.html"), .embedInCode("fleet.html"), .embedInCode("shared-head.html"), .embedInCode("shared.js")]),
        // The command-line tool.
        .executableTarget(name: "DLPipeCLI", dependencies: ["DLPipe", "DLPipeLua", "DLPipeQueue", "DLPipeWeb", "CPosix"]),
        // A small program that uses the library the way an app would.
        .executableTarget(name: "DLPipeExample", dependencies: ["DLPipe"]),
        // What the test targets share (a seedable generator, waits that cannot
        // hang, Lua calls).
        .target(name: "TestSupport", dependencies: ["DLPipeLua"], path: "Tests/TestSupport"),
        .testTarget(name: "DLPipeTests", dependencies: ["DLPipe", "DLPipeQueue", "DLPipeWeb", "TestSupport"]),
        .testTarget(name: "DLPipeLuaTests", dependencies: ["DLPipeLua", "TestSupport"]),
        .testTarget(name: "EndToEndTests", dependencies: ["DLPipe", "DLPipeQueue", "TestSupport"]),
    ]
)
