/// `Content-Range` of a 206 (RFC 9110 14.4).
enum ContentRange {
    /// The first byte of `Content-Range: bytes START-END/TOTAL`.
    static func start(_ value: String?) -> Int64? {
        guard let value, let range = value.split(separator: " ").last,
            let dash = range.firstIndex(of: "-")
        else { return nil }
        return Int64(range[..<dash])
    }
}
