// Linux calls that Glibc's Swift overlay does not expose.
#ifndef DL_POSIX_H
#define DL_POSIX_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // O_TMPFILE, AT_EMPTY_PATH
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

/// rename(2) that fails with EEXIST instead of replacing the target
/// (renameat2 with RENAME_NOREPLACE, through syscall for older headers).
static inline int dl_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
}
/// The same, both names relative to directory descriptors.
static inline int dl_renameat_noreplace(int fromDir, const char *from, int toDir, const char *to) {
    return (int)syscall(SYS_renameat2, fromDir, from, toDir, to, 1 /* RENAME_NOREPLACE */);
}
/// Names the calling thread for ps, top and debuggers (pthread_setname_np, a
/// GNU extension), remembering per thread what it did:
/// - `for_life` (a thread of dlpipe's own): the name stays; later calls on
///   this thread change nothing, so a block that GCD runs on its caller's
///   thread (`sync`) never renames the engine thread;
/// - otherwise (a block on a GCD queue, whose pool threads run the blocks of
///   every queue): a system call only when the name differs from the one last
///   set here, so a thread that keeps running one queue's blocks costs a
///   string compare. Linux keeps 15 bytes of a name.
static inline int dl_name_this_thread_as(const char *name, int for_life) {
    static __thread char current[16];
    static __thread int named_for_life;
    if (named_for_life) return 0;
    if (for_life) named_for_life = 1;
    else if (strncmp(current, name, sizeof current - 1) == 0) return 0;
    strncpy(current, name, sizeof current - 1);
    current[sizeof current - 1] = 0;
    return pthread_setname_np(pthread_self(), current);
}
/// syncfs(2): flushes every dirty file of the file system holding `fd`, in one call.
static inline int dl_syncfs(int fd) {
    return (int)syscall(SYS_syncfs, fd);
}
/// Starts write-back of `length` bytes of `fd` from `offset` and returns without
/// waiting for it (sync_file_range with SYNC_FILE_RANGE_WRITE only): the disk
/// writes a body while the rest of it still streams, so the sync that makes it
/// durable later finds little left to do. A hint: errors are ignored.
static inline void dl_start_write_back(int fd, long long offset, long long length) {
    (void)sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
}
/// Starts write-back of whatever of `fd` is still dirty and waits until all of
/// it is written (sync_file_range with WAIT_BEFORE, WRITE and WAIT_AFTER): the
/// data only, no journal commit, so it does not make the file durable; it lets
/// the fdatasyncs that follow share one commit. A hint: errors are ignored.
static inline void dl_wait_write_back(int fd) {
    (void)sync_file_range(fd, 0, 0,
        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}
/// syncfs for a directory that could not be kept open: opened for the call,
/// or, when it cannot be opened at all, sync(2) of every file system.
static inline int dl_syncfs_path(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        sync();
        return 0;
    }
    int result = dl_syncfs(fd);
    close(fd);
    return result;
}
/// An unnamed regular file in the directory `dir`/`path` (O_TMPFILE): it gets a
/// name only through dl_link_descriptor, and vanishes if the process dies first.
/// -1 with errno EOPNOTSUPP (or EISDIR on old kernels) where unsupported.
static inline int dl_open_unnamed(int dir, const char *path, mode_t mode) {
    return openat(dir, path, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
}
/// Gives the unnamed file `fd` the name `dir`/`name`; fails with EEXIST rather
/// than replace anything. AT_EMPTY_PATH where the process may use it (it needs
/// CAP_DAC_READ_SEARCH, and fails with ENOENT without it), else through
/// /proc/self/fd, which needs no privilege but costs a few microseconds more
/// per file. The first answer is kept; one thread calls this at a time.
static inline int dl_link_descriptor(int fd, int dir, const char *name) {
    static int empty_path = -1; /* 1: AT_EMPTY_PATH works, 0: it does not, -1: not tried */
    if (empty_path != 0) {
        if (linkat(fd, "", dir, name, AT_EMPTY_PATH) == 0) {
            empty_path = 1;
            return 0;
        }
        if (errno != ENOENT || empty_path == 1) return -1;
        empty_path = 0;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW);
}
/// glibc's mallopt is declared in malloc.h, which the Glibc module leaves out.
static inline int dl_mallopt(int option, int value) { return mallopt(option, value); }
static inline int dl_malloc_mmap_threshold(void) { return M_MMAP_THRESHOLD; }
static inline int dl_malloc_trim_threshold(void) { return M_TRIM_THRESHOLD; }
#endif
