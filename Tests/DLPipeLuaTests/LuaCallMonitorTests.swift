import Foundation
import Synchronization
import Testing

@testable import DLPipeLua

/// The monitor another thread reads while the Lua thread sits in a Swift function: the call
/// is overdue once past its deadline and the grace, and names the script's line (read off the
/// Lua stack, prelude-like `=dlpipe/` frames skipped) and the function it is stuck in.
@Suite struct LuaCallMonitorTests {
    @Test func aCallStuckInSwiftIsOverdueAndNamesItsLineAndFunction() throws {
        let release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let box = Mutex<(LuaCallMonitor?, [LuaValue])>((nil, []))
        let thread = Thread {
            let rt = LuaRuntime()
            box.withLock { $0.0 = rt.monitor }
            rt.register("dl.block") { _ in
                entered.signal()
                release.wait()
                return ["back"]
            }
            // A wrapper in a "=dlpipe/" chunk, as the prelude's are: its frame is skipped.
            _ = try? rt.run("function wrapped() local r = dl.block() return r end", chunkName: "=dlpipe/wrapper.lua")
            let results = (try? rt.call(rt.load(Array("local x = 1\nlocal r = wrapped()\nreturn r\n".utf8), chunkName: "probe.lua"), [], budget: 0.1)) ?? []
            box.withLock { $0.1 = results }
            finished.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
        #expect(entered.wait(timeout: .now() + 10) == .success)
        let monitor = try #require(box.withLock { $0.0 })
        #expect(monitor.overdue(grace: 5) == nil, "not yet past the grace")
        Thread.sleep(forTimeInterval: 0.3)
        let overdue = try #require(monitor.overdue(grace: 0.1))
        #expect(overdue.position == "probe.lua:2")
        #expect(overdue.function == "dl.block")
        #expect(overdue.budget == 0.1)
        #expect(monitor.isRunning(overdue.sequence))
        release.signal()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        // Back in Lua, the count hook stops it: the budget was long spent.
        #expect(box.withLock { $0.1 }.isEmpty)
        #expect(!monitor.isRunning(overdue.sequence))
        #expect(monitor.overdue(grace: 0) == nil, "no call runs")
    }
}
