import Testing

@testable import DLPipe

/// Which proxy a URL goes through, by curl's rules (the engine decides it
/// itself so that failures can blame the proxy; see ProxyChoice).
struct ProxyChoiceTests {
    private func choice(_ url: String, proxy: String? = nil, noProxy: String? = nil, _ environment: [String: String] = [:]) -> String? {
        var options = TransportOptions()
        options.proxy = proxy
        options.noProxy = noProxy
        return ProxyChoice.proxy(for: url, options: options, environment: environment)
    }

    @Test func theEnvironmentIsReadAsCurlReadsIt() {
        #expect(choice("http://h/x", ["http_proxy": "p1"]) == "p1")
        #expect(choice("http://h/x", ["HTTP_PROXY": "p1"]) == nil, "upper-case HTTP_PROXY is ignored, as in curl")
        #expect(choice("https://h/x", ["HTTPS_PROXY": "p2"]) == "p2")
        #expect(choice("https://h/x", ["https_proxy": "p2", "HTTPS_PROXY": "p3"]) == "p2")
        #expect(choice("https://h/x", ["http_proxy": "p1"]) == nil, "http_proxy is for http only")
        #expect(choice("https://h/x", ["ALL_PROXY": "p4"]) == "p4")
        #expect(choice("http://h/x", ["all_proxy": "p5", "http_proxy": "p1"]) == "p1")
        #expect(choice("http://h/x") == nil)
    }

    @Test func theOptionWinsAndEmptyMeansNone() {
        #expect(choice("http://h/x", proxy: "opt", ["http_proxy": "env"]) == "opt")
        #expect(choice("http://h/x", proxy: "", ["http_proxy": "env"]) == nil)
    }

    @Test func noProxyListsMatchAsInCurl() {
        #expect(choice("http://h.example.com/x", proxy: "p", noProxy: "example.com") == nil, "a subdomain")
        #expect(choice("http://example.com:8080/x", proxy: "p", noProxy: ".example.com") == nil, "a leading dot, and any port")
        #expect(choice("http://notexample.com/x", proxy: "p", noProxy: "example.com") == "p", "not a suffix of a label")
        #expect(choice("http://anything/x", proxy: "p", noProxy: "*") == nil)
        #expect(choice("http://10.1.2.3/x", proxy: "p", noProxy: "localhost, 10.0.0.0/8") == nil)
        #expect(choice("http://11.1.2.3/x", proxy: "p", noProxy: "10.0.0.0/8") == "p")
        #expect(choice("http://[::1]:80/x", proxy: "p", noProxy: "::1") == nil)
        #expect(choice("http://H.Example.COM/x", proxy: "p", noProxy: "example.com") == nil, "case does not matter")
        #expect(choice("http://h/x", proxy: "p", ["no_proxy": "h"]) == nil, "the environment's no_proxy applies to -x too")
        #expect(choice("http://h/x", proxy: "p", noProxy: "", ["no_proxy": "h"]) == "p", "--noproxy replaces no_proxy")
    }
}
