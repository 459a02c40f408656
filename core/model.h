/* model.h: the one model of a backend that every decision reads.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* One estimate per backend, from its reads: how long a read waits
 * before its bytes flow (latency), how fast they flow (bandwidth),
 * how many reads in flight it rewards, whether distance costs (a head
 * that seeks), and whether it is as fast as the pool.  Every decision
 * of the engine reads one field of struct adaptra_model_estimate
 * (docs/DESIGN.md §6.2 lists which):
 *
 *   reads --sample--> filters --estimate--> latency, bandwidth, bdp,
 *                                           seeks, seek_ns,
 *                                           latency_bound, depth,
 *                                           limit, chunk, job_min/max,
 *                                           budget; and fast (its own)
 *
 * The filters are BBR's (Cardwell et al., "BBR: congestion-based
 * congestion control", ACM Queue 14(5), 2016): a read's time is a
 * latency plus a transfer, queueing only ever adds to it and a light
 * load only ever delivers less than the link can, so the latency is
 * the least seen over a window (min-RTT) and the bandwidth the most
 * (max-bandwidth).  Three lower bounds of the bandwidth feed the max
 * filter: the bytes delivered in a slot of ADAPTRA_MODEL_SLOT_NS (what
 * many reads in parallel reach), the slope of the line t = L + n / B
 * fitted through moving averages of reads of varying sizes (what one
 * read at a time shows), and the mean read's n / t; only the first two
 * say how much of a read's time is transfer (a lone read's n / t would
 * make all of it transfer).  Until a slot is over, delivery-rate
 * samples stand in for the slots (ADAPTRA_MODEL_DONE, startup), and
 * the line lifts them by the gain at most where reads overlap
 * (ADAPTRA_MODEL_FIT_BESIDE), and wherever reads queue.  Where
 * distance costs (below), the
 * bandwidth is the head's transfer rate instead: the near reads' size
 * over their service time (moving averages of the reads that queued).
 * At one head a read's whole time is mostly the reads ahead of it,
 * and the line through the reads' sizes and times took any slope:
 * adaptra-sim's eight interleaved streams on its 150 MB/s disk (W3)
 * saw bandwidths of 72 MB/s to 2.4 GB/s within a run, and the budget
 * (seek_ns x bandwidth) swung with them.  The
 * moving averages also say whether the backend is as fast as the pool
 * now, so that a backend that turns slow brings read-ahead back within
 * a few reads.
 *
 * Distance: a read that starts where the previous one ended is near,
 * any other far.  Where the fastest far read waits much longer than
 * the fastest near one (ADAPTRA_MODEL_SEEK_NS and _RATIO), by their
 * whole times or by their service times (ADAPTRA_MODEL_SEEK_READS),
 * distance costs: a disk's head (blk-mq calls such a device rotational and
 * gives it one queue and an elevator).  A remote store or the page
 * cache answers a far read as soon as a near one.  What a seek costs
 * is how much longer the mean far read is served than the mean near
 * one (moving averages of each apart, by their service times where
 * reads queued, else by their whole times): the queue's turns between
 * streams make mean seeks, where the fastest far read is the shortest
 * hop.  The tests' answer turns the model's only once it has outnumbered
 * the model's own by ADAPTRA_MODEL_SEEK_HOLD reads.
 *
 * No locking: the engine samples and asks under its lock, except for
 * start and end (atomic: readers add to running without the lock).
 */

#ifndef ADAPTRA_MODEL_H
#define ADAPTRA_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* The largest single backend request, prefetch or demand: no job, chunk
 * or budget the model sizes is larger.
 */
#define ADAPTRA_REQUEST_MAX (32 * 1024 * 1024)

/* Max-bandwidth filter: bytes delivered per slot of 100 ms, the most
 * of the slots of the last second that are over.  At 200 MiB/s a slot
 * is 20 MiB in 80 or more reads, so that one read more or less is a
 * few percent, and a burst a backend lets through after an idle
 * moment at most half a slot.  A read counts in the slot it completes
 * in, but reports when it returns, up to a latency after others that
 * completed later, so a slot is over only when reads complete two
 * slots later, and the ring keeps two slots more than the window.
 */
#define ADAPTRA_MODEL_SLOT_NS UINT64_C (100000000)
#define ADAPTRA_MODEL_WINDOW_SLOTS 10
#define ADAPTRA_MODEL_SLOTS (ADAPTRA_MODEL_WINDOW_SLOTS + 2)

/* Min-latency filter: the fastest near and far read of each of ten
 * buckets of a second: long enough to keep an unloaded read's time
 * through a busy spell, short enough to follow a backend that slows
 * down (as BBR's 10 s min-RTT window).
 */
