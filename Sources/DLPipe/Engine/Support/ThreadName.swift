internal import CPosix

/// Names for the threads dlpipe starts, so that gdb, perf, top and
/// /proc/PID/task/*/comm show which is which. Foundation's `Thread.name` does
/// not reach the kernel on Linux, and a GCD queue's label names no thread:
/// the threads name themselves. Linux keeps 15 bytes of a name.
package enum ThreadName {
    /// Names the calling thread: at the start of a thread of dlpipe's own.
    package static func set(_ name: String) {
        precondition(name.utf8.count <= 15, "a thread name longer than Linux keeps: \(name)")
        _ = dl_name_this_thread_as(name, 1)
    }

    /// Names the GCD pool thread that runs a block of the queue `name`, at the
    /// start of each block: pool threads serve every queue, so the name says
    /// which queue's work the thread did last. A system call only when that
    /// changes (`dl_name_this_thread_as`). Not for `sync` blocks, which
    /// run on the caller's thread; and a thread named by `set` keeps its name
    /// whatever runs on it.
    package static func enter(_ name: String) {
        _ = dl_name_this_thread_as(name, 0)
    }
}
