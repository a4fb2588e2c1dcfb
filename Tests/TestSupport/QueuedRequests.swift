import DLPipe
import DLPipeQueue

/// `count` requests for the shared queue's tests, numbered from 0: request
/// N is `http://HOST/PREFIXN`, HOST taken from `hosts` in turn. Each key is
/// the one `DownloadRequest.deduplicationKey` gives a GET of that URL into
/// the folder `dir` under its own name (URL, NUL, folder, NUL), so that
/// distinct URLs are distinct rows and the same URL added again is one.
package func queuedRequests(
    _ count: Int, hosts: [String], prefix: String = "u", priority: Int = 0, delay: Double = 0
) -> [QueuedRequest] {
    (0..<count).map { index in
        let host = hosts[index % hosts.count]
        let url = "http://\(host)/\(prefix)\(index)"
        return QueuedRequest(key: Array((url + "\u{0}dir\u{0}").utf8), url: url, host: host, priority: priority, delay: delay)
    }
}
