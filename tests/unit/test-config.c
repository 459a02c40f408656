/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/config.c: defaults, every rejection and its
 * message, mode names.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/config.h"
#include "adaptra/profile.h"
#include "../../core/engine-impl.h"

static struct adaptra_config cfg;
static char why[160];

static int
setup (void **state)
{
  (void) state;
  adaptra_config_defaults (&cfg);
  return 0;
}

/* cfg is rejected with a message containing text. */
static void
assert_rejected (const char *text)
{
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), EINVAL);
  if (strstr (why, text) == NULL)
    fail_msg ("message \"%s\" lacks \"%s\"", why, text);
}

static void
test_defaults_valid (void **state)
{
  (void) state;
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
  assert_string_equal (why, "");
  assert_int_equal (cfg.pool_bytes, 256 * 1024 * 1024);
  assert_int_equal (cfg.page_size, 4096);
  assert_int_equal (cfg.min_bytes, 16384);
  assert_int_equal (cfg.max_bytes, 0);
  assert_int_equal (cfg.ratio, 50);
  assert_int_equal (cfg.mode, ADAPTRA_MODE_ADAPTIVE);
  assert_int_equal (cfg.fixed_bytes, 128 * 1024);
}

/* adaptra-min's default follows the page: never less than one. */
static void
test_default_min (void **state)
{
  (void) state;
  assert_int_equal (adaptra_config_default_min (4096), cfg.min_bytes);
  assert_int_equal (adaptra_config_default_min (cfg.min_bytes),
                    cfg.min_bytes);
  assert_int_equal (adaptra_config_default_min (cfg.min_bytes * 4),
                    cfg.min_bytes * 4);
  cfg.page_size = cfg.min_bytes * 4;
  cfg.min_bytes = adaptra_config_default_min (cfg.page_size);
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
}

static void
test_page (void **state)
{
  (void) state;
  cfg.page_size = 3000;
  assert_rejected ("adaptra-page=3000 is not a power of 2");
  cfg.page_size = 256;
  assert_rejected ("adaptra-page=256 is outside");
  cfg.page_size = 2 * 1024 * 1024;
  assert_rejected ("adaptra-page=2097152");
  cfg.page_size = 16384;
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
}

static void
test_pool (void **state)
{
  (void) state;
  cfg.pool_bytes = 63 * 4096;
  assert_rejected ("adaptra-pool=258048 holds fewer than 64 pages");
  cfg.pool_bytes = (uint64_t) UINT32_MAX * 512;
  cfg.page_size = 512;
  assert_rejected ("adaptra-pool=2199023255040 has too many pages of "
                   "adaptra-page=512");
}

static void
test_min_max (void **state)
{
  (void) state;
  cfg.min_bytes = 1024;
  assert_rejected ("adaptra-min=1024 is less than adaptra-page=4096");
  cfg.min_bytes = 65536;
  cfg.max_bytes = 32768;
  assert_rejected ("adaptra-max=32768 is less than adaptra-min=65536");
  cfg.max_bytes = 128 * 1024 * 1024;
  assert_rejected ("adaptra-max=134217728 is more than 1/4 of adaptra-pool");
  cfg.max_bytes = 64 * 1024 * 1024;
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
  cfg.min_bytes = 65 * 1024 * 1024;
  cfg.max_bytes = 0;
  assert_rejected ("adaptra-min=68157440 is more than 1/4");
}

static void
test_others (void **state)
{
  (void) state;
  cfg.ratio = 0;
  assert_rejected ("adaptra-ratio=0 is outside 1..100");
  cfg.ratio = 101;
  assert_rejected ("adaptra-ratio=101");
  cfg.ratio = 100;
  cfg.streams = 0;
  assert_rejected ("adaptra-streams=0");
  cfg.streams = 65537;
  assert_rejected ("adaptra-streams=65537");
  cfg.streams = 8;
  cfg.workers = 65;
  assert_rejected ("adaptra-workers=65");
  cfg.workers = 0;
  cfg.profile_workers = 65;
  assert_rejected ("adaptra-profile-workers=65 is outside 0..64");
  cfg.profile_workers = 0;
  cfg.mode = (enum adaptra_mode) 7;
  assert_rejected ("adaptra-mode=7");
  cfg.mode = ADAPTRA_MODE_OFF;
  cfg.bypass = (enum adaptra_bypass) 9;
  assert_rejected ("adaptra-bypass=9 is not auto, always or never");
}

/* The legacy window is no parameter: pages larger than it, and pools
 * too small for four of it, are still valid configurations.
 */
static void
test_fixed_window_never_rejects (void **state)
{
  struct adaptra_config cfg;
  char why[160];

  adaptra_config_defaults (&cfg);
  cfg.mode = ADAPTRA_MODE_FIXED;
  cfg.page_size = 1024 * 1024;
  cfg.min_bytes = 1024 * 1024;
  cfg.pool_bytes = UINT64_C (64) * 1024 * 1024;
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
  adaptra_config_defaults (&cfg);
  cfg.mode = ADAPTRA_MODE_FIXED;
  cfg.pool_bytes = 256 * 1024;
  assert_int_equal (adaptra_config_check (&cfg, why, sizeof why), 0);
}

static void
test_short_buffer (void **state)
{
  char tiny[8];

  (void) state;
  cfg.ratio = 0;
  assert_int_equal (adaptra_config_check (&cfg, tiny, sizeof tiny), EINVAL);
  assert_int_equal (strlen (tiny), sizeof tiny - 1);
}

