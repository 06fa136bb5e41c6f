/* The sandbox's pause process for the real-runtime suite: a static binary that waits for a signal. */
#include <signal.h>
#include <unistd.h>

static void done(int sig) {
  (void)sig;
  _exit(0);
}

int main(void) {
  signal(SIGTERM, done);
  signal(SIGINT, done);
  for (;;) pause();
}
