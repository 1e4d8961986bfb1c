// The idle floor (scenario 11): what keeping idle connections alive costs on this machine when a
// program does nothing else. Its peers say what each connection is with its first byte:
//   'c'  a tool channel: the floor writes {"type":"ping"} every PERIOD and reads the pong
//   's'  an event stream: the floor writes the keep-alive comment ":\n\n" every PERIOD
// Deadlines fall on the engine's grid (core::coalesced: rounded up to min(1 s, PERIOD / 8)), so the
// connections due in the same slot are served in one wakeup, as the engine serves them; one timerfd
// holds the earliest. No framing, no parsing: the bytes are what an idle session needs, nothing more.
//
//   idle PORT [PERIOD_MS]   (15000; prints "listening on <port>")
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

enum { MAX_CONNS = 4096 };
enum kind { UNKNOWN, CHANNEL, STREAM };

static struct {
  int fd;
  enum kind kind;
  long long due;  // ns, CLOCK_MONOTONIC
} conns[MAX_CONNS];
static int nconns;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long grid_ns, period_ns;

static long long coalesced(long long t) {
  long long rem = t % grid_ns;
  return rem ? t + (grid_ns - rem) : t;
}

// Arms the timerfd at the earliest deadline (or disarms it when there is none).
static void arm(int tfd) {
  long long earliest = 0;
  for (int i = 0; i < nconns; i++)
    if (conns[i].kind != UNKNOWN && (!earliest || conns[i].due < earliest)) earliest = conns[i].due;
  struct itimerspec its = {0};
  if (earliest) {
    its.it_value.tv_sec = earliest / 1000000000LL;
    its.it_value.tv_nsec = earliest % 1000000000LL;
  }
  if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime");
}

static void drop(int i) {
  close(conns[i].fd);
  conns[i] = conns[--nconns];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: idle PORT [PERIOD_MS]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a peer gone between two pings is dropped, not the floor
  period_ns = (argc > 2 ? atoll(argv[2]) : 15000) * 1000000LL;
  grid_ns = period_ns / 8 < 1000000000LL ? period_ns / 8 : 1000000000LL;
  int lfd = listen_loopback(argv[1]);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (ep < 0 || tfd < 0) die("epoll/timerfd");
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.fd = tfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  static const char ping[] = "{\"type\":\"ping\"}";
  static const char comment[] = ":\n\n";
  struct epoll_event evs[256];
  char buf[4096];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    int rearm = 0;
    for (int e = 0; e < n; e++) {
      int fd = evs[e].data.fd;
      if (fd == lfd) {
        int c;
        while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          if (nconns == MAX_CONNS) {
            close(c);
            continue;
          }
          conns[nconns++] = (typeof(conns[0])){.fd = c, .kind = UNKNOWN};
          struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
      } else if (fd == tfd) {
        unsigned long long expirations;
        (void)!read(tfd, &expirations, sizeof expirations);
        long long t = now_ns();
        for (int i = 0; i < nconns; i++) {
          if (conns[i].kind == UNKNOWN || conns[i].due > t) continue;
          const char *msg = conns[i].kind == CHANNEL ? ping : comment;
          size_t len = conns[i].kind == CHANNEL ? sizeof ping - 1 : sizeof comment - 1;
          if (write(conns[i].fd, msg, len) < 0 && errno != EAGAIN) {
            drop(i--);
            continue;
          }
          conns[i].due = coalesced(t + period_ns);
        }
        rearm = 1;
      } else {
        int i = 0;
        while (i < nconns && conns[i].fd != fd) i++;
        if (i == nconns) continue;
        ssize_t r = read(fd, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno != EAGAIN)) {
          drop(i);
          rearm = 1;
          continue;
        }
        if (r > 0 && conns[i].kind == UNKNOWN) {
          conns[i].kind = buf[0] == 'c' ? CHANNEL : STREAM;
          conns[i].due = coalesced(now_ns() + period_ns);
          rearm = 1;
        }
      }
    }
    if (rearm) arm(tfd);
  }
}
