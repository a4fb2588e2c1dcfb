import Foundation

// Shared by the naming fuzz targets: the promises SafeName makes, checked on every output.
// A broken promise crashes on purpose, so libFuzzer saves the input as a crash artifact.

/// Stops the fuzzer with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Checks every SafeName guarantee for `name`, which `make` produced from `input`: the
/// clean-name rules every test shares (Tests/TestSupport/CleanName.swift), determinism,
/// SafeName's own list and idempotence.
///
/// Bytes are compared, not Strings: Swift's `==` ignores the normalisation we must see.
func checkSafeName(_ name: String?, from input: String, make: () -> String?) {
    let again = make()
    require(again.map { Array($0.utf8) } == name.map { Array($0.utf8) },
            "not deterministic: \(input.debugDescription) gave \(name.debugDescription) then \(again.debugDescription)")
    guard let name else { return }
    let context = "\(name.debugDescription) from \(input.debugDescription)"
    if let problem = CleanName.problem(name) { require(false, "\(problem), from \(input.debugDescription)") }
    require(name.utf8.count <= SafeName.maxBytes, "\(name.utf8.count) bytes: \(context)")
    for scalar in name.unicodeScalars {
        require(!SafeName.isRemoved(scalar), "removed character kept in \(context)")
    }
    let twice = SafeName.sanitize(name)
    require(twice.map { Array($0.utf8) } == Array(name.utf8), "not idempotent: \(context) then \(twice.debugDescription)")
}
