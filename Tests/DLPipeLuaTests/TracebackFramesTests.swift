import Testing

@testable import DLPipeLua

/// What a handler's traceback keeps: the script's frames only.
@Suite struct TracebackFramesTests {
    /// A verdict error raised in the prelude: only `error`'s C frame and an
    /// elided tail call are left, which say nothing the message does not.
    @Test func onlyCFramesAndTailCallsLeaveNoTraceback() {
        let traceback = "stack traceback:\n\t[C]: in function 'error'\n\tdlpipe/prelude.lua:633: in function <dlpipe/prelude.lua:620>\n\t(...tail calls...)\n\t[C]: in ?"
        #expect(LuaRuntime.scriptFrames(traceback) == nil)
    }

    /// A script's own error(): its line is the next frame; error's is left out.
    @Test func aScriptsFramesAreKeptWithoutErrorsOwn() {
        let traceback = "stack traceback:\n\t[C]: in function 'error'\n\tjob.lua:8: in function 'f'\n\tjob.lua:9: in main chunk\n\t[C]: in ?"
        #expect(LuaRuntime.scriptFrames(traceback) == "stack traceback:\n\tjob.lua:8: in function 'f'\n\tjob.lua:9: in main chunk")
    }
}
