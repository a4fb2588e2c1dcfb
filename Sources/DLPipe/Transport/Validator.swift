/// The validator a resume sends back in `If-Range`.
enum Validator {
    /// A strong ETag, else Last-Modified (RFC 9110 13.1.5 forbids weak ETags
    /// there); nil when the response has neither.
    static func forIfRange(etag: String?, lastModified: String?) -> String? {
        if let etag, !etag.hasPrefix("W/"), !etag.isEmpty { return etag }
        return lastModified
    }
}
