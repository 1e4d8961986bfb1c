// For bench/instructions only: valgrind 3.19 (Debian 12) does not know pidfd_open, and the engine watches
// each agent it starts through one. Preloaded into the engine under valgrind, this answers
// syscall(SYS_pidfd_open, pid, 0) with the read end of a pipe that a thread makes readable when the child
// exits (waitid with WNOWAIT: the child is left for the engine to reap, as with a real pidfd). Every other
// syscall() goes to the C library's.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct watch {
  pid_t pid;
  int fd;
};

static void* wait_for_exit(void* arg) {
  struct watch* w = arg;
  siginfo_t info;
  while (waitid(P_PID, w->pid, &info, WEXITED | WNOWAIT) != 0) {
  }
  (void)!write(w->fd, "x", 1);
  close(w->fd);
  free(w);
  return NULL;
}

long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_pidfd_open) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    struct watch* w = malloc(sizeof *w);
    if (!w) return -1;
    w->pid = (pid_t)a[0];
    w->fd = fds[1];
    pthread_t t;
    if (pthread_create(&t, NULL, wait_for_exit, w) != 0) return -1;
    pthread_detach(t);
    return fds[0];
  }
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
