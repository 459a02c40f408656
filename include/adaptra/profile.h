/* Boot profiles: the recorder, the file format, the merge and the
 * matcher of adaptra-profile=DIR.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A guest that boots from an image reads nearly the same pages each
 * time, in nearly the same order, much of it random-looking.  A
 * profile is that order: the extents (runs of pages) of one export in
 * the order a connection first touched them, each with the number of
 * boots it was seen in.  It only ever decides what to prefetch; the
 * bytes still come from the backend through the engine's coherent
 * read path, so a stale or foreign profile wastes bandwidth and never
 * serves wrong data.
 *
 * Pure logic: no nbdkit, no engine lock.  No object here is
 * thread-safe; the caller serialises the calls on each one.  Pages are
 * numbered from the export's start in units of the profile's page
 * size (the engine's adaptra-page).
 *
 * Life of a profile, as the filter drives it:
 *
 *   boot 1:  recorder_new -> recorder_read (each client read of
 *            the boot's connections) -> recorder_profile -> if
 *            profile_is_boot: profile_update (lock, load, merge, save,
 *            unlock)
 *   boot 2:  profile_load -> matcher_new -> on each client read:
 *            matcher_read, then matcher_next -> prefetch the ranges
 *            it gives (adaptra_cache_hint).
 *
 * A boot is what the filter calls the connections to one export that
 * start within one recording window (adaptra-profile-time): a guest
 * over several connections (multi-conn qemu, nbdcopy, nbd-client -C)
 * is one boot, merged once.
 */

#ifndef ADAPTRA_PROFILE_H
#define ADAPTRA_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits a file must respect to be loaded (and that the recorder and
 * the merge keep).  A boot reads a few hundred MiB at most; 2^22 pages
 * are 16 GiB at 4 KiB, and 2^18 extents of 16 bytes a 4 MiB file, so
 * a hostile file cannot make a loader allocate more than about that.
 */
#define ADAPTRA_PROFILE_PAGES_MAX (UINT64_C (1) << 22)
#define ADAPTRA_PROFILE_EXTENTS_MAX (UINT32_C (1) << 18)
#define ADAPTRA_PROFILE_IDENTITY_MAX 4096     /* NBD's export name limit */
#define ADAPTRA_PROFILE_SEEN_MAX 255          /* seen saturates here */
/* An extent not touched in a boot survives at most this many such
 * boots in a row (see adaptra_profile_merge).
 */
#define ADAPTRA_PROFILE_MISSED_MAX 3

/* What one boot records (adaptra-profile-max and adaptra-profile-time,
 * defaults in adaptra_params): its first distinct pages up to a size
 * of at most ADAPTRA_PROFILE_PAGES_MAX pages (the format's limit) and
 * at least ADAPTRA_PROFILE_BOOT_MIN_BYTES (a smaller recording is never
 * merged), for at most an hour (a boot and its applications' start).
 */
#define ADAPTRA_PROFILE_RECORD_SECONDS_MAX 3600

/* Recorders and matchers together hold at most adaptra-pool / this,
 * which the filter takes out of the pool (struct
 * adaptra_profile_memory's source: adaptra_lend): at 64 bytes a page,
 * 16 MiB of the default 256 MiB pool records 1 GiB of 4 KiB pages.
 */
#define ADAPTRA_PROFILE_MEMORY_SHARE 16

/* A recording of fewer distinct bytes is a probe (qemu-img info,
 * nbdinfo, a partition scan), not a boot: merged, it would count as a
 * boot that missed every page of the profile and wipe it.
 */
#define ADAPTRA_PROFILE_BOOT_MIN_BYTES (UINT64_C (1) << 20)

/* File names of profiles end so (adaptra_profile_file_name). */
#define ADAPTRA_PROFILE_SUFFIX ".profile"

/* One extent: pages [start, start + pages) of the export. */
struct adaptra_profile_extent {
  uint64_t start;
  uint32_t pages;               /* >= 1 */
  uint8_t seen;                 /* boots that touched it, 1..boots */
  uint8_t missed;               /* boots since the last that did, < seen */
};

/* What a profile belongs to: the page size it counts in, the export's
 * size in bytes and its identity (the export name: "" for the default
 * export).  A profile whose key differs from the export's is someone
 * else's and is never used.
 */
