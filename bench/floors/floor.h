// What the floors share: failing loudly, and a listening socket on 127.0.0.1 that says where it is
// ("listening on <port>", the line bench/lib/proc.mjs spawnPinned waits for; port 0 picks one).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

// A non-blocking listener on 127.0.0.1:`port`, its port printed on stdout.
static int listen_loopback(const char *port) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) die("socket");
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
  if (listen(lfd, 4096) < 0) die("listen");
  socklen_t l = sizeof a;
  getsockname(lfd, (struct sockaddr *)&a, &l);
  printf("listening on %d\n", ntohs(a.sin_port));
  fflush(stdout);
  return lfd;
}
