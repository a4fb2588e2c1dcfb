// A loading image view model: start, reload and cancel, with the states a
// view shows (idle, loading with progress, loaded, failed). Reload after the
// image has loaded (or failed) is a new download of the same URL.
import DLPipe
import Foundation

@MainActor
final class LoadingImageViewModel {
    enum State: Equatable, CustomStringConvertible {
        case idle
        case loading(fraction: Double?)
        case loaded(path: String)
        case failed(String)

        var description: String {
            switch self {
            case .idle: "idle"
            case .loading: "loading"
            case .loaded(let path): "loaded \((path as NSString).lastPathComponent)"
            case .failed(let message): "failed \(message)"
            }
        }
    }

    /// Called on every change of `state` (a view would re-render).
    var onChange: (State) -> Void = { _ in }
    private(set) var state: State = .idle {
        didSet { if state != oldValue { onChange(state) } }
    }
    private let engine: DownloadEngine
    private let url: String
    private var loading: Task<Void, Never>?

    init(url: String, engine: DownloadEngine) {
        self.url = url
        self.engine = engine
    }

    /// Loads the image unless it is loading already.
    func start() {
        guard loading == nil else { return }
        generation += 1
        let mine = generation
        state = .loading(fraction: nil)
        let task = engine.addTask(url)
        loading = Task {
            let progress = Task {
                for await event in task.events where generation == mine {
                    if case .progress(_, let p) = event { state = .loading(fraction: p.fraction) }
                }
            }
            // Cancelling `loading` cancels the download (its result is then
            // `.cancelled`): the view model holds no id and no engine call.
            let outcome = await task.result
            await progress.value
            guard generation == mine else { return }  // cancelled or reloaded meanwhile
            loading = nil
            switch outcome {
            case .finished(let file): state = .loaded(path: file.path)
            case .failed(let error): state = .failed(error.kind.rawValue)
            default: state = .idle
            }
        }
    }

    /// Loads again: a download that ended is a new one for the same URL.
    func reload() {
        cancel()
        start()
    }

    /// Stops loading; the view goes back to idle.
    func cancel() {
        generation += 1
        loading?.cancel()
        loading = nil
        if case .loading = state { state = .idle }
    }

    /// Waits until the current load, if any, has settled.
    func settled() async { await loading?.value }

    /// Bumped by every start and cancel: a load that was taken over changes nothing.
    private var generation = 0
}

@MainActor
func viewModel(_ arguments: [String]) async throws -> Int32 {
    guard arguments.count == 4 else {
        FileHandle.standardError.write(Data("usage: dlpipe-example view-model OUTPUT_DIR GOOD_URL BAD_URL SLOW_URL\n".utf8))
        return 2
    }
    // With a state file, a reload asks the server whether the image changed
    // (If-None-Match) and keeps the file it has when it did not.
    let engine = try DownloadEngine(configuration: EngineConfiguration(
        directory: arguments[0], statePath: arguments[0] + "/.dlpipe/state.db", progressInterval: 0.05))
    var ok = true
    func watch(_ name: String, _ model: LoadingImageViewModel) {
        model.onChange = { state in print("\(name): \(state)") }
    }

    let good = LoadingImageViewModel(url: arguments[1], engine: engine)
    watch("good", good)
    good.start()
    await good.settled()
    ok = ok && good.state == .loaded(path: engine.directory + "/" + (arguments[1] as NSString).lastPathComponent)
    good.reload()  // loads again: a new download of the same URL
    await good.settled()
    ok = ok && good.state == .loaded(path: engine.directory + "/" + (arguments[1] as NSString).lastPathComponent)

    let bad = LoadingImageViewModel(url: arguments[2], engine: engine)
    watch("bad", bad)
    bad.start()
    await bad.settled()
    ok = ok && bad.state == .failed("http")

    // Cancelled at its first progress, as a view that scrolls away.
    let slow = LoadingImageViewModel(url: arguments[3], engine: engine)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        var cancelled = false
        slow.onChange = { state in
            print("slow: \(state)")
            if case .loading(let fraction?) = state, fraction > 0, !cancelled {
                cancelled = true
                Task { @MainActor in
                    slow.cancel()
                    continuation.resume()
                }
            }
        }
        slow.start()
    }
    ok = ok && slow.state == .idle

    await engine.stop()
    print(ok ? "all states as expected" : "unexpected states")
    return ok ? 0 : 1
}
