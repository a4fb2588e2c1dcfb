import Testing

@testable import DLPipe

/// robots.txt by RFC 9309: groups, longest match, patterns, normalisation.
@Suite struct RobotsRulesTests {
    private func rules(_ text: String, token: String = "dlpipe") -> RobotsRules {
        RobotsRules(parsing: Array(text.utf8), for: token)
    }

    @Test func theLongestMatchWinsAndAllowWinsATie() {
        let robots = rules("""
            User-agent: *
            Disallow: /private
            Allow: /private/open
            Disallow: /tie
            Allow: /tie
            """)
        #expect(robots.allows(path: "/"))
        #expect(!robots.allows(path: "/private"))
        #expect(!robots.allows(path: "/private/x"))
        #expect(robots.allows(path: "/private/open/file"))
        #expect(robots.allows(path: "/tie/x"), "equal lengths: Allow wins")
        #expect(robots.allows(path: "/public"))
    }

    @Test func theRFCsExamplesOfWildcardsAndEndAnchors() {
        let robots = rules("""
            user-agent: dlpipe
            disallow: /*.gif$
            disallow: /fish*
            allow: /fish/salmon$
            disallow: /$
            """)
        #expect(!robots.allows(path: "/a/b.gif"))
        #expect(robots.allows(path: "/a/b.gif?x=1"), "$ anchors at the end, the query included")
        #expect(!robots.allows(path: "/fish"))
        #expect(!robots.allows(path: "/fishheads/yummy.html"))
        #expect(robots.allows(path: "/fish/salmon"))
        #expect(!robots.allows(path: "/fish/salmon/more"))
        #expect(!robots.allows(path: "/"))
        #expect(robots.allows(path: "/index.html"))
        #expect(robots.allows(path: "/Fish"), "paths are case-sensitive")
    }

    @Test func aGroupNamingDlpipeReplacesTheStarGroupsAndGroupsMerge() {
        let text = """
            # a comment
            User-agent: *
            Disallow: /

            User-agent: other
            User-agent: DLPipe/2.0 (+https://example.org)
            Disallow: /a  # trailing comment
            Crawl-delay: 2.5

            user-agent: dlpipe
            disallow: /b
            """
        let robots = rules(text)
        #expect(robots.allows(path: "/c"), "the * group is not dlpipe's")
        #expect(!robots.allows(path: "/a/1"))
        #expect(!robots.allows(path: "/b/1"), "two groups for one agent merge")
        #expect(robots.crawlDelay == 2.5)
        let stranger = rules(text, token: "stranger")
        #expect(!stranger.allows(path: "/c"), "an agent no group names takes the * group")
        #expect(stranger.crawlDelay == nil)
        let none = rules("User-agent: other\nDisallow: /\n")
        #expect(none.allows(path: "/x"), "no group applies: everything is allowed")
    }

    @Test func aUserAgentLineAfterARuleStartsANewGroup() {
        let robots = rules("""
            Disallow: /before-any-group
            User-agent: dlpipe
            Disallow: /one
            User-agent: other
            Disallow: /two
            """)
        #expect(robots.allows(path: "/before-any-group"))
        #expect(!robots.allows(path: "/one"))
        #expect(robots.allows(path: "/two"))
    }

    @Test func emptyValuesAndTheFileItself() {
        let robots = rules("User-agent: *\nDisallow:\n")
        #expect(robots.allows(path: "/anything"))
        #expect(RobotsRules.disallowAll.allows(path: "/robots.txt"), "/robots.txt is always allowed")
        #expect(!RobotsRules.disallowAll.allows(path: "/"))
        #expect(RobotsRules.allowAll.allows(path: "/x"))
    }

    @Test func percentEncodingIsNormalisedOnBothSides() {
        let robots = rules("""
            User-agent: *
            Disallow: /%7Euser
            Disallow: /a%2fb
            Disallow: /caf\u{e9}
            """)
        #expect(!robots.allows(path: "/~user/x"), "%7E is the unreserved ~")
        #expect(!robots.allows(path: "/%7euser"))
        #expect(!robots.allows(path: "/a%2Fb"), "escapes compare with upper-case hex")
        #expect(robots.allows(path: "/a/b"), "an encoded / is not a /")
        #expect(!robots.allows(path: "/caf%C3%A9"), "UTF-8 in the file matches its escapes")
    }

    @Test func pathsComeFromURLsWithTheirQuery() {
        #expect(RobotsRules.pathAndQuery(of: "http://h:8/a/b?x=1#frag") == "/a/b?x=1")
        #expect(RobotsRules.pathAndQuery(of: "http://h") == "/")
        #expect(RobotsRules.pathAndQuery(of: "http://h?q") == "/?q")
        let robots = rules("User-agent: *\nDisallow: /*?session=\n")
        #expect(!robots.allows(url: "http://h/p?session=1"))
        #expect(robots.allows(url: "http://h/p?page=1"))
    }

    @Test func crawlDelayTakesOnlyValidNumbersAndTheParseLimitHolds() {
        #expect(rules("User-agent: *\nCrawl-delay: soon\n").crawlDelay == nil)
        #expect(rules("User-agent: *\nCrawl-delay: -1\n").crawlDelay == nil)
        #expect(rules("User-agent: *\nCrawl-delay: 3\n").crawlDelay == 3)
        let filler = String(repeating: "# padding\n", count: RobotsRules.parseLimit / 10 + 1)
        let late = rules("User-agent: *\n" + filler + "Disallow: /\n")
        #expect(late.allows(path: "/x"), "a rule past 500 KiB is not read")
    }

    @Test func anyBytesParseAndMatchWithoutTrapping() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("*$/%:#\n\r \tAaZz09-_~?".utf8) + [0x00, 0xFF, 0xC3, 0x80]
        for _ in 0..<300 {
            let body = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            let robots = RobotsRules(parsing: Array("user-agent: *\nDisallow: ".utf8) + body)
            let path = String(decoding: (0..<Int.random(in: 0..<60, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            _ = robots.allows(path: "/" + path)
        }
        let stars = rules("User-agent: *\nDisallow: /" + String(repeating: "*a", count: 2000) + "b$\n")
        #expect(stars.allows(path: "/" + String(repeating: "a", count: 4000)), "many stars stay polynomial")
    }
}

/// Crawl-delay in the host pacing: a host's own delay when longer than the run's.
@Suite struct RobotsCrawlDelayPacingTests {
    @Test func aHostsOwnDelayIsUsedOnlyWhenLonger() {
        var pacing = HostPacing(delay: 0.5)
        pacing.setDelay(2, for: "slow:80")
        pacing.setDelay(0.1, for: "fast:80")
        #expect(pacing.reserve("slow:80", now: 10) == 0)
        #expect(pacing.reserve("slow:80", now: 10) == 2, "the Crawl-delay, longer than the run's")
        #expect(pacing.reserve("fast:80", now: 10) == 0)
        #expect(pacing.reserve("fast:80", now: 10) == 0.5, "a shorter one does not shorten the run's")
        var none = HostPacing(delay: 0)
        #expect(!none.isActive)
        none.setDelay(1, for: "a:80")
        #expect(none.isActive, "a host's own delay makes the pacing look at requests")
    }
}
