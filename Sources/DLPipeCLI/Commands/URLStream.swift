import Foundation

/// Splits a URL list (`-i`) into URLs: one a line, blank lines and `#`
/// comments ignored, blanks trimmed; LF, CRLF and CR all end a line. Works on
/// bytes as they arrive in pieces; a line cut by a piece's end is completed
/// by the next piece.
struct LineSplitter {
    private var partial: [UInt8] = []

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    private static func isEnd(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }

    mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ emit: (String) -> Void) {
        var start = 0
        for index in bytes.indices where Self.isEnd(bytes[index]) {
            if partial.isEmpty {
                Self.emitLine(UnsafeBufferPointer(rebasing: bytes[start..<index]), emit)
            } else {
                partial.append(contentsOf: bytes[start..<index])
                partial.withUnsafeBufferPointer { Self.emitLine($0, emit) }
                partial.removeAll(keepingCapacity: true)
            }
            start = index + 1
        }
        partial.append(contentsOf: bytes[start...])
    }

    /// The last line, when the input did not end with a line end.
    mutating func finish(_ emit: (String) -> Void) {
        partial.withUnsafeBufferPointer { Self.emitLine($0, emit) }
        partial = []
    }

    private static func emitLine(_ line: UnsafeBufferPointer<UInt8>, _ emit: (String) -> Void) {
        guard let first = line.firstIndex(where: { !isBlank($0) }),
            let last = line.lastIndex(where: { !isBlank($0) }),
            line[first] != UInt8(ascii: "#")
        else { return }
        emit(String(decoding: UnsafeBufferPointer(rebasing: line[first...last]), as: UTF8.self))
    }
}

/// The URLs of a `get`: the command line's, then each `-i` list's, read as
/// the downloads are queued, a megabyte at a time: a list of a million URLs
/// never exists whole in memory (as bytes, lines and strings it took about
/// 200 MB at once). Every list is opened, and its first bytes read, before
/// the run starts, so a missing or unreadable list is a usage error that
/// queues nothing. Single pass: `peek` keeps what it read for the iteration.
final class URLStream: Sequence, IteratorProtocol {
    private var ready: [String]
    private var readyIndex = 0
    private var lists: [(source: String, descriptor: Int32)]
    private var splitter = LineSplitter()
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    /// A list that failed after the run began; its URLs after the failure are missing.
    private(set) var failure: String?

    init(urls: [String], lists sources: [String]) throws {
        ready = urls
        lists = []
        for source in sources {
            let descriptor = source == "-" ? dup(STDIN_FILENO) : open(source, O_RDONLY | O_CLOEXEC)
            var info = stat()
            guard descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT != S_IFDIR else {
                if descriptor >= 0 { close(descriptor) }
                throw UsageError("cannot read the URL list \(source.debugDescription)", command: "get")
            }
            lists.append((source, descriptor))
        }
    }

    deinit {
        for list in lists { close(list.descriptor) }
    }

    /// The first `count` URLs (fewer when there are fewer), without consuming them.
    func peek(_ count: Int) -> [String] {
        while ready.count - readyIndex < count, readMore() {}
        return Array(ready[readyIndex..<Swift.min(ready.count, readyIndex + count)])
    }

    func next() -> String? {
        while readyIndex == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            guard readMore() else { return nil }
        }
        defer { readyIndex += 1 }
        return ready[readyIndex]
    }

    /// Reads the next piece of the current list into `ready`; false when every list is read.
    private func readMore() -> Bool {
        guard let list = lists.first else { return false }
        let count = buffer.withUnsafeMutableBytes { read(list.descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            buffer.withUnsafeBufferPointer { bytes in
                splitter.feed(UnsafeBufferPointer(rebasing: bytes[0..<count])) { ready.append($0) }
            }
            return true
        }
        if count < 0 {
            if errno == EINTR { return true }
            failure = "cannot read the URL list \(list.source.debugDescription): \(String(cString: strerror(errno)))"
        }
        splitter.finish { ready.append($0) }
        close(list.descriptor)
        lists.removeFirst()
        return true
    }
}
