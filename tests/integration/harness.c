/* harness.c: a real nbdkit with the adaptra filter, for integration tests.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "xorshift.h"

#define START_TIMEOUT_MS 30000
#define STOP_TIMEOUT_MS 30000

static const char *
env_or_die (const char *name)
{
  const char *v = getenv (name);

  if (v == NULL || *v == '\0') {
    fprintf (stderr, "harness: $%s is not set (run the tests with make check)\n",
             name);
    exit (EXIT_FAILURE);
  }
  return v;
}

static void
sleep_ms (long ms)
{
  struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

  nanosleep (&ts, NULL);
}

static void
dump_log (const struct test_server *srv)
{
  char line[1024];
  FILE *fp = fopen (srv->log, "r");

  if (fp == NULL)
    return;
  fprintf (stderr, "--- nbdkit log (%s) ---\n", srv->log);
  while (fgets (line, sizeof line, fp) != NULL)
    fputs (line, stderr);
  fprintf (stderr, "--- end of nbdkit log ---\n");
  fclose (fp);
}

/* The sanitizer runtime to preload into nbdkit, or NULL.  The filter is
 * instrumented but the server is not, and ASan/TSan must be the first
 * library loaded into a process.
 */
static const char *
sanitizer_runtime (void)
{
  const char *s = getenv ("ADAPTRA_SANITIZERS");

  if (s == NULL)
    return NULL;
  if (strcmp (s, "address") == 0)
    return getenv ("ADAPTRA_ASAN_RUNTIME");
  if (strcmp (s, "thread") == 0)
    return getenv ("ADAPTRA_TSAN_RUNTIME");
  return NULL;
}

static void
exec_server (const struct test_server *srv, const char *const *nbdkit_opts,
             const char *const *argv)
{
  const char *args[128];
  size_t n = 0;
  const char *runtime = sanitizer_runtime ();
  int fd;

  args[n++] = env_or_die ("NBDKIT");
  args[n++] = "-f";
  args[n++] = "--exit-with-parent";
  args[n++] = "-U";
  args[n++] = srv->socket;
  args[n++] = "--filter";
  args[n++] = env_or_die ("ADAPTRA_FILTER");
  for (; nbdkit_opts && *nbdkit_opts && n < 64; nbdkit_opts++)
    args[n++] = *nbdkit_opts;
  for (; *argv && n < 126; argv++)
    args[n++] = *argv;
  args[n] = NULL;

  fd = open (srv->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    dup2 (fd, STDERR_FILENO);
    dup2 (fd, STDOUT_FILENO);
    close (fd);
  }
  if (runtime != NULL && *runtime != '\0') {
    const char *keep = getenv ("ADAPTRA_KEEP_LOADED");
    char preload[1024];

    snprintf (preload, sizeof preload, "%s %s", runtime, keep ? keep : "");
    setenv ("LD_PRELOAD", preload, 1);
  }
  execvp (args[0], (char **) args);
  perror (args[0]);
  _exit (127);
}

/* The number of threads of process pid, or -1. */
static int
thread_count (pid_t pid)
{
  char path[64], line[256];
  int n = -1;
  FILE *fp;

  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  fp = fopen (path, "r");
  if (fp == NULL)
    return -1;
  while (fgets (line, sizeof line, fp) != NULL)
    if (sscanf (line, "Threads: %d", &n) == 1)
      break;
  fclose (fp);
  return n;
}

/* The server's thread count once it has stayed the same for 200 ms
 * (its own threads, the filter's workers and statistics thread, no
 * connection yet).
 */
static int
settled_thread_count (pid_t pid)
{
  int n = thread_count (pid), same = 0;
  long waited;

  for (waited = 0; waited < START_TIMEOUT_MS && same < 20; waited += 10) {
    int now;

    sleep_ms (10);
    now = thread_count (pid);
    same = now == n ? same + 1 : 0;
    n = now;
  }
  return n;
}

void
test_server_start_with (struct test_server *srv,
                        const char *const *nbdkit_opts,
                        const char *const *argv)
{
  long waited;

  strcpy (srv->dir, "/tmp/adaptra-test-XXXXXX");
  if (mkdtemp (srv->dir) == NULL) {
    perror ("mkdtemp");
    exit (EXIT_FAILURE);
  }
  snprintf (srv->socket, sizeof srv->socket, "%s/nbd.sock", srv->dir);
  snprintf (srv->log, sizeof srv->log, "%s/nbdkit.log", srv->dir);

  srv->pid = fork ();
  if (srv->pid == -1) {
    perror ("fork");
    exit (EXIT_FAILURE);
  }
  if (srv->pid == 0)
    exec_server (srv, nbdkit_opts, argv);

  for (waited = 0; waited < START_TIMEOUT_MS; waited += 10) {
    struct stat st;
    int status;

    if (waitpid (srv->pid, &status, WNOHANG) == srv->pid) {
      fprintf (stderr, "harness: nbdkit exited during start-up (status %d)\n",
               status);
      dump_log (srv);
      exit (EXIT_FAILURE);
    }
    if (stat (srv->socket, &st) == 0 && S_ISSOCK (st.st_mode)) {
      srv->idle_threads = settled_thread_count (srv->pid);
      return;
    }
    sleep_ms (10);
  }
  fprintf (stderr, "harness: nbdkit did not create %s within %d ms\n",
           srv->socket, START_TIMEOUT_MS);
  dump_log (srv);
  kill (srv->pid, SIGKILL);
  exit (EXIT_FAILURE);
}

