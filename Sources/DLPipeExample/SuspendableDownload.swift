// A download task with suspend and resume, progress and finished closures,
// saved under the name the server suggests (Content-Disposition, else the
// URL's last part): the request names no file.
import DLPipe
import Foundation

/// One download with closures, as a view controller would hold it.
@MainActor
final class SuspendableDownload {
    var onProgress: (ProgressInfo) -> Void = { _ in }
    var onSuspended: () -> Void = {}
    var onFinished: (Result<FinishedInfo, any Error>) -> Void = { _ in }
    private let task: DownloadTask

    init(url: String, engine: DownloadEngine) {
        task = engine.addTask(url)  // no name: the server's suggestion
    }

    /// Starts delivering events to the closures; `onFinished` is the last call.
    func start() {
        Task {
            for await event in task.events {
                switch event {
                case .progress(_, let progress): onProgress(progress)
                case .paused: onSuspended()
                default: break
                }
            }
            onFinished(await task.valueResult)
        }
    }

    /// Stops the transfer; the part file stays for `resume`.
    func suspend() { task.pause() }
    /// Continues with a Range request from where it stopped.
    func resume() { task.resume() }
}

@MainActor
func suspendable(_ arguments: [String]) async throws -> Int32 {
    guard arguments.count == 2 else {
        FileHandle.standardError.write(Data("usage: dlpipe-example suspendable OUTPUT_DIR URL\n".utf8))
        return 2
    }
    let engine = try DownloadEngine(configuration: EngineConfiguration(directory: arguments[0], progressInterval: 0.05))
    let download = SuspendableDownload(url: arguments[1], engine: engine)
    var suspendedOnce = false
    let finished: Result<FinishedInfo, any Error> = await withCheckedContinuation { continuation in
        download.onProgress = { progress in
            print("progress \(progress.bytes) of \(progress.total.map(String.init) ?? "?")")
            if !suspendedOnce {
                suspendedOnce = true
                print("suspend")
                download.suspend()
            }
        }
        download.onSuspended = {
            print("suspended; resume")
            download.resume()
        }
        download.onFinished = { continuation.resume(returning: $0) }
        download.start()
    }
    await engine.stop()
    switch finished {
    case .success(let file):
        print("finished \((file.path as NSString).lastPathComponent) \(file.bytes) bytes")
        return suspendedOnce ? 0 : 1
    case .failure(let error):
        print("failed \(error)")
        return 1
    }
}
