import Foundation
import Testing

@testable import DLPipe
@testable import DLPipeLua

/// `dlpipe lua-defs` (issue 14): the LuaLS definition file names exactly the
/// calls, event fields and download fields of api.lua, the config keys and
/// dl.add fields the prelude accepts, and parses as Lua.
@Suite struct LuaDefinitionsTests {
    /// `---@field` names per `---@class`, and the `function NAME(` lines.
    struct Parsed {
        var classes: [String: [String]] = [:]
        var functions: [String] = []
        var values: [String] = []
    }

    static func parse(_ text: String) -> Parsed {
        var parsed = Parsed()
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let name = line.firstMatch(of: /^---@class ([\w.]+)$/)?.output.1 {
                current = String(name)
                parsed.classes[String(name)] = []
            } else if let field = line.firstMatch(of: #/^---@field ([\w_]+) /#)?.output.1, let current {
                parsed.classes[current, default: []].append(String(field))
            } else if let function = line.firstMatch(of: /^function ([\w.]+)\(/)?.output.1 {
                parsed.functions.append(String(function))
            } else if let value = line.firstMatch(of: #/^(dl\.[\w.]+) = \{\}$/#)?.output.1 {
                parsed.values.append(String(value))
            } else if line.isEmpty {
                current = nil
            }
        }
        return parsed
    }

    /// The names the prelude lists in its "unknown ..." message for `source`.
    static func knownNames(_ source: String) throws -> [String] {
        let host = try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
        do {
            try host.runtime.run(source, chunkName: "=job.lua")
        } catch {
            guard let list = error.message.firstMatch(of: /known: (.*)$/)?.output.1 else { return [] }
            return list.split(separator: ", ").map(String.init)
        }
        Issue.record("\(source) loaded")
        return []
    }

    @Test func everyCallValueAndFieldOfTheAPITableIsDefined() throws {
        let parsed = Self.parse(try LuaDefinitions.text())
        let api = try APITableTests.api()
        #expect(parsed.functions.count == Set(parsed.functions).count, "one definition per call")
        #expect(Set(parsed.functions) == APITableTests.names(api, "calls"))
        #expect(Set(parsed.values).isSuperset(of: APITableTests.names(api, "values")))
        let events = APITableTests.events(api)
        let classOf = ["response": "dl.Response", "progress": "dl.Progress", "retrying": "dl.Failure",
                       "finished": "dl.Finished", "failed": "dl.Failure", "done": "dl.Summary",
                       "request": "dl.Request", "placed": "dl.Finished"]
        for (event, fields) in events {
            let defined = parsed.classes[classOf[event] ?? "?"] ?? []
            #expect(Set(defined) == fields, "\(event): \(defined)")
        }
        #expect(parsed.classes["dl.Download"] == APITableTests.list(api[LuaValue("download")]))
    }

    @Test func configAndAddFieldsAreThePreludesOwn() throws {
        let parsed = Self.parse(try LuaDefinitions.text())
        let configKeys = try Self.knownNames("dl.config{ nonsense = 1 }")
        #expect(!configKeys.isEmpty)
        #expect(Set(parsed.classes["dl.Config"] ?? []) == Set(configKeys))
        let addFields = try Self.knownNames("dl.add{ url = 'http://h/', nonsense = 1 }")
        #expect(!addFields.isEmpty)
        #expect(parsed.classes["dl.AddSpec"] == addFields)
    }

    @Test func itIsAMetaFileThatLuacParses() throws {
        let text = try LuaDefinitions.text()
        #expect(text.hasPrefix("---@meta\n"))
        #expect(text.contains("---@overload fun(event: \"failed\", handler: fun(d: dl.Download, e: dl.Failure): dl.Verdict|false|nil)"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dl-\(UUID().uuidString).d.lua")
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["luac5.4", "-p", file.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "luac5.4 -p: \(message)")
    }
}
