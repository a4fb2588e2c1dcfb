// Linux calls that Glibc's Swift overlay does not expose.
#ifndef DL_POSIX_H
#define DL_POSIX_H
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/// rename(2) that fails with EEXIST instead of replacing the target
/// (renameat2 with RENAME_NOREPLACE, through syscall for older headers).
static inline int dl_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
}
/// syncfs(2): flushes every dirty file of the file system holding `fd`, in one call.
static inline int dl_syncfs(int fd) {
    return (int)syscall(SYS_syncfs, fd);
}
#endif
