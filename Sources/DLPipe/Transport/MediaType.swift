/// The media type of a `Content-Type` value, without its parameters.
enum MediaType {
    /// `text/html; charset=utf-8` -> `text/html`; "" when absent.
    static func essence(_ value: String?) -> String {
        guard let value else { return "" }
        let head = value.split(separator: ";", maxSplits: 1).first ?? ""
        return head.trimmingWhitespace().lowercased()
    }
}

extension Substring {
    /// Without the spaces and tabs around it (HTTP's optional white space).
    func trimmingWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
