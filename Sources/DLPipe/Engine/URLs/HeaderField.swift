/// The rule for request headers from callers, scripts and `-H`.
///
/// A CR or LF in a value would end the header line early and make the rest a
/// header of its own (`X-Test: a\r\nX-Injected: 1`): libcurl sends the text as
/// it is. So names are tokens (RFC 9110 §5.1: letters, digits and
/// ``!#$%&'*+-.^_`|~``) and values have no control characters, except the tab
/// that header values may hold.
package enum HeaderField {
    /// Why `name: value` may not be sent, or nil when it may.
    public static func problem(name: String, value: String) -> String? {
        guard !name.isEmpty else { return "a header needs a name" }
        if let bad = name.unicodeScalars.first(where: { !isTokenCharacter($0) }) {
            return "header name \(name.debugDescription) has \(describe(bad)); a name is letters, digits and !#$%&'*+-.^_`|~"
        }
        if let bad = value.unicodeScalars.first(where: isRefusedInValue) {
            return "header \(name) has \(describe(bad)) in its value; control characters (CR, LF, NUL, ...) are refused"
        }
        return nil
    }

    /// The first problem of a set of headers, in name order (so the message is stable).
    public static func problem(in headers: [String: String]) -> String? {
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let problem = problem(name: name, value: value) { return problem }
        }
        return nil
    }

    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        default: "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
        }
    }

    /// C0 controls but the tab, and DEL. Bytes from 0x80 up (obs-text) pass.
    private static func isRefusedInValue(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7F
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        let names: [UInt32: String] = [0x0D: "CR", 0x0A: "LF", 0x00: "NUL", 0x20: "a space", 0x3A: "a colon"]
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return names[scalar.value].map { "\($0) (\(code))" } ?? code
    }
}
