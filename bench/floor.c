/*
 * The benchmark's floor: the minimal syscalls of the agent's patch, for the same files on the same
 * filesystem, with no agent. Built and run by `npm run bench` (bench/floor.ts).
 *
 *   floor storm  DIR N THREADS PRIMARY PLUGIN   -> prints the ms to patch N pre-written files, and the
 *                CPU microseconds it took (all threads, getrusage)
 *   floor paced  DIR N INTERVAL_US PRIMARY PLUGIN -> prints one ms figure per file: rename -> patched
 *   floor write  DIR INTERVAL_US PRIMARY NAME...  -> the primary CNI of the agent's runs: writes each
 *                NAME by temp file + rename, INTERVAL_US apart (0: as fast as it can), and prints the
 *                CLOCK_MONOTONIC ns (the clock of Node's process.hrtime) right before and right after
 *                each rename, one line per NAME
 *
 * A patch: read the file, write a temp file with the plugin appended, fsync it, rename it over the
 * file; a directory fsync after the renames (one per thread in a storm, one per file when paced).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static char *primary, *plugin;
static size_t primary_len, plugin_len;
static int files, threads;

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  char *buf = malloc(*len + 1);
  if (fread(buf, 1, *len, f) != *len) { perror(path); exit(1); }
  fclose(f);
  return buf;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) { perror("write"); exit(1); }
    p += w;
    n -= (size_t)w;
  }
}

static void dir_fsync(void) {
  int d = open(dir, O_RDONLY | O_DIRECTORY);
  fsync(d);
  close(d);
}

static void patch(int i) {
  char name[256], tmp[256], buf[65536];
  snprintf(name, sizeof name, "%s/%05d-floor.conflist", dir, i);
  snprintf(tmp, sizeof tmp, "%s/.%05d-floor.conflist.tmp", dir, i);
  int in = open(name, O_RDONLY);
  ssize_t n = read(in, buf, sizeof buf);
  close(in);
  int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  write_all(out, buf, n > 0 ? (size_t)n : 0);
  write_all(out, plugin, plugin_len);
  fchmod(out, 0644);
  fsync(out);
  close(out);
  rename(tmp, name);
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* before/after (may be NULL): the time right before and right after the rename. */
static void write_file(const char *name, const char *tmp, long long *before, long long *after) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(tmp); exit(1); }
  write_all(fd, primary, primary_len);
  close(fd);
  if (before) *before = now_ns();
  if (rename(tmp, name) != 0) { perror(name); exit(1); }
  if (after) *after = now_ns();
}

static void write_primary(int i) {
  char name[256], tmp[256];
  snprintf(name, sizeof name, "%s/%05d-floor.conflist", dir, i);
  snprintf(tmp, sizeof tmp, "%s/.%05d-floor.conflist.w", dir, i);
  write_file(name, tmp, NULL, NULL);
}

/*
 * Both times, because the writer can be preempted between its rename and reading the clock while the
 * agent, woken by the rename, patches the file: on the 2-core bench machine a patch landed 0.3 ms
 * before the writer's after-rename time. The timestamps are kept in memory and printed at the end.
 */
static int write_names(int argc, char **argv) {
  int interval_us = atoi(argv[3]);
  primary = slurp(argv[4], &primary_len);
  int n = argc - 5;
  long long *before = malloc(sizeof *before * (size_t)(n > 0 ? n : 1));
  long long *after = malloc(sizeof *after * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; i++) {
    char name[4096], tmp[4096];
    snprintf(name, sizeof name, "%s/%s", dir, argv[5 + i]);
    snprintf(tmp, sizeof tmp, "%s/.%s.writer-tmp", dir, argv[5 + i]);
    write_file(name, tmp, &before[i], &after[i]);
    if (interval_us > 0) usleep((useconds_t)interval_us);
  }
  for (int i = 0; i < n; i++) printf("%lld %lld\n", before[i], after[i]);
  return 0;
}

static void *storm_worker(void *arg) {
  long t = (long)arg;
  for (int i = (int)t; i < files; i += threads) patch(i);
  dir_fsync();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "write") == 0) {
    dir = argv[2];
    return write_names(argc, argv);
  }
  if (argc != 7) { fprintf(stderr, "usage: floor storm|paced DIR N THREADS|INTERVAL_US PRIMARY PLUGIN, or floor write DIR INTERVAL_US PRIMARY NAME...\n"); return 2; }
  dir = argv[2];
  files = atoi(argv[3]);
  primary = slurp(argv[5], &primary_len);
  plugin = slurp(argv[6], &plugin_len);
  if (strcmp(argv[1], "storm") == 0) {
    threads = atoi(argv[4]);
    for (int i = 0; i < files; i++) write_primary(i);
    dir_fsync();
    pthread_t tid[64];
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now_ms();
    for (long t = 0; t < threads; t++) pthread_create(&tid[t], NULL, storm_worker, (void *)t);
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    double ms = now_ms() - t0;
    getrusage(RUSAGE_SELF, &r1);
    double cpu_us = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 +
                    (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    printf("%.3f %.0f\n", ms, cpu_us);
  } else {
    int interval_us = atoi(argv[4]);
    for (int i = 0; i < files; i++) {
      write_primary(i);
      double t0 = now_ms();
      patch(i);
      dir_fsync();
      printf("%.4f\n", now_ms() - t0);
      usleep((useconds_t)interval_us);
    }
  }
  return 0;
}
