// A downloader with a delegate for progress and completion that accepts only
// a complete response: HTTP 200, or 206 when it resumes a part file the engine
// asked to continue (`ResponseInfo.isWholeOrResumed`). Two downloads run at once.
import DLPipe
import Foundation

@MainActor
protocol DownloaderDelegate: AnyObject {
    func downloader(_ downloader: Downloader, didReceive progress: ProgressInfo, for url: String)
    func downloader(_ downloader: Downloader, didComplete url: String, with result: Result<FinishedInfo, any Error>)
}

/// Why the downloader refused a response it did not expect.
struct UnexpectedResponse: Error, CustomStringConvertible {
    let status: Int
    var description: String { "HTTP \(status) is not a whole file nor a resume" }
}

@MainActor
final class Downloader {
    weak var delegate: (any DownloaderDelegate)?
    private let engine: DownloadEngine

    /// At most two transfers at once, whatever the hosts.
    init(directory: String) throws {
        engine = try DownloadEngine(configuration: EngineConfiguration(
            directory: directory, concurrency: 2, backoffBase: 0.05, progressInterval: 0.05))
    }

    /// Starts a download; the delegate hears of its progress and its end.
    func download(_ url: String) {
        let task = engine.addTask(url)
        Task {
            var refused: UnexpectedResponse?
            for await event in task.events {
                switch event {
                case .response(_, let response):
                    print("response \(url) \(response.status)"
                        + (response.resumedFrom.map { " resuming from \($0)" } ?? ""))
                    if !response.isWholeOrResumed {
                        refused = UnexpectedResponse(status: response.status)
                        task.cancel()
                    }
                case .progress(_, let progress):
                    delegate?.downloader(self, didReceive: progress, for: url)
                default: break
                }
            }
            let result = await task.valueResult
            delegate?.downloader(self, didComplete: url, with: refused.map { .failure($0) } ?? result)
        }
    }

    func stop() async { await engine.stop() }
}

@MainActor
final class PrintingDelegate: DownloaderDelegate {
    private var remaining: Int
    private var failures = 0
    private var done: CheckedContinuation<Int, Never>?

    init(expecting count: Int) { remaining = count }

    /// Waits for every completion; returns how many failed.
    func waitForAll() async -> Int {
        await withCheckedContinuation { continuation in
            if remaining == 0 { continuation.resume(returning: failures) } else { done = continuation }
        }
    }

    func downloader(_ downloader: Downloader, didReceive progress: ProgressInfo, for url: String) {
        print("progress \(url) \(progress.bytes)")
    }

    func downloader(_ downloader: Downloader, didComplete url: String, with result: Result<FinishedInfo, any Error>) {
        switch result {
        case .success(let file): print("complete \(url) \(file.bytes) bytes")
        case .failure(let error):
            failures += 1
            print("failed \(url): \(error)")
        }
        remaining -= 1
        if remaining == 0 { done?.resume(returning: failures) }
    }
}

@MainActor
func twoAtOnce(_ arguments: [String]) async throws -> Int32 {
    guard arguments.count == 3 else {
        FileHandle.standardError.write(Data("usage: dlpipe-example two-at-once OUTPUT_DIR URL URL\n".utf8))
        return 2
    }
    let downloader = try Downloader(directory: arguments[0])
    let delegate = PrintingDelegate(expecting: 2)
    downloader.delegate = delegate
    downloader.download(arguments[1])
    downloader.download(arguments[2])
    let failures = await delegate.waitForAll()
    await downloader.stop()
    return failures == 0 ? 0 : 1
}