#define ADAPTRA_MODEL_LATENCY_NS UINT64_C (10000000000)
#define ADAPTRA_MODEL_BUCKETS 10

/* Moving averages of a read's size and time: weight 1/8 a read, the
 * gain of TCP's smoothed round-trip time (RFC 6298), so that a read
 * weighs a third after eight more; much heavier, one odd read would
 * swing the fitted line, much lighter, a backend that turns slow would
 * show only after hundreds of reads.  Sizes must spread by 10%
 * (variance 1% of n^2) for the line to be fitted.
 */
#define ADAPTRA_MODEL_EWMA 8.0
#define ADAPTRA_MODEL_FIT_SPREAD 0.01

/* Latency-bound: a latency of a millisecond or more, and no seeks.
 * There reads in parallel hide the latency (a remote store), and the
 * engine keeps the bandwidth-delay product in flight.  Under it the
 * backend's reads queue behind the CPUs (the page cache) and more in
 * parallel only share them.
 */
#define ADAPTRA_MODEL_LATENCY_MIN UINT64_C (1000000)

/* Distance costs where the fastest far read takes this much longer
 * than the fastest near one, and this many times as long: the disk
 * model's shortest seek is 0.5 ms and its near reads take no latency
 * at all, the page cache's reads differ by tens of microseconds.  A
 * remote store's differ by its latency's jitter and by the transfer
 * the model takes off: bursts of its token bucket make large (near)
 * reads look 0.5 ms faster than small (far) ones of 5 ms.
 */
#define ADAPTRA_MODEL_SEEK_NS UINT64_C (250000)
#define ADAPTRA_MODEL_SEEK_RATIO 2

/* Queueing can hide a seek: at one head, a near read that waits
 * behind the reads ahead of it takes their time too, while the first
 * far reads, alone, take only their own; the fastest near read then
 * never looks twice as fast as the fastest far one.  So distance is
 * also tested like with like, on the reads that queued (a completion
 * came during them): by their service times, from the latest such
 * completion to their own end (what blk-mq and BFQ measure of a
 * request at a rotational device), moving averages of near and far
 * reads apart, the near one's at the far one's size: by the line
 * through the near reads' service times where their sizes spread, else
 * scaled (at one head a near read's service is its transfer, and grows
 * with its size; at a store that serves reads in parallel the pieces
 * of a window issued together complete together, a 2 MiB piece as
 * soon after the one before as a 64 KiB one, and scaled down to a far
 * read's size they looked served in almost no time: on the remote
 * model under one sequential reader and random noise (W6) the model
 * saw seeks for a third of the time).  Averages, not the
 * fastest: two completions that the threads report together make a
 * service time of microseconds.  At a backend that serves many reads
 * in parallel a service time is merely the gap between two
 * completions, near or far alike, and the test waits for
 * ADAPTRA_MODEL_SEEK_READS far reads in the window: a few far reads
 * among many near ones (one stream) say little.  Nor does a far
 * read's service start before the fastest read's time (of the window,
 * near or far) from its own start: a remote store's reads wait their
 * latency side by side, and a completion during it is not the backend
 * turning to the read.  From the last completion, a random 4 KiB read beside a
 * stream's large jobs (W6 on the remote model) was served 1-2 ms, the
 * jobs' pieces scaled to its size microseconds: taken for seeks, the
 * stream's windows went out without a limit, in pieces of a seek
 * budget (2-15 MiB), and its reader waited 75-115 ms behind them.  At
 * a disk the fastest read is a near one's transfer, tens of
 * microseconds.  A near read's service stretched so errs towards no
 * seek, and is left as it is: bounded too, the near reads of eight
 * interleaved streams on the remote model (adaptra-sim's W3) looked
 * served faster, and their hit fell from 84% to 65%.
 *
 * Once distance costs, the mean far read need only be served
 * ADAPTRA_MODEL_SEEK_STAY_NS longer than the near one (the disk
 * model's shortest seek: a head that seeks does not seek for less)
 * for it to go on costing, whatever the ratio (a hysteresis, as for
 * "as fast as the pool"): the queue then batches each stream's reads
 * into runs of megabytes (budgets, below), whose far reads' seek,
 * 1.4 ms to the next of eight streams on the disk model, is a
 * fraction of their 7 ms a MiB of transfer, never twice a near read's
 * time.  Without it the model took the disk for latency-bound again
 * whenever the runs grew, and the queue cut them into 64 KiB chunks,
 * each far and each a seek: a disk W3 run in a few then lost a fifth
 * of its throughput.  A remote store's far reads served longer by
 * its jitter are so by less.
 *
 * A test that stays judges the service times before the last read
 * that queued as well: the engine learns a read's end when its bytes
 * are copied, after the head, and a window's small tail piece served
 * right after a large piece is reported first.  By the completions it
 * was served in the large one's time (a 40 KiB read in 12.8 ms), the
 * large one in almost none, and scaled up from 40 KiB that one sample
 * made the near reads look slower than the far ones, until the large
 * read's came.  The model took the disk for latency-bound meanwhile,
 * and the windows queued in that instant went out in 64 KiB chunks,
 * each a seek, for as long as such chunks took to show seeks again.
 */
