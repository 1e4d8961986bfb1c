// The lean client of scenarios 4 and 6: an MCP client and a page in one small C program, so that what
// is timed is the server, not the client. (A Node client adds its own event loop to every hop: on
// this machine the `ws` package pinging the engine's channel measured p50 21.6 µs and p99 180-420 µs
// where this client measures 16.1 and 18 µs; a tool call has two such hops on the client's side, and
// Node's tail would hide the server's.) Blocking reads and writes, TCP_NODELAY, no event loop: each
// step of a call happens in the one order the protocol allows.
//
//   toolcall call PORT [options]   tools/call round trips: POST /webmcp/mcp, keep-alive while the server
//                                  keeps the connection (a new connection per call when it closes it)
//       --bearer T --session S --version V   Authorization, Mcp-Session-Id, MCP-Protocol-Version
//       --tool NAME --text TEXT              the call: tools/call NAME {"text": TEXT} (default echo, hello)
//       --path P                             request target (default /webmcp/mcp)
//       --channel PATH --origin O            also be the page: open ws://127.0.0.1:PORT PATH (with Origin O),
//                                            register the tool, and answer each callTool at once with
//                                            toolResponse {result: TEXT}
//   toolcall ping PORT --channel PATH [--origin O]
//                                  page → server {"type":"ping"} → {"type":"pong"} round trips on a WebSocket
//   toolcall echo PORT [-s SIZE]   raw TCP round trips of SIZE bytes (default 64) against an echo server
//                                  (floors/tcp-pingpong serve): its client, reporting the whole percentile grid
//   common: -n COUNT (default 20000) -w WARMUP (default 1000)
//
// Prints one JSON line: {"n","connects","min_us","p50_us","p99_us","max_us","mean_us","dist":[[pct,us],…],
// "req_bytes","resp_bytes","ws_in_bytes","ws_out_bytes","last"} (dist on bench/lib/stats.mjs PCT_GRID plus
// [100,max]; nearest rank; `last`: the last response body, for the caller to check). Exits 1 with a
// message on stderr when anything is not as expected (an HTTP status other than 200, a closed socket).
// Pin it from outside (taskset -c 0).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "toolcall: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static int tcp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket: %m");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect %d: %m", port);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void write_full(int fd, const char *buf, size_t n) {
  while (n) {
    ssize_t w = write(fd, buf, n);
    if (w <= 0) die("write: %m");
    buf += w;
    n -= (size_t)w;
  }
}

// A buffered reader: bytes [off, len) of buf are read and not yet consumed.
struct rd {
  int fd;
  size_t off, len;
  char buf[1 << 17];
};

static void rd_reset(struct rd *r, int fd) {
  r->fd = fd;
  r->off = r->len = 0;
}

// Read more (one read call); 0 on EOF.
static int rd_more(struct rd *r) {
  if (r->off && r->off == r->len) r->off = r->len = 0;
  if (r->len == sizeof r->buf) {
    memmove(r->buf, r->buf + r->off, r->len - r->off);
    r->len -= r->off;
    r->off = 0;
    if (r->len == sizeof r->buf) die("message larger than %zu bytes", sizeof r->buf);
  }
  ssize_t n = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
  if (n < 0) die("read: %m");
  r->len += (size_t)n;
  return n > 0;
}

static size_t rd_avail(const struct rd *r) { return r->len - r->off; }

static void rd_need(struct rd *r, size_t n, const char *what) {
  while (rd_avail(r) < n)
    if (!rd_more(r)) die("connection closed while reading %s", what);
}

// Offset (from r->off) just past the first `pat`, reading as needed.
static size_t rd_until(struct rd *r, const char *pat, const char *what) {
  size_t pl = strlen(pat), from = 0;
  for (;;) {
    char *p = memmem(r->buf + r->off + from, rd_avail(r) - from, pat, pl);
    if (p) return (size_t)(p - (r->buf + r->off)) + pl;
    if (rd_avail(r) >= pl) from = rd_avail(r) - pl + 1;
    if (!rd_more(r)) die("connection closed while reading %s", what);
  }
}

