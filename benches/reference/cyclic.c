/* cyclictest -i 1000 -t1 [-p PRIO], minimal: sleep to each next 1 ms deadline with
 * clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), record how late each wakeup came.
 * usage: cyclic SAMPLES PRIO [CPU NEIGHBOUR_CPU] (PRIO 0 = SCHED_OTHER); prints
 * "p50_ns p99_ns max_ns samples".
 * With CPU the measuring thread is pinned there; with NEIGHBOUR_CPU >= 0 a second thread
 * pinned there wakes every 10 ms, as cyclictest's main thread does (-1: none). */
#define _GNU_SOURCE
#include <pthread.h>
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

/* Sleep to the absolute CLOCK_MONOTONIC time `at_ns`, through any signal. */
static void sleep_until(long long at_ns) {
    struct timespec t = { at_ns / 1000000000LL, at_ns % 1000000000LL };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {}
}

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static volatile int measuring = 1;

/* cyclictest's main thread: asleep, woken every 10 ms until the measurement ends. */
static void *neighbour(void *arg) {
    if (pin(*(int *)arg) != 0) { perror("neighbour affinity"); return NULL; }
    long long next = now_ns();
    while (measuring) {
        next += 10000000;
        sleep_until(next);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 5) return 2;
    long n = atol(argv[1]);
    int prio = atoi(argv[2]);
    if (n <= 0 || n > 100000) return 2;
    int neighbour_cpu = argc == 5 ? atoi(argv[4]) : -1;
    pthread_t other;
    if (neighbour_cpu >= 0 && pthread_create(&other, NULL, neighbour, &neighbour_cpu) != 0) return 5;
    if (argc == 5 && pin(atoi(argv[3])) != 0) { perror("sched_setaffinity"); return 3; }
    if (prio > 0) {
        struct sched_param p = { .sched_priority = prio };
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) { perror("sched_setscheduler"); return 3; }
    }
    long long *lat = malloc(sizeof(long long) * n);
    if (!lat) return 4;
    const long long interval = 1000000;
    long long next = now_ns() + interval;
    for (long i = 0; i < n; i++) {
        sleep_until(next);
        long long now = now_ns();
        lat[i] = now - next;
        next += interval;
        while (next <= now) next += interval; /* an overrun: skip, as schedlab does */
    }
    measuring = 0;
    if (neighbour_cpu >= 0) pthread_join(other, NULL);
    qsort(lat, n, sizeof(long long), cmp);
    printf("%lld %lld %lld %ld\n", lat[n / 2], lat[(n * 99) / 100], lat[n - 1], n);
    return 0;
}
