import DLPipe
import Foundation

/// `dl.store` and the files that scripts and downloads wrote, in the job's tables.
extension PostgresDownloadState {
    // MARK: dl.store

    package func value(_ key: String) throws(StateFailure) -> String? {
        try readKeyed(Self.store, key)
    }

    package func setValue(_ key: String, _ json: String) throws(StateFailure) {
        try writeKeyed(Self.store, key, json)
    }

    /// Bytes (UTF-8) of the keys and values whose keys start with `prefix`.
    package func storedBytes(keyPrefix prefix: String) throws(StateFailure) -> Int {
        Int(try call("read the state") { connection throws(PostgresError) in
            try connection.execute(
                """
                SELECT coalesce(sum(octet_length(key) + octet_length(value)), 0) AS n FROM dlpipe.store
                WHERE job_id = $1 AND left(key, char_length($2::text)) = $2::text
                """, [.int(job), .text(prefix)]
            ).rows[0].int("n")
        })
    }

    // MARK: files that scripts wrote, and downloads' files

    package func writer(of path: String) throws(StateFailure) -> String? {
        try readKeyed(Self.written, path)
    }

    package func setWriter(of path: String, to writer: String) throws(StateFailure) {
        try writeKeyed(Self.written, path, writer)
    }

    package func forgetWritten(_ path: String) throws(StateFailure) {
        _ = try call("write the state") { connection throws(PostgresError) in
            try connection.execute("DELETE FROM dlpipe.written WHERE job_id = $1 AND path = $2", [.int(job), .text(path)])
        }
    }

    /// Targets the job's downloads have or had, files they placed, and files
    /// they placed and released.
    package func downloadFiles() throws(StateFailure) -> Set<String> {
        let rows = try call("read the state") { connection throws(PostgresError) in
            try connection.execute(
                """
                SELECT target AS path FROM dlpipe.url_facts WHERE job_id = $1 AND target IS NOT NULL
                UNION SELECT placed_target FROM dlpipe.url_facts WHERE job_id = $1 AND placed_target IS NOT NULL
                UNION SELECT path FROM dlpipe.released WHERE job_id = $1
                """, [.int(job)]
            ).rows
        }
        var all = Set<String>()
        for row in rows {
            if let path = try? row.text("path") { all.insert(path) }
        }
        return all
    }

    /// As `downloadFiles().contains(path)`, each part by its index.
    package func isDownloadFile(_ path: String) throws(StateFailure) -> Bool {
        try call("read the state") { connection throws(PostgresError) in
            try connection.execute(
                """
                SELECT EXISTS (SELECT 1 FROM dlpipe.url_facts WHERE job_id = $1 AND target = $2)
                    OR EXISTS (SELECT 1 FROM dlpipe.url_facts WHERE job_id = $1 AND placed_target = $2)
                    OR EXISTS (SELECT 1 FROM dlpipe.released WHERE job_id = $1 AND path = $2) AS found
                """, [.int(job), .text(path)]
            ).rows[0].bool("found")
        }
    }

    /// Forgets the downloads whose file is `path` and the released file of
    /// that name, in one statement, so that the next run fetches them again.
    package func forgetDownloadFile(_ path: String) throws(StateFailure) {
        _ = try call("write the state") { connection throws(PostgresError) in
            try connection.execute(
                """
                WITH facts AS (
                  DELETE FROM dlpipe.url_facts WHERE job_id = $1 AND (target = $2 OR placed_target = $2)
                ),
                files AS (
                  DELETE FROM dlpipe.released WHERE job_id = $1 AND path = $2
                )
                SELECT 1
                """, [.int(job), .text(path)])
        }
    }

    // MARK: the job's two keyed tables

    /// A table of the job's that maps one text column to another: `dl.store`'s
    /// keys to values, and written paths to their writers.
    private struct KeyedTable {
        let table: String, key: String, value: String
    }

    private static let store = KeyedTable(table: "dlpipe.store", key: "key", value: "value")
    private static let written = KeyedTable(table: "dlpipe.written", key: "path", value: "writer")

    private func readKeyed(_ t: KeyedTable, _ key: String) throws(StateFailure) -> String? {
        try call("read the state") { connection throws(PostgresError) in
            try connection.execute(
                "SELECT \(t.value) FROM \(t.table) WHERE job_id = $1 AND \(t.key) = $2", [.int(job), .text(key)]
            ).rows.first?.text(t.value)
        }
    }

    private func writeKeyed(_ t: KeyedTable, _ key: String, _ value: String) throws(StateFailure) {
        _ = try call("write the state") { connection throws(PostgresError) in
            try connection.execute(
                """
                INSERT INTO \(t.table) (job_id, \(t.key), \(t.value)) VALUES ($1, $2, $3)
                ON CONFLICT (job_id, \(t.key)) DO UPDATE SET \(t.value) = excluded.\(t.value)
                """, [.int(job), .text(key), .text(value)])
        }
    }
}
