/// A small command-line reader: flags with values (`-d DIR`, `--dir DIR`,
/// `--dir=DIR`), switches, and positional arguments, in any order.
struct Arguments {
    private var items: [String]
    /// Where each item stands in `raw` (items are removed as they are taken).
    private var positions: [Int]
    /// The index in the process's argv of `raw[0]`, when `raw` is argv's tail
    /// (it is for every command: the command's name is removed from the front).
    private let argvBase: Int?
    let command: String

    init(_ items: [String], command: String) {
        self.items = items
        self.positions = Array(items.indices)
        self.command = command
        let argv = CommandLine.arguments
        argvBase = argv.count >= items.count && Array(argv.suffix(items.count)) == items ? argv.count - items.count : nil
    }

    /// Takes every value of an option (the last one wins for single values).
    mutating func values(_ names: String...) throws -> [String] {
        try take(names).map(\.value)
    }

    /// Takes every value of an option that holds a secret, and blanks the
    /// bytes `secret` picks out of each value in the process's own arguments,
    /// which `ps` and /proc/PID/cmdline show to every user for the whole run
    /// (curl does so for -u). Only the copy taken here keeps them.
    mutating func secretValues(_ names: String..., secret: (String) -> Range<Int>?) throws -> [String] {
        let taken = try take(names)
        for item in taken {
            guard let argvBase, let range = secret(item.value) else { continue }
            ArgvSecret.blank(index: argvBase + item.position, expected: item.argument, bytes: range.lowerBound + item.prefix..<range.upperBound + item.prefix)
        }
        return taken.map(\.value)
    }

    /// The values of `names`, each with the argument it came from, that
    /// argument's position in `raw`, and how many bytes precede the value in
    /// it (`--name=` of the one-argument form).
    private mutating func take(_ names: [String]) throws -> [(value: String, argument: String, position: Int, prefix: Int)] {
        var found: [(value: String, argument: String, position: Int, prefix: Int)] = []
        var index = 0
        while index < items.count {
            let item = items[index]
            if item == "--" { break }
            if names.contains(item) {
                guard index + 1 < items.count else {
                    throw UsageError("option \(item) needs a value", command: command)
                }
                found.append((items[index + 1], items[index + 1], positions[index + 1], 0))
                items.removeSubrange(index...index + 1)
                positions.removeSubrange(index...index + 1)
                continue
            }
            if let eq = item.firstIndex(of: "="), item.hasPrefix("--"),
                names.contains(String(item[..<eq]))
            {
                let prefix = item.utf8.distance(from: item.startIndex, to: eq) + 1
                found.append((String(item[item.index(after: eq)...]), item, positions[index], prefix))
                items.remove(at: index)
                positions.remove(at: index)
                continue
            }
            index += 1
        }
        return found
    }

    mutating func value(_ names: String...) throws -> String? {
        var found: [String] = []
        for name in names { found += try values(name) }
        return found.last
    }

    /// Takes a switch; true when present.
    mutating func flag(_ names: String...) -> Bool {
        var present = false
        var index = 0
        while index < items.count {
            if names.contains(items[index]) {
                present = true
                items.remove(at: index)
                positions.remove(at: index)
            } else {
                index += 1
            }
        }
        return present
    }

    /// An integer option within `range`.
    mutating func int(_ names: String..., in range: ClosedRange<Int>) throws -> Int? {
        var found: [String] = []
        for name in names { found += try values(name) }
        guard let text = found.last else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(names[0]) wants a whole number from \(range.lowerBound) to \(range.upperBound), not \(text.debugDescription)", command: command)
        }
        return number
    }

    /// What is left: positional arguments. Unknown options are an error.
    mutating func positionals() throws -> [String] {
        var result: [String] = []
        var afterDashes = false
        for item in items {
            if !afterDashes && item == "--" { afterDashes = true; continue }
            if !afterDashes && item.hasPrefix("-") && item != "-" {
                if let hint = Self.queueOptionHint(item, command: command) { throw UsageError(hint, command: command) }
                throw UsageError("unknown option \(item.debugDescription)", command: command)
            }
            result.append(item)
        }
        items = []
        positions = []
        return result
    }

    /// The options of a shared queue, which only `run` (and `status`, to
    /// watch one) takes.
    static let queueOptions = ["--queue", "--name", "--lease", "--settle", "--follow", "--no-queue"]

    /// A queue option given to another command: what to do instead (a trial
    /// read `unknown option "--queue"` from `dlpipe get` and looked for a typo).
    static func queueOptionHint(_ item: String, command: String) -> String? {
        let name = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? item
        guard queueOptions.contains(name) else { return nil }
        return "\(name) is an option of `dlpipe run`: a shared queue's workers run a job file "
            + "(dlpipe run job.lua --queue URL --name NAME; docs/scale-out.md)"
            + (command == "get" ? "; `dlpipe get` downloads alone, without a queue" : "")
    }
}