#define ADAPTRA_MODEL_SEEK_STAY_NS UINT64_C (500000)
#define ADAPTRA_MODEL_SEEK_READS 32

/* And distance costs only where a seek (seek_ns) is at least
 * 1/ADAPTRA_MODEL_SEEK_LATENCY_DIV of the latency, the fastest read's
 * of the window, near or far: a disk's near reads wait none, but a
 * remote store's far reads (other streams', 64 KiB each) were served
 * 0.3 ms longer than its near ones (larger prefetch jobs, the service
 * time scaled down to a far read's size) behind a 5 ms latency, by its
 * token bucket and jitter: taken for seeks, each such spell sent a
 * window out in one job of 1-2 MiB, which the link then served behind
 * the small reads, and client reads waited for it up to hundreds of
 * milliseconds.  Reads in parallel hide such a difference with the
 * latency.
 *
 * Not the fastest near read's latency alone: at one head, reads in
 * parallel make a near read wait behind the far ones before it.  While
 * the model takes a disk for latency-bound, the queue sends every
 * stream's window out in 64 KiB chunks to many workers at once, the
 * head serves the streams' chunks interleaved, and its few near reads
 * are those of a window's pieces that went out together, each behind
 * several others' seeks.  On the disk model, four streams on four
 * connections (beside's U-4conn) ran so in about one run of four, from
 * their first reads and for good: 0-2% of the reads near, the fastest
 * near read 13-17 ms, the seeks by the service times 3.1-3.5 ms; a
 * quarter of that was under the near read one answer in four, and the
 * answer never held for ADAPTRA_MODEL_SEEK_HOLD reads in a row.  The
 * fastest far read there is the first read, alone: a seek.
 */
#define ADAPTRA_MODEL_SEEK_LATENCY_DIV 4

/* The tests above answer after every read, and their answer turns the
 * model's (seeks, and the budget, depth and chunk on them) only once
 * it has outnumbered the model's own by ADAPTRA_MODEL_SEEK_HOLD reads:
 * each contrary answer adds one to a count, each agreeing one takes
 * one off (a leaky bucket, not a run; a run of HOLD contrary answers
 * still turns it).  Held for HOLD reads in a row instead, one
 * agreeing answer undid the evidence of thirty: in the filter a disk
 * W3 run's first windows went out in 64 KiB chunks, each a seek, for
 * 0.1-0.2 s after the tests first saw seeks, for a completion
 * reported out of turn (below) made every few answers "no"; the
 * seeks of the first half second, medians of five and six runs, 99
 * and 82 before, 59 and 62 after
 * (docs/bench/history/beside-the-matrix.md, "Disk W3: the ramp's
 * seeks").  The count holds a disk's seeks through such
 * answers once seen, too.  A remote store's spells (below) are rare
 * and short: they decay before they add up.  A head's
 * seek is the device's and lasts; what passes for one at a store that
 * serves reads in parallel is the queueing of a moment: the window's
 * pieces issued together complete together, so that the near ones
 * look served in almost no time, and a stall of the token bucket
 * lands on whichever read completes next.  On the benchmark's remote
 * model such spells lasted 1-9 reads under 8 and 16 streams, and each
 * switched the queue between runs of megabytes and one chunk, the
 * depth between 4 and the limit.  A disk's first far reads show its
 * seeks at once; they count ADAPTRA_MODEL_SEEK_HOLD reads later.
 */
#define ADAPTRA_MODEL_SEEK_HOLD 32

