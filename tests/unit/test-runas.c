/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of plugin/runas.c's reading of nbdkit's command line:
 * the user (-u) and group (-g) nbdkit will change to, found as
 * nbdkit's getopt_long finds them, whatever way they are spelt; of
 * its reading of a numeric user or group id; and of its lookup of a
 * user or group by name or number, which adaptra-stats-owner shares.
 */

#include <config.h>

#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <nbdkit-filter.h>

#include "runas.h"

/* runas.c reports through nbdkit, which is not here. */
void
nbdkit_error (const char *fmt, ...)
{
  (void) fmt;
}

/* A command line after "nbdkit", its arguments separated by single
 * spaces (none of them holds one), and the user and group nbdkit
 * reads in it, NULL for none.
 */
struct line {
  const char *args;
  const char *user, *group;
};

/* got is want: both NULL, or equal strings. */
static void
expect (const char *got, const char *want)
{
  if (want == NULL)
    assert_null (got);
  else {
    assert_non_null (got);
    assert_string_equal (got, want);
  }
}

/* Each line as /proc/self/cmdline would give it, through
 * runas_options.
 */
static void
check (const struct line *lines, size_t n)
{
  static char args[4096];
  const char *user, *group;
  size_t i, len;
  char *p;

  for (i = 0; i < n; i++) {
    len = (size_t) snprintf (args, sizeof args, "nbdkit %s",
                             lines[i].args) + 1;
    assert_true (len <= sizeof args);
    for (p = args; (p = strchr (p, ' ')) != NULL; p++)
      *p = '\0';
    assert_int_equal (runas_options (args, len, &user, &group), 0);
    print_message ("nbdkit %s\n", lines[i].args);
    expect (user, lines[i].user);
    expect (group, lines[i].group);
  }
}

#define CHECK(lines) check (lines, sizeof lines / sizeof lines[0])

/* The four spellings getopt_long gives an option's argument, and an
 * unambiguous abbreviation of the long name.
 */
static void
test_spellings (void **state)
{
  static const struct line lines[] = {
    { "-u nobody null", "nobody", NULL },
    { "-unobody -gnogroup null", "nobody", "nogroup" },
    { "--user=nobody --group nogroup null", "nobody", "nogroup" },
    { "--user nobody --group=nogroup null", "nobody", "nogroup" },
    { "--us nobody --gr=nogroup null", "nobody", "nogroup" },
    { "-U - null size=1M", NULL, NULL },
  };

  (void) state;
  CHECK (lines);
}

/* Short options clustered behind one '-': flags first, then the one
 * that takes an argument, from the rest of the cluster or the next
 * argument.
 */
static void
test_clusters (void **state)
{
  static const struct line lines[] = {
    { "-ru nobody null", "nobody", NULL },
    { "-fu nobody null", "nobody", NULL },
    { "-fvrunobody null", "nobody", NULL },
    { "-rg nogroup -fsu nobody null", "nobody", "nogroup" },
    /* -t takes the rest of its cluster: "u" is its argument. */
    { "-tu nobody", NULL, NULL },
  };

  (void) state;
  CHECK (lines);
}

/* An option's argument is not an option, even when it reads as one. */
static void
test_arguments_are_not_options (void **state)
{
  static const struct line lines[] = {
    { "-e -u null", NULL, NULL },
    { "-P -unobody --run --user=x null", NULL, NULL },
    { "-D -g -u nobody null", "nobody", NULL },
  };

  (void) state;
  CHECK (lines);
}

/* Options may follow the plugin's name; "--" ends them; the last one
 * wins.
 */
static void
test_order (void **state)
{
  static const struct line lines[] = {
    { "null size=1M -u nobody", "nobody", NULL },
    { "null -- -u nobody", NULL, NULL },
    { "-u nobody -- null -u daemon", "nobody", NULL },
    { "-u daemon -r --user=nobody null", "nobody", NULL },
  };

  (void) state;
  CHECK (lines);
}

/* Options nbdkit refuses (unknown, ambiguous, missing argument) are
 * skipped: nbdkit has reported them before the filter runs.
 */
