// The HTTP floor: what one thread on this machine can do when answering HTTP/1.1 at all.
// A single-threaded epoll loop that answers every request on a kept-alive connection with one fixed
// response. It parses nothing but the end of each request head ("\r\n\r\n"): requests without a body
// (GET /health) are all it is for, so anything it does beyond that is cost the engine has and it has not.
//
//   epoll-http PORT [BODY]     PORT 0 picks a free port; prints "listening on <port>" once it listens.
//
// Pipelined requests are answered in order (one response per head end seen). Output that the socket
// does not take at once is kept per connection and sent when it becomes writable, so a slow reader
// never loses bytes.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

#define MAX_EVENTS 256
#define IN_CAP 16384

struct conn {
  int fd;
  size_t in_len;     // bytes of an unfinished request head kept from the last read
  char in[IN_CAP];
  char *out;         // unsent response bytes (heap, grown as needed)
  size_t out_len, out_off, out_cap;
  int want_out;      // EPOLLOUT registered: changed only when needed, an epoll_ctl per request would cost
};

static char response[1024];
static size_t response_len;

static void conn_close(struct conn *c) {
  close(c->fd);  // closing removes it from the epoll set
  free(c->out);
  free(c);
}

// Queue `n` responses after whatever is still unsent.
static void queue_responses(struct conn *c, int n) {
  size_t need = c->out_len - c->out_off + (size_t)n * response_len;
  if (c->out_off) {  // compact first, so the buffer never grows without bound
    memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
    c->out_len -= c->out_off;
    c->out_off = 0;
  }
  if (need > c->out_cap) {
    c->out_cap = need * 2;
    c->out = realloc(c->out, c->out_cap);
    if (!c->out) die("realloc");
  }
  for (int i = 0; i < n; i++) {
    memcpy(c->out + c->out_len, response, response_len);
    c->out_len += response_len;
  }
}

// Write what is queued; returns -1 when the connection failed, else 1 if bytes are left (wait for EPOLLOUT).
static int flush_out(struct conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
    if (w < 0) {
      if (errno == EAGAIN) return 1;
      if (errno == EINTR) continue;
      return -1;
    }
    c->out_off += (size_t)w;
  }
  c->out_off = c->out_len = 0;
  return 0;
}

// While output is pending the connection is not read (a reader that never reads cannot make us queue
// without bound); once it drained, reading resumes.
static void set_want_out(int ep, struct conn *c, int want) {
  struct epoll_event ev = {.events = want ? EPOLLOUT : EPOLLIN, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
  c->want_out = want;
}

// One read per readiness event (level-triggered: anything left is reported again, and the read that
// would only say EAGAIN is saved), count complete heads, answer them. Returns -1 to close.
static int on_readable(int ep, struct conn *c) {
  {
    ssize_t r = read(c->fd, c->in + c->in_len, IN_CAP - c->in_len);
    if (r == 0) return -1;
    if (r < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    c->in_len += (size_t)r;
    int heads = 0;
    size_t start = 0;
    // A head end may straddle two reads: the unfinished tail is kept in `in` for the next one.
    for (;;) {
      char *end = memmem(c->in + start, c->in_len - start, "\r\n\r\n", 4);
      if (!end) break;
      heads++;
      start = (size_t)(end - c->in) + 4;
    }
    memmove(c->in, c->in + start, c->in_len - start);
    c->in_len -= start;
    if (c->in_len == IN_CAP) return -1;  // a head larger than we accept
    if (heads) queue_responses(c, heads);
  }
  int left = flush_out(c);
  if (left < 0) return -1;
  if (left != c->want_out) set_want_out(ep, c, left);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PORT [BODY]\n", argv[0]);
    return 2;
  }
  const char *body = argc > 2 ? argv[2] : "{\"ok\":true}";
  response_len = (size_t)snprintf(response, sizeof response,
                                  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                                  strlen(body), body);
  if (response_len >= sizeof response) {
    fprintf(stderr, "body too long\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  int lfd = listen_loopback(argv[1]);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};  // NULL marks the listener
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);

  struct epoll_event events[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(ep, events, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      struct conn *c = events[i].data.ptr;
      if (!c) {
        int fd;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          // Small responses must leave at once, as a server tuned for latency would send them.
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *nc = calloc(1, sizeof *nc);
          if (!nc) die("calloc");
          nc->fd = fd;
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (events[i].events & (EPOLLERR | EPOLLHUP)) {
        conn_close(c);
        continue;
      }
      if (events[i].events & EPOLLOUT) {
        int left = flush_out(c);
        if (left < 0) {
          conn_close(c);
          continue;
        }
        if (!left && c->want_out) set_want_out(ep, c, 0);
      }
      if ((events[i].events & EPOLLIN) && on_readable(ep, c) < 0) conn_close(c);
    }
  }
}
