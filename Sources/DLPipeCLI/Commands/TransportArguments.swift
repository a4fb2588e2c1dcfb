import DLPipe
import Foundation

/// The options that map onto libcurl's (proxy, TLS, host mapping,
/// credentials, redirects), in curl's spelling, checked before any request.
enum TransportArguments {
    /// Takes them out of `args` into `options`.
    static func parse(_ args: inout Arguments, into options: inout RunOptions) throws {
        let command = args.command
        var transport = TransportOptions()
        transport.proxy = try args.secretValues("-x", "--proxy", secret: ArgvSecret.userinfo).last
        if let proxy = transport.proxy, !proxy.isEmpty, ProxyURL.hasBadScheme(proxy) {
            throw UsageError("--proxy wants a URL like http://host:port, not \(RedactedURL.text(proxy).debugDescription)", command: command)
        }
        transport.noProxy = try args.value("--noproxy")
        transport.insecure = args.flag("-k", "--insecure")
        for entry in try args.values("--resolve") {
            let fields = HostFields.split(entry)
            guard fields.count >= 3, !fields[0].isEmpty, HostFields.isPort(fields[1]), !fields[2...].joined().isEmpty else {
                throw UsageError("--resolve wants HOST:PORT:ADDRESS (e.g. example.com:443:127.0.0.1), not \(entry.debugDescription)", command: command)
            }
            transport.resolve.append(HostFields.asciiHost(entry, first: fields[0]))
        }
        for entry in try args.values("--connect-to") {
            let fields = HostFields.split(entry)
            guard fields.count == 4, fields[1].isEmpty || HostFields.isPort(fields[1]),
                fields[3].isEmpty || HostFields.isPort(fields[3])
            else {
                throw UsageError("--connect-to wants HOST1:PORT1:HOST2:PORT2 (e.g. example.com:443:127.0.0.1:8443), not \(entry.debugDescription)", command: command)
            }
            transport.connectTo.append(HostFields.asciiHost(entry, first: fields[0]))
        }
        options.maxRedirects = try args.int("--max-redirs", in: 0...1000)
        transport.allowInsecureRedirects = args.flag("--allow-insecure-redirects")
        if let user = try args.secretValues("-u", "--user", secret: ArgvSecret.whole).last {
            // curl would prompt for the password; a batch tool cannot.
            guard let colon = user.firstIndex(of: ":"), colon != user.startIndex else {
                throw UsageError("-u wants USER:PASSWORD (dlpipe does not prompt; --netrc-file keeps the password off the command line)", command: command)
            }
            transport.credentials = user
        }
        if args.flag("--netrc") { transport.netrc = .home }
        if let file = try args.value("--netrc-file") {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw UsageError("--netrc-file: cannot read \(file.debugDescription)", command: command)
            }
            transport.netrc = .file(file)
        }
        let digest = args.flag("--digest")
        let any = args.flag("--anyauth")
        if digest && any { throw UsageError("--digest and --anyauth: give one", command: command) }
        transport.authentication = digest ? .digest : any ? .any : .basic
        options.transport = transport
    }

    /// The CA bundle curl would use when none is given: `CURL_CA_BUNDLE`, else
    /// `SSL_CERT_FILE` (and `SSL_CERT_DIR` as a directory), as curl's tool reads them.
    static func caFromEnvironment(_ environment: [String: String]) -> (file: String?, directory: String?) {
        if let bundle = environment["CURL_CA_BUNDLE"], !bundle.isEmpty { return (bundle, nil) }
        let file = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let directory = environment["SSL_CERT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        return (file, directory)
    }
}

/// `HOST:PORT:...` fields of --resolve and --connect-to, where a host may be
/// an IPv6 address in brackets (`[::1]:443:...`).
enum HostFields {
    static func split(_ entry: String) -> [String] {
        var fields: [String] = []
        var current = ""
        var inBrackets = false
        for character in entry {
            if character == "[" { inBrackets = true }
            if character == "]" { inBrackets = false }
            if character == ":" && !inBrackets && fields.count < 3 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }

    static func isPort(_ text: String) -> Bool { Int(text).map { (1...65535).contains($0) } ?? false }

    /// `entry` with its first field, an IDN host, in the ASCII form the URLs
    /// take (`IDNHost`), so that `--resolve bücher.example:80:ADDR` names the
    /// host a URL of `bücher.example` asks for; anything else as it is.
    static func asciiHost(_ entry: String, first host: String) -> String {
        guard host.utf8.contains(where: { $0 >= 0x80 }), let ascii = IDNHost.ascii(host: host) else { return entry }
        return ascii + entry.dropFirst(host.count)
    }
}

enum ProxyURL {
    /// Whether a proxy URL names a scheme curl has no proxy for.
    static func hasBadScheme(_ proxy: String) -> Bool {
        guard let range = proxy.range(of: "://") else { return false }  // "host:port" is http, as in curl
        let scheme = proxy[..<range.lowerBound].lowercased()
        return !["http", "https", "socks4", "socks4a", "socks5", "socks5h"].contains(scheme)
    }
}
