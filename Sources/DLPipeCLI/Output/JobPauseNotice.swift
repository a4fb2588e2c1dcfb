import DLPipeQueue

/// What a worker says when its job is paused (`dlpipe queue pause`) and
/// resumed: a worker started into a paused job, or paused under it, would
/// otherwise wait without a word. One line on stderr each time (also under
/// -q: it explains a silence), and under `--json` a `job` event on stdout:
/// `{"event":"job","job":"NAME","state":"paused"}`, then `"state":"resumed"`.
enum JobPauseNotice {
    static func install(on worker: QueueWorker?, job: String, json: Bool) {
        guard let worker else { return }
        let shown = Terminal.clean(job.debugDescription)
        worker.whenJobPauseChanges { paused in
            Terminal.error(paused
                ? "dlpipe: job \(shown) is paused (dlpipe queue pause): this worker claims nothing new and waits; dlpipe queue resume lets it go on"
                : "dlpipe: job \(shown) was resumed: this worker claims again")
            guard json else { return }
            var object = JSONObject()
            object.add("event", "job")
            object.add("job", job)
            object.add("state", paused ? "paused" : "resumed")
            EventWriter.standardOutput.write(line: object.json)
        }
    }
}
