/// A file the state placed that its download left behind when it placed a
/// newer version under another name (a handler renamed it on a re-run, or
/// another program had taken the name): still on disk, no longer tracked.
package struct ReleasedFile: Sendable, Hashable {
    /// Relative to the output directory.
    public var path: String
    public var url: String
    public var size: Int64

    public init(path: String, url: String, size: Int64) {
        self.path = path
        self.url = url
        self.size = size
    }
}
