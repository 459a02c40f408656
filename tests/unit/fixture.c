/* fixture.c: the engine tests' fake disk, fake clock and engine.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* fixture.h says what each part is for. */

#include <config.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

unsigned char *disk2;
int client2_ctx, worker2_ctx;
unsigned char *disk;
uint64_t disk_size;
int client_ctx, worker_ctx;
unsigned calls;
unsigned bad_requests;
uint64_t client_bytes, worker_bytes;
unsigned char *page_reads;
void *fail_ctx;
void (*during_read) (uint64_t offset, uint32_t count);
bool gate;
sem_t entered, release;
pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
uint64_t now_ns;
uint64_t read_ns, read_ns_per_kib;
uint64_t read_run_ns, read_wait_ns;
bool read_stolen;
static struct adaptra_cpu_use cpu;      /* the fake clock's cpu_use */
struct adaptra_trace traces[FIXTURE_TRACES];
unsigned ntraces;
void (*during_trace) (const struct adaptra_trace *t);
struct adaptra_engine *e;
int volume, client;

static int
fake_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  bool second = ctx == &client2_ctx || ctx == &worker2_ctx;
  const unsigned char *d = second ? disk2 : disk;
  uint64_t size = second ? DISK2 : disk_size;

  __atomic_fetch_add (&calls, 1, __ATOMIC_SEQ_CST);
  if (count == 0 || offset > size || count > size - offset) {
    __atomic_fetch_add (&bad_requests, 1, __ATOMIC_SEQ_CST);
    return EINVAL;
  }
  if (__atomic_load_n (&gate, __ATOMIC_SEQ_CST)) {
    sem_post (&entered);
    sem_wait (&release);
  }
  __atomic_fetch_add (&cpu.run_ns, read_run_ns, __ATOMIC_SEQ_CST);
  __atomic_fetch_add (&cpu.wait_ns, read_wait_ns, __ATOMIC_SEQ_CST);
  if (!read_stolen)
    __atomic_fetch_add (&cpu.slices, 1, __ATOMIC_SEQ_CST);
  if (read_ns || read_ns_per_kib)
    __atomic_fetch_add (&now_ns, read_ns + count / 1024 * read_ns_per_kib,
                        __ATOMIC_SEQ_CST);
  if (fail_ctx == ctx)
    return EIO;
  if (!second)
    for (uint64_t p = offset / PAGE; p <= (offset + count - 1) / PAGE; p++)
      __atomic_fetch_add (&page_reads[p], 1, __ATOMIC_SEQ_CST);
  if (ctx == &client_ctx)
    __atomic_fetch_add (&client_bytes, count, __ATOMIC_SEQ_CST);
  else if (ctx == &worker_ctx)
    __atomic_fetch_add (&worker_bytes, count, __ATOMIC_SEQ_CST);
  /* Like a real backend, a read and a write do not interleave. */
  pthread_mutex_lock (&disk_lock);
  memcpy (buf, d + offset, count);
  pthread_mutex_unlock (&disk_lock);
  if (during_read)
    during_read (offset, count);
  return 0;
}

static uint64_t
fake_now (void *opaque)
{
  (void) opaque;
  return __atomic_load_n (&now_ns, __ATOMIC_SEQ_CST);
}

static bool
fake_cpu_use (void *opaque, struct adaptra_cpu_use *use)
{
  (void) opaque;
  use->run_ns = __atomic_load_n (&cpu.run_ns, __ATOMIC_SEQ_CST);
  use->wait_ns = __atomic_load_n (&cpu.wait_ns, __ATOMIC_SEQ_CST);
  use->slices = __atomic_load_n (&cpu.slices, __ATOMIC_SEQ_CST);
  return true;
}

const struct adaptra_backend fixture_backend = { .pread = fake_pread };
const struct adaptra_clock fixture_clock = {
  .now_ns = fake_now, .cpu_use = fake_cpu_use,
};

static void
record_trace (void *opaque, const struct adaptra_trace *t)
{
  (void) opaque;
  if (during_trace)
    during_trace (t);
  if (t->kind != ADAPTRA_TRACE_BYPASS && ntraces < FIXTURE_TRACES)
    traces[ntraces++] = *t;
}

