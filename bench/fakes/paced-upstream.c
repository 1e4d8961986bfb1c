// Scenario 7's model server: an OpenAI-compatible server, in C, that streams timestamped chunks on a
// schedule, as bench/fakes/openai-upstream.mjs does (the same bytes: `T<µs>;` in each chunk's content,
// CLOCK_MONOTONIC), for the paced streams only. Why not the Node one there: it shares the helper CPU with
// the reader, and 1,000 streams at 10 chunks a second made Node's garbage collector pause it a few ms at
// a time, between a chunk's timestamp and its write: stalls that were neither relay's, a few dozen a
// round, which decided each round's p99 (docs/PERFORMANCE.md, "Scenario 7's tail"). This one allocates
// nothing per chunk, and takes the timestamp just before the chunk's write.
//
//   paced-upstream [PORT]      prints "listening on <port>"
//
// GET  /v1/models            {data: [{id: "bench"}]} (keep-alive: the engine's pool reuses the connection)
// POST /v1/chat/completions  the script as openai-upstream.mjs reads it (count=N every=MS in the body):
//                            chunk i (from 1) is due at the stream's phase + i*every (below); a late one
//                            is written as soon as it can be, each with its own timestamp. count=0: endless.
//                            every=0 is refused (bursts are the Node server's).
// A stream's phase is set by its place among the streams, not by when its request came: the k-th stream
// since the server last had none open gets phase(k), a fixed pseudo-random point of the period, measured
// from the first one's arrival. So every contender's round offers the same schedule, independent
// streams spread at random over the period, however fast or evenly its streams were opened. Timed by
// arrival, they were not: the engine's streams (prepare, open, approve each) opened in clumps, and its
// rounds got about twice as many chunks in the busiest millisecond of the period as nginx's
// (docs/PERFORMANCE.md, "Scenario 7's tail").
// Each stream's chunks are written by one write each; a write the socket does not take whole is kept and
// finished when it drains, and later chunks queue behind it (at most 1 MB, then the stream is closed).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../floors/floor.h"

enum { MAX_FDS = 65536, IN_CAP = 1 << 16, OUT_CAP = 1 << 20 };

struct conn {
  int open;
  int streaming;
  unsigned gen;          // bumped at close: the schedule's entries for a closed stream are skipped
  size_t in_len;
  char *in;
  char *out;             // what the socket has not taken yet
  size_t out_len, out_off;
  long every_us, count, written;
  double due;            // the next chunk's time (µs, CLOCK_MONOTONIC)
};

static struct conn conns[MAX_FDS];
static int ep, tfd;

// The streams now scheduled, and the ordinal and start of the current round (see the top).
static long streams_open, round_k;
static double round_epoch;

// phase(k) as a fraction of the period: splitmix64 of k, so the same k gets the same point every round.
static double phase_of(long k) {
  uint64_t z = (uint64_t)k * 0x9E3779B97F4A7C15ull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ull << 53);
}

// The first chunk's time for a stream starting now: the first point of its phase's grid after now.
static double first_due(long every_us, double now) {
  if (streams_open == 0) {
    round_k = 0;
    round_epoch = now;
  }
  streams_open++;
  double due = round_epoch + phase_of(round_k++) * (double)every_us;
  if (due <= now) due += (double)every_us * (double)(long)((now - due) / (double)every_us + 1);
  return due;
}

struct due { double at; int fd; unsigned gen; };
static struct due *heap;
static size_t heap_len, heap_cap;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void heap_push(struct due d) {
  if (heap_len == heap_cap) {
    heap_cap = heap_cap ? heap_cap * 2 : 1024;
    heap = realloc(heap, heap_cap * sizeof *heap);
    if (!heap) die("realloc");
  }
  size_t i = heap_len++;
  while (i && heap[(i - 1) / 2].at > d.at) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = d;
}

