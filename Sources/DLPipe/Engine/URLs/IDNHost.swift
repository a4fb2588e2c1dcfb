internal import CIDN

/// Internationalised host names in their ASCII form (`bücher.example` is
/// `xn--bcher-kva.example`), converted here with libidn2's UTF-8 entry point
/// rather than left to libcurl: curl converts only when the process's locale
/// says UTF-8, and cron's is often `C`, where such a URL failed with "URL
/// using bad/illegal format". Converted during normalisation, the ASCII form
/// is the URL everywhere after: the state's key, deduplication, per-host
/// limits, `d.url`.
package enum IDNHost {
    /// `host` or `host:port` (ASCII letters already in lower case) with a
    /// non-ASCII host replaced by its ASCII form. Anything else comes back as
    /// it was: an ASCII host, an IPv6 literal, and a name libidn2 refuses
    /// (curl then reports it as the bad URL it is).
    static func ascii(_ hostPort: [UInt8]) -> [UInt8] {
        guard hostPort.contains(where: { $0 >= 0x80 }), hostPort.first != 0x5B else { return hostPort }
        let colon = hostPort.lastIndex(of: 0x3A) ?? hostPort.endIndex
        let host = hostPort[..<colon]
        guard !host.isEmpty, !host.contains(0) else { return hostPort }
        guard let converted = ascii(host: String(decoding: host, as: UTF8.self)) else { return hostPort }
        return Array(converted.utf8) + hostPort[colon...]
    }

    /// The ASCII form of one UTF-8 host name, or nil when libidn2 refuses it.
    package static func ascii(host: String) -> String? {
        var output: UnsafeMutablePointer<CChar>? = nil
        let rc = host.withCString { dl_idn_to_ascii($0, &output) }
        defer { if let output { dl_idn_free(output) } }
        guard rc == 0, let output else { return nil }
        // libidn2 keeps the case of ASCII labels; the normal form is lower case.
        return String(cString: output).lowercased()
    }
}
