import Testing

@testable import DLPipe

/// Which redirect hops are followed. An https→http hop cannot be shown end to
/// end (the loopback server has no TLS and dlpipe has no CA option), so the
/// rule is tested here, where the engine asks it at every hop.
struct RedirectRuleTests {
    @Test(arguments: [
        ("https://h/a", "https://other/b"), ("http://h/a", "https://h/b"), ("http://h/a", "http://other/b"),
        ("HTTPS://h/a", "HTTPS://h/b"),
    ])
    func followed(_ from: String, _ to: String) {
        #expect(RedirectRule.refusal(from: from, to: to) == nil)
    }

    @Test(arguments: ["http://h/b", "HTTP://h/b", "http://user:pw@h/b"])
    func httpsToHttpIsRefused(_ to: String) throws {
        let refusal = try #require(RedirectRule.refusal(from: "https://h/a", to: to))
        #expect(refusal.contains("from https to http"))
        #expect(!refusal.contains("pw"), "credentials are never printed")
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://h/x", "javascript:alert(1)", ""])
    func otherSchemesAreRefused(_ to: String) throws {
        let refusal = try #require(RedirectRule.refusal(from: "http://h/a", to: to))
        #expect(refusal.contains("only http and https"))
    }

    @Test func allowingInsecureRedirectsFollowsHttpsToHttpOnly() throws {
        #expect(RedirectRule.refusal(from: "https://h/a", to: "http://h/b", allowInsecure: true) == nil)
        let refusal = try #require(RedirectRule.refusal(from: "https://h/a", to: "ftp://h/b", allowInsecure: true))
        #expect(refusal.contains("only http and https"), "other schemes stay refused")
    }
}
