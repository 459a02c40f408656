/* fixture.h: the engine tests' fake disk, fake clock and engine.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* What every test that drives an engine needs, in one place: a RAM
 * disk behind a fake backend (that logs, counts, can fail, hold a read
 * and charge the fake clock for it), a second disk for a second
 * volume, the fake clock, the decisions the engine traced (as records,
 * engine.h: struct adaptra_trace), and one engine with one volume and
 * one client.  Prefetch jobs run in the test's thread (drain), so the
 * counts are deterministic.  Use with cmocka: the helpers fail the
 * test on an error.
 */

#ifndef ADAPTRA_TEST_FIXTURE_H
#define ADAPTRA_TEST_FIXTURE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/engine.h"

#define PAGE 4096
#define SEC UINT64_C (1000000000)

/* The second disk: other bytes and another size, for a second volume;
 * the tests that use it allocate and fill it.  Its contexts read it.
 */
#define DISK2 (8 * 1024 * 1024 + 7)
extern unsigned char *disk2;
extern int client2_ctx, worker2_ctx;

/* The first disk, disk_size bytes, and the contexts that read it
 * (contexts are their addresses).
 */
extern unsigned char *disk;
extern uint64_t disk_size;
extern int client_ctx, worker_ctx;

/* What the backend saw. */
extern unsigned calls;                  /* pread calls */
extern unsigned bad_requests;           /* count 0 or past the end */
extern uint64_t client_bytes, worker_bytes; /* read with either context */
extern unsigned char *page_reads;       /* reads of the first disk that
                                           covered each of its pages */

/* What the backend does. */
extern void *fail_ctx;                  /* fail reads with this ctx (EIO) */
extern void (*during_read) (uint64_t offset, uint32_t count);
extern bool gate;                       /* each read posts entered, then
                                           waits for release */
extern sem_t entered, release;
extern pthread_mutex_t disk_lock;       /* a read and a write do not
                                           interleave */

/* The fake clock, and what a backend read costs on it: a fixed part
 * and a part per KiB (0: reads take no time).
 */
extern uint64_t now_ns;
extern uint64_t read_ns, read_ns_per_kib;
/* Of a backend read's time, what its thread ran on a CPU and what it
 * waited on a run queue, as the clock's cpu_use (engine.h) counts
 * them; the rest it slept, and was put on a CPU again (a new slice),
 * or where read_stolen, a hypervisor took its virtual CPU (no new
 * slice; read_wait_ns must be 0 then).
 */
extern uint64_t read_run_ns, read_wait_ns;
extern bool read_stolen;

/* The engine's decisions other than step-aside switches (windows,
 * rescues, follows), in order; the records past the array's end are
 * not kept.  during_trace, if set, sees every record, under the
 * engine lock.
 */
#define FIXTURE_TRACES 4096
extern struct adaptra_trace traces[FIXTURE_TRACES];
extern unsigned ntraces;
extern void (*during_trace) (const struct adaptra_trace *t);

/* Pages of the window a record placed. */
static inline uint64_t
trace_pages (const struct adaptra_trace *t)
{
  return t->placement.end - t->placement.start;
}

/* The fake backend (reading the disks by context) and clock. */
extern const struct adaptra_backend fixture_backend;
extern const struct adaptra_clock fixture_clock;

/* The engine, its volume on the first disk and its client. */
extern struct adaptra_engine *e;
extern int volume, client;

/* Allocate and fill the first disk of size bytes and reset everything
 * above (the clock to 1 s).  Returns 0, or -1 if out of memory.
 */
extern int fixture_setup (uint64_t size);

/* Free the first disk; fail if the engine made a bad request. */
extern void fixture_teardown (void);

/* The defaults with no workers, tracing into traces, and never
 * stepping aside (the fake backend takes no time, as fast as any
 * backend gets, and most tests are of read-ahead).
 */
extern void fixture_config (struct adaptra_config *cfg);

/* Start e with cfg over the fake backend and clock, without volumes. */
extern void fixture_engine (const struct adaptra_config *cfg);

/* Start e with cfg over the fake backend and clock, with volume (the
 * first disk, named volume_name) and client (named client_name).
 */
extern void fixture_start (const struct adaptra_config *cfg,
                           const char *volume_name, const char *client_name);

/* Close client and free e (and with it its volumes). */
extern void fixture_stop (void);

/* A test's whole engine over a first disk of size bytes: fixture_setup,
 * then fixture_start with fixture_config changed by tune (if not NULL),
 * volume "" and client "test".  Returns 0, or -1 if out of memory.
 * fixture_close undoes it (fixture_stop, fixture_teardown); both fit
 * cmocka's set-up and teardown once wrapped.
 */
extern int fixture_open (uint64_t size,
                         void (*tune) (struct adaptra_config *cfg));
extern void fixture_close (void);

/* What fixture_open_test opens: fixture_open's size and tune. */
struct fixture_spec {
  uint64_t size;
  void (*tune) (struct adaptra_config *cfg);
};

/* fixture_open and fixture_close as cmocka's set-up and teardown of a
 * test whose initial state is the struct fixture_spec to open
 * (cmocka_unit_test_prestate_setup_teardown).  fixture_close_test
 * also ends a test that a set-up of its own opened.
 */
extern int fixture_open_test (void **state);
extern int fixture_close_test (void **state);

/* A tune for tests that fill the pool or grow windows to the end: a
 * pool of FIXTURE_SMALL_POOL_PAGES and windows of at most
 * FIXTURE_SMALL_MAX_PAGES.
 */
#define FIXTURE_SMALL_POOL_PAGES 1024
#define FIXTURE_SMALL_MAX_PAGES 64
extern void fixture_small_pool (struct adaptra_config *cfg);

/* Open a volume, or a client of volume v, of engine en. */
extern int open_volume (struct adaptra_engine *en, const char *name,
                        uint64_t size, unsigned flags);
extern int open_client (struct adaptra_engine *en, int v, const char *name);

/* Read count bytes at offset as client and compare with the disk. */
extern void read_check (uint64_t offset, uint32_t count);

/* A write of len bytes of byte at off reached the backend: the disk
 * changes (not in the middle of a backend read) and the engine is
 * told, as the filter tells it after a plugin's write.
 */
extern void write_disk (uint64_t off, size_t len, int byte);

/* Run volume's queued prefetch jobs with worker_ctx; returns how many. */
extern unsigned drain (void);

/* e's statistics now. */
extern struct adaptra_stats stats (void);

#endif /* ADAPTRA_TEST_FIXTURE_H */
