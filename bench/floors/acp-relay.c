// The ACP relay floor: the least a process can do to carry an ACP agent's `agent_message_chunk`s to a
// page's event stream. It speaks the same routes as the Node relay's ACP side (bench/baselines/
// node-relay.mjs), so scenario 3 drives all three the same way:
//
//   GET  /acp/stream         spawns the agent, sends `initialize` and `session/new`, answers with an
//                            event stream: `ready` {"id"} once the agent has a session
//   POST /acp/<id>/prompt    sends `session/prompt`; each chunk the agent writes becomes a `chunk` event
//                            (its text copied as the agent escaped it); the prompt's answer ends the
//                            turn with `turn_completed` {"text"}
//
//   acp-relay PORT AGENT_ARGV...   (PORT 0 picks one; prints "listening on <port>")
//
// What makes it a floor: one thread, one epoll set, level-triggered; one read of the agent's stdout per
// wakeup (64 KB of room, so every line already written comes in it) and one write of all the events
// those lines make. No JSON parser: a line is recognised by its text. It never reads a drained pipe
// twice (the engine's Asio reads once more until EAGAIN), so it marks the least a wakeup costs.
// One session at a time; the stream's socket is blocking, which a benchmark's reader never stalls.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "floor.h"

#define IN_MAX 65536
#define MAX_CONNS 16

extern char **environ;

struct buf {
  char *p;
  size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 4096;
    b->p = realloc(b->p, b->cap);
    if (!b->p) die("realloc");
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}
static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // the reader left: its connection's close ends the session
    }
    p += w;
    n -= (size_t)w;
  }
}

// The HTTP connections: requests are read into `in` until the head (and a Content-Length body) is whole.
struct conn {
  int fd;
  char in[4096];
  size_t len;
};
static struct conn conns[MAX_CONNS];

// The one session: the agent's pipes, the page's stream, the turn's text.
static struct {
  pid_t pid;
  int to_agent, from_agent, stream;
  int id, ready, in_turn;
  char session_id[256];
  char line[IN_MAX * 2];
  size_t line_len;
  struct buf text, out;
} s = {.pid = -1, .to_agent = -1, .from_agent = -1, .stream = -1};

static int ep;
static char **agent_argv;
static int next_id;

static void watch(int fd, void *ptr) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
}

static void to_agent(const char *line) {
  write_all(s.to_agent, line, strlen(line));
}

static void session_end(void) {
  if (s.pid > 0) {
    kill(s.pid, SIGTERM);
    waitpid(s.pid, NULL, 0);
  }
  if (s.from_agent >= 0) close(s.from_agent);  // closing removes it from the epoll set
  if (s.to_agent >= 0) close(s.to_agent);
  s.pid = -1;
  s.from_agent = s.to_agent = -1;
  s.stream = -1;
  s.ready = s.in_turn = 0;
  s.line_len = s.text.len = s.out.len = 0;
}

static void session_start(int stream) {
  if (s.pid > 0) session_end();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) die("pipe2");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  if (posix_spawnp(&s.pid, agent_argv[0], &fa, NULL, agent_argv, environ) != 0) die("posix_spawnp");
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  s.to_agent = in[1];
  s.from_agent = out[0];
  s.stream = stream;
  s.id = ++next_id;
  watch(s.from_agent, &s);
  const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     "Connection: close\r\n\r\n";
  write_all(stream, head, strlen(head));
  to_agent("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,"
           "\"clientCapabilities\":{}}}\n");
  to_agent("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}\n");
}

// The raw JSON string after `key` ("text":") in [p, end): its bytes up to the unescaped closing quote.
static const char *raw_string(const char *p, const char *end, const char *key, size_t *n) {
  const char *k = memmem(p, (size_t)(end - p), key, strlen(key));
  if (!k) return NULL;
  const char *v = k + strlen(key), *q = v;
  while (q < end && *q != '"') q += *q == '\\' ? 2 : 1;
  if (q >= end) return NULL;
  *n = (size_t)(q - v);
  return v;
}

static void event(const char *name, const char *data, size_t n) {
  puts_(&s.out, "event: ");
  puts_(&s.out, name);
  puts_(&s.out, "\ndata: ");
  put(&s.out, data, n);
  puts_(&s.out, "\n\n");
}

