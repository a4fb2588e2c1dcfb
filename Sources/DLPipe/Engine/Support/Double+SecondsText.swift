import Foundation

extension Double {
    /// Seconds for messages: "2", "0.5", "1.25". (Named apart from Foundation's
    /// `formatted()`, which it shadowed as a property of the same name.)
    var secondsText: String { String(format: "%g", self) }
}