struct adaptra_profile_key {
  const char *identity;
  uint32_t page_size;           /* power of 2, 512 .. 1 MiB */
  uint64_t export_size;         /* 1 .. 1 PiB (ADAPTRA_VOLUME_SIZE_MAX) */
};

struct adaptra_profile {
  char *identity;               /* NUL-terminated, no NUL inside */
  uint32_t page_size;
  uint64_t export_size;
  uint32_t boots;               /* boots merged into it, >= 1 */
  uint64_t pages;               /* sum of the extents' pages */
  size_t count;
  struct adaptra_profile_extent *extents;   /* first-touch order */
};

/* An empty profile (boots = 1) for key, which must be valid
 * (adaptra_profile_key_check).  NULL on ENOMEM or EINVAL.
 */
extern struct adaptra_profile *adaptra_profile_new (
  const struct adaptra_profile_key *key);

extern void adaptra_profile_free (struct adaptra_profile *p);

/* 0 if key is one a profile may have, else -1 and the reason in why. */
extern int adaptra_profile_key_check (const struct adaptra_profile_key *key,
                                      char *why, size_t len);

/* Everything adaptra_profile_decode checks of a decoded profile, on
 * one in memory: extents non-empty, inside the export, disjoint,
 * within the limits above, 1 <= seen <= boots, missed < seen and
 * missed <= ADAPTRA_PROFILE_MISSED_MAX.  0, or -1 with the reason.
 */
extern int adaptra_profile_check (const struct adaptra_profile *p,
                                  char *why, size_t len);

/* The file format, version 1, little-endian:
 *
 *   offset  size  field
 *        0     8  magic "ADAPROF\n"
 *        8     4  format version (1)
 *       12     4  page size, bytes
 *       16     8  export size, bytes
 *       24     4  boots merged
 *       28     4  identity length L (<= 4096)
 *       32     4  extent count N (<= 2^18)
 *       36     4  reserved, 0
 *       40     8  FNV-1a 64 of bytes [0, 40) then [48, end)
 *       48     L  identity, no NUL
 *     48+L  16*N  extents: start page (8), pages (4), seen (1),
 *                 missed (1), reserved 0 (2)
 *
 * and nothing after.  The checksum covers every other byte, so a torn
 * or bit-flipped file is rejected even where the fields still parse.
 */
#define ADAPTRA_PROFILE_MAGIC "ADAPROF\n"
#define ADAPTRA_PROFILE_VERSION 1
#define ADAPTRA_PROFILE_HEADER 48
#define ADAPTRA_PROFILE_EXTENT_BYTES 16
#define ADAPTRA_PROFILE_FILE_MAX \
  (ADAPTRA_PROFILE_HEADER + ADAPTRA_PROFILE_IDENTITY_MAX + \
   (size_t) ADAPTRA_PROFILE_EXTENTS_MAX * ADAPTRA_PROFILE_EXTENT_BYTES)

/* Serialise p (which should pass adaptra_profile_check; encode itself
 * does not check, so that tests can write hostile files) into a
 * malloc'd buffer.  Returns 0 with *buf and *len, or -1 (ENOMEM).
 */
extern int adaptra_profile_encode (const struct adaptra_profile *p,
                                   unsigned char **buf, size_t *len);

/* Recompute the checksum field of an encoded profile of len bytes
 * (len >= ADAPTRA_PROFILE_HEADER).  encode does it; tests that patch
 * fields call it to get past the checksum to the check they aim at.
 */
extern void adaptra_profile_seal (unsigned char *buf, size_t len);

/* Parse and validate len bytes: the layout, the checksum,
 * adaptra_profile_check, and, when want is not NULL, that the
 * profile's key equals *want.  Returns a new profile, or NULL with a
 * one-line reason in why (for the log line: the file is then ignored).
 */
extern struct adaptra_profile *adaptra_profile_decode (
  const void *buf, size_t len, const struct adaptra_profile_key *want,
  char *why, size_t whylen);

/* adaptra_profile_decode of the file at path (at most
 * ADAPTRA_PROFILE_FILE_MAX bytes).  A missing file gives NULL with
 * errno ENOENT (no profile yet, not an error worth a log line); any
 * other failure NULL with errno EINVAL or the I/O error, and why.
 * Like decode's, why never names the file: the caller, who knows how
 * the user named it (a path, or a name in a directory), does, once.
 * The file is opened non-blocking and anything but a regular file is
 * refused (EINVAL): a FIFO or a device at a profile's path never
 * blocks the caller.
 */
