/* A plain C sampler to hold schedlab's against: each round it preads each of sched,
 * schedstat, stat and status once per task AND parses the fields schedlab's sampler
 * takes from them, and /proc/stat every 100 ms (schedlab's cadence), then reports its
 * own CPU time per task-sample. benches/sampler-vs-c.sh runs it beside a schedlab run on
 * the same tasks. It skips nothing: what schedlab saves by skipping files shows.
 * Prints: CPU us per task-sample, rounds, and how many tasks it read to the end (a task
 * that was gone costs next to nothing and would flatter the figure).
 *
 *   sampler-ref INTERVAL_MS SECONDS PID/TID...                                          */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What a round keeps of one task: the fields schedlab's parsers fill. */
struct sample {
    unsigned long long run_ns, wait_ns, timeslices;                    /* schedstat */
    unsigned long long sum_exec_ns, switches, vol, invol, migrations;  /* sched */
    unsigned long long weight, slice_ns;
    long prio, policy;
    char state;                                                        /* stat */
    unsigned long long utime, stime;
    long priority, nice, threads, processor, rt_priority, spolicy;
    unsigned long long vcs, nvcs, cpus_mask;                           /* status */
    long status_threads;
    char status_state;
};

/* Keeps the compiler from dropping the parsing. */
static volatile unsigned long long sink;

/* "1022.815609" ms as ns. */
static unsigned long long ms_as_ns(const char *v) {
    char *e;
    unsigned long long ms = strtoull(v, &e, 10), ns = 0;
    int digits = 0;
    if (*e == '.')
        for (e++; digits < 6 && *e >= '0' && *e <= '9'; e++, digits++) ns = ns * 10 + (*e - '0');
    for (; digits < 6; digits++) ns *= 10;
    return ms * 1000000ULL + ns;
}

/* Calls fn(key, key_len, value) for each "key : value" line of buf (NUL-terminated),
 * the key without trailing blanks, the value without leading ones. */
static void key_values(char *buf, void (*fn)(const char *, size_t, const char *, struct sample *),
                       struct sample *s) {
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        char *colon = strchr(line, ':');
        if (colon) {
            char *end = colon;
            while (end > line && (end[-1] == ' ' || end[-1] == '\t')) end--;
            char *value = colon + 1;
            while (*value == ' ' || *value == '\t') value++;
            fn(line, (size_t)(end - line), value, s);
        }
        line = nl ? nl + 1 : NULL;
    }
}

#define KEY(k) (len == sizeof(k) - 1 && memcmp(key, k, sizeof(k) - 1) == 0)

static void sched_field(const char *key, size_t len, const char *v, struct sample *s) {
    if (KEY("se.sum_exec_runtime")) s->sum_exec_ns = ms_as_ns(v);
    else if (KEY("nr_switches")) s->switches = strtoull(v, NULL, 10);
    else if (KEY("nr_voluntary_switches")) s->vol = strtoull(v, NULL, 10);
    else if (KEY("nr_involuntary_switches")) s->invol = strtoull(v, NULL, 10);
    else if (KEY("se.nr_migrations")) s->migrations = strtoull(v, NULL, 10);
    else if (KEY("policy")) s->policy = strtol(v, NULL, 10);
    else if (KEY("prio")) s->prio = strtol(v, NULL, 10);
    else if (KEY("se.slice")) s->slice_ns = strtoull(v, NULL, 10);
    else if (KEY("se.load.weight")) s->weight = strtoull(v, NULL, 10);
}

/* "0-1,4" as a bit mask. */
static unsigned long long cpu_list(const char *v) {
    unsigned long long mask = 0;
    char *e;
    while (*v >= '0' && *v <= '9') {
        long lo = strtol(v, &e, 10), hi = lo;
        if (*e == '-') hi = strtol(e + 1, &e, 10);
        for (long c = lo; c <= hi && c < 64; c++) mask |= 1ULL << c;
        v = *e == ',' ? e + 1 : e;
    }
    return mask;
}