static void
test_modes (void **state)
{
  enum adaptra_mode m;

  (void) state;
  assert_int_equal (adaptra_mode_parse ("fixed", &m), 0);
  assert_int_equal (m, ADAPTRA_MODE_FIXED);
  assert_int_equal (adaptra_mode_parse ("off", &m), 0);
  assert_int_equal (m, ADAPTRA_MODE_OFF);
  assert_int_equal (adaptra_mode_parse ("adaptive", &m), 0);
  assert_int_equal (m, ADAPTRA_MODE_ADAPTIVE);
  assert_int_equal (adaptra_mode_parse ("fast", &m), EINVAL);
  assert_string_equal (adaptra_mode_name (ADAPTRA_MODE_FIXED), "fixed");
}

static void
test_bypasses (void **state)
{
  enum adaptra_bypass b;

  (void) state;
  assert_int_equal (adaptra_bypass_parse ("never", &b), 0);
  assert_int_equal (b, ADAPTRA_BYPASS_NEVER);
  assert_int_equal (adaptra_bypass_parse ("sometimes", &b), EINVAL);
  assert_string_equal (adaptra_bypass_name (ADAPTRA_BYPASS_ALWAYS), "always");
}

/* adaptra_param_put and _get reach the named field, of either width,
 * and no other.
 */
static void
test_param_fields (void **state)
{
  (void) state;
  adaptra_param_put (&cfg, adaptra_param_find ("page"), 8192);
  assert_int_equal (cfg.page_size, 8192);
  adaptra_param_put (&cfg, adaptra_param_find ("pool"), 5ULL << 32);
  assert_true (cfg.pool_bytes == 5ULL << 32);
  assert_int_equal (cfg.page_size, 8192);
  cfg.ratio = 42;
  assert_int_equal (adaptra_param_get (&cfg, adaptra_param_find ("ratio")),
                    42);
  cfg.max_bytes = 3ULL << 33;
  assert_true (adaptra_param_get (&cfg, adaptra_param_find ("max"))
               == 3ULL << 33);
}

/* The one table: unique names, found with and without the prefix,
 * every field's parameter has a default, and every bound it states is
 * the one adaptra_config_check enforces, in a message naming it.
 */
static void
test_table (void **state)
{
  char name[64];
  size_t i, j;
  bool size;

  (void) state;
  assert_true (adaptra_nparams > 0);
  for (i = 0; i < adaptra_nparams; i++) {
    const struct adaptra_param *p = &adaptra_params[i];

    for (j = 0; j < i; j++)
      assert_string_not_equal (p->name, adaptra_params[j].name);
    assert_ptr_equal (adaptra_param_find (p->name), p);
    snprintf (name, sizeof name, "adaptra-%s", p->name);
    assert_ptr_equal (adaptra_param_find (name), p);
    assert_non_null (p->metavar);
    assert_non_null (p->help);
    if (p->width > 0)
      assert_non_null (p->def);
    /* A bound of a parameter with no field in the config (the
     * filter's own, such as stats-idle) is enforced where plugin/
     * parses it; test-bad-params refuses its values.
     */
    if (p->max == 0 || p->width == 0)
      continue;
    snprintf (name, sizeof name, "adaptra-%s=", p->name);
    adaptra_config_defaults (&cfg);
    /* Sizes by a factor of 2, since a page must be a power of 2. */
    size = p->type == ADAPTRA_PARAM_SIZE;
    adaptra_param_put (&cfg, p, size ? p->max * 2 : p->max + 1);
    assert_rejected (name);
    assert_non_null (strstr (why, "is outside"));
    if (p->min > 0) {
      adaptra_config_defaults (&cfg);
      adaptra_param_put (&cfg, p, size ? p->min / 2 : p->min - 1);
      assert_rejected (name);
      assert_non_null (strstr (why, "is outside"));
    }
  }
  assert_null (adaptra_param_find ("adaptra-bogus"));
  assert_null (adaptra_param_find ("bogus"));
}

/* The help of parameter name holds the text fmt makes. */
static void
assert_help_says (const char *name, const char *fmt, ...)
{
  const struct adaptra_param *p = adaptra_param_find (name);
  char text[64];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (text, sizeof text, fmt, ap);
  va_end (ap);
  assert_non_null (p);
  if (strstr (p->help, text) == NULL)
    fail_msg ("adaptra-%s's help \"%s\" lacks \"%s\"", name, p->help, text);
}

/* The numbers --help gives in words are the constants' values. */
static void
test_help_numbers (void **state)
{
  unsigned log2_pages = 0;

  (void) state;
  while ((UINT64_C (1) << log2_pages) < ADAPTRA_PROFILE_PAGES_MAX)
    log2_pages++;
  assert_help_says ("mode", "a constant %dK window",
                    ADAPTRA_FIXED_WINDOW / 1024);
  assert_help_says ("max", "the larger of %dM", ADAPTRA_AUTO_MAX_FLOOR >> 20);
  assert_help_says ("pool", "(1/%d of it)", ADAPTRA_BOUNCE_SHARE);
  assert_help_says ("profile-max", "from %" PRIu64 "M to 2^%u pages",
                    ADAPTRA_PROFILE_BOOT_MIN_BYTES >> 20, log2_pages);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup (test_defaults_valid, setup),
    cmocka_unit_test_setup (test_default_min, setup),
    cmocka_unit_test_setup (test_page, setup),
    cmocka_unit_test_setup (test_pool, setup),
    cmocka_unit_test_setup (test_min_max, setup),
    cmocka_unit_test_setup (test_others, setup),
    cmocka_unit_test_setup (test_fixed_window_never_rejects, setup),
    cmocka_unit_test_setup (test_short_buffer, setup),
    cmocka_unit_test_setup (test_modes, setup),
    cmocka_unit_test_setup (test_bypasses, setup),
    cmocka_unit_test_setup (test_param_fields, setup),
    cmocka_unit_test_setup (test_table, setup),
    cmocka_unit_test_setup (test_help_numbers, setup),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