extern struct adaptra_profile *adaptra_profile_load (
  const char *path, const struct adaptra_profile_key *want,
  char *why, size_t whylen);

/* Write p to path atomically: encode, write to a temporary file in
 * path's directory (".NAME.XXXXXX"), fsync it, rename it over path,
 * fsync the directory.  A crash or failure at any point leaves the
 * old file or the new one, never a torn one; on failure the temporary
 * file is removed.  Returns 0, or -1 with errno and why (after the
 * rename only when the directory's fsync failed: the new file is then
 * in place, but a power cut may still bring back the old one).
 */
extern int adaptra_profile_save (const struct adaptra_profile *p,
                                 const char *path, char *why, size_t len);

/* Several servers, possibly on several hosts over a shared filesystem
 * such as NFS, may merge into one profile: each merge holds the
 * profile's lock file, ".NAME.lock" beside it, created with O_EXCL
 * (atomic on NFS since version 3) and removed after the rename.  A
 * waiter retries for up to ADAPTRA_PROFILE_LOCK_WAIT_MS; a lock file
 * older than ADAPTRA_PROFILE_LOCK_STALE_S (its holder died: a merge
 * takes milliseconds) is broken by renaming it away, so the hosts'
 * clocks must agree within that.  Readers take no lock: rename(2)
 * gives them the old file or the new one.
 */
#define ADAPTRA_PROFILE_LOCK_WAIT_MS 10000
#define ADAPTRA_PROFILE_LOCK_STALE_S 60

/* Take path's lock.  0, or -1 with errno (ETIMEDOUT: held by another
 * for the whole wait) and why.
 */
extern int adaptra_profile_lock (const char *path, char *why, size_t len);
extern void adaptra_profile_unlock (const char *path);

/* Whether a fresh recording is a boot worth merging: at least
 * ADAPTRA_PROFILE_BOOT_MIN_BYTES of distinct pages.
 */
extern bool adaptra_profile_is_boot (const struct adaptra_profile *fresh);

/* Merge fresh into the profile at path under its lock: load what is
 * there now (missing, invalid or another export's: none), merge
 * (adaptra_profile_merge, budget_pages), save, unlock.  So concurrent
 * updates, from threads or hosts, each count.  Returns 0, or -1 with
 * errno and why.
 */
extern int adaptra_profile_update (const char *path,
                                   const struct adaptra_profile *fresh,
                                   uint64_t budget_pages,
                                   char *why, size_t len);

/* The file name (no directory) of the profile of an export: "export-",
 * up to 32 bytes of its identity with every byte outside [A-Za-z0-9_-]
 * turned to '_' (for people), '-', the FNV-1a 64 of the whole identity
 * in 16 hex digits (so that "a/b" and "a_b" differ), '-', the export
 * size in decimal, ADAPTRA_PROFILE_SUFFIX.  At most 100 bytes; never
 * holds '/', never starts with '.', so no export name leads out of
 * DIR.  Returns 0, or -1 when len is too small.
 */
extern int adaptra_profile_file_name (const char *identity,
                                      uint64_t export_size,
                                      char *buf, size_t len);
#define ADAPTRA_PROFILE_NAME_MAX 101  /* bytes, with the NUL */

/* Merge a fresh recording (boots = 1) into old (NULL: none, or a
 * profile of another key, which is then ignored).  The rule, page by
 * page:
 *
 *   - pages fresh touched come first, in fresh's order; their seen is
 *     old's + 1 (1 where old lacks them, at most 255), missed 0;
 *   - pages only old has follow, in old's order, with missed + 1, but
 *     only while missed < seen and missed <= 3: a page one boot
 *     touched leaves at the first boot that does not; a page seen in
 *     4 boots survives 3 boots without it, one seen in 2 boots one.
 *   - the result is cut at budget_pages pages (and 2^18 extents) from
 *     its end, so old-only pages go first.
 *
 * boots is old's + 1.  With the matcher's min_seen at
 * ADAPTRA_MATCHER_MIN_SEEN it then prefetches only what two boots
 * agree on.  Both must pass
 * adaptra_profile_check.  Returns a new profile, or NULL on ENOMEM.
 */
