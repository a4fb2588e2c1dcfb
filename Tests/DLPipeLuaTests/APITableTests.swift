import Foundation
import Testing

@testable import DLPipe
@testable import DLPipeLua

/// api.lua is the one description of the dl API. These tests tie the live `dl`
/// table, the event arguments the engine pushes and docs/lua-api.md to it, and
/// check both Lua files with `luac -p`.
@Suite struct APITableTests {
    static let bridge = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/DLPipeLua/Bridge")
    static let docs = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/lua-api.md")

    /// The API table as Lua values.
    static func api() throws -> [LuaValue: LuaValue] {
        let runtime = LuaRuntime(memoryLimit: 64 << 20, unsafe: false)
        guard case .table(let table)? = try runtime.run(Prelude.api, chunkName: Prelude.apiChunkName).first else {
            Issue.record("api.lua returned no table")
            return [:]
        }
        return table
    }

    static func list(_ value: LuaValue?) -> [String] {
        guard case .table(let table)? = value else { return [] }
        return (1...max(1, table.count)).compactMap { table[.integer(Int64($0))]?.text }
    }

    /// Names of the entries of `calls` or `values`.
    static func names(_ api: [LuaValue: LuaValue], _ section: String) -> Set<String> {
        guard case .table(let entries)? = api[LuaValue(section)] else { return [] }
        return Set(entries.values.compactMap { entry -> String? in
            guard case .table(let fields) = entry else { return nil }
            return fields[LuaValue("name")]?.text
        })
    }

    static func events(_ api: [LuaValue: LuaValue]) -> [String: Set<String>] {
        guard case .table(let events)? = api[LuaValue("events")] else { return [:] }
        var out: [String: Set<String>] = [:]
        for (key, value) in events { if let name = key.text { out[name] = Set(list(value)) } }
        return out
    }

