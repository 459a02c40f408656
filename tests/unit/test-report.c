/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <regex.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../control/report.h"

static struct adaptra_stats
sample (void)
{
  struct adaptra_stats s = { 0 };

  s.cache_miss = 7;
  s.readrandom = 3;
  s.method[ADAPTRA_METHOD_NONE].readahead = 30;
  s.method[ADAPTRA_METHOD_NONE].pgreadahead = 400;
  s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit = 380;
  s.method[ADAPTRA_METHOD_STATE].readahead = 20;
  s.method[ADAPTRA_METHOD_STATE].pgreadahead_hit = 300;
  s.method[ADAPTRA_METHOD_CONTEXT].readahead = 10;
  s.evicted_unread = 4;
  s.backend_bytes = 1100;
  s.client_bytes = 1000;
  s.page_bytes = 4096;
  s.pages_free = 12345;
  s.pages_inactive = 100;
  s.pages_active = 50;
  s.pages_in_flight = 5;
  s.backend_latency_ns = 2500000;
  s.backend_bytes_per_sec = 104857600;
  return s;
}

static void
derive_computes_the_seed_ratios (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_derived d = adaptra_report_derive (&s);

  assert_float_equal (d.readahead_hit_pct, 95.0, 1e-9);
  assert_float_equal (d.readahead_per_random, 10.0, 1e-9);
  assert_float_equal (d.amplification, 1.1, 1e-9);
  assert_float_equal (d.evicted_unread_pct, 1.0, 1e-9);
}

static void
derive_with_zero_denominators_is_zero (void **state)
{
  struct adaptra_stats s = { 0 };
  struct adaptra_derived d = adaptra_report_derive (&s);

  assert_float_equal (d.readahead_hit_pct, 0., 0.);
  assert_float_equal (d.amplification, 0., 0.);
}

static void
text_has_counters_methods_and_ratios (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);

  assert_int_equal (adaptra_report_text (&s, &out), 0);
  assert_memory_equal (out.data, "cache_miss               7\n", 27);
  assert_non_null (strstr (out.data, "\npages_free               12345\n"));
  assert_non_null (strstr (out.data, "\nstate              20"));
  assert_non_null (strstr (out.data, "\nreadahead_hit_pct        95.00\n"));
  /* Per-method copies appear in the table, not as "ra_state" lines. */
  assert_null (strstr (out.data, "ra_state"));
  adaptra_strbuf_free (&out);
}

static void
json_groups_methods_and_keeps_totals (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);
  int depth = 0, max_depth = 0;
  size_t i;

  assert_int_equal (adaptra_report_json (&s, &out), 0);
  assert_memory_equal (out.data, "{\"version\":1,\"counters\":{", 25);
  assert_non_null (strstr (out.data, "\"cache_miss\":7,"));
  assert_non_null (strstr (out.data, "\"readahead\":30,"));
  assert_non_null (strstr (out.data,
                           "\"state\":{\"readahead\":20,"));
  assert_non_null (strstr (out.data, "\"pgreadahead_hit\":300"));
  assert_non_null (strstr (out.data, "\"pages_free\":12345"));
  assert_non_null (strstr (out.data, "\"amplification\":1.1000"));
  assert_non_null (strstr (out.data, "\"adaptra_version\":\""
                           PACKAGE_VERSION "\"}\n"));
  for (i = 0; i < out.len; i++) {
    depth += out.data[i] == '{';
    depth -= out.data[i] == '}';
    assert_true (depth >= 0);
    if (depth > max_depth)
      max_depth = depth;
  }
  assert_int_equal (depth, 0);
  assert_int_equal (max_depth, 3);      /* root, methods, one method */
  assert_int_equal (out.data[out.len - 1], '\n');
  assert_null (memchr (out.data, '\n', out.len - 1));   /* one line */
  adaptra_strbuf_free (&out);
}

/* Every line of the exposition is a HELP or TYPE comment or a sample,
 * samples come after their family's TYPE, and counters end in _total.
 */
