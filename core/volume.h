/* volume.h: volumes and clients, as the engine keeps them.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A volume is one export in the engine's byte space; a client is one
 * connection reading a volume (engine.h has the API, volume.c the
 * tables).  The engine finds them by id through adaptra_volume_of and
 * adaptra_client_of (engine-impl.h).  Fields say whether they are the
 * engine lock's or atomics; why the atomic ones may be read and
 * written without the lock: read.c's note.
 */

#ifndef ADAPTRA_VOLUME_H
#define ADAPTRA_VOLUME_H

#include <stdbool.h>
#include <stdint.h>

#include "depth.h"
#include "holes.h"
#include "model.h"

struct adaptra_engine;

/* A volume (engine.h): its place in the engine's byte space, and the
 * contexts through which workers read it.
 */
struct adaptra_volume {
  int id;
  unsigned flags;               /* enum adaptra_volume_flag */
  char name[64];
  uint64_t size;                /* bytes */
  uint64_t base;                /* its byte 0 in the engine's byte space */
  uint64_t first_page, end_page; /* its pages [first_page, end_page) */
  void **ctxs;                  /* background contexts, nctx of them */
  unsigned nctx;
  unsigned running;             /* its jobs being read now */
  unsigned clients;             /* open clients */
  struct adaptra_model model;   /* its backend's reads, for step-aside */
  bool bypass;                  /* stepped aside: the backend is as fast
                                   as the pool (adaptra_model_fast);
                                   written atomically, the hit path reads
                                   it */
  bool served;                  /* its read-ahead served a client
                                   (aside.c: served) */
  uint64_t aside_sampled_ns;    /* the start of the read that last
                                   claimed a throughput sample of the
                                   lockless stepped-aside path (atomic,
                                   aside.c: adaptra_read_aside) */
  uint64_t flight_bytes;        /* its prefetch queued or running */
  uint64_t client_bytes;        /* read by its closed clients (the open
                                   ones count their own) */
  uint64_t backend_bytes;       /* added atomically, but for the bytes
                                   its open clients read straight into
                                   their buffers (their direct_bytes):
                                   a stepped-aside read writes no line
                                   all readers share */
  struct adaptra_holes holes;   /* its extents that read as zeros, which
                                   read-ahead skips (holes.c) */
  struct adaptra_keep keep;     /* whether its deep clients' misses are
                                   kept in the pool (depth.h) */
  uint64_t rereads;             /* bytes its closed clients read again
                                   from the pool, as client_bytes */
  uint64_t readahead_hits;      /* of its closed clients, as client_bytes:
                                   a counter every reader of the volume
                                   bumped would be one cache line shared
                                   by every core's hits */
};

/* How many of a client's latest lone reads a read right after one
 * continues, starting a stream at its second read (recognise.c:
 * adjacent_read): a connection that reads a few files at once
 * interleaves their runs, as one Linux process reads through a few
 * open files, each with its own prev_pos.  A random reader lands
 * right after one of them on a fraction ADAPTRA_CLIENT_LONE_ENDS / N
 * of its reads (N the requests its span holds), but rarely twice
 * without a read after none between: such a read starts a stream only
 * when the client's reads lately continued its lone reads
 * (recognise.c: lone_reads_continue).
 */
#define ADAPTRA_CLIENT_LONE_ENDS 16

/* A client.  used, requests, bytes, readahead_hits and touched are
 * read and written with atomics: the hit path counts and touches
 * without the engine lock (read.c).  The rest is the engine lock's.
 */
struct adaptra_client {
  bool used;
  struct adaptra_volume *volume;
  char name[64];
  uint64_t requests, bytes;     /* its reads */
  uint64_t readahead_hits;      /* pages it read that read-ahead brought */
  uint64_t rereads;             /* bytes it read from the pool other than
                                   a window's first read of a page
                                   (depth.h: adaptra_keep) */
  uint64_t backend_bytes;       /* bytes its own misses read (added
                                   atomically, as the volume's) */
  uint64_t direct_bytes;        /* of those, read straight into its
                                   buffer (aside.c: count_direct), its
                                   volume's backend bytes from when it
                                   closes (atomic) */
  uint64_t streams_started;
  uint64_t touched;             /* last page it touched outside a live
                                   stream, plus one (read.c) */
  struct adaptra_depth depth;   /* its reads in flight (depth.h) */
  uint64_t lone_next;           /* the page after its last lone read
                                   (a miss that found no stream), plus
                                   one; 0: none (recognise.c: trail) */
  uint32_t lone_runs;           /* how many of its lone reads lately
                                   the next page followed (trail) */
  uint64_t lone_ends[ADAPTRA_CLIENT_LONE_ENDS];
                                /* the pages right after its latest
                                   lone reads; 0: none (recognise.c:
                                   adjacent_read) */
  uint32_t lone_end_next;       /* the slot of lone_ends written next */
  uint32_t lone_follows;        /* how many of its reads lately came
                                   right after one of its lone_ends
                                   (recognise.c: lone_reads_continue) */
};

/* The client table grows by chunks that never move, so that the hit
 * path may find a client without the engine lock: chunk k holds
 * ADAPTRA_CLIENT_CHUNK0 << k clients.  A closed client's slot is used
 * again, so the table holds the connections open at once: the first
 * chunk covers a few, and each further one doubles the table, one
 * calloc under the engine lock as a connection arrives.  32 chunks hold
 * 8 * (2^32 - 1) clients, more than the int ids can name, so the chunks
 * never run out before the ids; the table of chunks is 32 pointers.
 */
#define ADAPTRA_CLIENT_CHUNK0 8
#define ADAPTRA_CLIENT_CHUNKS 32

/* Free every volume and the client table, at the engine's end: no
 * worker runs and no job is queued.  Lock not held.
 */
extern void adaptra_volumes_free (struct adaptra_engine *e);

#endif /* ADAPTRA_VOLUME_H */