static void status_field(const char *key, size_t len, const char *v, struct sample *s) {
    if (KEY("voluntary_ctxt_switches")) s->vcs = strtoull(v, NULL, 10);
    else if (KEY("nonvoluntary_ctxt_switches")) s->nvcs = strtoull(v, NULL, 10);
    else if (KEY("Threads")) s->status_threads = strtol(v, NULL, 10);
    else if (KEY("State")) s->status_state = *v;
    else if (KEY("Cpus_allowed_list")) s->cpus_mask = cpu_list(v);
}

static void parse_schedstat(const char *buf, struct sample *s) {
    char *e;
    s->run_ns = strtoull(buf, &e, 10);
    s->wait_ns = strtoull(e, &e, 10);
    s->timeslices = strtoull(e, NULL, 10);
}

/* Fields after the comm's last ')', numbered as in proc(5) from 3. */
static void parse_stat(const char *buf, struct sample *s) {
    const char *p = strrchr(buf, ')');
    if (!p) return;
    p += 2;
    s->state = *p;
    p += 1;
    char *e = (char *)p;
    for (int field = 4; field <= 41; field++) {
        long long v = strtoll(e, &e, 10);
        switch (field) {
        case 14: s->utime = (unsigned long long)v; break;
        case 15: s->stime = (unsigned long long)v; break;
        case 18: s->priority = (long)v; break;
        case 19: s->nice = (long)v; break;
        case 20: s->threads = (long)v; break;
        case 39: s->processor = (long)v; break;
        case 40: s->rt_priority = (long)v; break;
        case 41: s->spolicy = (long)v; break;
        }
    }
}

/* The "cpu" lines of /proc/stat: ten columns each. */
static void parse_proc_stat(char *buf) {
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (strncmp(line, "cpu", 3) == 0) {
            char *e = line + 3;
            while (*e >= '0' && *e <= '9') e++;
            for (int col = 0; col < 10; col++) sink += strtoull(e, &e, 10);
        }
        line = nl ? nl + 1 : NULL;
    }
}

static void keep(const struct sample *s) {
    sink += s->run_ns + s->wait_ns + s->timeslices + s->sum_exec_ns + s->switches + s->vol +
            s->invol + s->migrations + s->weight + s->slice_ns + (unsigned long long)s->prio +
            (unsigned long long)s->policy + (unsigned long long)s->state + s->utime + s->stime +
            (unsigned long long)(s->priority + s->nice + s->threads + s->processor +
                                 s->rt_priority + s->spolicy + s->status_threads) +
            s->vcs + s->nvcs + s->cpus_mask + (unsigned long long)s->status_state;
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
    int proc_stat = open("/proc/stat", O_RDONLY);
    static char buf[16385];
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double end = clock_s(CLOCK_MONOTONIC) + seconds;
    double stat_read = 0;
    long rounds = 0;
    int alive = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (clock_s(CLOCK_MONOTONIC) < end) {
        alive = 0;
        for (int t = 0; t < tasks; t++) {
            struct sample s = {0};
            int read = 0;
            for (int f = 0; f < 4; f++) {
                int fd = fds[t * 4 + f];
                if (fd < 0) continue;
                ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
                if (n <= 0) continue;
                read++;
                buf[n] = 0;
                switch (f) {
                case 0: key_values(buf, sched_field, &s); break;
                case 1: parse_schedstat(buf, &s); break;
                case 2: parse_stat(buf, &s); break;
                case 3: key_values(buf, status_field, &s); break;
                }
            }
            keep(&s);
            alive += read == 4;
        }
        /* schedlab reads /proc/stat once 90 ms have passed. */
        double now = clock_s(CLOCK_MONOTONIC);
        if (proc_stat >= 0 && now - stat_read >= 0.09) {
            ssize_t n = pread(proc_stat, buf, sizeof buf - 1, 0);
            if (n >= 0) {
                buf[n] = 0;
                parse_proc_stat(buf);
            }
            stat_read = now;
        }
        rounds++;
        next.tv_nsec += (long)interval_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    printf("%.3f %ld %d\n", cpu * 1e6 / ((double)rounds * tasks), rounds, alive);
    return sink == 42 ? 1 : 0;
}