static void
prometheus_exposition_is_well_formed (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);
  regex_t help, type, sample_re;
  char family[128] = "", kind[16] = "";
  unsigned samples = 0, method_samples = 0;
  char *line, *save;

  assert_int_equal (adaptra_report_prometheus (&s, &out), 0);
  assert_int_equal (regcomp (&help, "^# HELP adaptra_[a-z_]+ [^ ].*$",
                             REG_EXTENDED | REG_NOSUB), 0);
  assert_int_equal (regcomp (&type,
                             "^# TYPE adaptra_[a-z_]+ (counter|gauge)$",
                             REG_EXTENDED | REG_NOSUB), 0);
  assert_int_equal (regcomp (&sample_re,
                             "^adaptra_[a-z_]+"
                             "(\\{(method|version)=\"[a-z0-9.]+\"\\})? "
                             "[0-9]+(\\.[0-9]+)?$",
                             REG_EXTENDED | REG_NOSUB), 0);
  for (line = strtok_r (out.data, "\n", &save); line;
       line = strtok_r (NULL, "\n", &save)) {
    if (strncmp (line, "# HELP ", 7) == 0)
      assert_int_equal (regexec (&help, line, 0, NULL, 0), 0);
    else if (strncmp (line, "# TYPE ", 7) == 0) {
      assert_int_equal (regexec (&type, line, 0, NULL, 0), 0);
      assert_int_equal (sscanf (line, "# TYPE %127s %15s", family, kind), 2);
      if (strcmp (kind, "counter") == 0)
        assert_non_null (strstr (family, "_total"));
    }
    else {
      assert_int_equal (regexec (&sample_re, line, 0, NULL, 0), 0);
      assert_int_equal (strncmp (line, family, strlen (family)), 0);
      samples++;
      method_samples += strstr (line, "{method=") != NULL;
    }
  }
  /* Every field is a sample, except the six per-method totals, which
   * are the sums of their family's samples; and adaptra_build_info,
   * adaptra_pool_size_bytes and adaptra_pool_used_bytes.
   */
  assert_int_equal (samples, adaptra_stat_field_count - 6 + 3);
  assert_int_equal (method_samples,
                    6 * (ADAPTRA_METHOD_COUNT - 1));
  regfree (&help);
  regfree (&type);
  regfree (&sample_re);
  adaptra_strbuf_free (&out);
}

static void
prometheus_carries_method_labels (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);

  adaptra_report_prometheus (&s, &out);
  assert_non_null (strstr (out.data,
                           "\nadaptra_readahead_total{method=\"state\"} 20\n"));
  assert_non_null (strstr (out.data,
                           "\nadaptra_cache_miss_total 7\n"));
  assert_non_null (strstr (out.data, "\nadaptra_pages_free 12345\n"));
  adaptra_strbuf_free (&out);
}

/* What an operator graphs first: the version, the pool's size and how
 * much of it holds data, in bytes.
 */
static void
prometheus_has_build_info_and_pool (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);

  adaptra_report_prometheus (&s, &out);
  assert_non_null (strstr (out.data, "adaptra_build_info{version=\""
                           PACKAGE_VERSION "\"} 1\n"));
  assert_non_null (strstr (out.data, "\nadaptra_pool_size_bytes 51200000\n"));
  assert_non_null (strstr (out.data, "\nadaptra_pool_used_bytes 634880\n"));
  adaptra_strbuf_free (&out);
}

/* Gauges are in base units, under names that say so. */
static void
prometheus_uses_base_units (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);

  adaptra_report_prometheus (&s, &out);
  assert_non_null (strstr (out.data,
                           "# TYPE adaptra_backend_latency_seconds gauge\n"
                           "adaptra_backend_latency_seconds 0.0025\n"));
  assert_non_null (strstr (out.data,
                           "\nadaptra_backend_throughput_bytes_per_second "
                           "104857600\n"));
  assert_null (strstr (out.data, "_ns"));
  assert_null (strstr (out.data, "_per_sec "));
  adaptra_strbuf_free (&out);
}

