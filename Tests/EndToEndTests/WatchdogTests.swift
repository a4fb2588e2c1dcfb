import Foundation
import Testing

/// The suite cannot hang on a child: the watchdog every Subprocess has kills it.
@Suite struct WatchdogTests {
    @Test func aHungChildIsKilledAtItsDeadlineAndSaysSo() throws {
        let started = Date()
        let child = try Subprocess("/bin/sleep", ["30"], timeout: 0.5)
        let (status, _, stderr) = child.finish()
        #expect(status == 128 + SIGKILL)
        #expect(stderr.contains("test watchdog: killed after 0.5 s"))
        #expect(Date().timeIntervalSince(started) < 20, "the watchdog fired long before sleep would have ended")
    }

    @Test func aChildThatEndsInTimeIsLeftAlone() throws {
        let child = try Subprocess("/bin/sh", ["-c", "echo ok"], timeout: 30)
        let (status, stdout, stderr) = child.finish()
        #expect(status == 0 && stdout == "ok\n")
        #expect(!stderr.contains("watchdog"))
        let killed = child.timedOut.load(ordering: .relaxed)
        #expect(!killed)
    }
}
