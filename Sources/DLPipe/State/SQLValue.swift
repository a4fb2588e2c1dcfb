/// A value bound to a statement.
enum SQLValue {
    case null
    case int(Int64)
    case real(Double)
    case text(String)

    init(_ text: String?) { self = text.map { .text($0) } ?? .null }
    init(_ number: Int64?) { self = number.map { .int($0) } ?? .null }
}
