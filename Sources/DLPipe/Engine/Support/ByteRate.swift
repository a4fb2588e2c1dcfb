/// Reads `--rate` values: 500000, 500K, 2M, 1G, with an optional `/s`.
package enum ByteRate {
    /// Bytes per second, or nil when the text is not a positive rate.
    public static func parse(_ text: String) -> Int? {
        var body = text.lowercased()
        if body.hasSuffix("/s") { body.removeLast(2) }
        if body.hasSuffix("b") { body.removeLast() }
        var multiplier = 1.0
        switch body.last {
        case "k": multiplier = 1024
        case "m": multiplier = 1024 * 1024
        case "g": multiplier = 1024 * 1024 * 1024
        default: break
        }
        if multiplier > 1 { body.removeLast() }
        guard let number = Double(body), number > 0, number.isFinite else { return nil }
        let value = number * multiplier
        return value >= 1 && value < Double(Int.max) ? Int(value) : nil
    }
}
