import Foundation
import Synchronization

/// Fresh directories for tests under the system's temporary directory. Each
/// is removed when the test process exits, so that a suite run leaves nothing
/// behind; `DLPIPE_KEEP_TEMP=1` keeps them, to look at after a failure.
public enum TempDir {
    /// The directories made so far, removed at exit.
    private static let made = Mutex<[String]>([])

    /// A fresh, empty directory whose name starts with `dlpipe-test-LABEL-`.
    public static func make(_ label: String) throws -> String {
        let path = NSTemporaryDirectory() + "dlpipe-test-\(label)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        made.withLock { paths in
            if paths.isEmpty { atexit { TempDir.removeAll() } }
            paths.append(path)
        }
        return path
    }

    private static func removeAll() {
        guard ProcessInfo.processInfo.environment["DLPIPE_KEEP_TEMP"] != "1" else { return }
        // Removed as they are, never changing a mode on the way: a test
        // directory may hold symlinks to places outside it (TargetPathTests
        // links to /tmp), and chmod follows a symlink. removeItem unlinks a
        // link without following it.
        for path in made.withLock({ $0 }) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
