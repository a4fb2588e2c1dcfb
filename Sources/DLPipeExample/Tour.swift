// A small program that uses DLPipe the way an app uses a downloader: queue several
// URLs, show progress, pause one and resume it, cancel another, await the results.
//
//   dlpipe-example OUTPUT_DIR URL...   (no pattern name first)
//
// The first URL is paused at its first progress report and resumed when the engine
// says it is paused; the second is cancelled at once. Exits 0 when every other
// download finished.
import DLPipe
import Foundation

/// Runs the tour; returns the exit status.
func tour(_ arguments: [String]) async throws -> Int32 {
    guard arguments.count >= 3 else {
        FileHandle.standardError.write(Data("usage: dlpipe-example OUTPUT_DIR URL URL [URL...]\n".utf8))
        return 2
    }

    var configuration = EngineConfiguration()
    configuration.directory = arguments[0]
    configuration.progressInterval = 0.1
    let engine = try DownloadEngine(configuration: configuration)
    let events = engine.events()  // subscribe before adding, to see every event

    let ids = arguments.dropFirst().map { engine.add($0) }
    let pauseMe = ids[0]
    let cancelMe = ids[1]
    engine.cancel(cancelMe)

    var pausedOnce = false
    var ended = 0
    for await event in events {
        switch event {
        case .progress(let d, let p):
            let percent = p.fraction.map { String(format: "%3.0f%%", $0 * 100) } ?? "  ?"
            print("progress \(d.id) \(percent) \(p.bytes) bytes")
            if d.id == pauseMe && !pausedOnce {
                pausedOnce = true
                engine.pause(d.id)
            }
        case .paused(let d):
            print("paused \(d.id)")
            engine.resume(d.id)
        case .finished(let d, let f):
            print("finished \(d.id) \(f.path) \(f.bytes) bytes")
        case .failed(let d, let e):
            print("failed \(d.id) \(e)")
        case .cancelled(let d):
            print("cancelled \(d.id)")
        default:
            break
        }
        if event.isTerminal {
            ended += 1
            if ended == ids.count { break }
        }
    }

    var allGood = true
    for id in ids {
        let outcome = await engine.outcome(of: id)
        print("outcome \(id): \(outcome.map { "\($0)" } ?? "none")")
        if id == cancelMe {
            allGood = allGood && outcome == .cancelled
        } else if case .finished = outcome {
        } else {
            allGood = false
        }
    }
    print(pausedOnce ? "paused and resumed \(pauseMe)" : "download \(pauseMe) ended before it could be paused")
    engine.shutdown()
    return allGood ? 0 : 1
}
