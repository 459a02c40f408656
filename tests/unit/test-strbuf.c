/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/strbuf.h"

static void
printf_appends_formatted_text (void **state)
{
  struct adaptra_strbuf sb = ADAPTRA_STRBUF_INIT (1024);

  assert_int_equal (adaptra_strbuf_printf (&sb, "a=%d", 1), 0);
  assert_int_equal (adaptra_strbuf_printf (&sb, " b=%s\n", "two"), 0);
  assert_string_equal (sb.data, "a=1 b=two\n");
  assert_int_equal (sb.len, 10);
  assert_false (sb.overflow);
  adaptra_strbuf_free (&sb);
}

static void
growth_keeps_earlier_text (void **state)
{
  struct adaptra_strbuf sb = ADAPTRA_STRBUF_INIT (1 << 20);
  int i;

  for (i = 0; i < 1000; i++)
    assert_int_equal (adaptra_strbuf_printf (&sb, "%04d,", i), 0);
  assert_int_equal (sb.len, 5000);
  assert_memory_equal (sb.data, "0000,0001,", 10);
  assert_memory_equal (sb.data + 4995, "0999,", 5);
  adaptra_strbuf_free (&sb);
}

static void
limit_drops_whole_appends_and_flags_overflow (void **state)
{
  struct adaptra_strbuf sb = ADAPTRA_STRBUF_INIT (8);

  assert_int_equal (adaptra_strbuf_printf (&sb, "12345"), 0);
  assert_int_equal (adaptra_strbuf_printf (&sb, "6789"), -1);
  assert_true (sb.overflow);
  assert_string_equal (sb.data, "12345");       /* earlier text intact */
  assert_int_equal (adaptra_strbuf_printf (&sb, "678"), 0);
  assert_string_equal (sb.data, "12345678");    /* exactly at the limit */
  adaptra_strbuf_free (&sb);
}

static void
consume_and_clear (void **state)
{
  struct adaptra_strbuf sb = ADAPTRA_STRBUF_INIT (64);

  adaptra_strbuf_printf (&sb, "hello world");
  adaptra_strbuf_consume (&sb, 6);
  assert_string_equal (sb.data, "world");
  assert_int_equal (sb.len, 5);
  sb.overflow = true;
  adaptra_strbuf_clear (&sb);
  assert_int_equal (sb.len, 0);
  assert_false (sb.overflow);
  assert_string_equal (sb.data, "");
  adaptra_strbuf_free (&sb);
  assert_null (sb.data);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (printf_appends_formatted_text),
    cmocka_unit_test (growth_keeps_earlier_text),
    cmocka_unit_test (limit_drops_whole_appends_and_flags_overflow),
    cmocka_unit_test (consume_and_clear),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
