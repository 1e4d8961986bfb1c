// The relay floor: the least a process can do to carry an upstream's SSE/HTTP byte stream to a client.
// For each client connection it connects to the upstream and copies bytes both ways as they come,
// without parsing anything: the client's request goes up as it was sent, the upstream's response
// (status line, headers, chunked SSE body) comes down as it was sent. One thread, one epoll set.
//
//   sse-relay PORT UPSTREAM_PORT      (upstream on 127.0.0.1; PORT 0 picks one; prints "listening on <port>")
//
// Backpressure as a relay must have it: while the bytes read from one side are not all written to the
// other, that side is not read. So a stalled client stalls the upstream through TCP, as it should, and
// memory stays at one buffer per direction. When either side closes, the pair is closed (after what
// was read from it has been written on).
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

#define BUF 16384

struct side;
struct pair {
  struct side *down, *up;
};

// One socket and the bytes read from it that still have to go to the other side.
struct side {
  int fd;
  struct pair *pair;
  struct side *peer;
  char buf[BUF];
  size_t len, off;
  int eof;           // read 0: after `buf` drains, the pair ends
  unsigned events;   // registered epoll events, to change them only when needed
};

static int ep;
static struct sockaddr_in upstream;

static void set_events(struct side *s, unsigned events) {
  if (events == s->events) return;
  struct epoll_event ev = {.events = events, .data.ptr = s};
  epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
  s->events = events;
}

static void pair_close(struct pair *p) {
  close(p->down->fd);
  close(p->up->fd);
  free(p->down);
  free(p->up);
  free(p);
}

// Write s's pending bytes to its peer. Returns -1 on failure, 1 while bytes are left.
static int drain(struct side *s) {
  while (s->off < s->len) {
    ssize_t w = write(s->peer->fd, s->buf + s->off, s->len - s->off);
    if (w < 0) {
      if (errno == EAGAIN) return 1;
      if (errno == EINTR) continue;
      return -1;
    }
    s->off += (size_t)w;
  }
  s->off = s->len = 0;
  return 0;
}

// Decide what each socket waits for: read while its buffer is empty, write while its peer's is not.
static void rearm(struct side *s) {
  struct side *o = s->peer;
  set_events(s, (s->len == 0 && !s->eof ? EPOLLIN : 0) | (o->len ? EPOLLOUT : 0));
  set_events(o, (o->len == 0 && !o->eof ? EPOLLIN : 0) | (s->len ? EPOLLOUT : 0));
}

// Returns -1 when the pair must end.
static int on_event(struct side *s, unsigned events) {
  if (events & EPOLLOUT) {  // s can take what its peer read
    if (drain(s->peer) < 0) return -1;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    if (s->len == 0 && !s->eof) {
      ssize_t r = read(s->fd, s->buf, BUF);
      if (r == 0) s->eof = 1;
      else if (r < 0 && errno != EAGAIN && errno != EINTR) return -1;
      else if (r > 0) {
        s->len = (size_t)r;
        if (drain(s) < 0) return -1;  // most of the time the bytes leave at once
      }
    }
  }
  if ((s->eof && s->len == 0) || (s->peer->eof && s->peer->len == 0)) return -1;
  rearm(s);
  return 0;
}

static struct side *side_new(int fd, struct pair *p) {
  struct side *s = calloc(1, sizeof *s);
  if (!s) die("calloc");
  s->fd = fd;
  s->pair = p;
  return s;
}

static void on_accept(int lfd) {
  int one = 1, d;
  while ((d = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
    int u = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u < 0 || (connect(u, (struct sockaddr *)&upstream, sizeof upstream) < 0 && errno != EINPROGRESS)) {
      perror("upstream");
      if (u >= 0) close(u);
      close(d);
      continue;
    }
    setsockopt(d, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct pair *p = calloc(1, sizeof *p);
    if (!p) die("calloc");
    p->down = side_new(d, p);
    p->up = side_new(u, p);
    p->down->peer = p->up;
    p->up->peer = p->down;
    // The upstream socket first waits for its connect to finish (writable); reading it waits until then.
    p->down->events = EPOLLIN;
    p->up->events = EPOLLOUT;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p->down};
    epoll_ctl(ep, EPOLL_CTL_ADD, d, &ev);
    ev = (struct epoll_event){.events = EPOLLOUT, .data.ptr = p->up};
    epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PORT UPSTREAM_PORT\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  upstream = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
  upstream.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  int lfd = listen_loopback(argv[1]);

  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);

  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(ep, events, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    // A pair closed by an earlier event of this batch must not be touched by a later one: closed
    // pairs are collected and freed after the batch.
    struct pair *dead[256];
    int ndead = 0;
    for (int i = 0; i < n; i++) {
      struct side *s = events[i].data.ptr;
      if (!s) {
        on_accept(lfd);
        continue;
      }
      int gone = 0;
      for (int k = 0; k < ndead; k++) gone |= dead[k] == s->pair;
      if (gone) continue;
      if (on_event(s, events[i].events) < 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, s->pair->down->fd, NULL);
        epoll_ctl(ep, EPOLL_CTL_DEL, s->pair->up->fd, NULL);
        dead[ndead++] = s->pair;
      }
    }
    for (int k = 0; k < ndead; k++) pair_close(dead[k]);
  }
}
