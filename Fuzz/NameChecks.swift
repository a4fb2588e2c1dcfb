import Foundation

// Shared by the naming fuzz targets: the promises SafeName makes, checked on every output.
// A broken promise crashes on purpose, so libFuzzer saves the input as a crash artifact.

/// Stops the fuzzer with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Format characters that render as nothing (Cf and Default_Ignorable): bidi controls,
/// zero-width characters, the BOM, invisible operators, tags. SafeName promises none survive.
func isInvisibleFormat(_ scalar: Unicode.Scalar) -> Bool {
    scalar.properties.isBidiControl
        || (scalar.properties.generalCategory == .format && scalar.properties.isDefaultIgnorableCodePoint)
}

/// Checks every SafeName guarantee for `name`, which `make` produced from `input`.
///
/// Bytes are compared, not Strings: Swift's `==` ignores the normalisation we must see.
func checkSafeName(_ name: String?, from input: String, make: () -> String?) {
    let again = make()
    require(again.map { Array($0.utf8) } == name.map { Array($0.utf8) },
            "not deterministic: \(input.debugDescription) gave \(name.debugDescription) then \(again.debugDescription)")
    guard let name else { return }
    let context = "\(name.debugDescription) from \(input.debugDescription)"
    require(!name.isEmpty, "empty name from \(input.debugDescription)")
    require(name.utf8.count <= SafeName.maxBytes && name.utf8.count <= 255, "\(name.utf8.count) bytes: \(context)")
    for scalar in name.unicodeScalars {
        require(scalar != "/" && scalar != "\\", "separator in \(context)")
        require(scalar.properties.generalCategory != .control, "control character in \(context)")
        require(!SafeName.isRemoved(scalar), "removed character kept in \(context)")
        require(!isInvisibleFormat(scalar), "invisible format character U+\(String(scalar.value, radix: 16)) in \(context)")
    }
    require(name != "." && name != "..", "dot name \(context)")
    require(!name.hasPrefix("."), "leading dot in \(context)")
    let nfc = name.precomposedStringWithCanonicalMapping
    require(Array(nfc.utf8) == Array(name.utf8), "not NFC: \(context)")
    let twice = SafeName.sanitize(name)
    require(twice.map { Array($0.utf8) } == Array(name.utf8), "not idempotent: \(context) then \(twice.debugDescription)")
}
