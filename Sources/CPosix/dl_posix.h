// Linux calls that Glibc's Swift overlay does not expose.
#ifndef DL_POSIX_H
#define DL_POSIX_H
#include <fcntl.h>
#include <malloc.h>
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
/// syncfs(2): flushes every dirty file of the file system holding `fd`, in one call.
static inline int dl_syncfs(int fd) {
    return (int)syscall(SYS_syncfs, fd);
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
/// glibc's mallopt is declared in malloc.h, which the Glibc module leaves out.
static inline int dl_mallopt(int option, int value) { return mallopt(option, value); }
static inline int dl_malloc_mmap_threshold(void) { return M_MMAP_THRESHOLD; }
static inline int dl_malloc_trim_threshold(void) { return M_TRIM_THRESHOLD; }
#endif