// ---- HTTP/1.1 responses ----

static char body[1 << 16];
static size_t body_len;

// Reads one response; fills body; returns whether the server keeps the connection.
static int read_response(struct rd *r, size_t *resp_bytes) {
  size_t head_len = rd_until(r, "\r\n\r\n", "a response head");
  char head[8192];
  if (head_len >= sizeof head) die("response head too large");
  memcpy(head, r->buf + r->off, head_len);
  head[head_len] = 0;
  r->off += head_len;
  int status = 0;
  if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status != 200) die("unexpected response:\n%s", head);
  for (char *p = head; *p; p++) *p = (char)tolower((unsigned char)*p);
  int keep = strstr(head, "\r\nconnection: close") == NULL && strncmp(head, "http/1.0", 8) != 0;
  size_t total = head_len;
  body_len = 0;
  char *cl = strstr(head, "\r\ncontent-length:");
  if (strstr(head, "\r\ntransfer-encoding: chunked")) {
    for (;;) {
      size_t line = rd_until(r, "\r\n", "a chunk size");
      size_t size = strtoul(r->buf + r->off, NULL, 16);
      r->off += line;
      total += line;
      rd_need(r, size + 2, "a chunk");  // the chunk and its CRLF (for the last chunk: the empty trailer)
      if (size && body_len + size <= sizeof body) {
        memcpy(body + body_len, r->buf + r->off, size);
        body_len += size;
      }
      r->off += size + 2;
      total += size + 2;
      if (!size) break;
    }
  } else if (cl) {
    size_t size = strtoul(cl + 17, NULL, 10);
    rd_need(r, size, "a body");
    memcpy(body, r->buf + r->off, size < sizeof body ? size : sizeof body);
    body_len = size < sizeof body ? size : sizeof body;
    r->off += size;
    total += size;
  } else {
    // Neither: the body ends with the connection.
    while (rd_more(r)) {}
    body_len = rd_avail(r) < sizeof body ? rd_avail(r) : sizeof body;
    memcpy(body, r->buf + r->off, body_len);
    total += rd_avail(r);
    r->off = r->len;
    keep = 0;
  }
  *resp_bytes = total;
  return keep;
}

// ---- WebSocket (client side: frames masked) ----

static void ws_send(int fd, int opcode, const char *data, size_t n) {
  char frame[16 + 65536];
  if (n > 65535) die("frame too large");
  size_t h = 0;
  frame[h++] = (char)(0x80 | opcode);
  if (n < 126) {
    frame[h++] = (char)(0x80 | n);
  } else {
    frame[h++] = (char)(0x80 | 126);
    frame[h++] = (char)(n >> 8);
    frame[h++] = (char)(n & 0xff);
  }
  static unsigned int seed = 0x9e3779b9u;
  seed = seed * 1103515245u + 12345u;
  unsigned char key[4] = {(unsigned char)(seed >> 24), (unsigned char)(seed >> 16), (unsigned char)(seed >> 8), (unsigned char)seed};
  memcpy(frame + h, key, 4);
  h += 4;
  for (size_t i = 0; i < n; i++) frame[h + i] = (char)(data[i] ^ key[i & 3]);
  write_full(fd, frame, h + n);
}

static char msg[1 << 16];
static size_t msg_len;
static size_t ws_in_bytes;

