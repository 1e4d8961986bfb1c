// The lean client of scenario 5 (prepare → approve → first token): what is timed is the server, not the
// client. The scenario's client shares CPU 0 with the server (a latency client's place). A Node client
// there ran about 700 µs on that CPU after the approve's answer and before it read the token, while the
// model server was writing the token: the engine woke late to relay it, and the client read it later
// still (a `perf` trace of the sched and syscall tracepoints; docs/PERFORMANCE.md, scenario 5). The
// direct request and nginx's send the client nothing before the token, so that time counted against
// the engine only. This client reads what comes in the order it comes, with nothing else to do.
//
// One trial per line on stdin, one line out per trial ("<µs>" or "error <why>"), so the driver (Node)
// can prepare and close the engine's sessions between trials, off the clock. With IDLE_US (argv[2]), each
// timed trial waits that long after reading its line before its clock starts: the model server's CPU is
// then idle when the request reaches it, for every contender alike (below).
//   chat PORT                     POST /v1/chat/completions (the body: argv[1]) on a fresh connection
//   models-chat PORT              GET /v1/models on a fresh connection, then `chat` (the clock spans both)
//   get PORT PATH                 GET PATH on a fresh connection (the Node relay's /llm)
//   open PORT SESSION ORIGIN BEARER
//                                 open GET /session/SESSION/stream (Origin, Authorization: Bearer) on a fresh
//                                 connection and read its head (200); answers "open". Not timed
//   approve PORT SESSION ORIGIN BEARER
//                                 timed: POST /session/SESSION/approve on a fresh connection (kept alive, as a
//                                 page's fetch), reading it and the session's stream (opened by `open`, else
//                                 first opened here, untimed) as bytes arrive. The approve's answer must be 200
// Why the wait, and why the engine's stream has a line of its own: the driver runs on CPU 1 with the model
// server, and a request that reached the model server soon after the driver's last work there found that
// CPU awake; one that came later found it idle, and on this VM an idle vCPU wakes later and answers slower
// (in a trace, the model server's CPU idle for 39 µs before nginx's request and 196 µs before the engine's;
// 95 µs once the engine's stream was opened off the clock). So how soon a contender's request followed the
// driver's line counted for it, which is not its own cost. With the wait, every request finds that CPU idle:
// nginx's p50 rose by about 110 µs, the engine's by as much, the direct request's by about 55 (its connect
// wakes the model server before its request comes). The stream is opened off the clock for the same reason:
// opened in the timed trial, it put 150-200 µs more between the driver's line and the engine's request
// (docs/PERFORMANCE.md, findings, "scenario 5, the harness").
// Each clock starts before the timed request's connect and stops at the read that holds the first token
// (`T<digits>;` in the body, chunked framing undone). Each answer is read to its end (`data: [DONE]`,
// `event: turn_completed`, or the connection's close), as the Node client did. Pin it from outside
// (taskset -c 0).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

static const char *chat_body;

