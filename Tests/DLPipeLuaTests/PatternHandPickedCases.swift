/// Hand-picked calls for the differential test: each feature of patterns and of the four
/// functions, their edges, and every error message.
let handPickedPatternCases: [PatternCase] = {
    var cases: [PatternCase] = []
    func find(_ s: String, _ p: String, _ i: Int64? = nil) { cases.append(PatternCase("find", s, p, i)) }
    func match(_ s: String, _ p: String, _ i: Int64? = nil) { cases.append(PatternCase("match", s, p, i)) }
    func gmatch(_ s: String, _ p: String, _ i: Int64? = nil) { cases.append(PatternCase("gmatch", s, p, i)) }
    func gsub(_ s: String, _ p: String, _ r: String, _ kind: String = "s", _ n: Int64? = nil) {
        cases.append(PatternCase("gsub", s, p, n, replacement: r, kind: kind))
    }
    // Classes, their complements, and letters that are no class.
    let everyByte = String(decoding: (1...127).map { UInt8($0) }, as: UTF8.self)
    for c in "acdglpsuwxzACDGLPSUWXZqQ.%(]" {
        match(everyByte, "%\(c)+")
        gmatch(everyByte, "%\(c)")
    }
    cases.append(PatternCase("gmatch", (0...255).map { UInt8($0) }, Array("[%w%s]+".utf8)))
    cases.append(PatternCase("gmatch", (0...255).map { UInt8($0) }, Array("%Z+".utf8)))
    cases.append(PatternCase("find", [0, 0x61, 0], [0x25, 0x7A]))
    cases.append(PatternCase("find", [0x61, 0, 0x62], [0x61, 0, 0x62]))
    cases.append(PatternCase("match", [0x61, 0, 0x62], [0x5B, 0, 0x5D]))
    // Sets and ranges.
    for p in ["[a-c]+", "[^a-c]+", "[]]", "[^]]+", "[a-]+", "[-a]+", "[%a-z]+", "[a-%%]", "[%]]+", "[--/]+", "[c-a]",
              "[a-c-e]+", "[%w_]+", "[^%s]+", "[.]", "[%.]", "[^^]+", "[a^]+"] {
        gmatch("abc-z]^_ x.%/e", p)
    }
    // Repetitions, greedy and lazy.
    for p in ["a*", "a+", "a-", "a?", "a*b", "a-b", "a+b", "a?b", ".-b", ".*b", "x*", "x-", "(a*)(a*)", "(a-)(a*)",
              "a?a?a", "[ab]-b$", "^a-$", "^(.-)%s*$"] {
        match("aaabaab  ", p)
        gmatch("aaabaab", p)
    }
    // %b and %f.
    for p in ["%b()", "%b()+", "%bab", "%b\"\"", "%b)(", "%f[%w]%w+", "%f[%W]", "%f[%z]", "%f[^%z]", "%f[a]", "%f[%w]*"] {
        gmatch("f(a(b)c) \"q\" )x( word ab ", p)
    }
    // Captures, position captures and back-references.
    find("hello world", "(o)(r)")
    find("hello", "()ll()")
    match("hello", "()")
    match("key = value", "(%w+)%s*=%s*(%w+)")
    match("abcabc", "(a(b)c)%1")
    match("abab", "(ab)%1")
    match("[[x]]", "%[(=*)%[(.-)%]%1%]")
    match("aa", "()%1")
    match("x", "((((((((((x))))))))))")
    gsub("hello world", "(o)", "[%1%0]")
    gsub("abc", "()", "%1")
    gsub("hello", "(l)(l)", "%2%1")
    gsub("abc", "%w", "%0%0")
    gsub("abc", "%w", "%%")
    // Anchors.
    find("aaa", "^a")
    find("baa", "^a")
    find("aaa", "a$")
    find("a$a", "$a")
    find("a$a", "a$a")
    find("aaa", "^$")
    find("", "^$")
    find("aaa", "^a", 2)
    gsub("aaa", "^a", "b")
    gsub("aaa", "^", "b")
    gsub("aaa", "$", "b")
    gmatch("^a^a", "^a")
    gmatch("aaa", "^a")
    // init, positive, negative and out of range.
    for i: Int64 in [-100, -4, -3, -1, 0, 1, 3, 4, 5, 100] {
        find("abc", "", i)
        find("abc", "c", i)
        match("abc", "()", i)
        gmatch("abc", "()", i)
        cases.append(PatternCase("findplain", "abc", "", i))
    }
    // gsub's empty matches, counts and replacements of every kind.
    gsub("abc", "", "-")
    gsub("abc", "b*", "-")
    gsub("hello world", "o", "0", "s", 1)
    gsub("hello world", "o", "0", "s", 0)
    gsub("hello world", "o", "0", "s", -1)
    gsub("abcd", "%w", "7", "n")
    gsub("abcd", "%w", "2.5", "n")
    gsub("a b c d x (", "%S", "", "t")
    gsub("ab x", "(%w+)", "", "t")
    gsub("abc", "()", "", "t")
    gsub("hello world", "(%w)(%w*)", "", "f1")
    gsub("abcx", "%w", "", "f2")
    gsub("abxc", "%w", "", "f3")
    gsub("abc", "()b", "", "f1")
    gsub("abc", "b", "", "x")
    // Plain find and special characters.
    cases.append(PatternCase("findplain", "a.b(c)%", ".b(c)%"))
    cases.append(PatternCase("findplain", "a+b", "+"))
    find("a+b", "+b")
    find("a.b", ".b")
    // Malformed patterns: errors only when matching reaches the malformed part.
    for p in ["%", "a%", "[a", "[", "[]", "[^]", "[%", "[a%", "%b", "%bx", "%f", "%fa", "%f[a", "%1", "%0", "(a%1)",
              ")", "a)", "(", "(()", "a(", "%g%", "x[", "(a)%2"] {
        match("a", p)
        match("b", p)
        gmatch("ab", p)
        gsub("ab", p, "x")
    }
    match("a", String(repeating: "(", count: 32))
    match("a", String(repeating: "(", count: 33))
    match("a", String(repeating: "()", count: 32))
    match("a", String(repeating: "()", count: 33))
    match("", String(repeating: "()", count: 32) + "%32")
    // Errors in replacements.
    for r in ["%2", "%1", "%9", "%x", "%", "a%", "%%%", "%0%1"] {
        gsub("abc", "b", r)
        gsub("abc", "(b)", r)
        gsub("abc", "()b", r)
    }
    gsub("abc", "(b", "x")
    gsub("abc", "(b", "", "t")
    gsub("abc", "(b", "", "f1")
    // Nesting: Lua allows 200 nested matching calls.
    let long = String(repeating: "a", count: 300)
    for n in [198, 199, 200, 201] {
        find(long, String(repeating: "a?", count: n))
        find(long, String(repeating: "a*", count: n))
        find(long, String(repeating: "a-", count: n))
        find("", String(repeating: "a*", count: n))
        find(long, String(repeating: "(a)", count: min(n, 40)) + String(repeating: "a?", count: max(0, n - 80)))
    }
    return cases
}()
