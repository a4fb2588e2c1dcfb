internal import CCrypto
#if canImport(Glibc)
import Glibc
#endif

/// An incremental SHA-256 through OpenSSL's EVP interface (which uses the CPU's
/// SHA extensions when present). Owned by one transfer on one thread.
package final class SHA256Hasher {
    private let context: OpaquePointer

    package init() {
        _ = OpenSSLProcess.prepared
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        self.context = context
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest as lower-case hex; the hasher is spent afterwards.
    package func finalHex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return hex(digest.prefix(Int(length)))
    }

    /// The hex SHA-256 of a whole file, read in large blocks; nil when unreadable.
    static func hexDigest(ofFile path: String) -> String? {
        let hasher = SHA256Hasher()
        guard hasher.feed(file: path, upTo: .max) != nil else { return nil }
        return hasher.finalHex()
    }

    /// Feeds the first `limit` bytes of a file; returns the count fed, nil on error.
    @discardableResult
    func feed(file path: String, upTo limit: Int64) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return feed(descriptor: fd, upTo: limit)
    }

    /// Feeds the first `limit` bytes read from `fd` (from where it stands);
    /// returns the count fed, nil on error.
    @discardableResult
    func feed(descriptor fd: Int32, upTo limit: Int64) -> Int64? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var total: Int64 = 0
        while total < limit {
            let want = Int(min(Int64(buffer.count), limit - total))
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return nil }
            if got == 0 { break }
            buffer.withUnsafeBytes { update(UnsafeRawBufferPointer(rebasing: $0.prefix(got))) }
            total += Int64(got)
        }
        return total
    }
}

private func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xf)])
    }
    return String(decoding: out, as: UTF8.self)
}
