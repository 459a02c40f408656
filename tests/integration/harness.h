/* harness.h: a real nbdkit with the adaptra filter, for integration tests.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A real nbdkit with the adaptra filter, for integration tests.
 *
 * The server runs in the foreground as a child of the test, on a unix
 * socket in a fresh temporary directory, with the filter taken from
 * $ADAPTRA_FILTER (set by "make check" to the build tree's .so) and the
 * server from $NBDKIT.  Sanitizer builds preload the sanitizer runtime
 * into the server, because nbdkit itself is not instrumented.
 */

#ifndef ADAPTRA_TEST_HARNESS_H
#define ADAPTRA_TEST_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

#include <libnbd.h>

struct test_server {
  char dir[64];                 /* temporary directory, removed at stop */
  char socket[96];              /* dir/nbd.sock */
  char log[96];                 /* dir/nbdkit.log: the server's stderr */
  pid_t pid;
  int idle_threads;             /* its threads with no connection */
};

/* Start nbdkit --filter=adaptra followed by argv (the plugin, its
 * parameters and any adaptra-* parameters; NULL-terminated), and wait
 * until the socket accepts connections.  Exits the test with a message
 * (and the server's log) if the server does not come up within 30 s.
 */
extern void test_server_start (struct test_server *srv,
                               const char *const *argv);

/* Like test_server_start, with extra nbdkit options (e.g. "--filter",
 * "delay") placed after the adaptra filter and before argv.
 */
extern void test_server_start_with (struct test_server *srv,
                                    const char *const *nbdkit_opts,
                                    const char *const *argv);

/* Wait until the server's connection threads have ended (up to 10 s),
 * stop the server with SIGTERM, wait for it (SIGKILL after 30 s, which
 * fails the test), and remove its directory.  Returns the server's exit
 * status as from waitpid.
 */
extern int test_server_stop (struct test_server *srv);

/* A new libnbd handle connected to the server's default export, or to
 * export name; exits the test on error.
 */
extern struct nbd_handle *test_connect (const struct test_server *srv);
extern struct nbd_handle *test_connect_export (const struct test_server *srv,
                                               const char *name);

/* Print a libnbd failure with its context and exit the test. */
extern void test_die_nbd (const char *what) __attribute__ ((noreturn));

/* Fill buf with count pseudo-random bytes from *state (xorshift64*):
 * deterministic for a given seed, so failures reproduce.
 */
extern void test_fill_random (uint64_t *state, void *buf, size_t count);

/* A pseudo-random number in [0, bound) from *state; bound > 0. */
extern uint64_t test_random_below (uint64_t *state, uint64_t bound);

/* Compare got with want over count bytes; on a mismatch print the first
 * differing byte's absolute offset (base + index), the context and exit.
 */
extern void test_expect_bytes (const char *what, uint64_t base,
                               const void *got, const void *want,
                               size_t count);

/* Send command to the statistics socket at path (adaptra-stats=path)
 * and read its reply, up to and with the empty line that ends it, into
 * reply (size bytes, NUL-terminated): 0, or -1 if the socket does not
 * answer or the reply does not fit.
 */
extern int test_control (const char *path, const char *command,
                         char *reply, size_t size);

/* The value of counter or gauge name in the "stats" reply of the
 * statistics socket at path (adaptra-stats=path), or -1 if the socket
 * does not answer or the reply has no such line.
 */
extern int64_t test_stat (const char *path, const char *name);

#endif /* ADAPTRA_TEST_HARNESS_H */
