import Foundation

/// Files a test sets up (a fixture, a foreign file in the way, a disk filler).
public enum TestFiles {
    /// Creates the file at `path` with `contents`, replacing one that is there,
    /// as `FileManager.createFile` does (written whole, then moved in place),
    /// but throws when it cannot: `createFile` only answers false, and a test
    /// whose fixture was never made goes on to test something else.
    public static func create(_ path: String, _ contents: Data = Data()) throws {
        do {
            try contents.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw NotCreated(path: path, reason: "\(error)")
        }
    }

    /// `create`'s failure: the path and why.
    public struct NotCreated: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "the test could not create \(path): \(reason)" }
    }
}
