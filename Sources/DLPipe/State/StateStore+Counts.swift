/// Counts a view reads often, without loading every record.
extension StateStore {
    /// How many downloads the state holds in each status.
    package func statusCounts() throws(StateFailure) -> [DownloadRecord.Status: Int] {
        var counts: [DownloadRecord.Status: Int] = [:]
        try read("SELECT status, count(*) FROM downloads GROUP BY status") { row in
            if let status = row.text(0).flatMap(DownloadRecord.Status.init(rawValue:)) { counts[status, default: 0] += Int(row.int(1) ?? 0) }
        }
        return counts
    }
}
