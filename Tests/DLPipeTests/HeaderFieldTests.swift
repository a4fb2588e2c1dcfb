import DLPipe
import Testing

/// Request headers: names are tokens, values have no control characters but the tab.
struct HeaderFieldTests {
    @Test(arguments: [
        ("Authorization", "Bearer x"), ("X-Tab", "a\tb"), ("Accept", ""), ("X-Latin", "caf\u{E9}"),
        ("!#$%&'*+-.^_`|~09azAZ", "v"),
    ])
    func acceptable(_ name: String, _ value: String) {
        #expect(HeaderField.problem(name: name, value: value) == nil)
    }

    @Test(arguments: [
        ("X-Test", "a\r\nX-Injected: 1", "CR"), ("X-Test", "a\nX-Injected: 1", "LF"), ("X-Test", "a\u{0}", "NUL"),
        ("X-Test", "\u{1B}[31m", "U+001B"), ("X-Test", "a\u{7F}", "U+007F"), ("X Test", "v", "a space"),
        ("X-Test:", "v", "a colon"), ("X-Injected\r\nX", "1", "CR"), ("", "v", "needs a name"), ("caf\u{E9}", "v", "U+00E9"),
    ])
    func refused(_ name: String, _ value: String, _ said: String) {
        let problem = HeaderField.problem(name: name, value: value)
        #expect(problem?.contains(said) == true, "\(name.debugDescription): \(value.debugDescription) → \(problem ?? "nil")")
    }

    @Test func theFirstProblemOfASetIsStable() {
        let headers = ["B": "x\n", "A": "y\r", "C": "fine"]
        #expect(HeaderField.problem(in: headers)?.hasPrefix("header A has CR") == true)
        #expect(HeaderField.problem(in: ["A": "ok"]) == nil)
    }
}
