import TestSupport

/// One call of a string library function for the pattern differential test: what it calls
/// (`find`, `findplain`, `match`, `gmatch`, `gsub`), with which subject, pattern and extras.
struct PatternCase {
    var op: String
    var subject: [UInt8]
    var pattern: [UInt8]
    /// find, match, gmatch: the init argument (nil: none). gsub: the most substitutions.
    var number: Int64?
    /// gsub: how the replacement is given ("s" string, "n" number, "t" the driver's table,
    /// "f1"/"f2"/"f3" its functions, "x" an invalid value) and the string or number itself.
    var replacementKind = "s"
    var replacement: [UInt8] = []

    init(_ op: String, _ subject: String, _ pattern: String, _ number: Int64? = nil,
         replacement: String = "", kind: String = "s") {
        self.init(op, Array(subject.utf8), Array(pattern.utf8), number, replacement: Array(replacement.utf8), kind: kind)
    }

    init(_ op: String, _ subject: [UInt8], _ pattern: [UInt8], _ number: Int64? = nil,
         replacement: [UInt8] = [], kind: String = "s") {
        self.op = op
        self.subject = subject
        self.pattern = pattern
        self.number = number
        self.replacementKind = kind
        self.replacement = replacement
    }

    /// The case as a Lua table constructor for the driver.
    var lua: String {
        let n = number.map { "\($0)" } ?? "nil"
        return "{\(Self.quote(op)),\(Self.quote(subject)),\(Self.quote(pattern)),\(n),"
            + "\(Self.quote(replacementKind)),\(Self.quote(replacement))}"
    }

    var description: String {
        "\(op)(\(Self.quote(subject)), \(Self.quote(pattern)), \(number.map { "\($0)" } ?? "nil"), "
            + "\(replacementKind):\(Self.quote(replacement)))"
    }

    static func quote(_ s: String) -> String { quote(Array(s.utf8)) }

    /// A Lua string literal for any bytes (every byte outside printable ASCII as \ddd).
    static func quote(_ bytes: [UInt8]) -> String {
        var out = "\""
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += "\\" + String(UnicodeScalar(b))
            case 0x20...0x7E: out += String(UnicodeScalar(b))
            default: out += "\\" + String(format: "%03d", b)
            }
        }
        return out + "\""
    }
}

/// The Lua driver both string libraries run (after `local cases = { ... }`): calls every case under pcall and writes each
/// outcome (values with their types, or the error message) as one line of printable ASCII.
/// It uses no pattern function itself, so the library under test cannot disguise its output.
let patternDriver = #"""
local T = { a = "<A>", b = 7, c = false, d = true, x = 2.5, ["1"] = "one", [1] = "p1", [3] = {},
            ["("] = "<paren>", ["ab"] = 12 }
