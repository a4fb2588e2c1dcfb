/// Resources that are compressed themselves (`--compressed`): their
/// server's bytes are stored as they are, never decoded, which is where
/// `curl --compressed` turns a `.tar.gz` into a `.tar` under the old name.
enum CompressedResource {
    /// Name endings of compressed files and archives.
    static let extensions = [".gz", ".tgz", ".zip", ".bz2", ".xz", ".zst", ".z", ".7z", ".lz", ".lzma", ".br"]

    /// Media types of compressed files and archives (`MediaType.essence` form).
    static let mediaTypes: Set<String> = [
        "application/gzip", "application/x-gzip", "application/zip", "application/x-bzip2", "application/x-xz",
        "application/zstd", "application/x-zstd", "application/x-7z-compressed", "application/x-compress",
        "application/x-tar", "application/x-gtar", "application/x-lzma", "application/x-brotli",
    ]

    /// True when the URL's path names a compressed file.
    static func named(_ url: String) -> Bool {
        let path = url.prefix { $0 != "?" && $0 != "#" }.lowercased()
        return extensions.contains { path.hasSuffix($0) }
    }

    /// True when a response's media type is a compressed or archive type.
    static func typed(_ type: String) -> Bool { mediaTypes.contains(type) }

    /// True when a `Content-Encoding` value says the bytes on the wire are encoded.
    static func encoded(_ contentEncoding: String?) -> Bool {
        guard let value = contentEncoding?.lowercased() else { return false }
        return value.split(separator: ",").contains { $0.trimmingWhitespace() != "identity" && !$0.trimmingWhitespace().isEmpty }
    }
}
