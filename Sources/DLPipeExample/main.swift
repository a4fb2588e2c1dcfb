// Small programs that use DLPipe as Swift apps use a downloader. Each pattern
// is one file; the first argument picks it:
//
//   dlpipe-example image-queue OUTPUT_DIR URL...     ImageOperationQueue.swift
//   dlpipe-example suspendable OUTPUT_DIR URL        SuspendableDownload.swift
//   dlpipe-example view-model OUTPUT_DIR GOOD_URL BAD_URL SLOW_URL
//                                                    LoadingImageViewModel.swift
//   dlpipe-example two-at-once OUTPUT_DIR URL URL    TwoAtOnceDownloader.swift
//   dlpipe-example OUTPUT_DIR URL URL [URL...]       Tour.swift (pause, resume, cancel)
//
// Each prints what happens, one line per step, and exits 0 when the pattern
// did what it shows (the tests read both).
import DLPipe
import Foundation

extension DownloadTask {
    /// `value` as a `Result`, for callbacks that take one.
    var valueResult: Result<FinishedInfo, any Error> {
        get async {
            do { return .success(try await value) } catch { return .failure(error) }
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let patterns: [String: ([String]) async throws -> Int32] = [
    "image-queue": imageQueue,
    "suspendable": suspendable,
    "view-model": viewModel,
    "two-at-once": twoAtOnce,
]
let status: Int32
if let name = arguments.first, let pattern = patterns[name] {
    status = try await pattern(Array(arguments.dropFirst()))
} else {
    status = try await tour(arguments)
}
exit(status)
