/// Reading the response headers the engine acts on.
enum ContentRange {
    /// The first byte of `Content-Range: bytes START-END/TOTAL`.
    static func start(_ value: String?) -> Int64? {
        guard let value, let range = value.split(separator: " ").last,
            let dash = range.firstIndex(of: "-")
        else { return nil }
        return Int64(range[..<dash])
    }
}

enum Validator {
    /// The validator for `If-Range`: a strong ETag, else Last-Modified (RFC 9110
    /// 13.1.5 forbids weak ETags there); nil when the response has neither.
    static func forIfRange(etag: String?, lastModified: String?) -> String? {
        if let etag, !etag.hasPrefix("W/"), !etag.isEmpty { return etag }
        return lastModified
    }
}

enum MediaType {
    /// `text/html; charset=utf-8` -> `text/html`; "" when absent.
    static func essence(_ value: String?) -> String {
        guard let value else { return "" }
        let head = value.split(separator: ";", maxSplits: 1).first ?? ""
        return head.trimmingWhitespace().lowercased()
    }
}
