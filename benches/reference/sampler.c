/* The floor for sampling: a plain C loop that preads each of sched, schedstat, stat and
 * status once per task per round, parses nothing, and reports its own CPU time per
 * task-sample. benches/sampler-vs-c.sh runs it beside a schedlab run on the same tasks.
 *
 *   sampler-ref INTERVAL_MS SECONDS PID/TID...                                          */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: sampler-ref INTERVAL_MS SECONDS PID/TID...\n");
        return 2;
    }
    int interval_ms = atoi(argv[1]);
    double seconds = atof(argv[2]);
    int tasks = argc - 3;
    static const char *names[4] = {"sched", "schedstat", "stat", "status"};
    int *fds = calloc((size_t)tasks * 4, sizeof *fds);
    for (int t = 0; t < tasks; t++) {
        int pid, tid;
        if (sscanf(argv[3 + t], "%d/%d", &pid, &tid) != 2) return 2;
        for (int f = 0; f < 4; f++) {
            char path[128];
            snprintf(path, sizeof path, "/proc/%d/task/%d/%s", pid, tid, names[f]);
            fds[t * 4 + f] = open(path, O_RDONLY);
        }
    }
    static char buf[16384];
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double end = clock_s(CLOCK_MONOTONIC) + seconds;
    long rounds = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (clock_s(CLOCK_MONOTONIC) < end) {
        for (int i = 0; i < tasks * 4; i++)
            if (fds[i] >= 0) (void)pread(fds[i], buf, sizeof buf, 0);
        rounds++;
        next.tv_nsec += (long)interval_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    printf("%.3f %ld\n", cpu * 1e6 / ((double)rounds * tasks), rounds);
    return 0;
}
