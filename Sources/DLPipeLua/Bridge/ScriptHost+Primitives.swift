import DLPipe
import Foundation

/// The Swift primitives (`__dl.*`) under prelude.lua's `dl` API.
extension ScriptHost {
    // MARK: primitives behind the dl API

    // Each primitive's `cost` is the most Swift memory it takes per byte of its arguments
    // (LuaRuntime.register), measured as peak RSS over a 40 MB argument: URLComponents
    // copies a URL several times, SafeName's normalisation and scalar passes many more.
    func registerPrimitives() {
        // dl.add's table, checked by the prelude (ScriptHost+Add.swift).
        runtime.register("__dl.add", cost: 5) { [unowned self] args throws(LuaCallError) in try add(args) }
        runtime.register("__dl.pause") { [unowned self] args in
            untouchedInQueue(args.first, "pause") { $0.pause($1) }
        }
        runtime.register("__dl.resume") { [unowned self] args in
            untouchedInQueue(args.first, "resume") { $0.resume($1) }
        }
        runtime.register("__dl.cancel") { [unowned self] args in
            untouchedInQueue(args.first, "cancel") { $0.cancel($1) }
        }
        runtime.register("__dl.read") { [unowned self] args in
            switch readInsideRoot(args.first?.text ?? "") {
            case .success(let bytes): return [.string(bytes)]
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            }
        }
        runtime.register("__dl.list") { [unowned self] args in
            switch listInsideRoot(args.first?.text ?? "") {
            case .success(let entries): return [entries]
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            }
        }
        registerStore()
        registerChecks()
        registerText()
    }

    /// The checks the prelude runs before a value is taken: a download's new
    /// path (`d.name`, `d.dir`) and one `dl.config` key.
    private func registerChecks() {
        runtime.register("__dl.checkpath", name: "d.name", cost: 3) { [unowned self] args in
            guard let root else { return [] }
            let directory = args.first?.text
            let name = args.count > 1 ? args[1].text ?? "" : ""
            do throws(DownloadError) {
                _ = try TargetPath.resolve(root: root, directory: directory, name: name.isEmpty ? "x" : name)
                return []
            } catch {
                return [LuaValue(error.message)]
            }
        }
        runtime.register("__dl.checkconfig") { [unowned self] args in
            // One key of dl.config, by the rules JobSettings reads it with: the
            // prelude raises the message at the script's line.
            guard let key = args.first?.text, args.count > 1 else { return [] }
            if key == "dir", let bound = storeBoundTo, let dir = args[1].text, dir != bound {
                return [LuaValue("dl.config: dir is set after dl.store was used, which took the state of \(bound.debugDescription); call dl.config{ dir = ... } before dl.store")]
            }
            do throws(ScriptError) {
                let settings = try JobSettings([key: args[1]])
                // The job's own top-level adds that follow count against it.
                if let limit = settings.maxDownloads { maxDownloads = limit }
                if settings.queue != nil {
                    if let problem = provisional.lateQueueProblem { return [LuaValue(problem)] }
                    provisional.configNamesQueue = true
                    heldUsage.queueNamed()
                }
                return []
            } catch {
                return [LuaValue(error.message)]
            }
        }
    }

    /// Digests, names, URLs and the lines scripts write.
    private func registerText() {
        runtime.register("__dl.sha256") { [unowned self] args in
            guard let path = args.first?.text, let root, let file = try? ConfinedFile(path, root: root),
                let digest = FileDigest.sha256Hex(ofDescriptor: file.descriptor)
            else { return [.nil_] }
            computedDigests[path] = digest
            return [LuaValue(digest)]
        }
        runtime.register("__dl.safename", cost: 15) { args in
            guard let text = args.first?.text, let name = SafeName.sanitizeTitle(text) else { return [.nil_] }
            return [LuaValue(name)]
        }
        runtime.register("__dl.resolve", name: "dl.url.resolve", cost: 7) { args throws(LuaCallError) in
            guard args.count >= 2, let base = args[0].text, let ref = args[1].text else {
                throw LuaCallError("dl.url.resolve wants a base URL and a reference")
            }
            // Past the URL limit: the reference as it is, unresolved (no work
            // on it); dl.add refuses it with its warning.
            if URLLimit.problem(base) != nil || URLLimit.problem(ref) != nil { return [LuaValue(ref)] }
            // Both through the engine's normaliser, so that a resolved URL is
            // the one dl.add and `get` would queue for the same text.
            guard let resolved = URLTools.resolve(
                base: URLNormalization.normalize(base), reference: URLNormalization.normalizeReference(ref))
            else { return [.nil_] }
            return [LuaValue(URLNormalization.normalize(resolved))]
        }
        runtime.register("__dl.parse", name: "dl.url.parse", cost: 6) { args throws(LuaCallError) in
            guard let text = args.first?.text else { throw LuaCallError("dl.url.parse wants a URL") }
            return [URLTools.parse(text)]
        }
        runtime.register("__dl.log", cost: 4) { [unowned self, log] args throws(LuaCallError) in
            try heldUsage.check()
            log(line(args).formatted)
            return []
        }
        runtime.register("__dl.warn", cost: 4) { [unowned self, warn] args throws(LuaCallError) in
            try heldUsage.check()
            warn(line(args))
            return []
        }
        runtime.register("__dl.notice", cost: 4) { [unowned self, warn] args throws(LuaCallError) in
            try heldUsage.check()
            var notice = line(args)
            notice.isNotice = true
            warn(notice)
            return []
        }
    }

