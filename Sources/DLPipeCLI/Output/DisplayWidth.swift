/// How many terminal columns text takes, and text cut to a number of columns.
/// East Asian wide and fullwidth characters and emoji take two columns,
/// combining marks none, the rest one: what terminals do for the common cases
/// (a terminal's own table may differ for rare characters, so a bar's line
/// also keeps the last column free).
enum DisplayWidth {
    static func columns(_ text: String) -> Int {
        text.reduce(0) { $0 + columns($1) }
    }

    static func columns(_ character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        // An emoji presentation selector makes the character a wide emoji.
        if character.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        return columns(first)
    }

    static func columns(_ scalar: Unicode.Scalar) -> Int {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        switch scalar.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// The text in at most `width` columns: its start and its end with "…"
    /// between when it is longer (a file's end holds the number and the
    /// extension that tell files apart).
    static func middle(_ text: String, _ width: Int) -> String {
        guard columns(text) > width else { return text }
        guard width > 1 else { return prefix(text, width) }
        let room = width - 1
        let head = prefix(text, room - room / 2)
        return head + "…" + suffix(text, room / 2)
    }

    /// The longest start of the text that fits in `width` columns.
    static func prefix(_ text: String, _ width: Int) -> String {
        var used = 0
        var out = ""
        for character in text {
            let cells = columns(character)
            guard used + cells <= width else { break }
            used += cells
            out.append(character)
        }
        return out
    }

    /// The longest end of the text that fits in `width` columns.
    static func suffix(_ text: String, _ width: Int) -> String {
        var used = 0
        var out: [Character] = []
        for character in text.reversed() {
            let cells = columns(character)
            guard used + cells <= width else { break }
            used += cells
            out.append(character)
        }
        return String(out.reversed())
    }

    /// The text padded with spaces to `width` columns.
    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - columns(text)))
    }
}
