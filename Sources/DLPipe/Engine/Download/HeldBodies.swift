/// How an engine writes bodies that arrived whole in memory.
enum HeldBodies: Sendable {
    /// As unnamed files linked after the batch's syncfs, where supported.
    case auto
    /// Through part files, as larger bodies.
    case off
    /// As `auto`, but every link is refused as by a file system without them:
    /// the engine falls back to part files at run time.
    case linksRefused
}