    /// The line of a `__dl.log` or `__dl.warn` call: position, download id, text.
    /// The id is the engine's, as the command line's own lines about that
    /// download print it (a shared queue's row, not a provisional id).
    private func line(_ args: [LuaValue]) -> ScriptLine {
        let position = args.first?.text ?? ""
        let id = args.count > 1 ? args[1].int.map { provisional.row(of: Int($0)) ?? Int($0) } : nil
        let text = args.count > 2 ? (args[2].text ?? "") : ""
        let place = position.trimmingCharacters(in: CharacterSet(charactersIn: ": "))
        return ScriptLine(place: place, download: id, text: text)
    }

    /// Runs a control (`act`) on the download `value` names; in a worker of
    /// a shared queue, why it reached none, for the prelude's warning.
    /// Without a queue a control of a download that ended does nothing, as
    /// documented; in a worker the download may also be waiting in the
    /// queue or held ahead, and a user would not know the pause did nothing.
    /// (One another live worker runs is passed on to it: `act` is true.)
    private func untouchedInQueue(
        _ value: LuaValue?, _ verb: String, _ act: (DownloadEngine, DownloadID) -> Bool
    ) -> [LuaValue] {
        guard let engine else { return [] }
        if let id = engineID(value), act(engine, id) { return [] }
        guard engine.isShared else { return [] }
        // A cancel reaches the queue's waiting rows and the claims held
        // ahead too; a pause or resume only what a worker's engine runs.
        let why = verb == "cancel"
            ? "it ended, or its worker died and the queue has not taken it back yet"
            : "it waits in the queue or in a worker's claims held ahead, or it ended"
        return [LuaValue("nothing done: no worker runs it now (\(why))")]
    }

    /// The engine's id of a number a script passed (nil before the run, or
    /// for a number the engine never gave).
    func engineID(_ value: LuaValue?) -> DownloadID? {
        guard let number = value?.int else { return nil }
        return engine?.downloadID(number: provisional.row(of: Int(number)) ?? Int(number))
    }

    /// The bytes of a regular file inside the output directory (ConfinedFile), when they fit
    /// in what is left of the script memory cap: checked against the file's size before a
    /// byte is read (the Swift side's copy is outside the cap; a 400 MB download read whole
    /// reached 850 MB before the cap refused the string).
    /// `dl.list`: the entries of a folder inside the output directory, as
    /// `{ name, type, size, mtime }` tables; bounded by what the memory cap
    /// leaves (Swift pushes the table with the cap off).
    private func listInsideRoot(_ path: String) -> Result<LuaValue, ScriptError> {
        guard let root else { return .failure(ScriptError("no output directory yet")) }
        do throws(ScriptError) {
            let entries = try ConfinedDirectory(path, root: root).entries()
            // About 300 bytes of Lua memory an entry (its table, four fields, the name).
            let left = max(0, runtime.memoryLimit - runtime.memoryInUse)
            let need = entries.reduce(0) { $0 + 300 + $1.name.count }
            guard need <= left else {
                return .failure(ScriptError("\(path) has \(entries.count) entries, more than the script memory cap leaves room for"))
            }
            return .success(.array(entries.map { entry in
                .table([
                    LuaValue("name"): .string(entry.name), LuaValue("type"): LuaValue(entry.kind),
                    LuaValue("size"): .integer(entry.size), LuaValue("mtime"): .number(entry.mtime),
                ])
            }))
        } catch {
            return .failure(error)
        }
    }

    private func readInsideRoot(_ path: String) -> Result<[UInt8], ScriptError> {
        guard let root else { return .failure(ScriptError("no output directory yet")) }
        do throws(ScriptError) {
            let file = try ConfinedFile(path, root: root)
            // Swift pushes the string with the cap off: the check is here, before the read.
            let left = max(0, runtime.memoryLimit - runtime.memoryInUse)
            let tooLarge = ScriptError("\(path) has \(file.size) bytes, more than the script memory cap of \(LuaRuntime.describe(bytes: runtime.memoryLimit)) leaves room for (\(left) bytes)")
            guard file.size <= left, let bytes = try file.readAll(atMost: left) else { return .failure(tooLarge) }
            return .success(bytes)
        } catch {
            return .failure(error)
        }
    }
}