extern struct adaptra_profile *adaptra_profile_merge (
  const struct adaptra_profile *old, const struct adaptra_profile *fresh,
  uint64_t budget_pages);

/* The recorder: the order in which a boot first touches the export's
 * pages, until budget_pages pages are recorded or budget_ns have
 * passed since now_ns (the boot's start).  Memory: at most 64 bytes
 * per recorded page (a hash set kept under half full and the
 * extents, both grown by doubling): 16 MiB for 1 GiB of 4 KiB pages.
 *
 * Recorders may share a memory budget: each charges what it allocates
 * (counting both arrays while one grows) before allocating it, and
 * stops recording, keeping what it has, when the budget cannot take
 * it.  The budget may draw on a source (the filter's is the engine's
 * pool: adaptra_lend): a take within the limit then also takes the
 * bytes from the source, and fails if the source cannot give them; a
 * give returns them.  Thread-safe (the source's calls must be too).
 */
struct adaptra_profile_memory {
  uint64_t limit;               /* bytes */
  uint64_t used;                /* bytes; only through the functions */
  /* The source, or NULL. */
  bool (*source_take) (void *opaque, uint64_t bytes);
  void (*source_give) (void *opaque, uint64_t bytes);
  void *source;                 /* their opaque */
};

/* Take bytes from mem: false, taking nothing, when over the limit. */
extern bool adaptra_profile_memory_take (struct adaptra_profile_memory *mem,
                                         uint64_t bytes);
extern void adaptra_profile_memory_give (struct adaptra_profile_memory *mem,
                                         uint64_t bytes);

struct adaptra_recorder;

/* NULL on ENOMEM (or mem cannot hold the recorder's first tables) or
 * EINVAL (key invalid, budget_pages 0).  Budgets above
 * ADAPTRA_PROFILE_PAGES_MAX / _EXTENTS_MAX are cut to them.  mem:
 * the budget to charge, or NULL.
 */
extern struct adaptra_recorder *adaptra_recorder_new (
  const struct adaptra_profile_key *key, uint64_t budget_pages,
  uint64_t budget_ns, uint64_t now_ns, struct adaptra_profile_memory *mem);

extern void adaptra_recorder_free (struct adaptra_recorder *r);

/* A client read of [offset, offset + count) at now_ns: its pages not
 * touched before are appended, in order, extending the last extent
 * where they continue it.  Reads past the export are clamped.
 * Returns true while recording, false once a budget is reached (the
 * caller may then save and free the recorder).
 */
extern bool adaptra_recorder_read (struct adaptra_recorder *r,
                                   uint64_t offset, uint64_t count,
                                   uint64_t now_ns);

/* The recording as a new profile (boots 1, every seen 1).  NULL on
 * ENOMEM.  The recorder goes on.
 */
extern struct adaptra_profile *adaptra_recorder_profile (
  const struct adaptra_recorder *r);

/* The matcher: follows a new connection's reads along a profile and
 * proposes what to prefetch ahead of it.
 *
 * Position: the profile's pages in order are ordinals 0 .. pages-1;
 * the position P is one past the highest ordinal the client read
 * "near" P.  A read is classified as
 *
 *   match    it reads a page of the profile not read before, with an
 *            ordinal in [P - reorder, max (P + reorder, proposed end))
 *            (small reordering either way), or near the last far read
 *            in the profile (the client jumped ahead: P follows it);
 *   neutral  it reads only profile pages read before (a re-read);
 *            it does not count either way;
 *   miss     anything else: no profile page, or one far from P.
 *
 * It proposes only while at least half of the last `window` reads
 * that counted were matches, and at most `lead` pages past P, where
 * lead is the client's recent rate through the profile times lead_ns,
 * within [lead_min_bytes, lead_bytes].  A proposed page the client
 * has not read when P passed it by `reorder` is wasted.  Once wasted
 * pages exceed waste_bytes, or waste_pct% of the settled proposals
 * after waste_sample_bytes of them (not counting those a jump passed:
 * one jump costs at most lead + reorder), it gives up for good.  So a
 * connection wastes at most waste_bytes + lead_bytes + reorder_bytes
 * of backend reads on a profile.  A client that matches nothing gets
 * nothing proposed; one whose first read matches and no other,
 * lead_min_bytes.
 */