/* Per-connection families have names of their own, and list only the
 * connections that read the most.
 */
static void
prometheus_connections_are_bounded (void **state)
{
  enum { N = ADAPTRA_REPORT_MAX_CLIENT_SERIES + 6 };
  struct adaptra_client_row rows[N];
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);
  const char *p;
  unsigned i, samples = 0;

  memset (rows, 0, sizeof rows);
  for (i = 0; i < N; i++) {
    rows[i].id = i;
    snprintf (rows[i].name, sizeof rows[i].name, "unix:pid=%u", i);
    rows[i].bytes = i * 4096;
    rows[i].requests = i;
  }
  assert_int_equal (adaptra_report_clients_prometheus (rows, N, &out), 0);
  for (p = out.data; (p = strstr (p, "\nadaptra_connection_read_bytes_total{"));
       p++)
    samples++;
  assert_int_equal (samples, ADAPTRA_REPORT_MAX_CLIENT_SERIES);
  assert_non_null (strstr (out.data, "\nadaptra_connections_unlisted 6\n"));
  /* The busiest are in, the idlest out. */
  assert_non_null (strstr (out.data,
                           "{client=\"unix:pid=69\",id=\"69\"} 69\n"));
  assert_null (strstr (out.data, "{client=\"unix:pid=5\",id=\"5\"}"));
  assert_null (strstr (out.data, "adaptra_client_"));
  adaptra_strbuf_free (&out);
}

static void
small_limit_reports_overflow (void **state)
{
  struct adaptra_stats s = sample ();
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (100);

  assert_int_equal (adaptra_report_json (&s, &out), -1);
  assert_true (out.overflow);
  assert_true (out.len <= 100);
  adaptra_strbuf_free (&out);
}

/* Names are UTF-8 in JSON and in labels, whatever bytes a client
 * chose: a stray byte, a sequence cut short (a 63-byte row name cut
 * inside a character), an overlong form and a surrogate each become
 * U+FFFD; characters of 2, 3 and 4 bytes pass as they are.
 */
static void
names_are_utf8_in_json_and_labels (void **state)
{
  struct adaptra_volume_row row = { .id = 1, .size = 512 };
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 16);
  const char name[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|"
    "\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82";

  (void) state;
  memcpy (row.name, name, sizeof name);
  assert_int_equal (adaptra_report_volumes_json (&row, 1, &out), 0);
  assert_non_null (strstr (out.data, "\"export\":\"\xc3\xa9\xe2\x82\xac"
                           "\xf0\x9f\x98\x80|\\ufffd|\\ufffd\\ufffd|"
                           "\\ufffd\\ufffd\\ufffd|"
                           "\\ufffd\\ufffd\\ufffd\\ufffd|"
                           "\\ufffd\\ufffd\""));
  adaptra_strbuf_clear (&out);
  assert_int_equal (adaptra_report_volumes_prometheus (&row, 1, &out), 0);
  assert_non_null (strstr (out.data, "{export=\"\xc3\xa9\xe2\x82\xac"
                           "\xf0\x9f\x98\x80|\xef\xbf\xbd|"
                           "\xef\xbf\xbd\xef\xbf\xbd|"
                           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                           "\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\","));
  adaptra_strbuf_free (&out);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (derive_computes_the_seed_ratios),
    cmocka_unit_test (derive_with_zero_denominators_is_zero),
    cmocka_unit_test (text_has_counters_methods_and_ratios),
    cmocka_unit_test (json_groups_methods_and_keeps_totals),
    cmocka_unit_test (prometheus_exposition_is_well_formed),
    cmocka_unit_test (prometheus_carries_method_labels),
    cmocka_unit_test (prometheus_uses_base_units),
    cmocka_unit_test (prometheus_has_build_info_and_pool),
    cmocka_unit_test (prometheus_connections_are_bounded),
    cmocka_unit_test (small_limit_reports_overflow),
    cmocka_unit_test (names_are_utf8_in_json_and_labels),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
