/// How the reporters print a file: its path, cleaned, except for the body of
/// `get -o -`, which goes to stdout through a private staging folder whose
/// name means nothing to the user (it is removed at the end): that one is
/// `- (stdout)`.
struct ShownPath: Sendable {
    /// The staging folder of `get -o -`, if this run has one.
    let stdoutFolder: String?

    static let stdoutLabel = "- (stdout)"
    /// Paths as they are (no `-o -`).
    static let plain = ShownPath(stdoutFolder: nil)

    /// The text for a finished file's path.
    func text(_ path: String) -> String {
        if let stdoutFolder, path.hasPrefix(stdoutFolder + "/") { return Self.stdoutLabel }
        return Terminal.clean(path)
    }

    /// The label of a download's progress bar: its name, or stdout's.
    func label(_ name: String) -> String {
        stdoutFolder == nil ? name : Self.stdoutLabel
    }
}
