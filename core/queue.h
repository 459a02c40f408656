/* queue.h: the prefetch queue: fair order, budgets, split, steal.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The queue of prefetch jobs, on its own: no backend, no lock, no
 * pool.  The engine holds it under its lock (core/workers.c takes
 * jobs off it, core/fetch.c reads them); tests/unit/test-queue.c
 * drives it directly.
 *
 * Order.  Fair between streams over time, seek-aware within a turn:
 *
 *   - Start-time fair queueing (Goyal, Vin and Cheng, SIGCOMM 1996):
 *     a job's start tag is the finish tag (start + bytes) of its
 *     stream's last queued job, or the virtual time (the tag of the
 *     last job taken in order) if none is queued.  A stream with a
 *     huge window queued takes its share, not the backend.
 *   - Budgets (BFQ's; mq-deadline batches the same way): tags are cut
 *     into rounds of the model's budget (struct
 *     adaptra_model_estimate.budget), and within a round jobs go in
 *     page order, as an elevator sweeps.  So a stream's consecutive
 *     chunks up to a budget go out together: long runs where distance
 *     costs (every turn a seek), one chunk a turn on a latency-bound
 *     backend, where streams interleave finely and a reader waits
 *     behind at most a chunk of each other stream.
 *   - Batches (mq-deadline's, which dispatches the request that
 *     continues the last one before it looks at its FIFOs): where
 *     distance costs (seeks, set from the model), the job that starts
 *     where the last job taken to be read ended goes next, out of its
 *     turn, until a budget's bytes went out in one run and the
 *     window it is in ends (adaptra_queue_batch).  A window queued in
 *     pieces over time, and the rest of a job a reader stole the head
 *     of, continue the run the head is on instead of waiting a round
 *     behind other streams and costing a seek each.  A reader that
 *     needs another stream's job meanwhile waits for the run to end,
 *     and so does every reader after it, in the order they began to
 *     wait; the oldest one's job goes next (adaptra_queue_promote).
 *   - Turns bounded in time (BFQ's budget timeout, mq-deadline's
 *     expiry): while a reader waits, a run ends once it has lasted a
 *     turn's time (the model's turn_ns: a seek and a budget's
 *     transfer), whatever its bytes and window have left.  So a
 *     reader waits for at most a turn of each reader before it.
 *     When a run ends,
 *     the sweep goes on up from it within the round (C-SCAN), not
 *     back to the round's lowest page, and past the jobs that
 *     continue the run: they go in their stream's next turn.
 *
 * Indexes.  A walk of the queue costs its length, which grows with the
 * streams (tens of thousands of jobs with 100,000 streams, where the
 * walks were 90% of adaptra-sim's time), so the jobs are also indexed
 * (treap.h): by first page (the job holding a page), by fair order
 * (where a job goes), and each stream's last job, with its stream's
 * jobs linked in queue order so that the next last is at hand when the
 * last leaves.  They answer what the walks would; a job's tag, round,
 * first page and stream never change while it is queued.
 *
 * Split and steal.  A reader that needs a page of a queued job takes
 * the job's pages up to the end of its request (adaptra_queue_find,
 * adaptra_queue_split, adaptra_queue_take); the rest, if at least
 * ADAPTRA_JOB_MIN, stays queued in its place with its tag.
 */

#ifndef ADAPTRA_QUEUE_H
#define ADAPTRA_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "treap.h"

struct adaptra_volume;
struct adaptra_streams;

/* Smallest share of a window that is worth a request of its own: the
 * model's smallest chunk where its latency is not hidden in parallel.
 */
#define ADAPTRA_JOB_MIN ADAPTRA_MODEL_CHUNK_FLOOR

/* No page: a job's wait_page when no reader waits for it. */
#define ADAPTRA_QUEUE_NO_PAGE UINT64_MAX

/* A prefetch job: one backend read of a run of consecutive pages that
 * were inserted IN_FLIGHT for it.
 */
struct adaptra_job {
  struct adaptra_job *next, *prev;      /* the queue, both ways */
  struct adaptra_job *stream_next, *stream_prev; /* its stream's queued
                                   jobs, in queue order */
  struct treap_node by_page;    /* in the queue's indexes */
  struct treap_node by_order;
  struct treap_node by_stream;  /* its stream's last only */
  struct adaptra_volume *volume;
  uint64_t stream;              /* the stream it reads ahead for; 0:
                                   cache hints and profiles */
  uint64_t tag;                 /* its start tag in the fair queue */
  uint64_t round;               /* tag / the budget it was queued with */
  uint64_t first;               /* first page */
  uint64_t window;              /* the page after its window, which
                                   its jobs share */
  uint32_t npages;
  uint32_t bytes;               /* to read: short at the end of the export */
  uint64_t t0;                  /* its read began (adaptra_fetch_job_begin) */
  uint64_t wait_page;           /* a page of it a reader waits for
                                   (adaptra_queue_promote);
                                   ADAPTRA_QUEUE_NO_PAGE: none */
  uint64_t waited_at;           /* when that reader began to wait (ns) */
  struct treap_node by_wait;    /* in the queue's waits, while one does */
  int where;                    /* enum adaptra_model_distance of it */
  uint32_t frames[];            /* the frames, in page order */
};