int
fixture_setup (uint64_t size)
{
  uint64_t i;

  disk_size = size;
  disk = malloc (size);
  page_reads = calloc (size / PAGE + 1, 1);
  if (!disk || !page_reads) {
    free (disk);
    free (page_reads);
    return -1;
  }
  for (i = 0; i < size; i++)
    disk[i] = (unsigned char) ((i * 2654435761u) >> 13);
  calls = bad_requests = 0;
  client_bytes = worker_bytes = 0;
  read_ns = read_ns_per_kib = read_run_ns = read_wait_ns = 0;
  read_stolen = false;
  fail_ctx = NULL;
  during_read = NULL;
  during_trace = NULL;
  gate = false;
  now_ns = SEC;
  ntraces = 0;
  return 0;
}

void
fixture_teardown (void)
{
  free (disk);
  free (page_reads);
  assert_int_equal (bad_requests, 0);
}

void
fixture_config (struct adaptra_config *cfg)
{
  adaptra_config_defaults (cfg);
  cfg->workers = 0;
  cfg->profile_workers = 0;
  cfg->trace = record_trace;
  cfg->bypass = ADAPTRA_BYPASS_NEVER;
}

int
open_volume (struct adaptra_engine *en, const char *name, uint64_t size,
             unsigned flags)
{
  int v = -1;

  assert_int_equal (adaptra_volume_open (en, name, size, flags, &v), 0);
  return v;
}

int
open_client (struct adaptra_engine *en, int v, const char *name)
{
  int c = -1;

  assert_int_equal (adaptra_client_open (en, v, name, &c), 0);
  return c;
}

void
fixture_engine (const struct adaptra_config *cfg)
{
  char why[ADAPTRA_WHY_LEN];

  if (adaptra_engine_new (cfg, &fixture_backend, &fixture_clock, &e, why,
                          sizeof why))
    fail_msg ("adaptra_engine_new: %s", why);
}

void
fixture_start (const struct adaptra_config *cfg, const char *volume_name,
               const char *client_name)
{
  fixture_engine (cfg);
  volume = open_volume (e, volume_name, disk_size, 0);
  client = open_client (e, volume, client_name);
}

void
fixture_stop (void)
{
  adaptra_client_close (e, client);
  adaptra_engine_free (e);
}

int
fixture_open (uint64_t size, void (*tune) (struct adaptra_config *cfg))
{
  struct adaptra_config cfg;

  if (fixture_setup (size) == -1)
    return -1;
  fixture_config (&cfg);
  if (tune)
    tune (&cfg);
  fixture_start (&cfg, "", "test");
  return 0;
}

void
fixture_close (void)
{
  fixture_stop ();
  fixture_teardown ();
}

int
fixture_open_test (void **state)
{
  const struct fixture_spec *spec = *state;

  return fixture_open (spec->size, spec->tune);
}

int
fixture_close_test (void **state)
{
  (void) state;
  fixture_close ();
  return 0;
}

void
fixture_small_pool (struct adaptra_config *cfg)
{
  cfg->pool_bytes = FIXTURE_SMALL_POOL_PAGES * PAGE;
  cfg->max_bytes = FIXTURE_SMALL_MAX_PAGES * PAGE;
}

void
read_check (uint64_t offset, uint32_t count)
{
  unsigned char *buf = malloc (count);

  assert_non_null (buf);
  assert_int_equal (adaptra_read (e, client, &client_ctx, buf, count, offset),
                    0);
  assert_memory_equal (buf, disk + offset, count);
  free (buf);
}

void
write_disk (uint64_t off, size_t len, int byte)
{
  pthread_mutex_lock (&disk_lock);
  memset (disk + off, byte, len);
  pthread_mutex_unlock (&disk_lock);
  adaptra_invalidate (e, volume, off, len);
}

unsigned
drain (void)
{
  unsigned n = 0;

  while (adaptra_prefetch_run_one (e, volume, &worker_ctx))
    n++;
  return n;
}

struct adaptra_stats
stats (void)
{
  struct adaptra_stats s;

  adaptra_stats_snapshot (e, &s);
  return s;
}