local F = {
  f1 = function(...)
    local n, parts = select("#", ...), {}
    for i = 1, n do local v = select(i, ...) parts[i] = type(v) .. ":" .. tostring(v) end
    return "[" .. table.concat(parts, "|") .. "]"
  end,
  f2 = function(a) if a == "a" or a == 1 then return nil end if a == "b" then return false end return 3 end,
  f3 = function(a) if a == "x" then return {} end return tostring(a):upper() end,
}
local function show(v)
  local t = type(v)
  if t == "string" then
    local out = {}
    for i = 1, #v do
      local b = v:byte(i)
      if b >= 32 and b < 127 and b ~= 92 then out[#out + 1] = string.char(b)
      else out[#out + 1] = "\\" .. b .. ";" end
    end
    return "s'" .. table.concat(out) .. "'"
  elseif t == "number" then
    return math.type(v) .. ":" .. tostring(v)
  end
  return tostring(v)
end
local function pack(ok, ...)
  local n, parts = select("#", ...), {}
  for i = 1, n do parts[i] = show((select(i, ...))) end
  return (ok and "ok " or "error ") .. table.concat(parts, ",")
end
local function run(c)
  local op, s, p, n, rk, rv = c[1], c[2], c[3], c[4], c[5], c[6]
  if op == "find" then return pack(pcall(string.find, s, p, n))
  elseif op == "findplain" then return pack(pcall(string.find, s, p, n, true))
  elseif op == "match" then return pack(pcall(string.match, s, p, n))
  elseif op == "gmatch" then
    return pack(pcall(function()
      local out, k = {}, 0
      for a, b, c2 in string.gmatch(s, p, n) do
        k = k + 1
        out[k] = show(a) .. "/" .. show(b) .. "/" .. show(c2)
        if k >= 60 then break end
      end
      return table.concat(out, ";")
    end))
  else
    local repl = rv
    if rk == "n" then repl = tonumber(rv) elseif rk == "t" then repl = T
    elseif rk == "x" then repl = true elseif F[rk] then repl = F[rk] end
    return pack(pcall(string.gsub, s, p, repl, n))
  end
end
local lines = {}
for i, c in ipairs(cases) do lines[i] = run(c) end
return table.concat(lines, "\n")
"""#

/// Generates pattern/subject pairs from a seed: patterns built mostly from well-formed items
/// (classes, sets with ranges and escapes, every repetition, captures, %b, %f,
/// back-references, anchors) with malformed pieces mixed in; subjects from a small alphabet
/// that the patterns' literals meet often.
struct PatternCaseGenerator {
    var rng: SplitMix64

    private static let subjectBytes: [UInt8] = Array("aaabbc(())[]%-.^$* x1A\tZ".utf8) + [0, 10, 0xE9, 0xFF]
    private static let literals: [String] = ["a", "b", "c", "x", "1", " ", "A", "é", "-", "^", "*", "]", "\u{0}"]
    private static let classes: [String] = ["%a", "%d", "%s", "%w", "%x", "%p", "%l", "%u", "%c", "%g", "%z",
                                            "%A", "%D", "%S", "%W", "%P", "%Z", "%%", "%.", "%(", "%]", "%-", "%q", "%^"]
    private static let setParts: [String] = ["a", "b", "a-c", "c-a", "%a", "%d", "%s", "%]", "%-", "-", "^", "]", "x", ".", "(",
                                             "%", "0-9", "--/", "%W"]
    private static let specials: [String] = ["%b()", "%b[]", "%bab", "%b%%", "%f[%w]", "%f[^a]", "%f[%z]", "%f[a-c]", "%f[%W]"]
    private static let malformed: [String] = ["%", "[", "[^", "[a", "[%", "[]", "%b", "%bx", "%f", "%fa", "%f[a", ")", "(", "%0", "%9"]
    private static let repetitions: [String] = ["*", "+", "-", "?"]
    private static let replacementParts: [String] = ["x", "%0", "%1", "%2", "%%", "<", "%a", "%", "é", "\u{0}", "-"]

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    private mutating func pick<T>(_ list: [T]) -> T { list[Int(rng.next() % UInt64(list.count))] }
    private mutating func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }
    private mutating func upTo(_ n: Int) -> Int { Int(rng.next() % UInt64(n + 1)) }

    mutating func subject() -> [UInt8] {
        (0..<upTo(14)).map { _ in pick(Self.subjectBytes) }
    }

    mutating func pattern() -> [UInt8] {
        var out = chance(20) ? "^" : ""
        var open = 0
        var closed = 0
        for _ in 0..<upTo(7) {
            let roll = rng.next() % 100
            switch roll {
            case 0..<25: out += pick(Self.literals)
            case 25..<33: out += "."
            case 33..<45: out += pick(Self.classes)
            case 45..<58:
                out += "[" + (chance(25) ? "^" : "")
                for _ in 0..<(1 + upTo(3)) { out += pick(Self.setParts) }
                out += "]"
            case 58..<68:
                out += "("
                open += 1
                if chance(30) { out += ")"; open -= 1; closed += 1 }
            case 68..<76 where open > 0:
                out += ")"
                open -= 1
                closed += 1
            case 76..<83: out += pick(Self.specials)
            case 83..<89 where closed > 0: out += "%\(1 + upTo(closed))"
            case 89..<93: out += pick(Self.malformed)
            default: out += pick(Self.literals)
            }
            if chance(35) { out += pick(Self.repetitions) }
        }
        if open > 0 && chance(80) { out += String(repeating: ")", count: open) }
        if chance(15) { out += "$" }
        return Array(out.utf8)
    }

    mutating func initArgument() -> Int64? {
        if chance(60) { return nil }
        return pick([-20, -3, -2, -1, 0, 1, 2, 3, 5, 14, 15, 16, 100, Int64.min, Int64.max])
    }

    mutating func next() -> PatternCase {
        let s = subject()
        let p = pattern()
        switch rng.next() % 10 {
        case 0, 1: return PatternCase("find", s, p, initArgument())
        case 2: return PatternCase("findplain", s, p, initArgument())
        case 3, 4: return PatternCase("match", s, p, initArgument())
        case 5, 6: return PatternCase("gmatch", s, p, initArgument())
        default:
            let kind = pick(["s", "s", "s", "n", "t", "f1", "f2", "f3"])
            var replacement = ""
            for _ in 0..<upTo(3) { replacement += pick(Self.replacementParts) }
            if kind == "n" { replacement = pick(["7", "2.5", "-1"]) }
            let most: Int64? = chance(75) ? nil : pick([-1, 0, 1, 2, 3])
            return PatternCase("gsub", s, p, most, replacement: Array(replacement.utf8), kind: kind)
        }
    }
}
