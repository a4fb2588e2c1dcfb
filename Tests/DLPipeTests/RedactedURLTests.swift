import Testing

@testable import DLPipe

/// The user part of a URL, and only that, is hidden wherever a URL is printed or stored.
@Suite struct RedactedURLTests {
    @Test(arguments: [
        ("https://user:secret@example.com/a", "https://***@example.com/a"),
        ("https://user@example.com", "https://***@example.com"),
        // The last "@" of the authority ends the user part (a password may hold one).
        ("http://u:p@ss@host:8080/x?y", "http://***@host:8080/x?y"),
        // An "@" after the authority is the path's, query's or fragment's.
        ("https://example.com/@me", "https://example.com/@me"),
        ("https://example.com?to=a@b", "https://example.com?to=a@b"),
        ("https://example.com#a@b", "https://example.com#a@b"),
        ("https://example.com/é@x", "https://example.com/é@x"),
        ("https://ü:ß@bücher.example/", "https://***@bücher.example/"),
        ("no scheme@all", "no scheme@all"),
        ("", ""),
        ("a://", "a://"),
    ])
    func redacts(_ url: String, _ expected: String) {
        #expect(RedactedURL.text(url) == expected)
        // The same rule decides which URLs keep a secret in the queue.
        #expect(PendingRule.hasUserPart(url) == (expected != url))
    }
}