/* As fast as the pool: the recent reads' mean pace (below) within
 * ADAPTRA_MODEL_FAST_LATENCY_NS + n / ADAPTRA_MODEL_FAST_BYTES_PER_SEC
 * (a 64 KiB read within 115 us, 1 MiB within 1.1 ms: a file in the
 * page cache takes 15-30 us for 64 KiB, the remote model 5 ms), AND
 * delivering at least ADAPTRA_MODEL_FAST_RATE.  The second test is
 * what tells a sequential disk from the page cache: 4 KiB reads that
 * continue each other on a 150 MB/s disk take 27 us each, well within
 * the first bound, at a seventh of the pool's speed; the memory
 * plugin's take a few microseconds.  A backend that seeks is never as
 * fast as the pool, nor one that is latency-bound: the large reads of
 * a remote store without a bandwidth cap pass both bounds (4 MiB in
 * 2.5 ms is 1.6 GB/s), yet every read of a client waits its latency,
 * which read-ahead hides (stepping aside halved the throughput of one
 * reader at queue depth 1 over 2 ms).  With hysteresis (both bounds
 * twice as loose to stay fast), and not before
 * ADAPTRA_MODEL_FAST_SAMPLES reads.
 *
 * A read's pace is its time in aggregate: its bytes at the rate the
 * reads in parallel with it delivered, from the latest completion
 * before its end (sampled, or reported unsampled by
 * adaptra_model_deliver since the last sample) to its end, or its
 * whole time where that is shorter.  One read at a time, that is its
 * own time.  Many in parallel at the page cache, a read's own time
 * stretches with the threads that share the CPUs (sixteen 4 KiB reads
 * at once on two CPUs take 40 us and more each, a thread descheduled
 * in its read a millisecond), while together they deliver far more
 * than the pool needs: judged by its own time, a volume stepped aside
 * and back dozens of times a second under random reads at queue depth
 * 16.  At one head (a disk) reads in parallel only queue: their pace
 * is the head's, 27 us for 4 KiB at 150 MB/s, whatever the depth.
 *
 * The moving average takes the median of the last
 * ADAPTRA_MODEL_FAST_MEDIAN samples' paces, not each sample's (a
 * median filter, as signal processing rejects impulses): a lone read
 * that runs long on its CPU (100-200 us for 4 KiB under load) or
 * sleeps on a lock whose holder was descheduled, in a layer below,
 * moved the average from 8 us past the bar in one sample and stepped
 * the volume back, while a slow backend's reads are all slow, and the
 * second of them passes the filter.  A median of 5 saw a slowdown
 * later than test-engine's test_step_aside allows (3 reads).
 *
 * A read's own time leaves out what its thread waited for a CPU
 * (adaptra_model_sample_waited; core/aside.c: machine_ns, on Linux
 * the thread's run-queue delay, or where it never left its CPU, its
 * time less its CPU time: a hypervisor's steal), so that the test
 * weighs the backend, not the machine's CPUs.  A stepped-aside volume
 * is sampled once a millisecond (core/aside.c), and on a loaded
 * machine (sixteen readers and a CPU hog on two CPUs, in a virtual
 * machine) a sampled 4 KiB read took 3-8 us of CPU but 20-200 us and
 * more of wall time, and the aggregate share was as long: the pace
 * crossed ADAPTRA_MODEL_FAST_RATE's bar and the volume stepped back
 * and aside 21-95 times in 5 s, while the pool's copies wait for the
 * same CPUs.  A backend that turns slow makes its readers sleep in the
 * read, or run longer on their CPU, neither a wait for a CPU: its pace
 * follows at once, as before.  (Judging by the least pace of the last
 * ADAPTRA_MODEL_FAST_SAMPLES samples instead, as BBR's min-RTT
 * filter, stopped the flapping but saw a slow backend 16 samples
 * late; the least of the last 2 ms did not stop it: a loaded spell
 * lasts longer.)
 */
#define ADAPTRA_MODEL_FAST_LATENCY_NS 50000
#define ADAPTRA_MODEL_FAST_BYTES_PER_SEC UINT64_C (1000000000)
#define ADAPTRA_MODEL_FAST_RATE UINT64_C (400000000)
#define ADAPTRA_MODEL_FAST_SAMPLES 16
#define ADAPTRA_MODEL_FAST_MEDIAN 3

