import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe

/// Who holds a run lock, read from the kernel's lock table without taking it.
@Suite struct RunLockHolderTests {
    @Test func theFlockOnTheInodeNamesItsHolder() {
        let table = """
            1: POSIX  ADVISORY  WRITE 5462 fe:00:5366815 1073741824 1073742335
            2: FLOCK  ADVISORY  WRITE 9159 fe:00:16221969 0 EOF
            2: -> FLOCK  ADVISORY  WRITE 9300 fe:00:16221969 0 EOF
            3: FLOCK  ADVISORY  WRITE 7000 00:2a:42 0 EOF
            """
        #expect(RunLock.holder(inode: 16_221_969, locks: table) == 9159, "the holder, not the waiter")
        #expect(RunLock.holder(inode: 42, locks: table) == 7000)
        #expect(RunLock.holder(inode: 5_366_815, locks: table) == nil, "a POSIX lock is not the run lock")
        #expect(RunLock.holder(inode: 1, locks: table) == nil)
    }

    @Test func aHeldLockIsSeenAndAReleasedOneIsNot() throws {
        let path = try TempDir.make("lock") + "/lock"
        do {
            let lock = try RunLock(path: path, wait: false)
            #expect(RunLock.holder(path: lock.path) == getpid())
            // Without /proc/locks, flock answers: another open file description
            // is refused a shared lock while the run holds its exclusive one.
            #expect(RunLock.probe(path: lock.path) == getpid())
            #expect(RunLock.holder(path: lock.path) == getpid(), "the probe took nothing from the holder")
        }
        #expect(RunLock.holder(path: path) == nil, "released with its descriptor")
        #expect(RunLock.probe(path: path) == nil, "flock grants a probe once nobody holds it")
    }

    /// A process spawned by another thread holds a copy of every descriptor
    /// from its fork to its exec; a lock released in that instant must not
    /// stay held through the copy (the library's host may spawn at any time).
    @Test func aLockReleasedWhileAnotherThreadSpawnsIsReleased() throws {
        let folder = try TempDir.make("lock-spawn")
        let spawning = Atomic<Bool>(true)
        let spawner = Thread {
            while spawning.load(ordering: .relaxed) { _ = try? ToolRun.run("/bin/true", []) }
        }
        spawner.start()
        defer { spawning.store(false, ordering: .relaxed) }
        var stillHeld = 0
        for round in 0..<300 {
            let path = folder + "/lock\(round)"
            do { _ = try RunLock(path: path, wait: false) }
            if RunLock.holder(path: path) != nil { stillHeld += 1 }
        }
        #expect(stillHeld == 0, "locks still held after their release: \(stillHeld) of 300")
    }
}