// Reads one whole text message into msg (answering WebSocket pings on the way); dies on close.
static void ws_read_text(struct rd *r) {
  msg_len = 0;
  ws_in_bytes = 0;
  for (;;) {
    rd_need(r, 2, "a frame head");
    unsigned char b0 = (unsigned char)r->buf[r->off], b1 = (unsigned char)r->buf[r->off + 1];
    size_t h = 2, n = b1 & 0x7f;
    if (n == 126) {
      rd_need(r, 4, "a frame head");
      n = ((size_t)(unsigned char)r->buf[r->off + 2] << 8) | (unsigned char)r->buf[r->off + 3];
      h = 4;
    } else if (n == 127) {
      rd_need(r, 10, "a frame head");
      n = 0;
      for (int i = 2; i < 10; i++) n = (n << 8) | (unsigned char)r->buf[r->off + i];
      h = 10;
    }
    if (b1 & 0x80) die("masked frame from the server");
    rd_need(r, h + n, "a frame");
    const char *payload = r->buf + r->off + h;
    int opcode = b0 & 0x0f;
    ws_in_bytes += h + n;
    if (opcode == 0x9) {
      ws_send(r->fd, 0xA, payload, n);
    } else if (opcode == 0x8) {
      die("the server closed the WebSocket (%zu bytes)", n);
    } else if (opcode == 0x1 || opcode == 0x0) {
      if (msg_len + n > sizeof msg) die("message too large");
      memcpy(msg + msg_len, payload, n);
      msg_len += n;
    }
    r->off += h + n;
    if ((b0 & 0x80) && (opcode == 0x1 || opcode == 0x0)) {
      msg[msg_len] = 0;
      return;
    }
  }
}

static int msg_has(const char *s) { return memmem(msg, msg_len, s, strlen(s)) != NULL; }

// Opens a WebSocket at PATH; the 101's head is consumed from r.
static int ws_open(struct rd *r, int port, const char *path, const char *origin) {
  int fd = tcp_connect(port);
  rd_reset(r, fd);
  char req[4096];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                   path, port, origin ? "Origin: " : "", origin ? origin : "", origin ? "\r\n" : "");
  if (n <= 0 || (size_t)n >= sizeof req) die("upgrade request too long");
  write_full(fd, req, (size_t)n);
  size_t head = rd_until(r, "\r\n\r\n", "the upgrade answer");
  if (strncmp(r->buf + r->off, "HTTP/1.1 101", 12) != 0)
    die("upgrade refused: %.*s", (int)head, r->buf + r->off);
  r->off += head;
  return fd;
}

// ---- results ----

static const double GRID[] = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9};

static int cmp_u64(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return x < y ? -1 : x > y;
}

static double at(const unsigned long long *ns, int count, double q) {
  long rank = (long)(q * count + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > count) rank = count;
  return (double)ns[rank - 1] / 1000.0;
}