/* Congestion limit where latency-bound: GAIN_NUM/GAIN_DEN of what
 * keeps the backend busy (a quarter over covers jitter in the latency
 * and the gap between a read's end and the next start), and at least
 * ADAPTRA_MODEL_LIMIT_MIN.  What keeps it busy is the bandwidth-delay
 * product and the mean read (the moving average of a read's size): a
 * read holds its bytes in flight for its latency and its own transfer
 * (Little's law), and its bytes arrive together at its end, as BBR's
 * cwnd allows for data acknowledged in aggregates.  Over the product
 * alone, where a read's transfer is as long as the latency (8 MiB jobs
 * at 2 GB/s over 2 ms), one read at a time passed the limit, the link
 * idled a latency in each (it moved two thirds of what it can), and
 * the slots measured only what the limit let through: the estimate
 * could not grow past it.  The floor (two of the smallest jobs a
 * window is split into alone) is what a backend gets
 * before its bandwidth is known: its first reads, all at once, say
 * little of it (one 64 KiB read in 5 ms says 13 MB/s), and the chunks
 * cut from that small product (ADAPTRA_MODEL_CHUNK_MIN) keep what a
 * reader fetches in line to about its own request.  Without a limit
 * there, every worker started a job and readers read up to a whole
 * chunk of their windows themselves: 16 streams starting together on
 * the remote model put 32 reads of 7.9 MiB in flight at the link, and
 * single client reads waited up to 200 ms (W2's max latency).  Once
 * reads of several sizes have been seen, the line's slope gives the
 * bandwidth and the product its own limit.  A product under the floor
 * still gets its gain where that is more than the floor: the floor
 * alone lets through what it measures (512 KiB every 5 ms, 100 MiB/s
 * where the link moves 200), and without the line to lift it the
 * estimate stayed there.
 */
#define ADAPTRA_MODEL_GAIN_NUM 5
#define ADAPTRA_MODEL_GAIN_DEN 4
#define ADAPTRA_MODEL_LIMIT_MIN (2 * ADAPTRA_MODEL_CHUNK_FLOOR)

/* Startup (BBR's): while no slot of the window is over, the bandwidth
 * is the delivery-rate samples' (below), which see only what the
 * limit let through, and the limit is ADAPTRA_MODEL_STARTUP_GAIN times
 * what keeps the backend busy (above), not 5/4: then each round
 * trip's samples grow the estimate by up to twice, not a quarter,
 * until the backend's own bandwidth stops it (BBR's cwnd gain of 2),
 * and a reader at queue depth 1 does not wait behind a limit of a
 * fraction of what the backend moves.  Once a slot is over its bytes
 * measure the bandwidth, and the gain is 5/4 again.
 */
#define ADAPTRA_MODEL_STARTUP_GAIN 2

/* Chunks: while streams compete, no prefetch job is larger than a
 * chunk.  Latency-bound: a sixteenth of the product, a power of two
 * within [CHUNK_MIN, CHUNK_MAX] (about twenty of them fit the limit,
 * so a reader that catches up waits for about its own request); in
 * startup CHUNK_MIN, because the rate samples' product is not yet the
 * bandwidth's: the first reads of many streams starting together,
 * through a token bucket's burst, saw five times the link, and the
 * workers put megabytes of competing jobs in flight at once that the
 * link then served behind the small ones (40-230 ms each).
 * Otherwise the fitted product within [CHUNK_FLOOR, CHUNK_MAX].
 */
/* But while few streams compete, a chunk is large enough that their
 * reads at once, ADAPTRA_MODEL_STREAM_READS each, fill the limit
 * (adaptra_model_chunk): two streams of four 64 KiB reads kept half the
 * remote model's product in flight and read 118 MiB/s of its 200.
 */
/* ADAPTRA_MODEL_CHUNK_FLOOR is the smallest job a window is split
 * into (job_min), the chunk where the backend is not latency-bound,
 * and half of ADAPTRA_MODEL_LIMIT_MIN.  Much smaller, a fast backend's
 * fitted product (microseconds of fixed cost) would cut windows into
 * reads whose cost per request (a worker's turn, a plugin call)
 * outweighs their transfer; much larger, a competing stream's job
 * would hold a disk's head, or the flight limit, for longer, and a
 * reader that catches up would wait behind more bytes.
 */
#define ADAPTRA_MODEL_CHUNK_DIVISOR 16
#define ADAPTRA_MODEL_CHUNK_MIN (64 * 1024)
#define ADAPTRA_MODEL_CHUNK_FLOOR (256 * 1024)
#define ADAPTRA_MODEL_CHUNK_MAX (1024 * 1024)

/* One stream keeps at most ADAPTRA_MODEL_STREAM_READS of its jobs
 * read by workers at once (workers.c), and as many backend handles busy
 * (a serialising plugin's, one read each), and its window alone is
 * split into jobs of at least a 1/ADAPTRA_MODEL_STREAM_READS of the
 * limit (and ADAPTRA_JOB_MIN): more reads of one stream only add
 * requests, its latency hidden already.
 */
#define ADAPTRA_MODEL_STREAM_READS 4

