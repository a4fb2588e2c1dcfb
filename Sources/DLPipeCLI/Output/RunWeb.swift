import DLPipe
import DLPipeWeb
import Foundation

/// `--web` for a run: the run's view, fed the engine's events, served while
/// the run lasts. Its URL goes to stderr (under -q too: it is how the view
/// is found) and, with --json, as a `web` event.
struct RunWeb {
    let view: RunView
    let server: WebServer

    /// Starts listening; nil when the options have no `--web`. A failure to
    /// listen is printed and thrown (the run does not start).
    static func start(
        _ options: WebOptions?, title: String, command: String, queue: (url: String, job: String)? = nil, json: Bool
    ) throws(WebServerError) -> RunWeb? {
        guard let options else { return nil }
        let view = RunView(title: title, command: command, queue: queue)
        let server = try WebServer(address: options.address, access: WebAccess(token: options.token), source: view)
        Terminal.error("dlpipe: web view at \(server.announcement)" + (options.token == nil ? "" : " (with its token)"))
        if json {
            var object = JSONObject()
            object.add("event", "web")
            object.add("url", server.url)
            object.add("port", Int(server.port))
            object.add("token", options.token != nil)
            // Every address: where it listens, and the URL on this machine.
            if server.everyAddress {
                object.add("listen", server.listening)
                object.add("local_url", server.localURL)
            }
            EventWriter.standardOutput.write(line: object.json)
        }
        return RunWeb(view: view, server: server)
    }

    /// Feeds the view every event from now on.
    func observe(_ engine: DownloadEngine) {
        let view = self.view
        engine.observe { view.record($0) }
    }

    /// The run ended: the server stops.
    func stop() {
        view.stop()
        server.stop()
    }
}