void
test_server_start (struct test_server *srv, const char *const *argv)
{
  test_server_start_with (srv, NULL, argv);
}

int
test_server_stop (struct test_server *srv)
{
  int status = 0, n;
  long waited;

  /* nbdkit 1.32 leaks the handles of connections still being torn
   * down when SIGTERM arrives, and a client's nbd_close returns before
   * the server has finished: wait until every connection thread has
   * gone (at most 10 s; a connection the test left open stays).
   */
  for (waited = 0; waited < 10000; waited += 10) {
    n = thread_count (srv->pid);
    if (n == -1 || n <= srv->idle_threads)
      break;
    sleep_ms (10);
  }
  kill (srv->pid, SIGTERM);
  for (waited = 0; waited < STOP_TIMEOUT_MS; waited += 10) {
    if (waitpid (srv->pid, &status, WNOHANG) == srv->pid)
      break;
    sleep_ms (10);
  }
  if (waited >= STOP_TIMEOUT_MS) {
    fprintf (stderr, "harness: nbdkit did not stop on SIGTERM within %d ms\n",
             STOP_TIMEOUT_MS);
    dump_log (srv);
    kill (srv->pid, SIGKILL);
    waitpid (srv->pid, &status, 0);
    exit (EXIT_FAILURE);
  }
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    dump_log (srv);
  unlink (srv->socket);
  unlink (srv->log);
  rmdir (srv->dir);
  return status;
}

void
test_die_nbd (const char *what)
{
  fprintf (stderr, "%s: %s (errno %d)\n", what,
           nbd_get_error () ? nbd_get_error () : "(no libnbd error)",
           nbd_get_errno ());
  exit (EXIT_FAILURE);
}

struct nbd_handle *
test_connect (const struct test_server *srv)
{
  return test_connect_export (srv, "");
}

struct nbd_handle *
test_connect_export (const struct test_server *srv, const char *name)
{
  struct nbd_handle *nbd = nbd_create ();

  if (nbd == NULL)
    test_die_nbd ("nbd_create");
  if (nbd_set_export_name (nbd, name) == -1)
    test_die_nbd ("nbd_set_export_name");
  if (nbd_connect_unix (nbd, srv->socket) == -1)
    test_die_nbd ("nbd_connect_unix");
  return nbd;
}

void
test_fill_random (uint64_t *state, void *buf, size_t count)
{
  unsigned char *p = buf;
  size_t i;

  for (i = 0; i + 8 <= count; i += 8) {
    uint64_t r = sim_random (state);
    memcpy (p + i, &r, 8);
  }
  if (i < count) {
    uint64_t r = sim_random (state);
    memcpy (p + i, &r, count - i);
  }
}

uint64_t
test_random_below (uint64_t *state, uint64_t bound)
{
  return sim_random (state) % bound;
}

void
test_expect_bytes (const char *what, uint64_t base,
                   const void *got, const void *want, size_t count)
{
  const unsigned char *g = got, *w = want;
  size_t i;

  /* memcmp first: the byte loop below only finds where they differ.
   * Checked byte by byte, every read's check cost more than the read:
   * under ThreadSanitizer each byte compared was two calls into its
   * runtime, and test-integrity spent most of its time here.
   */
  if (memcmp (got, want, count) == 0)
    return;
  for (i = 0; i < count; i++) {
    if (g[i] != w[i]) {
      fprintf (stderr,
               "%s: byte at offset %" PRIu64 " is 0x%02x, expected 0x%02x "
               "(range [%" PRIu64 ", +%zu))\n",
               what, base + i, g[i], w[i], base, count);
      exit (EXIT_FAILURE);
    }
  }
}

int
test_control (const char *path, const char *command, char *reply,
              size_t size)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  size_t got = 0, len = strlen (command);
  int fd;

  if (strlen (path) >= sizeof addr.sun_path || size == 0)
    return -1;
  strcpy (addr.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM, 0);
  if (fd == -1)
    return -1;
  if (connect (fd, (struct sockaddr *) &addr, sizeof addr) == -1
      || write (fd, command, len) != (ssize_t) len
      || write (fd, "\n", 1) != 1) {
    close (fd);
    return -1;
  }
  /* The reply ends with an empty line. */
  reply[0] = '\0';
  while (got < size - 1) {
    ssize_t r = read (fd, reply + got, size - 1 - got);

    if (r <= 0)
      break;
    got += r;
    reply[got] = '\0';
    if (strstr (reply, "\n\n") != NULL)
      break;
  }
  close (fd);
  return strstr (reply, "\n\n") != NULL ? 0 : -1;
}

int64_t
test_stat (const char *path, const char *name)
{
  char reply[64 * 1024];
  size_t name_len = strlen (name);
  char *line;

  if (test_control (path, "stats", reply, sizeof reply) == -1)
    return -1;
  for (line = reply; line != NULL && *line != '\0';
       line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL) {
    if (strncmp (line, name, name_len) == 0 && line[name_len] == ' ')
      return strtoll (line + name_len + 1, NULL, 10);
  }
  return -1;
}