static void
test_refused (void **state)
{
  static const struct line lines[] = {
    { "-Zu nobody --no-such null", "nobody", NULL },
    /* --u: --unix or --user? */
    { "--u nobody null", NULL, NULL },
    { "null -u", NULL, NULL },
  };

  (void) state;
  CHECK (lines);
}

/* A numeric id is the number chown(1) would take, or refused: never
 * one that wraps to another id (4294967296 to root) or that chown(2)
 * reads as "leave it" ((uid_t) -1), nor one strtoul reads with a sign,
 * a space or a base.
 */
static void
test_numeric_ids (void **state)
{
  static const char *const refused[] = {
    "", "-1", "+1", " 1", "1 ", "0x10", "1a", "4294967295", "4294967296",
    "4294967297", "18446744073709551615", "18446744073709551616",
  };
  unsigned long id;
  size_t i;
  int group;

  (void) state;
  for (group = 0; group <= 1; group++) {
    id = 7;
    assert_true (runas_parse_id ("0", group, &id));
    assert_int_equal (id, 0);
    assert_true (runas_parse_id ("65534", group, &id));
    assert_int_equal (id, 65534);
    assert_true (runas_parse_id ("4294967294", group, &id));
    assert_int_equal (id, 4294967294UL);
    for (i = 0; i < sizeof refused / sizeof *refused; i++) {
      id = 7;
      if (runas_parse_id (refused[i], group, &id))
        fail_msg ("'%s' taken as %s id %lu", refused[i],
                  group ? "group" : "user", id);
      assert_int_equal (id, 7);
    }
  }
}

/* A user or group is looked up by name in its own database, else
 * read as a number: a user of this machine by its name (one that no
 * group has, or a group has with another id, so that a lookup in the
 * wrong database shows), its group by its name, numbers as numbers,
 * and a name in neither database refused.
 */
static void
test_lookup_ids (void **state)
{
  const struct passwd *pw;
  const struct group *gr = NULL;
  char name[256] = "";
  unsigned long uid = 0, id;

  (void) state;
  setpwent ();
  while ((pw = getpwent ()) != NULL)
    if (pw->pw_uid != 0 && strlen (pw->pw_name) < sizeof name &&
        ((gr = getgrnam (pw->pw_name)) == NULL || gr->gr_gid != pw->pw_uid)) {
      strcpy (name, pw->pw_name);
      uid = pw->pw_uid;
      break;
    }
  endpwent ();
  if (name[0] == '\0')
    fail_msg ("no user whose name no group has with its id");

  id = 7;
  assert_true (runas_lookup_id (name, false, &id));
  assert_int_equal (id, uid);
  if ((gr = getgrnam (name)) == NULL)
    assert_false (runas_lookup_id (name, true, &id));
  else {
    assert_true (runas_lookup_id (name, true, &id));
    assert_int_equal (id, gr->gr_gid);
    assert_int_not_equal (id, uid);
  }

  setgrent ();
  while ((gr = getgrent ()) != NULL && gr->gr_gid == 0)
    ;
  assert_non_null (gr);
  id = 7;
  assert_true (runas_lookup_id (gr->gr_name, true, &id));
  assert_int_equal (id, gr->gr_gid);
  endgrent ();

  assert_true (runas_lookup_id ("4242", false, &id));
  assert_int_equal (id, 4242);
  assert_true (runas_lookup_id ("4343", true, &id));
  assert_int_equal (id, 4343);
  id = 7;
  assert_false (runas_lookup_id ("no-such-user-x", false, &id));
  assert_false (runas_lookup_id ("no-such-group-x", true, &id));
  assert_false (runas_lookup_id ("4294967295", false, &id));
  assert_int_equal (id, 7);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_spellings),
    cmocka_unit_test (test_clusters),
    cmocka_unit_test (test_arguments_are_not_options),
    cmocka_unit_test (test_order),
    cmocka_unit_test (test_refused),
    cmocka_unit_test (test_numeric_ids),
    cmocka_unit_test (test_lookup_ids),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