static void on_line(const char *p, size_t n) {
  const char *end = p + n;
  size_t len;
  if (memmem(p, n, "\"agent_message_chunk\"", 21)) {
    const char *t = raw_string(p, end, "\"text\":\"", &len);
    if (!t) return;
    put(&s.text, t, len);
    puts_(&s.out, "event: chunk\ndata: \"");
    put(&s.out, t, len);
    puts_(&s.out, "\"\n\n");
  } else if (memmem(p, n, "\"method\"", 8)) {
    // A request to the client (none in this scenario) gets an error; other notifications are dropped.
    const char *id = memmem(p, n, "\"id\":", 5);
    if (!id) return;
    id += 5;
    const char *e = id;
    while (e < end && *e != ',' && *e != '}') e++;
    char reply[256];
    snprintf(reply, sizeof reply, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":-32601,\"message\":\"not supported\"}}\n",
             (int)(e - id > 64 ? 64 : e - id), id);
    to_agent(reply);
  } else if (!s.ready && memmem(p, n, "\"id\":1,", 7)) {
    const char *sid = raw_string(p, end, "\"sessionId\":\"", &len);
    if (!sid || len >= sizeof s.session_id) return;
    memcpy(s.session_id, sid, len);
    s.session_id[len] = 0;
    s.ready = 1;
    char data[64];
    int k = snprintf(data, sizeof data, "{\"id\":\"%d\"}", s.id);
    event("ready", data, (size_t)k);
  } else if (s.in_turn && memmem(p, n, "\"id\":2,", 7)) {
    s.in_turn = 0;
    puts_(&s.out, "event: turn_completed\ndata: {\"text\":\"");
    put(&s.out, s.text.p, s.text.len);
    puts_(&s.out, "\"}\n\n");
  }
}

// One read of the agent's stdout, every whole line in it handled, and one write of what they made.
static void on_agent(void) {
  ssize_t r = read(s.from_agent, s.line + s.line_len, sizeof s.line - s.line_len);
  if (r <= 0) {
    if (r < 0 && errno == EINTR) return;
    event("failed", "\"the agent left\"", 16);
    write_all(s.stream, s.out.p, s.out.len);
    session_end();
    return;
  }
  s.line_len += (size_t)r;
  char *p = s.line, *end = s.line + s.line_len, *nl;
  while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
    on_line(p, (size_t)(nl - p));
    p = nl + 1;
  }
  s.line_len = (size_t)(end - p);
  memmove(s.line, p, s.line_len);
  if (s.line_len == sizeof s.line) s.line_len = 0;  // a line longer than the buffer is not ours to read
  if (s.out.len && s.stream >= 0) write_all(s.stream, s.out.p, s.out.len);
  s.out.len = 0;
}

static void conn_close(struct conn *c) {
  if (c->fd == s.stream) session_end();
  close(c->fd);
  c->fd = -1;
}

static void answer(struct conn *c, int status, const char *body) {
  char head[256];
  int k = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n", status, status == 200 ? "OK" : "Not Found", strlen(body));
  write_all(c->fd, head, (size_t)k);
  write_all(c->fd, body, strlen(body));
  conn_close(c);
}

static void on_request(struct conn *c) {
  if (c->fd == s.stream) {  // the stream's reader sends nothing more: a read is its leaving
    char b[256];
    if (read(c->fd, b, sizeof b) <= 0) conn_close(c);
    return;
  }
  ssize_t r = read(c->fd, c->in + c->len, sizeof c->in - 1 - c->len);
  if (r <= 0) return conn_close(c);
  c->len += (size_t)r;
  c->in[c->len] = 0;
  char *body = strstr(c->in, "\r\n\r\n");
  if (!body) return;
  body += 4;
  const char *cl = strcasestr(c->in, "\r\ncontent-length:");
  size_t want = cl ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
  if ((size_t)(c->in + c->len - body) < want) return;
  int id;
  if (!strncmp(c->in, "GET /acp/stream ", 16)) {
    session_start(c->fd);
  } else if (sscanf(c->in, "POST /acp/%d/prompt ", &id) == 1 && id == s.id && s.ready && !s.in_turn) {
    s.in_turn = 1;
    s.text.len = 0;
    event("turn_start", "null", 4);
    write_all(s.stream, s.out.p, s.out.len);
    s.out.len = 0;
    char req[512];
    snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
             "\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}\n", s.session_id);
    to_agent(req);
    answer(c, 200, "{\"status\":\"running\"}");
  } else {
    answer(c, 404, "{\"error\":\"no such route\"}");
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PORT AGENT_ARGV...\n", argv[0]);
    return 2;
  }
  agent_argv = argv + 2;
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < MAX_CONNS; i++) conns[i].fd = -1;

  int lfd = listen_loopback(argv[1]);

  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  watch(lfd, NULL);
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(ep, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      void *p = events[i].data.ptr;
      if (!p) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        struct conn *c = NULL;
        for (int k = 0; k < MAX_CONNS && !c; k++)
          if (conns[k].fd < 0) c = &conns[k];
        if (!c) {
          close(fd);
          continue;
        }
        c->fd = fd;
        c->len = 0;
        watch(fd, c);
      } else if (p == &s) {
        if (s.from_agent >= 0) on_agent();
      } else {
        struct conn *c = p;
        if (c->fd >= 0) on_request(c);
      }
    }
  }
}