/* And at most ADAPTRA_MODEL_JOB_BDPS bandwidth-delay products: a job
 * a worker has started can no longer be stolen, so a reader that
 * catches up with a window that just doubled waits for the job that
 * holds its next page.  A worker starts at most a product of it
 * (workers.c: start_pages); the rest stays queued for the next.
 */
#define ADAPTRA_MODEL_JOB_BDPS 4

/* Budgets (BFQ's, Valente and Checconi 2010; mq-deadline batches the
 * same way): the bytes of a stream's consecutive chunks that go out
 * together before the queue turns to another stream.  Where distance
 * costs, long runs sized from the model: every turn costs a seek
 * (seek_ns), so a turn moves ADAPTRA_MODEL_SEEK_TURN times the bytes
 * the backend would have moved in that seek, and seeks take at most
 * 1 / (1 + ADAPTRA_MODEL_SEEK_TURN) of its time; within
 * [ADAPTRA_MODEL_CHUNK_MAX, ADAPTRA_REQUEST_MAX] (a turn is one
 * request at most).  Latency-bound, one chunk: streams interleave
 * finely and a reader waits behind at most one chunk of each other
 * stream.  Otherwise ADAPTRA_MODEL_BUDGET bytes.
 *
 * A turn's time (turn_ns) is what the head takes for it: the seek and
 * the budget's transfer at the bandwidth, (1 + ADAPTRA_MODEL_SEEK_TURN)
 * seeks where the budget is not clamped (35-45 ms on the benchmark's
 * disk model).  It bounds how long a reader waits for the run at the
 * head to end before its own job goes (queue.h: BFQ's budget timeout,
 * mq-deadline's expiry): a run may go past its budget to finish its
 * window, and other readers' steals start runs of their own, so
 * without it a waiting reader's turn had no bound in time.
 */
#define ADAPTRA_MODEL_SEEK_TURN 9
#define ADAPTRA_MODEL_BUDGET (4 * 1024 * 1024)

/* Reads in flight a backend rewards: latency-bound, as many as the
 * limit admits (depth 0: up to the workers' ceiling); otherwise (the
 * page cache, a disk that seeks, not measured yet) ADAPTRA_MODEL_DEPTH:
 * more only share the CPUs, or queue behind the disk's head.  Fewer
 * starve the head between reads: with 2 on the benchmark's disk model,
 * 8 interleaved streams (W3) read 70-81 MiB/s against 92-99 with 4
 * (three 5 s runs each, side by side, on a loaded machine).
 */
#define ADAPTRA_MODEL_DEPTH 4

/* Delivery-rate samples (BBR's, Cheng et al., "Delivery rate
 * estimation", IETF draft-cheng-iccrg-delivery-rate-estimation): when
 * a read completes, the bytes every read completed since the last
 * completion before it started, over the time since that completion.
 * Unlike a slot, a sample counts the reads in parallel with it as soon
 * as it completes, so that a backend's first reads, and a reader at
 * queue depth 1 whose prefetch the limit holds at a fraction of what
 * the backend moves, find its bandwidth within a few latencies, not
 * two slots later.  A sample can see a burst, which a slot's many
 * reads smooth out, so the samples count only while no slot of the
 * window is over (a backend's first two ADAPTRA_MODEL_SLOT_NS, or after
 * an idle second).  The last ADAPTRA_MODEL_DONE completions are kept to
 * find the one before a read's start.
 */
#define ADAPTRA_MODEL_DONE 64

