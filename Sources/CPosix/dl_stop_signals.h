// SIGINT and SIGTERM for a clean stop, and a second signal that always quits.
//
// A sigaction handler, not a dispatch signal source: a dispatch source merges
// signals that arrive before its handler runs into one call, so a second
// Ctrl-C sent while the first was still on its way was lost, and the run went
// on with its (possibly slow) clean stop. This handler runs once per signal
// the kernel delivers: the first is passed to a thread through a pipe (the
// self-pipe: a handler may only call async-signal-safe functions), the second
// leaves at once.
//
// The state below is file-static: only one Swift file (StopSignals.swift)
// may call these functions, so that exactly one copy of it exists.
#ifndef DL_STOP_SIGNALS_H
#define DL_STOP_SIGNALS_H
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int dl_stop_signal_count = 0;
static int dl_stop_pipe_write = -1;
// Set by a process that keeps no part files (`dlpipe web`): the second
// signal's line then claims none.
static int dl_stop_keeps_nothing = 0;

// Paths the second signal removes before it quits (`get -o -`'s staging
// folder: files first, then the folder). Fixed buffers: a handler may not
// allocate, and unlink and rmdir are async-signal-safe. The buffer is a
// function's static: a file-static array was not emitted when Swift imported
// this header (an undefined reference at link time).
#define DL_STOP_REMOVE_MAX 4
#define DL_STOP_REMOVE_LENGTH 4096
static int dl_stop_remove_count = 0;
static inline char *dl_stop_remove_path(int index) {
    static char paths[DL_STOP_REMOVE_MAX][DL_STOP_REMOVE_LENGTH];
    return paths[index];
}

static void dl_stop_signal_handler(int number) {
    int saved = errno;
    if (__atomic_add_fetch(&dl_stop_signal_count, 1, __ATOMIC_SEQ_CST) >= 2) {
        // What the clean stop does not print: tells the two ways out apart.
        // Only when stderr can take it now: a full pipe or a terminal held
        // with Ctrl-S (what may be slowing the clean stop) must not keep the
        // process from leaving.
        static const char message[] = "dlpipe: interrupted again: quit at once (part files are kept)\n";
        static const char removed[] = "dlpipe: interrupted again: quit at once\n";
        int count = __atomic_load_n(&dl_stop_remove_count, __ATOMIC_SEQ_CST);
        for (int i = 0; i < count; i++) {
            if (unlink(dl_stop_remove_path(i)) != 0) (void)rmdir(dl_stop_remove_path(i));
        }
        struct pollfd err = { .fd = 2, .events = POLLOUT, .revents = 0 };
        if (poll(&err, 1, 0) == 1 && (err.revents & POLLOUT)) {
            if (count > 0 || __atomic_load_n(&dl_stop_keeps_nothing, __ATOMIC_SEQ_CST)) (void)!write(2, removed, sizeof removed - 1);
            else (void)!write(2, message, sizeof message - 1);
        }
        _exit(130);
    }
    unsigned char byte = (unsigned char)number;
    (void)!write(dl_stop_pipe_write, &byte, 1);
    errno = saved;
}

/// Installs the handler for SIGINT and SIGTERM and returns the descriptor
/// from which the first signal's number can be read (one byte), or -1 with
/// errno set.
static inline int dl_stop_signals_install(void) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    dl_stop_pipe_write = fds[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = dl_stop_signal_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &action, NULL) != 0 || sigaction(SIGTERM, &action, NULL) != 0) return -1;
    return fds[0];
}

/// The process has no part files: the second signal says only that it quits.
static inline void dl_stop_signals_keep_nothing(void) {
    __atomic_store_n(&dl_stop_keeps_nothing, 1, __ATOMIC_SEQ_CST);
}

/// Adds a path for the second signal to remove (a file, or an empty folder)
/// before it quits; 0, or -1 when there is no room for it.
static inline int dl_stop_signals_remove_on_quit(const char *path) {
    int index = __atomic_load_n(&dl_stop_remove_count, __ATOMIC_SEQ_CST);
    if (index >= DL_STOP_REMOVE_MAX || strlen(path) >= DL_STOP_REMOVE_LENGTH) return -1;
    strcpy(dl_stop_remove_path(index), path);
    __atomic_store_n(&dl_stop_remove_count, index + 1, __ATOMIC_SEQ_CST);
    return 0;
}

/// A stop asked from inside the process (`dlpipe queue stop` reached a
/// worker): the first signal's clean stop, unless a signal came first, in
/// which case nothing more happens (a second one would quit at once). The
/// caller sees to it that this runs once.
static inline void dl_stop_signals_request(void) {
    int expected = 0;
    if (dl_stop_pipe_write < 0) return;
    if (!__atomic_compare_exchange_n(&dl_stop_signal_count, &expected, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return;
    // 0, no signal's number: the stop thread tells it from a signal.
    unsigned char byte = 0;
    (void)!write(dl_stop_pipe_write, &byte, 1);
}

/// How many stop signals arrived so far (0, or 1: a second one exits).
static inline int dl_stop_signals_received(void) {
    return __atomic_load_n(&dl_stop_signal_count, __ATOMIC_SEQ_CST);
}
#endif
