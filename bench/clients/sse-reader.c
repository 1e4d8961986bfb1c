// Scenario 7's reader: holds many SSE streams open and times every token in them (`T<digits>;`, the
// model server's CLOCK_MONOTONIC in µs when it wrote the chunk, against this process's clock when the
// read that holds it returns; chunked framing undone). In C for the reason bench/fakes/paced-upstream.c
// is: a Node reader beside the model server paused for its garbage collector, a few ms at a time, and
// those pauses, not the relays, decided the rounds' p99 (docs/PERFORMANCE.md, "Scenario 7's tail").
//
// One command per line on stdin, one line of answer each, in order (bench/lib/proc.mjs spawnLineClient):
//   chat PORT                    POST /v1/chat/completions (the body: argv[1]) on a new connection
//   get PORT PATH                GET PATH (the Node relay's /llm)
//   open PORT SESSION ORIGIN BEARER
//                                GET /session/SESSION/stream with Origin and Authorization: Bearer
//     each answers "open <status>" once the response's head is read (or "error <why>"); the stream is
//     then read with the others, whatever its status
//   count                        "<streams> <streams with a token> <streams ended>"
//   mark                         from now on, every token's latency is kept ("marked")
//   take                         "<n> <µs> <µs> …": the latencies kept since mark, in µs to 0.1; stops keeping
//   close                        closes every stream ("closed")
// Pin it from outside (taskset -c 1: a throughput reader).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

enum { BUF = 1 << 16, MAX_STREAMS = 8192 };

struct stream {
  int fd;
  int chunked;
  int ended;
  long tokens;
  struct unchunk body;  // the chunked framing's state
  // A token cut by a read or a chunk boundary: its first bytes (`T` and digits), finished by what follows.
  char carry[32];
  int carry_len;
};

static struct stream streams[MAX_STREAMS];
static int nstreams;
static int ep;
static const char *chat_body = "";
static int keeping;
static float *kept;
static size_t kept_len, kept_cap;

static void keep(double lat) {
  if (kept_len == kept_cap) {
    kept_cap = kept_cap ? kept_cap * 2 : 1 << 18;
    kept = realloc(kept, kept_cap * sizeof *kept);
    if (!kept) {
      perror("realloc");
      exit(1);
    }
  }
  kept[kept_len++] = (float)lat;
}

// Body bytes: the tokens in them, each timed against `t`, a token cut at the end carried to the next.
static void scan(struct stream *s, const char *p, size_t n, double t) {
  size_t i = 0;
  if (s->carry_len) {
    while (i < n && s->carry_len < (int)sizeof s->carry - 1 && p[i] >= '0' && p[i] <= '9') s->carry[s->carry_len++] = p[i++];
    if (i < n) {
      if (p[i] == ';' && s->carry_len > 1) {
        s->carry[s->carry_len] = 0;
        s->tokens++;
        if (keeping) keep(t - strtod(s->carry + 1, NULL));
      }
      s->carry_len = 0;
    }
  }
  for (; i < n; i++) {
    if (p[i] != 'T') continue;
    size_t j = i + 1;
    while (j < n && p[j] >= '0' && p[j] <= '9') j++;
    if (j == n) {  // cut: carried to the next bytes
      if (j - i < sizeof s->carry) {
        memcpy(s->carry, p + i, j - i);
        s->carry_len = (int)(j - i);
      }
      return;
    }
    if (p[j] == ';' && j > i + 1) {
      s->tokens++;
      if (keeping) keep(t - strtod(p + i + 1, NULL));
    }
    i = j;
  }
}

// What scan needs beside the bytes, for unchunk's callback.
struct scan_ctx {
  struct stream *s;
  double t;
};

static void on_data(void *ctx, const char *p, size_t n) {
  struct scan_ctx *c = ctx;
  scan(c->s, p, n, c->t);
}

// Undoes the chunked framing of what a read gave, handing the data to scan.
static void body(struct stream *s, const char *p, size_t n, double t) {
  if (!s->chunked) return scan(s, p, n, t);
  struct scan_ctx c = {s, t};
  unchunk(&s->body, p, n, on_data, &c);
}

static void end_stream(struct stream *s) {
  if (s->fd >= 0) {
    epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
  }
  s->fd = -1;
  s->ended = 1;
}

static void on_readable(struct stream *s) {
  static char buf[BUF];
  for (;;) {
    ssize_t r = read(s->fd, buf, sizeof buf);
    double t = now_us();
    if (r < 0 && errno == EAGAIN) return;
    if (r <= 0) return end_stream(s);
    body(s, buf, (size_t)r, t);
    if ((size_t)r < sizeof buf) return;
  }
}

