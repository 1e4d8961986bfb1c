// What the lean clients share (firsttoken.c, sse-reader.c): the clock their times are read on, a
// connection to the engine or a contender on 127.0.0.1, and a chunked body's framing undone as it is read.
// A change to it rebuilds every client (bench/run).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// CLOCK_MONOTONIC in µs: the model servers' `T<µs>;` tokens are on the same clock.
static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

// A blocking connection to 127.0.0.1:`port` with TCP_NODELAY; -1 (errno set) if it fails.
static int tcp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A chunked body's framing, undone read by read: what the decoder keeps between reads.
struct unchunk {
  size_t need;         // bytes left in the current chunk's data
  size_t skip;         // the CRLF after a chunk's data
  char size_line[32];  // the size line so far (extensions and all: strtoul stops at them)
  size_t size_len;
  int last;            // the last chunk (size 0) came: nothing after it is read
};

// Hands each run of data bytes in `d` to `data(ctx, bytes, n)`, in order, until the last chunk.
static void unchunk(struct unchunk *u, const char *d, size_t n, void (*data)(void *ctx, const char *bytes, size_t n),
                    void *ctx) {
  size_t i = 0;
  while (i < n && !u->last) {
    if (u->need) {
      size_t take = n - i < u->need ? n - i : u->need;
      data(ctx, d + i, take);
      i += take;
      u->need -= take;
      if (!u->need) u->skip = 2;
    } else if (u->skip) {
      size_t k = n - i < u->skip ? n - i : u->skip;
      i += k;
      u->skip -= k;
    } else {
      char c = d[i++];
      if (c != '\n') {
        if (u->size_len + 1 < sizeof u->size_line) u->size_line[u->size_len++] = c;
        continue;
      }
      u->size_line[u->size_len] = 0;
      u->need = strtoul(u->size_line, NULL, 16);
      u->size_len = 0;
      if (!u->need) u->last = 1;
    }
  }
}
