/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The control protocol over fake engine operations that record what
 * they were asked.
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "control-fake.h"

/* The fake engine (control-fake.h), and what set was asked. */
struct fake {
  struct control_fake engine;   /* first: opaque is both */
  char set_name[64], set_value[64];
  int set_result;
};

static int
fake_set (void *opaque, const char *name, const char *value,
          char *why, size_t len)
{
  struct fake *f = opaque;

  snprintf (f->set_name, sizeof f->set_name, "%s", name);
  snprintf (f->set_value, sizeof f->set_value, "%s", value);
  if (f->set_result)
    snprintf (why, len, "adaptra-%s=%s is outside 1..100", name, value);
  return f->set_result;
}

static struct fake fake;
static struct adaptra_control_ops ops;

/* Run one request; returns the reply in a static buffer. */
static const char *
run (const char *line, size_t len, enum adaptra_control_next *next)
{
  static struct adaptra_strbuf out = { .limit = 1 << 20 };
  enum adaptra_control_next n;

  adaptra_strbuf_clear (&out);
  n = adaptra_control_execute (&ops, line, len, &out);
  if (next)
    *next = n;
  assert_true (out.len >= 2);
  /* Framing: the reply's one empty line is its last. */
  assert_ptr_equal (memmem (out.data, out.len, "\n\n", 2),
                    out.data + out.len - 2);
  return out.data;
}

static const char *
run_str (const char *line)
{
  return run (line, strlen (line), NULL);
}

/* The reply to line holds each string that follows, up to a NULL. */
static void __attribute__ ((sentinel))
assert_reply_holds (const char *line, ...)
{
  const char *r = run_str (line), *want, *missing = NULL;
  va_list ap;

  va_start (ap, line);
  while (!missing && (want = va_arg (ap, const char *)) != NULL)
    if (!strstr (r, want))
      missing = want;
  va_end (ap);
  if (missing)
    fail_msg ("the reply to '%s' lacks '%s'", line, missing);
}

static int
setup (void **state)
{
  memset (&fake, 0, sizeof fake);
  fake.engine.ratio = 50;
  ops = control_fake_ops (&fake.engine, fake_set);
  return 0;
}

static void
stats_variants_take_a_snapshot (void **state)
{
  assert_reply_holds ("stats", "cache_miss               42\n", NULL);
  assert_reply_holds ("stats json", "\"cache_miss\":42", NULL);
  assert_reply_holds ("metrics", "adaptra_cache_miss_total 42", NULL);
  assert_int_equal (fake.engine.snapshots, 3);
}

static void
words_may_be_separated_by_runs_of_blanks (void **state)
{
  assert_reply_holds ("  stats \t json  ", "{\"version\":1", NULL);
}

static void
streams_lists_rows_with_client_names (void **state)
{
  assert_reply_holds ("streams", "unix:pid=99", " vm1.img ", "state",
                      " 1048576 ", " 262144 ", NULL);
}

/* An export name is the NBD client's choice, any bytes but NUL: the
 * tables print it on one line, escaped, so that it cannot end the
 * reply early (run checks the framing) nor make lines of its own.
 */
static void
tables_escape_export_names (void **state)
{
  assert_reply_holds ("exports", "\n5      q\"\\\\\\n ", NULL);
  assert_reply_holds ("streams", "\n8      x\\n\\n\\ty\\x1b\\\\ ", NULL);
}

static void
clients_table_and_metrics_labels (void **state)
{
  /* " (default) ": the second's "". */
  assert_reply_holds ("clients", "unix:pid=99", " vm1.img ", " (default) ",
                      " 49152 ", NULL);
  /* Per-connection series only when asked for; label values are
   * escaped.
   */
  assert_null (strstr (run_str ("metrics"), "adaptra_connection_"));
  assert_reply_holds ("metrics clients",
                      "# TYPE adaptra_connection_read_requests_total "
                      "counter\n"
                      "adaptra_connection_read_requests_total"
                      "{client=\"unix:pid=99\",id=\"1\"} 12\n",
                      "{client=\"odd\\\"name\",id=\"2\"} 3\n", NULL);
}