struct adaptra_matcher_config {
  uint64_t lead_bytes;          /* most proposed past P */
  uint64_t lead_min_bytes;      /* lead before the rate is known */
  uint64_t lead_ns;             /* the lead is this long at the
                                   client's rate */
  uint64_t reorder_bytes;       /* slack around P */
  unsigned window;              /* reads, 1 .. ADAPTRA_MATCHER_WINDOW_MAX */
  uint64_t waste_bytes;         /* give up past it */
  unsigned waste_pct;           /* give up past it ... */
  uint64_t waste_sample_bytes;  /* ... once this much settled */
  unsigned min_seen;            /* propose extents seen in at least
                                   min (min_seen, boots) boots */
};

/* The defaults (adaptra_matcher_defaults), one a field.  None was
 * measured: they came with the matcher in 8ad7b03 ("core: boot
 * profiles: recorder, file format, merge, matcher"), and no commit or
 * history section since records a run that varied one; the boot and
 * fleet measurements (docs/bench/fleet.md) ran with them as they are.
 * What each bounds, and what breaks far from it, is the reasoning
 * below, not a measurement.  With them a connection wastes at most
 * WASTE + LEAD + REORDER = 25 MiB on a profile.
 *
 * LEAD_BYTES caps what is proposed ahead of the client, so it is
 * what a jump or the end of the match can waste at once, and what
 * the profile's prefetch holds in the pool beside the streams'
 * windows.  It binds for a boot faster than LEAD_BYTES / LEAD_NS
 * (4 MiB/s) through the profile.  Far below it a fast boot outruns
 * its prefetch and waits for the backend's latency on every extent;
 * far above it a divergent boot wastes more, and its prefetch evicts
 * streams' pages.
 */
#define ADAPTRA_MATCHER_LEAD_BYTES (UINT64_C (8) << 20)
/* LEAD_MIN_BYTES: the lead before the client's rate is known and its
 * floor, so the most a client gets whose first read matched by
 * chance.  Far below it the first extents of every boot are fetched
 * one latency at a time, as without a profile; far above it a
 * chance match costs that much backend traffic.
 */
#define ADAPTRA_MATCHER_LEAD_MIN_BYTES (UINT64_C (1) << 20)
/* LEAD_NS: the lead is the client's rate through the profile over
 * this long, so it must exceed the time the profile workers take to
 * fetch a lead's extents: the backend's latency times the extents
 * over the reads in flight (trace A's boot extents average 47 KiB,
 * docs/bench/fleet.md: 8 MiB of them are some 170 reads, tens of ms
 * at 5 ms a read over the default adaptra-profile-workers).  Far
 * below it the client catches up with the proposals and waits; far
 * above it LEAD_BYTES binds for all but the slowest clients.
 */
#define ADAPTRA_MATCHER_LEAD_NS UINT64_C (2000000000)
/* REORDER_BYTES: how far behind or ahead of P a read still matches,
 * and how far P passes a proposed page before it is wasted.  It is
 * the slack for a client with several reads in flight, or a boot's
 * several connections, reading the profile out of order.  Far below
 * it such reads count as misses (the matcher backs off) and pages
 * read a moment late as waste; far above it reads unrelated to the
 * profile count as matches, and waste settles later.
 */
#define ADAPTRA_MATCHER_REORDER_BYTES (UINT64_C (1) << 20)
/* WINDOW: the recent reads that counted (match or miss) over which at
 * least half must match to propose, and over which the rate is
 * measured.  Far below it a short burst of reads off the profile (a
 * step the last boots did not take) stops the prefetch, and the rate
 * jumps with every read; far above it the matcher keeps proposing
 * long after a boot left the profile (the waste budget still bounds
 * it) and follows changes of rate slowly.  WINDOW_MAX bounds the
 * ring of recent reads each matcher holds.
 */
#define ADAPTRA_MATCHER_WINDOW 16
#define ADAPTRA_MATCHER_WINDOW_MAX 64
/* WASTE_BYTES: settled waste past which the matcher gives up for the
 * rest of the connection: the bound on what a wrong profile costs a
 * connection.  Far below it a boot that departs from the profile for
 * a while (a new kernel's modules) loses the rest of the profile; far
 * above it a profile of another image's boot costs that much backend
 * traffic per connection.
 */