static int write_full(int fd, const char *buf, size_t n) {
  while (n) {
    ssize_t w = write(fd, buf, n);
    if (w <= 0) return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

// One response as it is read: its head, then its body with chunked framing undone, scanned for the
// first token and for the end of the answer.
struct resp {
  int fd;
  int status;      // 0 until the head is in
  int chunked;
  struct unchunk body;  // the chunked framing's state
  char head[8192];
  size_t head_len;
  char tail[32];   // the body's last bytes: a token or an end split across two reads
  size_t tail_len;
  int token;       // a token was seen
  int ended;       // the answer's end was seen, or the connection closed
  long length;     // the body's Content-Length, -1 without one
  long got;        // body bytes read, of a body with a Content-Length
};

static void resp_init(struct resp *r, int fd) {
  memset(r, 0, sizeof *r);
  r->fd = fd;
  r->length = -1;
}

// Body bytes: look for a token and for the end, across reads (the last bytes are kept).
static void body_bytes(struct resp *r, const char *d, size_t n) {
  char buf[32 + 65536];
  size_t k = r->tail_len;
  memcpy(buf, r->tail, k);
  if (n > 65536) n = 65536;  // longer bodies hold no token this scenario needs
  memcpy(buf + k, d, n);
  k += n;
  if (!r->token) {
    for (size_t i = 0; i + 2 < k && !r->token; i++) {
      if (buf[i] != 'T' || !isdigit((unsigned char)buf[i + 1])) continue;
      size_t j = i + 1;
      while (j < k && isdigit((unsigned char)buf[j])) j++;
      if (j < k && buf[j] == ';') r->token = 1;
    }
  }
  if (memmem(buf, k, "data: [DONE]", 12) || memmem(buf, k, "event: turn_completed", 21)) r->ended = 1;
  size_t keep = k < sizeof r->tail ? k : sizeof r->tail;
  memcpy(r->tail, buf + k - keep, keep);
  r->tail_len = keep;
}

static void on_data(void *r, const char *d, size_t n) { body_bytes(r, d, n); }

static void dechunk(struct resp *r, const char *d, size_t n) {
  if (!r->chunked) {
    body_bytes(r, d, n);
    r->got += (long)n;
    if (r->length >= 0 && r->got >= r->length) r->ended = 1;
    return;
  }
  if (!r->ended) unchunk(&r->body, d, n, on_data, r);
  if (r->body.last) r->ended = 1;
}

// One read of the socket; -1 on an error (errno) or a bad head. At EOF the answer has ended.
static int resp_read(struct resp *r) {
  char buf[65536];
  ssize_t n = read(r->fd, buf, sizeof buf);
  if (n < 0) return -1;
  if (n == 0) {
    r->ended = 1;
    return 0;
  }
  const char *d = buf;
  size_t len = (size_t)n;
  if (!r->status) {
    size_t take = len < sizeof r->head - 1 - r->head_len ? len : sizeof r->head - 1 - r->head_len;
    memcpy(r->head + r->head_len, d, take);
    r->head_len += take;
    r->head[r->head_len] = 0;
    char *end = strstr(r->head, "\r\n\r\n");
    if (!end) {
      if (r->head_len == sizeof r->head - 1) return -1;
      return 0;
    }
    size_t head_bytes = (size_t)(end + 4 - r->head);
    if (sscanf(r->head, "HTTP/1.%*d %d", &r->status) != 1 || r->status == 0) return -1;
    for (char *p = r->head; p < end; p++) *p = (char)tolower((unsigned char)*p);
    r->chunked = memmem(r->head, head_bytes, "\r\ntransfer-encoding: chunked", 28) != NULL;
    const char *cl = memmem(r->head, head_bytes, "\r\ncontent-length:", 17);
    if (cl && !r->chunked) r->length = strtol(cl + 17, NULL, 10);
    size_t used = head_bytes - (r->head_len - take);  // of this read's bytes, those of the head
    d += used;
    len -= used;
    if (r->length == 0) r->ended = 1;
  }
  if (len) dechunk(r, d, len);
  return 0;
}

static int send_request(int fd, int port, const char *method, const char *path, const char *extra,
                        const char *body) {
  char req[70000];
  int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %zu\r\n\r\n%s",
                   method, path, port, extra, strlen(body), body);
  if (n < 0 || (size_t)n >= sizeof req) return -1;
  return write_full(fd, req, (size_t)n);
}

// A request on a fresh connection, read to its end. Returns when the first token was read (now_us();
// 0 if none came and none was wanted), or -1 with `why` set.
static double one_request(int port, const char *method, const char *path, const char *extra, const char *body,
                          int want_token, char *why, size_t why_len) {
  int fd = tcp_connect(port);
  if (fd < 0) return snprintf(why, why_len, "connect %d: %s", port, strerror(errno)), -1;
  double first = 0;
  struct resp r;
  resp_init(&r, fd);
  if (send_request(fd, port, method, path, extra, body) < 0) {
    close(fd);
    return snprintf(why, why_len, "write: %s", strerror(errno)), -1;
  }
  while (!r.ended) {
    if (resp_read(&r) < 0) {
      close(fd);
      return snprintf(why, why_len, "read %s %s: %s", method, path, r.head_len ? "bad head" : strerror(errno)), -1;
    }
    if (r.token && !first) first = now_us();
  }
  close(fd);
  if (r.status != 200) return snprintf(why, why_len, "%s %s: HTTP %d", method, path, r.status), -1;
  if (want_token && !first) return snprintf(why, why_len, "%s %s: no token", method, path), -1;
  return first;
}

// The session's event stream, opened by `open` (or by `approve` itself when it was not) and read to its
// end by the approve that follows.
static struct {
  int fd;  // -1: none open
  char session[256];
  struct resp r;
} opened = {.fd = -1};

static void close_opened(void) {
  if (opened.fd >= 0) close(opened.fd);
  opened.fd = -1;
}

// A page's headers: its origin and its bearer token.
static void page_headers(char *out, size_t n, const char *origin, const char *bearer) {
  snprintf(out, n, "Origin: %s\r\nAuthorization: Bearer %s\r\n", origin, bearer);
}

// GET /session/SESSION/stream on a fresh connection, its head read (200): 0, or -1 with `why` set.
static int open_stream(int port, const char *session, const char *origin, const char *bearer, char *why,
                       size_t why_len) {
  close_opened();
  char extra[2048];
  page_headers(extra, sizeof extra, origin, bearer);
  int sfd = tcp_connect(port);
  if (sfd < 0) return snprintf(why, why_len, "connect %d: %s", port, strerror(errno)), -1;
  resp_init(&opened.r, sfd);
  char path[512], stream_extra[2200];
  snprintf(stream_extra, sizeof stream_extra, "%sAccept: text/event-stream\r\n", extra);
  snprintf(path, sizeof path, "/session/%s/stream", session);
  if (send_request(sfd, port, "GET", path, stream_extra, "") < 0) {
    close(sfd);
    return snprintf(why, why_len, "write: %s", strerror(errno)), -1;
  }
  while (!opened.r.status && !opened.r.ended)
    if (resp_read(&opened.r) < 0) break;
  if (opened.r.status != 200) {
    close(sfd);
    return snprintf(why, why_len, "stream: HTTP %d", opened.r.status), -1;
  }
  opened.fd = sfd;
  snprintf(opened.session, sizeof opened.session, "%s", session);
  return 0;
}

static double approve(int port, const char *session, const char *origin, const char *bearer, char *why,
                      size_t why_len) {
  if ((opened.fd < 0 || strcmp(opened.session, session)) && open_stream(port, session, origin, bearer, why, why_len) < 0)
    return -1;
  char path[512], extra[2048];
  page_headers(extra, sizeof extra, origin, bearer);
  int sfd = opened.fd;
  struct resp *stream = &opened.r;
  opened.fd = -1;  // this trial closes it

  // The clock starts here.
  double t0 = now_us(), first = 0;
  int afd = tcp_connect(port);
  if (afd < 0) {
    close(sfd);
    return snprintf(why, why_len, "connect %d: %s", port, strerror(errno)), -1;
  }
  struct resp ans;
  resp_init(&ans, afd);
  char approve_extra[2200];
  // No `Connection: close`: a page's fetch keeps its connection (the header is one fetch may not set), so
  // the engine never closes it after the answer; asked to, it did so between sending the model request and
  // reading its answer, and this client woke once more to read the close (docs/PERFORMANCE.md, findings,
  // "scenario 5, the approve's connection"). The answer's end is its Content-Length; the connection is
  // closed after the trial, off the clock, as the other contenders' are.
  snprintf(approve_extra, sizeof approve_extra, "%sContent-Type: application/json\r\n", extra);
  snprintf(path, sizeof path, "/session/%s/approve", session);
  int failed = send_request(afd, port, "POST", path, approve_extra, "") < 0;
  while (!failed && !(stream->ended && ans.ended)) {
    struct pollfd p[2] = {{.fd = sfd, .events = stream->ended ? 0 : POLLIN},
                          {.fd = afd, .events = ans.ended ? 0 : POLLIN}};
    if (poll(p, 2, 10000) <= 0) {
      failed = 1;
      break;
    }
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && resp_read(stream) < 0) failed = 1;
    if (stream->token && !first) first = now_us();
    if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && resp_read(&ans) < 0) failed = 1;
  }
  close(afd);
  close(sfd);
  if (failed) return snprintf(why, why_len, "approve: %s", errno ? strerror(errno) : "timed out"), -1;
  if (ans.status != 200) return snprintf(why, why_len, "approve: HTTP %d", ans.status), -1;
  if (!first) return snprintf(why, why_len, "approve: no token on the stream"), -1;
  return first - t0;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: firsttoken CHAT_BODY [IDLE_US]  (trials on stdin; see the comment at the top)\n");
    return 2;
  }
  chat_body = argv[1];
  const useconds_t idle_us = argc == 3 ? (useconds_t)atoi(argv[2]) : 0;
  const char *json = "Content-Type: application/json\r\nAccept: text/event-stream\r\n";
  char line[4096], why[512];
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32], a[256], b[256], c[256];
    int port = 0;
    double us = -1;
    why[0] = 0;
    errno = 0;
    int n = sscanf(line, "%31s %d %255s %255s %255s", cmd, &port, a, b, c);
    if (idle_us && n >= 2 && strcmp(cmd, "open")) usleep(idle_us);  // cmd is unset on a blank line
    if (n >= 2 && !strcmp(cmd, "chat")) {
      double t0 = now_us(), first = one_request(port, "POST", "/v1/chat/completions", json, chat_body, 1, why, sizeof why);
      if (first >= 0) us = first - t0;
    } else if (n >= 2 && !strcmp(cmd, "models-chat")) {
      double t0 = now_us();
      if (one_request(port, "GET", "/v1/models", "Connection: close\r\n", "", 0, why, sizeof why) >= 0) {
        double first = one_request(port, "POST", "/v1/chat/completions", json, chat_body, 1, why, sizeof why);
        if (first >= 0) us = first - t0;
      }
    } else if (n >= 3 && !strcmp(cmd, "get")) {
      double t0 = now_us(), first = one_request(port, "GET", a, "Accept: text/event-stream\r\n", "", 1, why, sizeof why);
      if (first >= 0) us = first - t0;
    } else if (n >= 5 && !strcmp(cmd, "open")) {
      if (open_stream(port, a, b, c, why, sizeof why) == 0) {
        printf("open\n");
        continue;
      }
    } else if (n >= 5 && !strcmp(cmd, "approve")) {
      us = approve(port, a, b, c, why, sizeof why);
    } else {
      snprintf(why, sizeof why, "unknown trial: %.200s", line);
    }
    if (us >= 0) printf("%.1f\n", us);
    else printf("error %s\n", why);
  }
  return 0;
}
