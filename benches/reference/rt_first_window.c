// rt-throttle as a plain C program: a SCHED_FIFO 1 spinner and a nice -20 spinner, two
// threads pinned to CPU 0, for SECONDS. Prints how long the fair thread's first stretch
// on the CPU lasted (the first throttled window) and its share per 100 ms sample, both
// read from /proc/self/task/TID/schedstat by the main thread on CPU 1.
//
//   cc -O2 -pthread -o rt_first_window rt_first_window.c && ./rt_first_window 3
//
// Output: "first_window_s 0.050 shares 0.00 0.00 ... 0.50 0.00 ...". Needs root (FIFO).
// RT throttling must be on (sched_rt_runtime_us < period): the spinner relies on it.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 600

static volatile int go, stop;
static volatile pid_t tids[2];

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}

static void *spinner(void *arg) {
  tids[(long)arg] = (pid_t)syscall(SYS_gettid);
  pin(0);
  while (!go) usleep(1000);
  volatile unsigned long n = 0;
  while (!stop) n++;
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static double runtime_s(pid_t tid) {
  char path[64];
  unsigned long long ns = 0;
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%llu", &ns) != 1) ns = 0;
    fclose(f);
  }
  return ns / 1e9;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  int samples = (int)(seconds * 10);
  if (samples < 1 || samples > MAX_SAMPLES) {
    fprintf(stderr, "usage: rt_first_window SECONDS (0.1..60)\n");
    return 2;
  }
  pin(1);
  pthread_t th[2];
  pthread_create(&th[0], NULL, spinner, (void *)0);
  pthread_create(&th[1], NULL, spinner, (void *)1);
  while (!tids[0] || !tids[1]) usleep(100);
  struct sched_param sp = {.sched_priority = 1};
  if (sched_setscheduler(tids[0], SCHED_FIFO, &sp)) {
    perror("SCHED_FIFO");
    stop = go = 1;
    return 1;
  }
  setpriority(PRIO_PROCESS, (id_t)tids[1], -20);
  double start = now(), fair[MAX_SAMPLES + 1];
  go = 1;
  fair[0] = runtime_s(tids[1]);
  for (int k = 1; k <= samples; k++) {
    double wait = start + k * 0.1 - now();
    if (wait > 0) usleep((useconds_t)(wait * 1e6));
    fair[k] = runtime_s(tids[1]);
  }
  stop = 1;
  pthread_join(th[0], NULL);
  pthread_join(th[1], NULL);
  // The first stretch, as schedlab's check finds it (src/check/throttle.rs): from the
  // first sample with more than 10 ms on the CPU (and the one before it if the thread
  // ran there at all: a 50 ms window puts 25 ms or more into one of two samples, while
  // the fair thread's moment before the spinner gets going is about 1 ms) to the first
  // sample after it with no more than 0.5 ms.
  double first = 0;
  int k = 1;
  while (k <= samples && fair[k] - fair[k - 1] <= 0.01) k++;
  if (k > 1 && k <= samples && fair[k - 1] - fair[k - 2] > 0.0005) k--;
  while (k <= samples && fair[k] - fair[k - 1] > 0.0005) first += fair[k] - fair[k - 1], k++;
  printf("first_window_s %.3f%s shares", first, k > samples ? "+" : "");
  for (k = 1; k <= samples; k++) printf(" %.2f", (fair[k] - fair[k - 1]) / 0.1);
  printf("\n");
  return 0;
}
