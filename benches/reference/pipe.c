/* The 2010 pipe-wakeup experiment as a plain C program: the reference schedlab's
 * pipe-wakeup preset is measured against (benches/pipe-vs-c.sh).
 *
 *   pipe-ref POLICY SECONDS [BYTES] [poll]
 *
 * Forks `wc -c` reading a pipe, pins both to CPU 0, gives both POLICY (other|batch),
 * then writes BYTES-byte chunks (default 30) for SECONDS and prints the writer's
 * bytes/s. With "poll", the writer polls its pipe once before the loop (events=0, as
 * Rust's runtime does to fds 0-2): the pipe's poll_usage is then set for its life. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(int policy) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    struct sched_param p = {0};
    if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, policy, &p)) {
        perror("pipe-ref: setting policy/affinity");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: pipe-ref other|batch SECONDS [BYTES] [poll]\n");
        return 2;
    }
    int policy = strcmp(argv[1], "batch") == 0 ? SCHED_BATCH : SCHED_OTHER;
    double seconds = atof(argv[2]);
    size_t bytes = argc > 3 ? (size_t)atoi(argv[3]) : 30;
    int armed = argc > 4 && strcmp(argv[4], "poll") == 0;
    char buf[1 << 16];
    if (bytes < 1 || bytes > sizeof buf) return 2;
    memset(buf, 'x', bytes);
    int fd[2];
    if (pipe(fd)) { perror("pipe"); return 1; }
    signal(SIGPIPE, SIG_IGN);
    setup(policy);
    pid_t child = fork();
    if (child == 0) {
        dup2(fd[0], 0);
        close(fd[0]);
        close(fd[1]);
        int out = open("/dev/null", 1);
        dup2(out, 1);
        execlp("wc", "wc", "-c", (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    if (armed) {
        struct pollfd p = {.fd = fd[1], .events = 0};
        poll(&p, 1, 0);
    }
    double start = now(), end = start + seconds, t = start;
    unsigned long long total = 0;
    unsigned long n = 0;
    while (t < end) {
        if (write(fd[1], buf, bytes) != (ssize_t)bytes) break;
        total += bytes;
        if ((++n & 1023) == 0) t = now();
    }
    t = now();
    close(fd[1]);
    waitpid(child, NULL, 0);
    printf("%.0f\n", total / (t - start));
    return 0;
}