/* The whitespace-separated words of line k (0: the header) of r, in
 * a static buffer, joined by single spaces.
 */
static const char *
table_line (const char *r, unsigned k)
{
  static char words[512];
  size_t n = 0;

  for (; k > 0 && r; k--)
    if ((r = strchr (r, '\n')) != NULL)
      r++;
  assert_non_null (r);
  for (; *r && *r != '\n' && n + 2 < sizeof words; r++)
    if (*r != ' ')
      words[n++] = *r;
    else if (n > 0 && words[n - 1] != ' ')
      words[n++] = ' ';
  words[n] = '\0';
  return words;
}

static void
exports_table_names_share_and_pages (void **state)
{
  const char *r = run_str ("exports");

  assert_string_equal (table_line (r, 0),
                       "id export share size_bytes clients contexts "
                       "readahead read_us pages client_bytes backend_bytes "
                       "ra_hit_pages");
  assert_string_equal (table_line (r, 1),
                       "0 (default) export 1048576 2 0 on 0 17 0 0 0");
  assert_string_equal (table_line (r, 2),
                       "3 vm1.img connection 4194304 1 4 bypass 12 99 8192 "
                       "0 0");
  assert_reply_holds ("help", "exports ", NULL);
  assert_reply_holds ("exports json",
                      "{\"version\":1,\"exports\":[{\"id\":0,"
                      "\"export\":\"\",\"share\":\"export\","
                      "\"size\":1048576,\"clients\":2,"
                      "\"contexts\":0,\"bypass\":false,",
                      "\"export\":\"q\\\"\\\\\\u000a\",", NULL);
  /* Per-connection volumes of one export are one series. */
  assert_reply_holds ("metrics",
                      "# TYPE adaptra_export_pages gauge\n"
                      "adaptra_export_pages{export=\"\","
                      "share=\"export\"} 17\n"
                      "adaptra_export_pages{export=\"vm1.img\","
                      "share=\"connection\"} 100\n", NULL);
}

static void
set_passes_name_and_value_and_reports_errors (void **state)
{
  assert_string_equal (run_str ("set ratio 30"), "ok\n\n");
  assert_string_equal (fake.set_name, "ratio");
  assert_string_equal (fake.set_value, "30");
  fake.set_result = -1;
  assert_string_equal (run_str ("set ratio 0"),
                       "error: adaptra-ratio=0 is outside 1..100\n\n");
  assert_string_equal (run_str ("set ratio"), "error: wrong arguments to "
                       "'set' (usage: set NAME VALUE)\n\n");
}

static void
get_one_or_all_and_unknown (void **state)
{
  assert_string_equal (run_str ("get ratio"), "ratio 50\n\n");
  assert_string_equal (run_str ("get"), "ratio 50\n\n");
  assert_string_equal (run_str ("get bogus"),
                       "error: unknown parameter 'bogus'\n\n");
}

static void
set_reset_and_trace_need_privilege (void **state)
{
  static const char *const need[] = {
    "set ratio 30", "reset", " trace on", "trace\toff", "set",
  };
  static const char *const free_[] = {
    "stats", "stats json", "metrics", "metrics clients", "get ratio",
    "clients", "streams", "help", "quit", "control", "settings", "",
    "resetx",
  };
  size_t i;

  for (i = 0; i < sizeof need / sizeof need[0]; i++)
    assert_true (adaptra_control_needs_privilege (need[i], strlen (need[i])));
  for (i = 0; i < sizeof free_ / sizeof free_[0]; i++)
    assert_false (adaptra_control_needs_privilege (free_[i],
                                                   strlen (free_[i])));
  /* Lines the parser refuses are refused anyway. */
  assert_false (adaptra_control_needs_privilege ("reset\001", 6));
}