#define ADAPTRA_MATCHER_WASTE_BYTES (UINT64_C (16) << 20)
/* WASTE_PCT of the settled proposals wasted, once WASTE_SAMPLE_BYTES
 * of them settled, also gives up: a profile most of whose proposals
 * go unread stops before the budget is spent.  The sample keeps a
 * few early misses from deciding: far below it the first extents
 * decide alone; far above it the budget decides first.  A PCT far
 * below half gives up on a profile that is partly right; near 100 the
 * rule never decides before the budget does.
 */
#define ADAPTRA_MATCHER_WASTE_PCT 50
#define ADAPTRA_MATCHER_WASTE_SAMPLE_BYTES (UINT64_C (4) << 20)
/* MIN_SEEN: the boots that must have touched an extent for it to be
 * proposed (all of them while a profile has fewer boots).  At 1 every
 * page a single boot touched is prefetched, until the next boot that
 * does not touch it (adaptra_profile_merge); at 2 only what two boots
 * agree on; far above it a page must recur over many boots before it
 * is followed, and each new version of a guest waits that many boots.
 */
#define ADAPTRA_MATCHER_MIN_SEEN 2

extern void adaptra_matcher_defaults (struct adaptra_matcher_config *cfg);

enum adaptra_matcher_state {
  ADAPTRA_MATCHER_WAITING,      /* no read counted yet */
  ADAPTRA_MATCHER_FOLLOWING,    /* proposing */
  ADAPTRA_MATCHER_BACKED_OFF,   /* recent reads do not match */
  ADAPTRA_MATCHER_GAVE_UP,      /* waste budget spent: for good */
};

/* Counters, in pages (of the profile's page size). */
struct adaptra_matcher_counters {
  uint64_t proposed;            /* handed out by adaptra_matcher_next */
  uint64_t hit;                 /* proposed, then read by the client */
  uint64_t wasted;              /* proposed, passed by P unread */
  uint64_t pending;             /* proposed, unread, not yet passed: at
                                   the end of the connection, waste */
  uint64_t reads_matched;       /* reads classified match ... */
  uint64_t reads_missed;        /* ... and miss */
  uint64_t position;            /* P */
  enum adaptra_matcher_state state;
};

/* A byte range to prefetch, inside the export. */
struct adaptra_profile_range {
  uint64_t offset;
  uint64_t count;
};

struct adaptra_matcher;

/* A matcher over p (copied: p may be freed after).  p must pass
 * adaptra_profile_check and cfg must have window in 1 .. 64.  NULL on
 * ENOMEM or EINVAL.
 */
extern struct adaptra_matcher *adaptra_matcher_new (
  const struct adaptra_profile *p, const struct adaptra_matcher_config *cfg);

extern void adaptra_matcher_free (struct adaptra_matcher *m);

/* The memory a matcher over p holds: 28 bytes an extent and 3 bits a
 * page (making it takes 16 bytes an extent more for a moment).  The
 * filter charges it to the recorders' budget (struct
 * adaptra_profile_memory), so a connection follows a profile only
 * while that budget has room.
 */
extern uint64_t adaptra_matcher_bytes (const struct adaptra_profile *p);

/* Call on every client read of the connection, in order, with the
 * time: it moves P, classifies the read, counts hits and waste.
 * Ranges past the export are clamped.
 */
extern void adaptra_matcher_read (struct adaptra_matcher *m, uint64_t offset,
                                  uint64_t count, uint64_t now_ns);

/* Then ask what to prefetch: up to max byte ranges, in profile order,
 * of pages neither proposed nor read before, up to the lead past P,
 * and at most max_bytes (whole pages) in this call.  Each page is
 * proposed once and counted as proposed: so pass as max_bytes what
 * the engine will take now (adaptra_cache_hint drops a range when
 * the backend is congested, and the matcher would never offer it
 * again), UINT64_MAX for no limit.  Returns the number filled: 0 when
 * it is not following, the lead is full or max_bytes is under a page;
 * call again while it returns max.
 */
extern size_t adaptra_matcher_next (struct adaptra_matcher *m,
                                    uint64_t now_ns, uint64_t max_bytes,
                                    struct adaptra_profile_range *out,
                                    size_t max);

extern void adaptra_matcher_counters (const struct adaptra_matcher *m,
                                      struct adaptra_matcher_counters *c);

#endif /* ADAPTRA_PROFILE_H */
