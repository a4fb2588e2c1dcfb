import DLPipe

/// `__dl.add`: the table prelude.lua's `dl.add` built (its fields checked
/// against api.lua there, at the script's line), as a `DownloadRequest` that
/// is queued, or why not.
extension ScriptHost {
    /// What `__dl.add` gives back to the prelude: the id, or nil, why and the message.
    enum AddOutcome {
        case added(Int)
        /// A mistake of the call: the prelude raises it at the script's line.
        case error(String)
        /// Past max_downloads: nil, and the prelude warns once.
        case limit(String)
        /// A URL past the length limit: nil and a warning, so that one hostile
        /// link on a page does not fail the handler that met it.
        case refused(String)

        var values: [LuaValue] {
            switch self {
            case .added(let id): [.integer(Int64(id))]
            case .error(let message): [.nil_, LuaValue("error"), LuaValue(message)]
            case .limit(let message): [.nil_, LuaValue("limit"), LuaValue(message)]
            case .refused(let message): [.nil_, LuaValue("refused"), LuaValue(message)]
            }
        }
    }

    /// `__dl.add(table)`, or `__dl.add(url, parent, depth)` for a bare URL
    /// (the prelude's form for `dl.add("...")`: no table to build and read).
    func add(_ args: [LuaValue]) throws(LuaCallError) -> [LuaValue] {
        var fields: [String: LuaValue] = [:]
        switch args.first {
        case .table(let table)?:
            // Keyed by Swift strings (the names are short: no allocation each): a
            // lookup by `LuaValue(name)` made a byte array for each of the 17 names.
            fields.reserveCapacity(table.count)
            for (key, value) in table { if let name = key.text { fields[name] = value } }
        case .string?:
            fields["url"] = args[0]
            if args.count > 1, args[1] != .nil_ { fields["parent"] = args[1] }
            if args.count > 2, args[2] != .nil_ { fields["depth"] = args[2] }
        default:
            throw LuaCallError("dl.add wants a table")
        }
        return try add(fields).values
    }

    private func add(_ fields: [String: LuaValue]) throws(LuaCallError) -> AddOutcome {
        guard let url = fields["url"]?.text else { throw LuaCallError("url must be a string") }
        // Past the limit, refused before any work on it: one hostile link must not hold the run.
        if let problem = URLLimit.problem(url) { return .refused(problem) }
        // The first ":"-separated part that is not empty (as `split` gives it),
        // found without splitting the whole URL: `split` was a third of the
        // Swift side of a top-level dl.add.
        let scheme = url.drop { $0 == ":" }.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else {
            return .error("only http and https URLs can be added, not \(url.debugDescription)")
        }
        var request = try request(url, fields)
        // Past the limit the add is refused without an error (the prelude warns
        // once and returns nil), so the handler that made it does not fail.
        guard addedCount < maxDownloads else {
            return .limit("this run already has \(maxDownloads) downloads, the most it may queue (dl.config{ max_downloads = N }); later adds are dropped")
        }
        // Normalised here too, so that this table keys a URL as the engine does;
        // its normal form (a non-ASCII byte as three) must fit the limit too.
        request.url = URLNormalization.normalize(url)
        if let problem = URLLimit.problem(request.url) { return .refused(problem) }
        addedCount += 1
        return queue(request)
    }

    /// The request of a `__dl.add` table. A header, name or dir that would be
    /// unsafe, or a number past api.lua's range, is an error of the dl.add call:
    /// a load error at the job's top level, a failure of the handler's download
    /// in a handler.
    private func request(_ url: String, _ fields: [String: LuaValue]) throws(LuaCallError) -> DownloadRequest {
        func field(_ key: String) -> LuaValue? { fields[key] }
        var headers: [String: String] = [:]
        if case .table(let table)? = field("headers") {
            for (key, value) in table { if let k = key.text, let v = value.text { headers[k] = v } }
        }
        if let problem = HeaderField.problem(in: headers) { throw LuaCallError(problem) }
        // A name or dir that leaves the output directory is refused here too, so
        // that a top-level add fails to load (run and check, before any request)
        // instead of failing after its request; symlinks wait for the response.
        let name = field("name")?.text, directory = field("dir")?.text
        if name != nil || directory != nil {
            do throws(DownloadError) {
                _ = try TargetPath.lexical(directory: directory, name: name ?? "x")
            } catch {
                throw LuaCallError(error.message)
            }
        }
        // The prelude checked the numbers against api.lua's ranges; a value past
        // them would trap the engine's conversions (a priority must fit the queue's
        // integer column, a timeout Int milliseconds), so none passes here either.
        func ranged(_ key: String) throws(LuaCallError) -> LuaValue? {
            guard let value = field(key) else { return nil }
            guard let range = APIRanges.add[key],
                range.integer ? value.int.map(range.contains) == true : value.double.map(range.contains) == true
            else { throw LuaCallError("\(key) out of range") }
            return value
        }
        var request = DownloadRequest(
            url: url, name: name, directory: directory, headers: headers, sha256: field("sha256")?.text,
            priority: Int(try ranged("priority")?.int ?? 0),
            parent: engineID(field("parent")))
        request.timeout = try ranged("timeout")?.double
        request.maxTime = try ranged("max_time")?.double
        request.split = try ranged("split")?.int.map { Int($0) }
        request.speedLimit = try ranged("speed_limit")?.int.map { Int($0) }
        request.speedTime = try ranged("speed_time")?.double
        request.maxSize = try ranged("max_size")?.int
        if field("into")?.text == "memory" { request.into = .memory }
        request.method = field("method")?.text
        if case .string(let body)? = field("body") { request.body = body }
        request.metaJSON = field("meta_json")?.text
        request.depth = Int(field("depth")?.int ?? 0)
        return request
    }

    /// Queues `request`, or gives the id of the same request added before.
    private func queue(_ request: DownloadRequest) -> AddOutcome {
        // The job's rule (SPEC 6): a URL and target already added in this run
        // give the first id back, even after that download ended, so a crawl
        // that meets a link twice never loops. (A library engine's own `add`
        // deduplicates only open downloads.)
        let key = request.deduplicationKey
        if let id = addedKeys[key] { return .added(provisional.shown(id)) }
        if let position = topLevel?.id(ofKey: key) { return .added(provisional.id(ofPosition: position)) }
        if let engine {
            let id = engine.add(request).rawValue
            // 0: a shared queue's run has queued the job's max_downloads,
            // counted over every worker; refused as past the limit here.
            if id == 0 && engine.isShared {
                return .limit("the job's run already has \(maxDownloads) downloads queued by its workers, the most it may queue (dl.config{ max_downloads = N }); later adds are dropped")
            }
            // The command line's engine keeps this rule itself: no second table.
            if !engine.deduplicatesWholeRun { addedKeys[key] = id }
            // A top-level add's row (a handler met its URL again) keeps the
            // id the top level got.
            return .added(provisional.shown(id))
        }
        // Before the run starts: keep it, with the id the engine will give it
        // (the engine numbers new requests 1, 2, 3..., and these are all new),
        // or a provisional one in a shared queue's run (ProvisionalIDs).
        guard let topLevel else { return .error("internal error: no engine and no top level for dl.add") }
        return .added(provisional.id(ofPosition: topLevel.add(key: key, request)))
    }
}
