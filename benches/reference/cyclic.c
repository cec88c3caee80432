/* cyclictest -i 1000 -t1 [-p PRIO], minimal: sleep to each next 1 ms deadline with
 * clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), record how late each wakeup came.
 * usage: cyclic SAMPLES PRIO (0 = SCHED_OTHER); prints "p50_ns p99_ns max_ns samples". */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    long n = atol(argv[1]);
    int prio = atoi(argv[2]);
    if (n <= 0 || n > 100000) return 2;
    if (prio > 0) {
        struct sched_param p = { .sched_priority = prio };
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) { perror("sched_setscheduler"); return 3; }
    }
    long long *lat = malloc(sizeof(long long) * n);
    if (!lat) return 4;
    const long long interval = 1000000;
    long long next = now_ns() + interval;
    for (long i = 0; i < n; i++) {
        struct timespec t = { next / 1000000000LL, next % 1000000000LL };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {}
        long long now = now_ns();
        lat[i] = now - next;
        next += interval;
        while (next <= now) next += interval; /* an overrun: skip, as schedlab does */
    }
    qsort(lat, n, sizeof(long long), cmp);
    printf("%lld %lld %lld %ld\n", lat[n / 2], lat[(n * 99) / 100], lat[n - 1], n);
    return 0;
}
