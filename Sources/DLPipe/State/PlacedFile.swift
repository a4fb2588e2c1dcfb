/// A file that dlpipe put under its name: where, how large, and (once a later
/// run has seen it) its inode, which tells it apart from a newer version
/// renamed over it.
package struct PlacedFile: Sendable, Hashable {
    /// Relative to the output directory.
    public var path: String
    public var size: Int64
    public var inode: UInt64?

    public init(path: String, size: Int64, inode: UInt64? = nil) {
        self.path = path
        self.size = size
        self.inode = inode
    }
}