static void json_string(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static void report(unsigned long long *ns, int count, int connects, size_t req_bytes, size_t resp_bytes, size_t ws_out,
                   size_t ws_in, const char *last, size_t last_len) {
  qsort(ns, (size_t)count, sizeof *ns, cmp_u64);
  double sum = 0;
  for (int i = 0; i < count; i++) sum += (double)ns[i];
  printf("{\"n\":%d,\"connects\":%d,\"min_us\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,\"mean_us\":%.2f,\"dist\":[",
         count, connects, ns[0] / 1000.0, at(ns, count, 0.5), at(ns, count, 0.99), ns[count - 1] / 1000.0, sum / count / 1000.0);
  for (size_t i = 0; i < sizeof GRID / sizeof *GRID; i++) printf("[%g,%.2f],", GRID[i], at(ns, count, GRID[i] / 100));
  printf("[100,%.2f]],\"req_bytes\":%zu,\"resp_bytes\":%zu,\"ws_out_bytes\":%zu,\"ws_in_bytes\":%zu,\"last\":", ns[count - 1] / 1000.0,
         req_bytes, resp_bytes, ws_out, ws_in);
  json_string(last, last_len);
  printf("}\n");
}

// ---- the two modes ----

struct opts {
  int port, count, warmup, size;
  const char *bearer, *session, *version, *tool, *text, *path, *channel, *origin;
};

static struct rd http_rd, ws_rd;

static void run_call(const struct opts *o) {
  int ws = -1;
  char frame[8192];
  if (o->channel) {
    ws = ws_open(&ws_rd, o->port, o->channel, o->origin);
    int n = snprintf(frame, sizeof frame,
                     "{\"type\":\"registerTool\",\"name\":\"%s\",\"description\":\"Echo the text.\",\"inputSchema\":"
                     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}",
                     o->tool);
    ws_send(ws, 0x1, frame, (size_t)n);
    for (;;) {
      ws_read_text(&ws_rd);
      if (msg_has("\"ack\"")) break;
      if (msg_has("\"error\"")) die("registerTool: %s", msg);
    }
  }
  unsigned long long *ns = malloc(sizeof *ns * (size_t)o->count);
  if (!ns) die("malloc");
  int fd = -1, connects = 0;
  size_t req_bytes = 0, resp_bytes = 0, ws_out = 0, ws_in = 0;
  char req[8192], payload[4096], extra[2048];
  int el = 0;
  if (o->bearer) el += snprintf(extra + el, sizeof extra - (size_t)el, "Authorization: Bearer %s\r\n", o->bearer);
  if (o->session) el += snprintf(extra + el, sizeof extra - (size_t)el, "Mcp-Session-Id: %s\r\n", o->session);
  if (o->version) el += snprintf(extra + el, sizeof extra - (size_t)el, "MCP-Protocol-Version: %s\r\n", o->version);
  for (int i = 0; i < o->warmup + o->count; i++) {
    int pl = snprintf(payload, sizeof payload,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":{\"text\":\"%s\"}}}",
                      i + 1, o->tool, o->text);
    int rl = snprintf(req, sizeof req,
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Type: application/json\r\n"
                      "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
                      o->path, o->port, extra, pl, payload);
    unsigned long long t0 = now_ns();
    if (fd < 0) {  // the connection is part of the call when the server does not keep it
      fd = tcp_connect(o->port);
      rd_reset(&http_rd, fd);
      connects += i >= o->warmup;
    }
    write_full(fd, req, (size_t)rl);
    if (ws >= 0) {
      // The page: the engine's callTool, answered at once with the same text the call carried. The
      // engine's app-level ping (every 15 s) is answered as a page must, with a pong.
      ws_read_text(&ws_rd);
      while (msg_has("\"type\":\"ping\"")) {
        ws_send(ws, 0x1, "{\"type\":\"pong\"}", 15);
        ws_read_text(&ws_rd);
      }
      ws_in = ws_in_bytes;
      char *id = memmem(msg, msg_len, "\"id\":\"", 6);
      if (!id || !msg_has("\"callTool\"")) die("expected callTool, got %s", msg);
      id += 6;
      char *end = memchr(id, '"', msg_len - (size_t)(id - msg));
      if (!end) die("bad callTool id: %s", msg);
      int fl = snprintf(frame, sizeof frame, "{\"type\":\"toolResponse\",\"id\":\"%.*s\",\"result\":\"%s\"}", (int)(end - id), id, o->text);
      ws_send(ws, 0x1, frame, (size_t)fl);
      ws_out = (size_t)fl + 6;
    }
    int keep = read_response(&http_rd, &resp_bytes);
    unsigned long long t1 = now_ns();
    if (i >= o->warmup) ns[i - o->warmup] = t1 - t0;
    req_bytes = (size_t)rl;
    if (!keep) {
      // Wait for the server's close (it closes first: its side keeps TIME_WAIT, the client's ports stay free).
      while (rd_more(&http_rd)) {}
      close(fd);
      fd = -1;
    }
  }
  if (!memmem(body, body_len, o->text, strlen(o->text))) die("the last answer does not carry the text: %.*s", (int)body_len, body);
  report(ns, o->count, connects, req_bytes, resp_bytes, ws_out, ws_in, body, body_len);
  if (fd >= 0) close(fd);
  if (ws >= 0) close(ws);
  free(ns);
}

