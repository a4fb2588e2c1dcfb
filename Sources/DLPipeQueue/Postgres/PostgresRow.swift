import DLPipe
import Foundation

/// The rows a statement returned, copied out of libpq's result (which is
/// freed at once), and how many rows it changed.
package struct PostgresResult: Sendable {
    package let columns: PostgresColumns
    package let rows: [PostgresRow]
    /// Rows inserted, updated or deleted (`PQcmdTuples`), 0 for others.
    package let affected: Int
}

/// Column names of one result, shared by its rows.
package final class PostgresColumns: Sendable {
    package let names: [String]
    private let indexes: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var indexes: [String: Int] = [:]
        for (index, name) in names.enumerated() where indexes[name] == nil { indexes[name] = index }
        self.indexes = indexes
    }

    func has(_ name: String) -> Bool { indexes[name] != nil }

    func index(_ name: String) throws(PostgresError) -> Int {
        guard let index = indexes[name] else {
            throw PostgresError(.unexpected, "the result has no column \(name) (it has \(names.joined(separator: ", ")))")
        }
        return index
    }
}

/// One row, read by column name. Values arrive in text format and are
/// parsed here: a NULL or a value of another type where one was expected is
/// an `unexpected` error naming the column, never a silent zero.
package struct PostgresRow: Sendable {
    let columns: PostgresColumns
    let values: [String?]

    /// The column's text, nil for NULL.
    package func optionalText(_ column: String) throws(PostgresError) -> String? {
        values[try columns.index(column)]
    }

    package func text(_ column: String) throws(PostgresError) -> String {
        guard let value = try optionalText(column) else { throw null(column) }
        return value
    }

    package func optionalInt(_ column: String) throws(PostgresError) -> Int64? {
        guard let value = try optionalText(column) else { return nil }
        guard let number = Int64(value) else { throw mistyped(column, value, "an integer") }
        return number
    }

    package func int(_ column: String) throws(PostgresError) -> Int64 {
        guard let value = try optionalInt(column) else { throw null(column) }
        return value
    }

    package func optionalDouble(_ column: String) throws(PostgresError) -> Double? {
        guard let value = try optionalText(column) else { return nil }
        guard let number = Double(value) else { throw mistyped(column, value, "a number") }
        return number
    }

    package func double(_ column: String) throws(PostgresError) -> Double {
        guard let value = try optionalDouble(column) else { throw null(column) }
        return value
    }

    package func bool(_ column: String) throws(PostgresError) -> Bool {
        switch try text(column) {
        case "t": return true
        case "f": return false
        case let other: throw mistyped(column, other, "a boolean")
        }
    }

    /// A bytea column (hex output, PostgreSQL's default since 9.0).
    package func bytes(_ column: String) throws(PostgresError) -> [UInt8] {
        let value = try text(column)
        let digits = Array(value.utf8)
        guard digits.count % 2 == 0, digits.starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "x")]) else {
            throw mistyped(column, value, "bytea in hex")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2 - 1)
        var index = 2
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else {
                throw mistyped(column, value, "bytea in hex")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private func null(_ column: String) -> PostgresError {
        PostgresError(.unexpected, "column \(column) is NULL")
    }

    private func mistyped(_ column: String, _ value: String, _ wanted: String) -> PostgresError {
        PostgresError(.unexpected, "column \(column) holds \(value.prefix(40).debugDescription), not \(wanted)")
    }
}