struct adaptra_queue {
  struct adaptra_job *head, *tail; /* in order (above) */
  struct treap pages, order, last; /* the indexes (above) */
  struct treap waits;           /* jobs readers wait for, oldest wait
                                   first (adaptra_queue_promote) */
  size_t unordered;             /* neighbours out of fair order */
  uint64_t vtime;               /* tag of the last job taken in order */
  uint64_t budget;              /* bytes of start tag a round, and of
                                   a batch */
  bool seeks;                   /* batch: distance costs (above) */
  uint64_t near;                /* the page after the last job taken
                                   to be read */
  uint64_t batch;               /* bytes taken in one run up to near */
  uint64_t near_window;         /* the window of the last job taken */
  uint64_t turn_at;             /* when the run at near began (ns) */
  uint64_t turn_ns;             /* a run's time while a reader waits
                                   (the model's turn_ns); 0: no bound */
  uint64_t queued_bytes;        /* of jobs not yet started */
  unsigned page_shift;
  struct adaptra_streams *streams; /* the stream table, whose entries
                                   index their stream's last queued job;
                                   NULL: found by walking the queue */
};

/* An empty queue of pages of 1 << page_shift bytes. */
extern void adaptra_queue_init (struct adaptra_queue *q, unsigned page_shift,
                                struct adaptra_streams *streams);

/* Queue job (its stream, first, npages and bytes set) in order. */
extern void adaptra_queue_add (struct adaptra_queue *q,
                               struct adaptra_job *job);

/* The queued job holding page, and the one before it (*prev); NULL if
 * none does.  By the page index.
 */
extern struct adaptra_job *adaptra_queue_find (const struct adaptra_queue *q,
                                               uint64_t page,
                                               struct adaptra_job **prev);

/* How a job leaves the queue: taken as the queue's next by a worker
 * (the virtual time advances to its tag), stolen by a reader out of
 * turn, or dropped unread.  The first two are read: the batch goes on
 * from them.
 */
enum adaptra_queue_take {
  ADAPTRA_TAKE_IN_ORDER, ADAPTRA_TAKE_STOLEN, ADAPTRA_TAKE_DROPPED
};

/* Take job (after prev) off the queue at time now (ns). */
extern void adaptra_queue_take (struct adaptra_queue *q,
                                struct adaptra_job *prev,
                                struct adaptra_job *job,
                                enum adaptra_queue_take how, uint64_t now);

/* Where distance costs, the job that goes next at time now (ns), and
 * the one before it (*prev): the queued job that starts at near, while
 * the run is under a budget or still in the window it was reading, and
 * has not lasted turn_ns while a reader waits; else the job the reader
 * that has waited longest waits for (adaptra_queue_promote); else the
 * first one past near, and past the jobs that continue near one after
 * another, in the round the fair order serves (an elevator's sweep
 * goes on up; C-SCAN); NULL if none (the queue's head goes next, the
 * sweep wraps).  Where distance does not cost, the job the longest
 * waiting reader waits for, if any (the model stopped seeing seeks
 * while readers waited), else NULL.
 */
extern struct adaptra_job *adaptra_queue_batch (const struct adaptra_queue *q,
                                                uint64_t now,
                                                struct adaptra_job **prev);

/* A reader needs page, of queued job, for a request up to page last
 * (exclusive; at least page + 1), at time now (ns).  Where distance
 * costs and the head is in the middle of a run that goes on elsewhere
 * (adaptra_queue_batch), or other readers wait already, should the
 * reader wait rather than steal job now?  Then job keeps its pages up
 * to last (the rest is queued behind it, adaptra_queue_split) and goes
 * when the readers that waited before it have had their turns and the
 * run at the head ends (adaptra_queue_batch), and true is returned,
 * again for the same job until it is taken.
 */
extern bool adaptra_queue_promote (struct adaptra_queue *q,
                                   struct adaptra_job *job, uint64_t page,
                                   uint64_t last, uint64_t now);

/* Keep the first n pages in queued job and queue the rest as a job of
 * its own right behind it, with its tag, if the rest is at least
 * ADAPTRA_JOB_MIN and memory allows.  Returns the rest, or NULL (job
 * stays whole).
 */
extern struct adaptra_job *adaptra_queue_split (struct adaptra_queue *q,
                                                struct adaptra_job *job,
                                                uint64_t n);

/* Has a stream other than stream a job queued and not started? */
extern bool adaptra_queue_contended (const struct adaptra_queue *q,
                                     uint64_t stream);

#endif /* ADAPTRA_QUEUE_H */
