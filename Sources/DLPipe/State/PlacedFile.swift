/// A file that dlpipe put under its name: where, how large, its inode (which
/// tells it apart from a newer version renamed over it) and its modification
/// time as dlpipe left it (which, with the size, tells it apart from the same
/// file changed by the user). Records of older versions have the inode only
/// once a later run has seen the file, and the time only from schema 7 on.
package struct PlacedFile: Sendable, Hashable {
    /// Relative to the output directory.
    public var path: String
    public var size: Int64
    public var inode: UInt64?
    /// Nanoseconds since 1970.
    public var modified: Int64?

    public init(path: String, size: Int64, inode: UInt64? = nil, modified: Int64? = nil) {
        self.path = path
        self.size = size
        self.inode = inode
        self.modified = modified
    }
}