/* A token bucket's burst (nbdkit's rate filter: bandwidth x burstiness
 * bytes that go through free after an idle moment) is a fast link
 * until it is spent: reads of any size take the latency alone, and the
 * line's slope goes to nought.  In startup, where the rate samples
 * stand in for the slots, the line counts in full only where reads go
 * one at a time: fewer than ADAPTRA_MODEL_FIT_BESIDE reads in flight,
 * on average, beside one that completes.  There it is what one read at
 * a time shows of the transfer, which no sample can.  Where reads
 * overlap the samples measure what they move together, and the line
 * may lift that by the limit's gain at most (GAIN_NUM/GAIN_DEN): the
 * burst's reads put its slope at nought, and its product (186 MB on
 * the remote model) sent a lone reader's window out at once.
 *
 * The samples themselves still see the burst (1-4 GB/s on the remote
 * model, whose link moves 200 MiB/s) and count for all of startup.
 * Counted for the last ten round trips only (BBR's max filter), the
 * bench's 64 KiB reader waited less in startup, but adaptra-sim's
 * eight interleaved streams (W3) hit 64% where the bench's hit 79%.
 *
 * Past startup the line is not bounded so where reads overlap: on a
 * backend without a bandwidth cap (2 ms a read, the page cache's
 * speed) it is the one measure of the bandwidth that a reader one
 * request at a time does not hold down, and bounded by 5/4 of the
 * slots there its copies (nbdcopy -R 1) took 27% longer.
 *
 * But wherever reads queue, in startup or not, the line lifts the
 * slots or samples by the gain at most: where its fixed cost (the
 * intercept) is more than GAIN_NUM/GAIN_DEN of the least latency.
 * Reads that wait beyond the latency wait for each other: the backend
 * is the bottleneck, and what it delivered is its bandwidth (BBR reads
 * a round trip grown past its least the same way: the pipe is full).
 * There a read's time is its place in the queue, not its size, and the
 * line's slope goes to nought: behind the benchmark's token bucket
 * jobs of 540 KiB took 7-13 ms by their place, and in adaptra-sim the
 * bandwidth jumped from 217 MB/s to 8.4 GB/s for 4.6 ms (remote W1);
 * under CPU load nbdkit's threads report completions in bunches, a
 * read's time is its place in the bunch, and the estimate read
 * 0.85-2.8 GB/s where the copy moved 0.12-0.21 (docs/bench/history/
 * beside-the-matrix.md: the burst and depthload sections).  The gain
 * is the bar because the limit itself admits that much over the
 * product: reads at a link the estimate has right queue up to it, and
 * there the bound costs nothing (the gain over what is delivered is
 * over the bandwidth).  A backend without a cap does not queue: its
 * reads take the latency and their transfer, and the line counts.
 */
#define ADAPTRA_MODEL_FIT_BESIDE 0.5

struct adaptra_model_slot {
  uint64_t id;                  /* completion time / SLOT_NS, + 1 */
  uint64_t bytes;               /* of the reads that completed in it */
  uint64_t rate;                /* the most delivery rate sampled in it */
};

struct adaptra_model_done {
  uint64_t t;                   /* a read completed then (ns) */
  uint64_t delivered;           /* bytes completed until then */
};

struct adaptra_model_fastest {
  uint64_t ns;                  /* the fastest read's time, 0: none */
  uint64_t bytes;               /* and its size */
};

struct adaptra_model_mean {
  double n, t, nn, nt;          /* moving averages: size, time, n^2,
                                   n*t */
};

struct adaptra_model_bucket {
  uint64_t id;                  /* completion time / a second, + 1 */
  struct adaptra_model_fastest near, far;
  uint64_t far_reads;           /* far reads sampled */
};

struct adaptra_model {
  uint64_t running;             /* bytes being read now (atomic) */
  uint64_t reads;               /* reads being made now (atomic) */
  uint64_t next_offset;         /* where the last read started ends
                                   (atomic) */
  uint64_t samples;             /* reads sampled */
  struct adaptra_model_mean all; /* of every read */
  double pace;                  /* moving average: a read's pace (see
                                   ADAPTRA_MODEL_FAST_*), through a
                                   running median */
  double paces[ADAPTRA_MODEL_FAST_MEDIAN - 1]; /* the last samples'
                                   paces, oldest first */
  double beside;                /* moving average: reads in flight when
                                   one completes, besides it */
  uint64_t unsampled;           /* bytes of reads not sampled since the
                                   last sample (atomic) */
  struct adaptra_model_mean near, far; /* of near and far reads apart */
  struct adaptra_model_mean served[2]; /* of those that queued, their
                                   service times, near and far (by enum
                                   adaptra_model_distance) */
  struct adaptra_model_mean served_before[2]; /* the same before the
                                   last read that queued */
  bool seeking;                 /* distance costs, the judgement */
  unsigned contrary;            /* samples whose tests answered
                                   otherwise, less those that agreed
                                   since (never under 0) */
  uint64_t seek_ns;             /* a seek's cost, when the tests last
                                   saw seeks */
  uint64_t newest;              /* the latest slot id seen */
  uint64_t delivered;           /* bytes of every read sampled */
  unsigned ndone;               /* completions sampled into done */
  struct adaptra_model_done done[ADAPTRA_MODEL_DONE]; /* the last ones,
                                   at ndone - 1 (mod) the newest */
  struct adaptra_model_slot slot[ADAPTRA_MODEL_SLOTS];
  struct adaptra_model_bucket bucket[ADAPTRA_MODEL_BUCKETS];
};

