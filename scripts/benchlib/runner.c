/* Runs a command and prints "wall_seconds cpu_seconds maxrss_kib exit_status".
 *
 * Why a C program: a child's peak RSS (ru_maxrss) survives execve, so a tool
 * started straight from the Python driver would report at least the driver's
 * own size. Forked from this small process, the tool's peak is its own. The
 * tool's stdout is sent to stderr, so that stdout holds only the result. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: runner COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        dup2(2, 1);  /* the tool's output goes to stderr; stdout carries the result line */
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) { perror("wait4"); return 2; }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double wall = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    double cpu = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6
               + (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("%.6f %.6f %ld %d\n", wall, cpu, usage.ru_maxrss, code);
    return 0;
}