static void run_ping(const struct opts *o) {
  int ws = ws_open(&ws_rd, o->port, o->channel, o->origin);
  unsigned long long *ns = malloc(sizeof *ns * (size_t)o->count);
  if (!ns) die("malloc");
  static const char ping[] = "{\"type\":\"ping\"}";
  for (int i = 0; i < o->warmup + o->count; i++) {
    unsigned long long t0 = now_ns();
    ws_send(ws, 0x1, ping, sizeof ping - 1);
    for (;;) {
      ws_read_text(&ws_rd);
      if (msg_has("\"pong\"")) break;
      // The engine's own ping (every 15 s): answered as the spec asks, and this round trip waits on.
      if (msg_has("\"ping\"")) ws_send(ws, 0x1, "{\"type\":\"pong\"}", 15);
      else die("expected pong, got %s", msg);
    }
    unsigned long long t1 = now_ns();
    if (i >= o->warmup) ns[i - o->warmup] = t1 - t0;
  }
  report(ns, o->count, 1, 0, 0, sizeof ping - 1 + 6, ws_in_bytes, msg, msg_len);
  close(ws);
  free(ns);
}

static void run_echo(const struct opts *o) {
  int fd = tcp_connect(o->port);
  rd_reset(&http_rd, fd);
  unsigned long long *ns = malloc(sizeof *ns * (size_t)o->count);
  char *out = malloc((size_t)o->size);
  if (!ns || !out) die("malloc");
  memset(out, 'x', (size_t)o->size);
  for (int i = 0; i < o->warmup + o->count; i++) {
    unsigned long long t0 = now_ns();
    write_full(fd, out, (size_t)o->size);
    rd_need(&http_rd, (size_t)o->size, "the echo");
    http_rd.off += (size_t)o->size;
    unsigned long long t1 = now_ns();
    if (i >= o->warmup) ns[i - o->warmup] = t1 - t0;
  }
  report(ns, o->count, 1, (size_t)o->size, (size_t)o->size, 0, 0, "", 0);
  close(fd);
  free(ns);
  free(out);
}

int main(int argc, char **argv) {
  struct opts o = {.count = 20000, .warmup = 1000, .size = 64, .tool = "echo", .text = "hello", .path = "/webmcp/mcp"};
  if (argc < 3 || (strcmp(argv[1], "call") && strcmp(argv[1], "ping") && strcmp(argv[1], "echo"))) {
    fprintf(stderr, "usage: %s call|ping|echo PORT [-s SIZE] [--bearer T] [--session S] [--version V] [--tool NAME] [--text TEXT] [--path P]\n"
                    "       [--channel PATH] [--origin O] [-n COUNT] [-w WARMUP]\n", argv[0]);
    return 2;
  }
  o.port = atoi(argv[2]);
  for (int i = 3; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--bearer")) o.bearer = v;
    else if (!strcmp(k, "--session")) o.session = v;
    else if (!strcmp(k, "--version")) o.version = v;
    else if (!strcmp(k, "--tool")) o.tool = v;
    else if (!strcmp(k, "--text")) o.text = v;
    else if (!strcmp(k, "--path")) o.path = v;
    else if (!strcmp(k, "--channel")) o.channel = v;
    else if (!strcmp(k, "--origin")) o.origin = v;
    else if (!strcmp(k, "-n")) o.count = atoi(v);
    else if (!strcmp(k, "-w")) o.warmup = atoi(v);
    else if (!strcmp(k, "-s")) o.size = atoi(v);
    else die("unknown option %s", k);
  }
  if ((argc - 3) % 2) die("option %s without a value", argv[argc - 1]);
  if (o.count < 1 || o.warmup < 0 || o.port <= 0 || o.size < 1) die("bad -n, -w, -s or PORT");
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(argv[1], "echo")) {
    run_echo(&o);
  } else if (!strcmp(argv[1], "ping")) {
    if (!o.channel) die("ping needs --channel");
    run_ping(&o);
  } else {
    run_call(&o);
  }
  return 0;
}
