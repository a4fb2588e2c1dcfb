/// Files that scripts wrote (dl.write, dl.append), each committed at once, and
/// the downloads' files a script may not touch.
extension StateStore {
    /// The job whose script wrote the file at `path` (relative to the output
    /// directory), or nil when no script did.
    package func writer(of path: String) throws(StateFailure) -> String? {
        var found: String?
        try read("SELECT job FROM written WHERE path = ?", [.text(path)]) { found = $0.text(0) }
        return found
    }

    /// Remembers that `job` wrote the file at `path`.
    package func setWriter(of path: String, to job: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("INSERT OR REPLACE INTO written(path, job) VALUES (?, ?)", [.text(path), .text(job)])
        }
    }

    /// Forgets the script-written file at `path` (it was removed).
    package func forgetWritten(_ path: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("DELETE FROM written WHERE path = ?", [.text(path)])
        }
    }

    /// Every download's file: the targets downloads have or had, the files
    /// the state placed, and those it placed and released (one scan).
    package func downloadFiles() throws(StateFailure) -> Set<String> {
        var all = Set<String>()
        try read("""
            SELECT target FROM downloads WHERE target IS NOT NULL
            UNION SELECT placed_target FROM downloads WHERE placed_target IS NOT NULL
            UNION SELECT path FROM released
            """) { if let path = $0.text(0) { all.insert(path) } }
        return all
    }

    /// True when `path` is a download's file (as `downloadFiles`). No index on
    /// these columns: each would cost the engine's every save; a script asks
    /// when it removes a file or is refused one.
    package func isDownloadFile(_ path: String) throws(StateFailure) -> Bool {
        var found = false
        try read("""
            SELECT 1 FROM downloads WHERE target = ?1 OR placed_target = ?1
            UNION ALL SELECT 1 FROM released WHERE path = ?1 LIMIT 1
            """, [.text(path)]) { _ in found = true }
        return found
    }

    /// Forgets the downloads whose file is `path` (a script removed it), so
    /// that the next run fetches them again.
    package func forgetDownloadFile(_ path: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("DELETE FROM downloads WHERE target = ?1 OR placed_target = ?1", [.text(path)])
            try db.query("DELETE FROM released WHERE path = ?", [.text(path)])
        }
    }
}