static void
reset_help_and_quit (void **state)
{
  enum adaptra_control_next next;

  assert_string_equal (run_str ("reset"), "ok\n\n");
  assert_int_equal (fake.engine.resets, 1);
  assert_memory_equal (run_str ("help"), ADAPTRA_CONTROL_BANNER "\n",
                       strlen (ADAPTRA_CONTROL_BANNER) + 1);
  assert_string_equal (run ("quit", 4, &next), "bye\n\n");
  assert_int_equal (next, ADAPTRA_CONTROL_QUIT);
  run ("stats", 5, &next);
  assert_int_equal (next, ADAPTRA_CONTROL_CONTINUE);
}

/* "trace on" and "trace off" tell the server what to do with the
 * connection; anything else after "trace" is an error.
 */
static void
trace_on_and_off (void **state)
{
  enum adaptra_control_next next;

  assert_string_equal (run ("trace on", 8, &next), "ok\n\n");
  assert_int_equal (next, ADAPTRA_CONTROL_TRACE_ON);
  assert_string_equal (run ("trace off", 9, &next), "ok\n\n");
  assert_int_equal (next, ADAPTRA_CONTROL_TRACE_OFF);
  assert_memory_equal (run ("trace", 5, &next), "error: ", 7);
  assert_int_equal (next, ADAPTRA_CONTROL_CONTINUE);
  assert_memory_equal (run ("trace maybe", 11, &next), "error: ", 7);
  assert_int_equal (next, ADAPTRA_CONTROL_CONTINUE);
  assert_memory_equal (run ("trace on now", 12, &next), "error: ", 7);
  assert_int_equal (next, ADAPTRA_CONTROL_CONTINUE);
}

static void
junk_gets_an_error_and_touches_nothing (void **state)
{
  static const char binary[] = { 's', 't', 0, 'a', 't', 's' };
  static const char high[] = "stats\xff";
  char longword[600];

  assert_string_equal (run (binary, sizeof binary, NULL),
                       "error: request contains binary data\n\n");
  assert_string_equal (run (high, sizeof high - 1, NULL),
                       "error: request contains binary data\n\n");
  assert_string_equal (run_str (""), "error: empty request (try 'help')\n\n");
  assert_string_equal (run_str ("   "),
                       "error: empty request (try 'help')\n\n");
  assert_string_equal (run_str ("STATS"),
                       "error: unknown command 'STATS' (try 'help')\n\n");
  /* The socket server answers "control" before the protocol sees it. */
  assert_string_equal (run_str ("control"), "error: this command is "
                       "answered by the socket server\n\n");
  assert_string_equal (run_str ("a b c d e"),
                       "error: too many words in request\n\n");
  memset (longword, 'x', sizeof longword - 1);
  longword[sizeof longword - 1] = '\0';
  assert_string_equal (run_str (longword),
                       "error: word too long in request\n\n");
  assert_int_equal (fake.engine.snapshots, 0);
  assert_int_equal (fake.engine.resets, 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup (stats_variants_take_a_snapshot, setup),
    cmocka_unit_test_setup (words_may_be_separated_by_runs_of_blanks, setup),
    cmocka_unit_test_setup (streams_lists_rows_with_client_names, setup),
    cmocka_unit_test_setup (tables_escape_export_names, setup),
    cmocka_unit_test_setup (clients_table_and_metrics_labels, setup),
    cmocka_unit_test_setup (exports_table_names_share_and_pages, setup),
    cmocka_unit_test_setup (set_passes_name_and_value_and_reports_errors,
                            setup),
    cmocka_unit_test_setup (get_one_or_all_and_unknown, setup),
    cmocka_unit_test_setup (set_reset_and_trace_need_privilege, setup),
    cmocka_unit_test_setup (reset_help_and_quit, setup),
    cmocka_unit_test_setup (trace_on_and_off, setup),
    cmocka_unit_test_setup (junk_gets_an_error_and_touches_nothing, setup),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
