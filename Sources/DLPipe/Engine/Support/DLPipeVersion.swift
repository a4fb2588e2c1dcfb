/// The version of the engine and the tool.
package enum DLPipeVersion {
    /// Semantic version string.
    public static let string = "0.1.0"
}

extension DLPipeVersion {
    /// The C libraries underneath, as they name themselves.
    public static var libraries: String { CurlGlobal.version }
}
