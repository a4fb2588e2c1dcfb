internal import CLua
import DLPipe

/// The script kit's primitives: the C functions of dl_kit.h (JSON, XML, the HTML
/// scanner, gunzip) under `__dl.native`, called by scripts directly so that they
/// run under the memory cap and the time budget; `dl.sha256` of a string; and the
/// files scripts write (`ScriptFiles`). The prelude places them under `dl`.
extension ScriptHost {
    func registerKit() {
        let L = runtime.currentState
        runtime.setPath("__dl.native", on: L) { dl_kit_push(L) }
        runtime.register("__dl.sha256_string", name: "dl.sha256") { args throws(LuaCallError) in
            guard case .string(let bytes)? = args.first else { throw LuaCallError("dl.sha256 wants a string") }
            return [LuaValue(FileDigest.sha256Hex(of: bytes))]
        }
        runtime.register("__dl.write") { [unowned self] args in
            fileCall(args) { files, path, data throws(ScriptError) in try files.write(path, data) }
        }
        runtime.register("__dl.append") { [unowned self] args in
            fileCall(args) { files, path, data throws(ScriptError) in try files.append(path, data) }
        }
        runtime.register("__dl.remove") { [unowned self] args in
            fileCall(args) { files, path, _ throws(ScriptError) in
                if let download = try files.remove(path) { removedDownloadFiles.append(download) }
            }
        }
    }

    /// Forgets again the downloads whose files scripts removed in this run: a
    /// download whose own `finished` handler removed its file has its finished
    /// record saved by the engine after the handler, so the state forgets it
    /// once the run has drained (every record committed), not only at the call.
    func forgetRemovedDownloads() {
        guard !removedDownloadFiles.isEmpty, case .success(let store) = openStore(configDir: nil) else { return }
        for path in removedDownloadFiles {
            // Reported, not fatal: the file is gone, and a record left makes the
            // next run find it missing and fetch it again anyway.
            do throws(StateFailure) { try store.state.forgetDownloadFile(path) } catch { self.log("dlpipe: \(error.message)") }
        }
        removedDownloadFiles = []
    }

    /// Runs a file operation with (path, data, config.dir) from the prelude:
    /// `true`, or nil and the reason.
    private func fileCall(
        _ args: [LuaValue], _ operation: (ScriptFiles, String, [UInt8]) throws(ScriptError) -> Void
    ) -> [LuaValue] {
        guard let path = args.first?.text else { return [.nil_, LuaValue("a path is needed")] }
        var data: [UInt8] = []
        if args.count > 1, case .string(let bytes) = args[1] { data = bytes }
        guard let root else { return [.nil_, LuaValue("no output directory yet")] }
        switch openStore(configDir: args.count > 2 ? args[2].text : nil) {
        case .failure(let error):
            return [.nil_, LuaValue(error.message)]
        case .success(let store):
            do throws(ScriptError) {
                let files = ScriptFiles(
                    root: root, state: store.state, job: store.namespace, earlierJob: store.earlierNamespace,
                    downloads: knownDownloadFiles)
                try operation(files, path, data)
                return [.boolean(true)]
            } catch {
                return [.nil_, LuaValue(error.message)]
            }
        }
    }
}
