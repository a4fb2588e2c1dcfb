// An image operation on a queue, with progress: each image is an `Operation`
// that downloads its file, reports progress, and then does its image work (here:
// it reads the PNG's size from its header). An `OperationQueue` runs two at once.
import DLPipe
import Foundation
import Synchronization

/// Downloads one image and reads its size. `main` runs on the queue's thread
/// and waits there for the download: the engine runs on a thread of its own,
/// so the wait holds no thread the engine needs.
final class ImageOperation: Operation, @unchecked Sendable {
    // @unchecked: `size` and `failure` are written in `main` before the
    // operation finishes and read after `waitUntilAllOperationsAreFinished`.
    let url: String
    let engine: DownloadEngine
    let progress: @Sendable (String, Double) -> Void
    private(set) var size: (width: Int, height: Int)?
    private(set) var failure: String?

    init(url: String, engine: DownloadEngine, progress: @escaping @Sendable (String, Double) -> Void) {
        self.url = url
        self.engine = engine
        self.progress = progress
    }

    override func main() {
        guard !isCancelled else { return }
        let task = engine.addTask(url)
        let outcome = Mutex<Result<FinishedInfo, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task { [progress, url] in
            // The task's own events: no routing by id.
            for await event in task.events {
                if case .progress(_, let p) = event, let fraction = p.fraction { progress(url, fraction) }
            }
            let result = await task.valueResult
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0! }) {
        case .success(let file):
            size = PNGHeader.size(ofFileAt: file.path)
            if size == nil { failure = "not a PNG" }
        case .failure(let error):
            failure = "\(error)"
        }
    }
}

/// The width and height in a PNG's IHDR chunk (the image operation).
enum PNGHeader {
    static func size(ofFileAt path: String) -> (width: Int, height: Int)? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let head = [UInt8](handle.readData(ofLength: 24))
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard head.count == 24, Array(head[0..<8]) == signature, Array(head[12..<16]) == Array("IHDR".utf8) else {
            return nil
        }
        func word(_ at: Int) -> Int { head[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (word(16), word(20))
    }
}

func imageQueue(_ arguments: [String]) async throws -> Int32 {
    guard arguments.count >= 2 else {
        FileHandle.standardError.write(Data("usage: dlpipe-example image-queue OUTPUT_DIR URL...\n".utf8))
        return 2
    }
    let engine = try DownloadEngine(configuration: EngineConfiguration(directory: arguments[0], progressInterval: 0.05))
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 2
    let operations = arguments.dropFirst().map { url in
        ImageOperation(url: url, engine: engine) { url, fraction in
            print("progress \(url) \(Int(fraction * 100))%")
        }
    }
    // A barrier runs once every operation before it has finished: the wait
    // holds no thread.
    await withCheckedContinuation { continuation in
        for operation in operations { queue.addOperation(operation) }
        queue.addBarrierBlock { continuation.resume() }
    }
    var failures = 0
    for operation in operations {
        if let size = operation.size {
            print("image \(operation.url) \(size.width)x\(size.height)")
        } else {
            failures += 1
            print("failed \(operation.url): \(operation.failure ?? "?")")
        }
    }
    await engine.stop()
    return failures == 0 ? 0 : 1
}