// Sends `req` on a new connection and reads the response's head (blocking, 10 s at most); what came after
// the head is the body's first bytes. Answers the command.
static void open_stream(int port, const char *req, size_t req_len) {
  if (nstreams == MAX_STREAMS) {
    printf("error too many streams\n");
    return;
  }
  int fd = tcp_connect(port);
  if (fd < 0) {
    printf("error connect: %s\n", strerror(errno));
    return;
  }
  if (write(fd, req, req_len) != (ssize_t)req_len) {
    printf("error write: %s\n", strerror(errno));
    close(fd);
    return;
  }
  static char head[BUF];
  size_t len = 0;
  char *end = NULL;
  while (!end) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ssize_t r = poll(&pfd, 1, 10000) == 1 ? read(fd, head + len, sizeof head - 1 - len) : -2;
    if (r <= 0) {
      printf("error %s before the response head\n", r == -2 ? "10 s" : r == 0 ? "closed" : strerror(errno));
      close(fd);
      return;
    }
    len += (size_t)r;
    head[len] = 0;
    end = strstr(head, "\r\n\r\n");
    if (!end && len == sizeof head - 1) {
      printf("error a response head over 64 KB\n");
      close(fd);
      return;
    }
  }
  double t = now_us();
  struct stream *s = &streams[nstreams++];
  memset(s, 0, sizeof *s);
  s->fd = fd;
  int status = atoi(head + 9);
  for (char *p = head; p < end; p++) {
    if (*p == '\n' && strncasecmp(p + 1, "transfer-encoding:", 18) == 0) s->chunked = strncasecmp(p + 19 + strspn(p + 19, " "), "chunked", 7) == 0;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t off = (size_t)(end - head) + 4;
  if (len > off) body(s, head + off, len - off, t);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (unsigned)(s - streams)};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  printf("open %d\n", status);
}

static void command(char *line) {
  char *argv[8];
  int argc = 0;
  for (char *tok = strtok(line, " "); tok && argc < 8; tok = strtok(NULL, " ")) argv[argc++] = tok;
  static char req[BUF];
  int n;
  if (argc == 2 && strcmp(argv[0], "chat") == 0) {
    n = snprintf(req, sizeof req,
                 "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\n"
                 "Accept: text/event-stream\r\nContent-Length: %zu\r\n\r\n%s",
                 argv[1], strlen(chat_body), chat_body);
    open_stream(atoi(argv[1]), req, (size_t)n);
  } else if (argc == 3 && strcmp(argv[0], "get") == 0) {
    n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAccept: text/event-stream\r\n\r\n", argv[2], argv[1]);
    open_stream(atoi(argv[1]), req, (size_t)n);
  } else if (argc == 5 && strcmp(argv[0], "open") == 0) {
    n = snprintf(req, sizeof req,
                 "GET /session/%s/stream HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nOrigin: %s\r\n"
                 "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n",
                 argv[2], argv[1], argv[3], argv[4]);
    open_stream(atoi(argv[1]), req, (size_t)n);
  } else if (argc == 1 && strcmp(argv[0], "count") == 0) {
    int with = 0, ended = 0;
    for (int i = 0; i < nstreams; i++) with += streams[i].tokens > 0, ended += streams[i].ended;
    printf("%d %d %d\n", nstreams, with, ended);
  } else if (argc == 1 && strcmp(argv[0], "mark") == 0) {
    kept_len = 0;
    keeping = 1;
    printf("marked\n");
  } else if (argc == 1 && strcmp(argv[0], "take") == 0) {
    keeping = 0;
    printf("%zu", kept_len);
    for (size_t i = 0; i < kept_len; i++) printf(" %.1f", kept[i]);
    printf("\n");
  } else if (argc == 1 && strcmp(argv[0], "close") == 0) {
    for (int i = 0; i < nstreams; i++) end_stream(&streams[i]);
    nstreams = 0;
    printf("closed\n");
  } else {
    printf("error unknown command\n");
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc > 1) chat_body = argv[1];
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return perror("epoll_create1"), 1;
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MAX_STREAMS};
  epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
  static char in[BUF];
  size_t in_len = 0;
  struct epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0 && errno != EINTR) return perror("epoll_wait"), 1;
    for (int i = 0; i < n; i++) {
      unsigned k = evs[i].data.u32;
      if (k < MAX_STREAMS) {
        if (streams[k].fd >= 0 && !streams[k].ended) on_readable(&streams[k]);
        continue;
      }
      ssize_t r = read(0, in + in_len, sizeof in - 1 - in_len);
      if (r <= 0) return 0;  // the driver is done
      in_len += (size_t)r;
      char *nl;
      while ((nl = memchr(in, '\n', in_len))) {
        *nl = 0;
        command(in);
        size_t used = (size_t)(nl - in) + 1;
        memmove(in, in + used, in_len - used);
        in_len -= used;
      }
    }
  }
}