/* What the model says at a time.  Zero fields: not known yet. */
struct adaptra_model_estimate {
  uint64_t latency_ns;          /* min filter, transfer taken off */
  uint64_t bandwidth;           /* bytes a second, max filter */
  uint64_t bdp;                 /* latency x bandwidth: bytes in flight
                                   that keep the backend busy */
  bool startup;                 /* no slot of the window is over: the
                                   bandwidth is the rate samples' */
  uint64_t read_ns;             /* the recent reads' mean time */
  uint64_t fixed_ns;            /* the line's intercept: a read's fixed
                                   cost now, queueing included */
  bool seeks;                   /* distance costs */
  uint64_t seek_ns;             /* what it costs, 0 where it does not */
  bool latency_bound;           /* reads in parallel hide its latency */
  unsigned depth;               /* reads in flight it rewards; 0: as
                                   many as limit admits (latency-bound) */
  uint64_t limit;               /* most bytes in flight, UINT64_MAX:
                                   none */
  uint64_t chunk;               /* largest job while streams compete */
  uint64_t job_min;             /* smallest job of a window alone */
  uint64_t job_max;             /* largest, UINT64_MAX: no bound */
  uint64_t budget;              /* a stream's bytes a turn of the queue */
  uint64_t turn_ns;             /* where it seeks, a turn's time at the
                                   head: a seek and a budget's transfer
                                   (ADAPTRA_MODEL_SEEK_TURN); 0 elsewhere */
};

/* Where a read starts: where the previous one started ended (near),
 * elsewhere (far), or not known (a read the model did not see start).
 */
enum adaptra_model_distance {
  ADAPTRA_MODEL_NEAR, ADAPTRA_MODEL_FAR, ADAPTRA_MODEL_UNKNOWN
};

/* A read of bytes at offset starts, or ends: running and reads move.  start
 * says where the read starts.  Atomic, no lock needed.
 */
extern enum adaptra_model_distance
adaptra_model_start (struct adaptra_model *m, uint64_t offset, uint64_t bytes);
extern void adaptra_model_end (struct adaptra_model *m, uint64_t bytes);

/* Bytes being read now, and the reads. */
extern uint64_t adaptra_model_running (const struct adaptra_model *m);
extern uint64_t adaptra_model_reads (const struct adaptra_model *m);

/* Bytes of every read sampled so far (adaptra_model_sample).  Lock
 * held, as for sampling.
 */
extern uint64_t adaptra_model_delivered (const struct adaptra_model *m);

/* Record a successful read of bytes from t0 to t1 (ns).  A read of
 * unknown distance feeds every filter but the min-latency one.
 */
extern void adaptra_model_sample (struct adaptra_model *m, uint64_t bytes,
                                  uint64_t t0, uint64_t t1,
                                  enum adaptra_model_distance where);

/* The same for a read of whose time the machine took waited_ns: its
 * thread waited that long for a CPU (core/aside.c: machine_ns, from
 * struct adaptra_clock's cpu_use).  Its pace (ADAPTRA_MODEL_FAST_*)
 * leaves that wait out, every other filter takes its whole time.
 * adaptra_model_sample is this with waited_ns 0.
 */
extern void adaptra_model_sample_waited (struct adaptra_model *m,
                                         uint64_t bytes, uint64_t t0,
                                         uint64_t t1,
                                         enum adaptra_model_distance where,
                                         uint64_t waited_ns);

/* A successful read of bytes that is not sampled: its bytes count in
 * the next sample's pace (ADAPTRA_MODEL_FAST_*), slot and delivery
 * rate.  Atomic, no lock needed.
 */
extern void adaptra_model_deliver (struct adaptra_model *m, uint64_t bytes);

/* The estimate at time now, from one pass over the filters. */
extern void adaptra_model_estimate (const struct adaptra_model *m,
                                    uint64_t now,
                                    struct adaptra_model_estimate *est);

/* The largest job while streams streams compete (est->chunk, or more
 * where fewer streams than would fill est->limit with their reads at
 * once compete, past startup): a power of two up to
 * ADAPTRA_MODEL_CHUNK_MAX.
 */
extern uint64_t adaptra_model_chunk (const struct adaptra_model_estimate *est,
                                     uint64_t streams);

/* Expected time for one read of bytes now: the line's fixed cost (not
 * the least latency: a window's read waits where the fastest read did
 * not, in the queues and for a disk's seeks) + bytes / bandwidth.
 */
extern uint64_t
adaptra_model_fetch_ns (const struct adaptra_model_estimate *est,
                        uint64_t bytes);

/* Is the backend as fast as the pool now (see ADAPTRA_MODEL_FAST_*)?
 * was_fast: the last answer, for the hysteresis.
 */
extern bool adaptra_model_fast (const struct adaptra_model *m, uint64_t now,
                                bool was_fast);

#endif /* ADAPTRA_MODEL_H */