    @Test func theLuaFilesCompileWithLuac() throws {
        for file in ["prelude.lua", "api.lua", "kit.lua", "luadefs.lua"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["luac5.4", "-p", Self.bridge.appendingPathComponent(file).path]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            process.waitUntilExit()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "luac5.4 -p \(file): \(message)")
        }
    }

    @Test func theCompiledInPreludeIsTheFileInTheTree() throws {
        let prelude = try String(contentsOf: Self.bridge.appendingPathComponent("prelude.lua"), encoding: .utf8)
        let api = try String(contentsOf: Self.bridge.appendingPathComponent("api.lua"), encoding: .utf8)
        let kit = try String(contentsOf: Self.bridge.appendingPathComponent("kit.lua"), encoding: .utf8)
        #expect(prelude == Prelude.source)
        #expect(api == Prelude.api)
        #expect(kit == Prelude.kit)
    }

    @Test func everyCallSaysWhereItMayBeCalled() throws {
        // Through the same conversion as the prelude's copy (`__dl.api`).
        guard case .table(let calls)? = try Self.api()[LuaValue("calls")] else {
            Issue.record("no calls")
            return
        }
        let events = Self.events(try Self.api()).keys
        for case .table(let call) in calls.values {
            let name = call[LuaValue("name")]?.text ?? "?"
            let places = Self.list(call[LuaValue("where")])
            #expect(!places.isEmpty, "\(name) has no where list")
            let known = Set(["job", "top", "anywhere"]).union(events)
            #expect(Set(places).isSubset(of: known), "\(name): \(places)")
        }
    }

    /// The error names the script's line; the traceback shows the script's
    /// frames and none of the prelude's (`dlpipe/prelude.lua`), which say
    /// nothing to a script's author.
    @Test func tracebacksShowTheScriptsFramesNotThePreludes() throws {
        let host = try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
        do {
            try host.runtime.run("dl.skip('x')", chunkName: "=job.lua")
            Issue.record("dl.skip at the top level should fail")
        } catch {
            #expect(error.message.hasPrefix("job.lua:1: dl.skip may not be called"), "\(error.message)")
            let traceback = error.traceback ?? ""
            #expect(traceback.contains("job.lua:1: in main chunk"), "\(traceback)")
            #expect(!traceback.contains("dlpipe/"), "\(traceback)")
        }
    }

    @Test func everyFunctionOfDlIsInTheTableAndNothingElse() throws {
        let host = try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
        // Every function reachable from dl, and the tables of values.
        let listed = try host.runtime.run("""
            local out = {}
            local function walk(prefix, t)
              for k, v in pairs(t) do
                local name = prefix .. "." .. k
                if type(v) == "function" then out[#out + 1] = name
                elseif type(v) == "table" and name ~= "dl.var" then walk(name, v) end
              end
            end
            walk("dl", dl)
            return out
            """, chunkName: "=walk")
        let live = Set(Self.list(listed.first))
        let api = try Self.api()
        #expect(live == Self.names(api, "calls"), "dl functions vs api.lua calls")
        #expect(!Self.names(api, "values").isEmpty)
    }

    @Test func theEngineArgumentsOfEveryEventAreTheTablesFields() throws {
        let runtime = LuaRuntime(memoryLimit: 64 << 20, unsafe: false)
        let L = runtime.currentState
        func keys(_ argument: EventArgument) -> Set<String> {
            argument.push(on: L)
            guard case .table(let table) = runtime.value(at: -1, on: L) else { return [] }
            return Set(table.keys.compactMap(\.text))
        }
        var error = DownloadError(.http, "gone", status: 503, retryAfter: 2)
        error.status = 503
        // `placed` gets the same table as `finished`.
        let finished = keys(.finished(FinishedInfo(
            path: "/p", bytes: 1, sha256: "00", type: "t", seconds: 1, unchanged: false)))
            .union(keys(.finished(FinishedInfo(
                path: "", bytes: 1, sha256: "00", type: "t", seconds: 1, unchanged: false, body: [0x61]))))
        let pushed: [String: Set<String>] = [
            "response": keys(.response(ResponseInfo(
                status: 206, headers: ["a": "b"], type: "text/html", length: 3, filename: "x", url: "http://h/x",
                resumedFrom: 1))),
            "progress": keys(.progress(ProgressInfo(bytes: 1, total: 4, rate: 2))),
            // A file's finished has a path, a memory download's a body instead.
            "finished": keys(.finished(FinishedInfo(
                path: "/p", bytes: 1, sha256: "00", type: "t", seconds: 1, unchanged: false)))
                .union(keys(.finished(FinishedInfo(
                    path: "", bytes: 1, sha256: "00", type: "t", seconds: 1, unchanged: false, body: [0x61])))),
            "retrying": keys(.failure(error, attempt: 1, retryAfter: 2)),
            "failed": keys(.failure(error, attempt: 1, retryAfter: 2)),
            "done": keys(.summary(RunSummary())),
            "request": keys(.request(RequestInfo(url: "http://h/x", attempt: 1, headers: ["a": "b"]))),
            "placed": finished,
        ]
        #expect(pushed == Self.events(try Self.api()))
        let download = DownloadInfo(
            id: DownloadID(1), url: "http://h/x", name: "x", directory: "d", path: "/p", parent: DownloadID(0),
            attempt: 1, meta: [:])
        EventArgument.push(download, ids: ProvisionalIDs(), on: L)
        guard case .table(let fields) = runtime.value(at: -1, on: L) else {
            Issue.record("no download table")
            return
        }
        // meta and depth stay on the Lua side (the prelude's `metas`, `depths`), so the engine does not push them.
        #expect(Set(fields.keys.compactMap(\.text)).union(["meta", "depth"]) == Set(Self.list(try Self.api()[LuaValue("download")])))
    }

    @Test func docsListEveryCallAndEveryEventField() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        let api = try Self.api()
        // The calls: every dl.name in a "### " heading.
        let headings = text.split(separator: "\n").filter { $0.hasPrefix("### ") }
        var documented: Set<String> = []
        for heading in headings {
            for match in heading.matches(of: /dl(\.[a-z_0-9]+)+/) { documented.insert(String(match.output.0)) }
        }
        #expect(documented == Self.names(api, "calls").union(Self.names(api, "values")), "### headings of lua-api.md vs api.lua")
        // The events: the fields named in each row of the events table ("r.status", ...).
        var rows: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3, let event = cells[1].firstMatch(of: /^`([a-z]+)`$/)?.output.1,
                Self.events(api)[String(event)] != nil
            else { continue }
            rows[String(event)] = Set(cells[2].matches(of: /`[a-z]\.([a-z_0-9]+)`/).map { String($0.output.1) })
        }
        #expect(rows == Self.events(api), "the events table of lua-api.md vs api.lua")
    }

    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The tables of dl.config's keys and dl.add's fields in lua-api.md are
    /// what scripts/lua-api-docs writes from api.lua (its --check).
    @Test func docsTablesAreWhatAPILuaWrites() throws {
        let process = Process()
        process.executableURL = Self.root.appendingPathComponent("scripts/lua-api-docs")
        process.arguments = ["--check"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(message)")
    }

    /// The sample "unknown event" message in lua-api.md lists the events the
    /// prelude's message lists: api.lua's event_order, in its order.
    @Test func docsSampleUnknownEventMessageListsEveryEvent() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8).replacingOccurrences(of: "\n", with: " ")
        let order = Self.list(try Self.api()[LuaValue("event_order")])
        guard let sample = text.firstMatch(of: /unknown event 'finish' \(did you mean\s+'finished'\?\); known: ([a-z, ]+)`/) else {
            Issue.record("no sample unknown-event message in lua-api.md")
            return
        }
        #expect(sample.output.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } == order)
    }

    /// The heading of dl.add in lua-api.md names its fields as api.lua does, in its order.
    @Test func docsHeadingOfDlAddListsItsFields() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        guard case .table(let calls)? = try Self.api()[LuaValue("calls")],
            let add = calls.values.first(where: { $0["name"]?.text == "dl.add" }),
            let args = add["args"]?.text, let table = args.firstRange(of: "{").map({ args[$0.lowerBound...] })
        else {
            Issue.record("no dl.add in api.lua's calls")
            return
        }
        let heading = text.split(separator: "\n").first { $0.hasPrefix("### `dl.add(") } ?? ""
        #expect(heading.contains("`dl.add\(table)`"), "\(heading) vs api.lua's \(args)")
    }

    /// JobSettings reads every key of api.lua's dl.config into a property of
    /// its own, and has no property that is not a key's: a key added to
    /// api.lua without the Swift that reads it fails here.
    @Test func jobSettingsReadsEveryConfigKey() throws {
        guard case .table(let fields)? = try Self.api()["defs"]?["fields"]?["config"] else {
            Issue.record("no defs.fields.config")
            return
        }
        func set(_ settings: JobSettings) -> [String] {
            Mirror(reflecting: settings).children.compactMap { child in
                let value = Mirror(reflecting: child.value)
                return value.displayStyle == .optional && value.children.isEmpty ? nil : child.label
            }
        }
        #expect(set(try JobSettings([:])).isEmpty)
        var properties: [String: String] = [:]
        for (key, def) in fields {
            let name = key.text ?? "?"
            let read = set(try JobSettings([name: Self.sample(def)]))
            #expect(read.count == 1, "dl.config's \(name) sets \(read) of JobSettings")
            if let property = read.first {
                #expect(properties[property] == nil, "\(name) and \(properties[property] ?? "") both set \(property)")
                properties[property] = name
            }
        }
        #expect(Mirror(reflecting: try JobSettings([:])).children.count == fields.count, "JobSettings has a property no key of api.lua sets")
    }

    /// The prelude's check of each key's Lua type comes from api.lua's type:
    /// a value of that type is taken, and a function is refused at the line.
    @Test func thePreludeChecksEveryConfigKeyByItsAPIType() throws {
        guard case .table(let fields)? = try Self.api()["defs"]?["fields"]?["config"] else {
            Issue.record("no defs.fields.config")
            return
        }
        for (key, def) in fields {
            let name = key.text ?? "?"
            let host = try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
            host.runtime.setGlobal("value", Self.sample(def))
            #expect(throws: Never.self, "\(name) = \(Self.sample(def))") {
                try host.runtime.run("dl.config{ [\"\(name)\"] = value }", chunkName: "=job.lua")
            }
            #expect(throws: Never.self, "\(name): JobSettings") { try JobSettings(host.config()) }
            do {
                try host.runtime.run("-- line 1\ndl.config{ [\"\(name)\"] = print }", chunkName: "=job.lua")
                Issue.record("\(name) took a function")
            } catch {
                #expect(error.message.hasPrefix("job.lua:2: "), "\(name): \(error.message)")
            }
        }
    }

    /// A value of a key's api.lua type that JobSettings takes.
    static func sample(_ def: LuaValue) -> LuaValue {
        let type = def[1]?.text ?? ""
        if type.hasPrefix("integer") { return .integer(def["range"]?[1]?.int ?? 1) }
        if type.hasPrefix("number") { return .number(def["range"]?[2]?.double ?? 1) }
        if type.hasPrefix("boolean") { return .boolean(true) }
        if type.hasPrefix("string[]") { return .table([.integer(1): LuaValue("API_TOKEN")]) }
        if type.hasPrefix("\"") { return LuaValue(String(type.dropFirst().prefix { $0 != "\"" })) }
        return LuaValue("postgresql://h/db")  // any string key's value; the queue's must be an address
    }
}
