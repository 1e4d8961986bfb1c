// The round-trip floor: one small message to an echo server over loopback TCP and back, many times.
// Its percentiles are what a request/answer relay (the page's tool channel, a tool call) could cost
// on this machine if it did nothing but move the bytes.
//
//   tcp-pingpong [-n COUNT] [-s SIZE] [-w WARMUP]   server (forked child) and client in one run
//   tcp-pingpong serve PORT                         echo server only (prints "listening on <port>")
//   tcp-pingpong client PORT [-n COUNT] [-s SIZE] [-w WARMUP]
//
// The client prints one JSON line: {"n","size","min_us","p50_us","p90_us","p99_us","p999_us","max_us","mean_us"}.
// Both sides set TCP_NODELAY and block in read/write (no event loop: a floor has nothing to multiplex).
// Pin it from outside (taskset -c 0 tcp-pingpong: the forked server inherits the CPU).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

static int listen_on(int port, int *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
  if (listen(fd, 64) < 0) die("listen");
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  *bound = ntohs(a.sin_port);
  return fd;
}

// Read exactly n bytes (a message may arrive in pieces); 0 on EOF.
static int read_full(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

static int write_full(int fd, const char *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t w = write(fd, buf + put, n - put);
    if (w <= 0) return 0;
    put += (size_t)w;
  }
  return 1;
}

// Echo whatever arrives, one connection at a time, forever.
static void serve(int lfd) {
  char buf[65536];
  int one = 1;
  for (;;) {
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ssize_t r;
    while ((r = read(c, buf, sizeof buf)) > 0)
      if (!write_full(c, buf, (size_t)r)) break;
    close(c);
  }
}

static int cmp_u64(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

// Nearest-rank percentile in µs of sorted nanoseconds, as bench/lib/stats.mjs computes it.
static double at(const unsigned long long *ns, int count, double q) {
  long rank = (long)(q * count + 0.999999);  // ceil without libm
  if (rank < 1) rank = 1;
  if (rank > count) rank = count;
  return (double)ns[rank - 1] / 1000.0;
}

static void client(int port, int count, int size, int warmup) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char *msg = malloc((size_t)size), *back = malloc((size_t)size);
  unsigned long long *ns = malloc(sizeof *ns * (size_t)count);
  if (!msg || !back || !ns) die("malloc");
  memset(msg, 'x', (size_t)size);
  // The first round trips pay for cold caches and the server's first wakeups: not counted.
  for (int i = 0; i < warmup + count; i++) {
    unsigned long long t0 = now_ns();
    if (!write_full(fd, msg, (size_t)size) || !read_full(fd, back, (size_t)size)) die("echo");
    if (i >= warmup) ns[i - warmup] = now_ns() - t0;
  }
  close(fd);
  qsort(ns, (size_t)count, sizeof *ns, cmp_u64);
  double sum = 0;
  for (int i = 0; i < count; i++) sum += (double)ns[i];
  printf("{\"n\":%d,\"size\":%d,\"min_us\":%.2f,\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
         "\"max_us\":%.2f,\"mean_us\":%.2f}\n",
         count, size, ns[0] / 1000.0, at(ns, count, 0.5), at(ns, count, 0.9), at(ns, count, 0.99), at(ns, count, 0.999), ns[count - 1] / 1000.0,
         sum / count / 1000.0);
  free(msg);
  free(back);
  free(ns);
}

int main(int argc, char **argv) {
  int count = 20000, size = 64, warmup = 1000, port = 0, argi = 1;
  const char *mode = "both";
  if (argi < argc && (!strcmp(argv[argi], "serve") || !strcmp(argv[argi], "client"))) {
    mode = argv[argi++];
    if (argi >= argc) {
      fprintf(stderr, "usage: %s %s PORT …\n", argv[0], mode);
      return 2;
    }
    port = atoi(argv[argi++]);
  }
  for (; argi + 1 < argc; argi += 2) {
    if (!strcmp(argv[argi], "-n")) count = atoi(argv[argi + 1]);
    else if (!strcmp(argv[argi], "-s")) size = atoi(argv[argi + 1]);
    else if (!strcmp(argv[argi], "-w")) warmup = atoi(argv[argi + 1]);
    else break;
  }
  if (argi < argc || count < 1 || size < 1 || warmup < 0) {
    fprintf(stderr, "usage: %s [serve PORT | client PORT] [-n COUNT] [-s SIZE] [-w WARMUP]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(mode, "client")) {
    client(port, count, size, warmup);
    return 0;
  }
  int bound;
  int lfd = listen_on(port, &bound);
  if (!strcmp(mode, "serve")) {
    printf("listening on %d\n", bound);
    fflush(stdout);
    serve(lfd);
  }
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) serve(lfd);  // never returns
  close(lfd);
  client(bound, count, size, warmup);
  kill(child, SIGTERM);
  waitpid(child, NULL, 0);
  return 0;
}
