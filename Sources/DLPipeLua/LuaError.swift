/// Why a Lua load or call failed.
public struct LuaError: Error, Sendable, CustomStringConvertible {
    /// The failure classes the engine maps to hook errors.
    public enum Kind: Sendable, Hashable {
        /// The chunk did not compile (or was a binary chunk).
        case syntax
        /// The script raised an error (including stack overflow and errors from Swift functions).
        case runtime
        /// The call ran past its wall-clock budget.
        case timeout
        /// The state hit its memory cap.
        case memory
    }

    /// The failure class.
    public var kind: Kind
    /// "file:line: message": Lua's own text for syntax/runtime errors, ours for timeout and memory.
    public var message: String
    /// The Lua traceback for runtime errors, when one could be taken.
    public var traceback: String?

    /// Makes an error; the runtime is the usual producer.
    public init(kind: Kind, message: String, traceback: String? = nil) {
        self.kind = kind
        self.message = message
        self.traceback = traceback
    }

    /// The message, then the traceback on the following lines when there is one.
    public var description: String {
        guard let traceback, !traceback.isEmpty else { return message }
        return message + "\n" + traceback
    }
}

/// Thrown by a Swift function registered with `LuaRuntime.register` to raise a Lua error.
public struct LuaCallError: Error, Sendable {
    /// The Lua error message (the caller's "chunk:line: " is prefixed, as luaL_error does).
    public var message: String
    /// Makes an error with this message.
    public init(_ message: String) { self.message = message }
}
