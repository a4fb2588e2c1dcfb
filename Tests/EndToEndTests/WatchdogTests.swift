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
        // Killed at its deadline, not before it (the status and the message say
        // the watchdog did it, not the end of `sleep`).
        #expect(Date().timeIntervalSince(started) >= 0.45, "the watchdog waited for the deadline")
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