static struct due heap_pop(void) {
  struct due top = heap[0], last = heap[--heap_len];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= heap_len) break;
    if (c + 1 < heap_len && heap[c + 1].at < heap[c].at) c++;
    if (heap[c].at >= last.at) break;
    heap[i] = heap[c];
    i = c;
  }
  if (heap_len) heap[i] = last;
  return top;
}

static void arm_timer(void) {
  struct itimerspec its = {0};
  if (heap_len) {
    double at = heap[0].at;
    its.it_value.tv_sec = (time_t)(at / 1e6);
    its.it_value.tv_nsec = (long)((at - (double)its.it_value.tv_sec * 1e6) * 1e3);
    if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
  }
  timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void close_conn(int fd) {
  struct conn *c = &conns[fd];
  if (c->streaming) streams_open--;
  free(c->in);
  free(c->out);
  unsigned gen = c->gen + 1;
  memset(c, 0, sizeof *c);
  c->gen = gen;
  close(fd);
}

// Writes `buf` behind anything still queued; 0, or -1 when the stream is to be closed.
static int send_bytes(int fd, const char *buf, size_t n) {
  struct conn *c = &conns[fd];
  if (c->out_len == c->out_off) {
    ssize_t w = write(fd, buf, n);
    if (w == (ssize_t)n) return 0;
    if (w < 0 && errno != EAGAIN) return -1;
    if (w > 0) buf += w, n -= (size_t)w;
    c->out_len = c->out_off = 0;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
  }
  if (c->out_len + n > OUT_CAP) return -1;
  if (!c->out) c->out = malloc(OUT_CAP);
  if (!c->out) die("malloc");
  memcpy(c->out + c->out_len, buf, n);
  c->out_len += n;
  return 0;
}

static void flush_out(int fd) {
  struct conn *c = &conns[fd];
  while (c->out_off < c->out_len) {
    ssize_t w = write(fd, c->out + c->out_off, c->out_len - c->out_off);
    if (w < 0 && errno == EAGAIN) return;
    if (w <= 0) return close_conn(fd);
    c->out_off += (size_t)w;
  }
  c->out_len = c->out_off = 0;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
  epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

// One SSE data line in one chunk of the chunked body: `data: <json>\n\n`.
static int send_event(int fd, const char *json, int json_len) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%x\r\ndata: %.*s\n\n\r\n", json_len + 8, json_len, json);
  return send_bytes(fd, buf, (size_t)n);
}

static int chunk_json(char *buf, size_t cap, const char *delta, const char *finish) {
  return snprintf(buf, cap,
                  "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":%ld,"
                  "\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":%s,\"logprobs\":null,"
                  "\"finish_reason\":%s}]}",
                  (long)time(NULL), delta, finish);
}

// The chunks now due for stream `fd`; 0, or -1 when it is to be closed.
static int write_due(int fd, double now) {
  struct conn *c = &conns[fd];
  char json[512], delta[64];
  while (c->due <= now && (!c->count || c->written < c->count)) {
    snprintf(delta, sizeof delta, "{\"content\":\"T%lld;\"}", (long long)now_us());
    if (send_event(fd, json, chunk_json(json, sizeof json, delta, "null")) < 0) return -1;
    c->written++;
    c->due += (double)c->every_us;
  }
  if (c->count && c->written >= c->count) {
    int n = chunk_json(json, sizeof json, "{}", "\"stop\"");
    if (send_event(fd, json, n) < 0) return -1;
    static const char done[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
    if (send_bytes(fd, done, sizeof done - 1) < 0) return -1;
    c->streaming = 0;  // done: the connection stays open for the client to close
    streams_open--;
  }
  return 0;
}

static long script_value(const char *body, size_t n, const char *key, long dflt) {
  size_t k = strlen(key);
  for (size_t i = 0; i + k < n; i++) {
    if ((i == 0 || body[i - 1] == ' ' || body[i - 1] == '"') && memcmp(body + i, key, k) == 0 && body[i + k] == '=')
      return strtol(body + i + k + 1, NULL, 10);
  }
  return dflt;
}

// Handles the requests complete in the connection's buffer; -1 to close it.
static int handle_requests(int fd) {
  struct conn *c = &conns[fd];
  while (!c->streaming) {
    char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end) return c->in_len == IN_CAP ? -1 : 0;
    size_t head = (size_t)(end - c->in) + 4, body = 0;
    for (char *p = c->in; p < end; p++) {
      if (*p == '\n' && strncasecmp(p + 1, "content-length:", 15) == 0) body = strtoul(p + 16, NULL, 10);
    }
    if (head + body > IN_CAP) return -1;
    if (c->in_len < head + body) return 0;
    const char *b = c->in + head;
    if (strncmp(c->in, "GET /v1/models ", 15) == 0) {
      static const char models[] = "{\"object\":\"list\",\"data\":[{\"id\":\"bench\",\"object\":\"model\",\"created\":0,\"owned_by\":\"bench\"}]}";
      char out[512];
      int n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                       sizeof models - 1, models);
      if (send_bytes(fd, out, (size_t)n) < 0) return -1;
    } else if (strncmp(c->in, "POST /v1/chat/completions ", 26) == 0) {
      c->every_us = script_value(b, body, "every", 0) * 1000;
      c->count = script_value(b, body, "count", 1000);
      if (c->every_us <= 0) {
        static const char no[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 36\r\n\r\npaced-upstream serves every=MS only\n";
        send_bytes(fd, no, sizeof no - 1);
        return -1;
      }
      static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
      if (send_bytes(fd, ok, sizeof ok - 1) < 0) return -1;
      char json[512];
      if (send_event(fd, json, chunk_json(json, sizeof json, "{\"role\":\"assistant\",\"content\":\"\"}", "null")) < 0) return -1;
      c->streaming = 1;
      c->due = first_due(c->every_us, now_us());
      heap_push((struct due){c->due, fd, c->gen});
      arm_timer();
    } else {
      static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
      if (send_bytes(fd, nf, sizeof nf - 1) < 0) return -1;
    }
    memmove(c->in, c->in + head + body, c->in_len - head - body);
    c->in_len -= head + body;
  }
  return 0;
}

static void on_readable(int fd) {
  struct conn *c = &conns[fd];
  for (;;) {
    if (c->in_len == IN_CAP) return close_conn(fd);
    ssize_t r = read(fd, c->in + c->in_len, IN_CAP - c->in_len);
    if (r < 0 && errno == EAGAIN) break;
    if (r <= 0) return close_conn(fd);
    if (!c->streaming) {
      c->in_len += (size_t)r;
      if (handle_requests(fd) < 0) return close_conn(fd);
    }
  }
}

int main(int argc, char **argv) {
  int lfd = listen_loopback(argc > 1 ? argv[1] : "0");
  ep = epoll_create1(EPOLL_CLOEXEC);
  tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (ep < 0 || tfd < 0) die("epoll/timerfd");
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.fd = tfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  struct epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == lfd) {
        int cfd;
        while ((cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          if (cfd >= MAX_FDS) {
            close(cfd);
            continue;
          }
          int one = 1;
          setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[cfd].open = 1;
          conns[cfd].in = malloc(IN_CAP);
          if (!conns[cfd].in) die("malloc");
          struct epoll_event cev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = cfd};
          epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &cev);
        }
      } else if (fd == tfd) {
        uint64_t ticks;
        while (read(tfd, &ticks, sizeof ticks) > 0) {}
      } else if (conns[fd].open) {
        if (evs[i].events & EPOLLOUT) flush_out(fd);
        if (conns[fd].open && (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) on_readable(fd);
      }
    }
    // Every chunk now due, earliest first.
    double now = now_us();
    while (heap_len && heap[0].at <= now) {
      struct due d = heap_pop();
      struct conn *c = &conns[d.fd];
      if (!c->open || c->gen != d.gen || !c->streaming) continue;
      if (write_due(d.fd, now) < 0) {
        close_conn(d.fd);
        continue;
      }
      if (c->streaming) heap_push((struct due){c->due, d.fd, d.gen});
    }
    arm_timer();
  }
}
