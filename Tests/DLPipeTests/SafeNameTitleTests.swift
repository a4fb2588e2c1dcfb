import Testing

@testable import DLPipe

/// `dl.safename` keeps a title whole (issue 40, item 5): a `/` or `\` in a
/// script's text is part of the title, not a path, while a server's name
/// keeps only its last component.
@Suite struct SafeNameTitleTests {
    @Test func separatorsInATitleBecomeUnderscores() {
        #expect(SafeName.sanitizeTitle("AC/DC: Live at Donington") == "AC_DC: Live at Donington")
        #expect(SafeName.sanitizeTitle("Back\\slash/and/slash.m4a") == "Back_slash_and_slash.m4a")
        #expect(SafeName.sanitizeTitle("../../etc/passwd") == "_.._etc_passwd", "the leading dots go, every part stays")
        #expect(SafeName.sanitizeTitle("/") == "_")
        #expect(SafeName.sanitizeTitle("Caf\u{E9}/Bar") == "Caf\u{E9}_Bar")
    }

    /// A title over two lines keeps its words apart: each run of line
    /// breaks and tabs is one space; other controls are still removed.
    @Test func lineBreaksAndTabsBecomeOneSpace() {
        #expect(SafeName.sanitizeTitle("new\nline") == "new line")
        #expect(SafeName.sanitizeTitle("Episode 4:\r\n\tThe End.mp3") == "Episode 4: The End.mp3")
        #expect(SafeName.sanitizeTitle("\n\ttrailing\n") == "trailing")
        #expect(SafeName.sanitizeTitle("bell\u{7}ring") == "bellring")
        #expect(SafeName.sanitize("new\nline") == "newline", "a server's name keeps its own rule")
    }

    @Test func theUsualRulesStillApply() {
        #expect(SafeName.sanitizeTitle(".hidden/x") == "hidden_x")
        #expect(SafeName.sanitizeTitle("...") == nil)
        #expect(SafeName.sanitizeTitle("a\u{0}b\tc.txt") == "ab c.txt", "NUL removed, the tab a space")
        let long = String(repeating: "a/", count: 400) + "end.mp3"
        let name = SafeName.sanitizeTitle(long)
        #expect(name?.utf8.count == SafeName.maxBytes && name?.hasSuffix(".mp3") == true)
        #expect(name?.contains("/") == false)
    }

    @Test func serverNamesKeepTheBaseNameRule() {
        #expect(SafeName.sanitize("../../etc/passwd") == "passwd")
        #expect(SafeName.sanitize("AC/DC: Live") == "DC: Live")
        #expect(SafeName.sanitize("a\\b.txt") == "b.txt")
    }

    /// A huge title is bounded before it is copied, and the result is what a
    /// title of its kept halves gives.
    @Test func aHugeTitleIsBounded() {
        let huge = String(repeating: "x/", count: 200_000) + ".txt"
        let name = SafeName.sanitizeTitle(huge)
        #expect(name?.utf8.count == SafeName.maxBytes && name?.hasSuffix(".txt") == true)
    }
}
