/// Where an output directory keeps its state: every `.dlpipe/` path is
/// spelled here and nowhere else.
package struct StateLayout: Sendable {
    /// The state's folder inside an output directory; scripts never read it.
    package static let folderName = ".dlpipe"

    /// The output directory (as given).
    package let directory: String

    package init(directory: String) {
        self.directory = directory
    }

    /// `DIR/.dlpipe`.
    package var folder: String { directory + "/" + Self.folderName }
    /// `DIR/.dlpipe/state.db`: the SQLite state (with its -wal and -shm files).
    package var database: String { folder + "/state.db" }
    /// `DIR/.dlpipe/lock`: the run lock of the directory.
    package var lock: String { folder + "/lock" }

    /// The state file: `--state FILE` when given, else the directory's.
    package func database(statePath: String?) -> String { statePath ?? database }

    /// The run lock: `FILE.lock` beside a state kept elsewhere (`--state
    /// FILE`), else the directory's. Two runs share a state only through its lock.
    package func lock(statePath: String?) -> String { statePath.map(Self.lock(ofStateFile:)) ?? lock }

    /// The lock of a state kept elsewhere (`--state FILE`): `FILE.lock`.
    package static func lock(ofStateFile path: String) -> String { path + ".lock" }

    /// The lock beside a directory's own state file (`.dlpipe/state.db`):
    /// `.dlpipe/lock`, wherever `-o` puts the downloaded file.
    package static func lock(besideDatabase path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "lock" }
        return String(path[...slash]) + "lock"
    }
}
