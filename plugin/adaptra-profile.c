/* adaptra-profile: list, show, delete, export and import the boot
 * profiles in the directory of an adaptra filter (adaptra-profile=DIR).
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/*   adaptra-profile list DIR            one line per profile file
 *   adaptra-profile show DIR FILE       its header, weights, extents
 *   adaptra-profile delete DIR FILE...  remove them
 *   adaptra-profile name EXPORT SIZE    the file an export's profile has
 *   adaptra-profile export DIR FILE OUT one portable file of a profile
 *   adaptra-profile import DIR IN [EXPORT]  install it in DIR
 *
 * The portable file is a profile file: it carries what the profile
 * belongs to (the export's name, its size in bytes and the page size),
 * is little-endian and checksummed.  Import validates it, gives it the
 * export name EXPORT if asked (the name the image is served under on
 * this host), and writes it under the name the filter looks for,
 * replacing any profile there, under the profile's lock (so a merge by
 * a running server is never lost halfway).
 * Files are read with the filter's own loader (profile/format.c), so a
 * file this tool calls valid is one the filter would use, and one it
 * calls invalid (with the loader's reason) is one the filter ignores.
 * FILE is a name inside DIR as "list" prints it: a plain name ending
 * in ".profile", never a path, so a typo cannot delete anything else.
 * Export names are printed with control and non-ASCII bytes escaped
 * (\xNN): an export name is whatever a client sent.
 */

#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adaptra/profile.h"
#include "cli.h"

const char *const cli_name = "adaptra-profile";

/* The commands, with their arguments as the usage and the man page's
 * SYNOPSIS write them, and how many they take.
 */
static const struct command {
  const char *name, *args;
  int min, max;
} commands[] = {
  { "list", "DIR", 1, 1 },
  { "show", "DIR FILE", 2, 2 },
  { "delete", "DIR FILE...", 2, INT_MAX },
  { "name", "EXPORT SIZE", 2, 2 },
  { "export", "DIR FILE OUT", 3, 3 },
  { "import", "DIR IN [EXPORT]", 2, 3 },
};

static void
usage (FILE *fp)
{
  size_t i;

  for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf (fp, "%s %s %s %s\n", i == 0 ? "usage:" : "      ", cli_name,
             commands[i].name, commands[i].args);
  fprintf (fp,
           "       %s --version\n"
           "       %s --help\n"
           "Boot profiles of an nbdkit adaptra filter started with\n"
           "adaptra-profile=DIR.  See adaptra-profile(1).\n",
           cli_name, cli_name);
}

/* The command argv names with its argument count checked, or death
 * naming what is wrong, then the usage.
 */
static const struct command *
find_command (int argc, char *argv[])
{
  size_t i;

  if (argc < 2) {
    usage (stderr);
    exit (EXIT_FAILURE);
  }
  for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    const struct command *c = &commands[i];

    if (strcmp (argv[1], c->name) != 0)
      continue;
    if (argc - 2 >= c->min && argc - 2 <= c->max)
      return c;
    fprintf (stderr, "%s: %s takes %s\n", cli_name, c->name, c->args);
    usage (stderr);
    exit (EXIT_FAILURE);
  }
  fprintf (stderr, "%s: unknown command '%s'\n", cli_name, argv[1]);
  usage (stderr);
  exit (EXIT_FAILURE);
}

/* Print s with '\\', '"', control and non-ASCII bytes as \xNN. */
static void
print_escaped (const char *s)
{
  const unsigned char *c;

  putchar ('"');
  for (c = (const unsigned char *) s; *c; c++)
    if (*c < 0x20 || *c >= 0x7f || *c == '\\' || *c == '"')
      printf ("\\x%02x", *c);
    else
      putchar (*c);
  putchar ('"');
}

/* FILE as the user gave it: a plain name of a profile, or death. */
static void
check_name (const char *file)
{
  size_t len = strlen (file), suffix = strlen (ADAPTRA_PROFILE_SUFFIX);

  if (strchr (file, '/') || file[0] == '.' || len <= suffix ||
      strcmp (file + len - suffix, ADAPTRA_PROFILE_SUFFIX) != 0)
    cli_die ("%s: not a profile file name (a name in DIR ending in %s, as "
         "\"list\" prints it)", file, ADAPTRA_PROFILE_SUFFIX);
}

static char *
path_of (const char *dir, const char *file)
{
  char *path;

  if (asprintf (&path, "%s/%s", dir, file) == -1)
    cli_die ("out of memory");
  return path;
}

/* Load DIR/FILE with no expected key.  NULL and why if invalid (the
 * loader's reason, without the file's name: the caller names it).
 */
static struct adaptra_profile *
load (const char *dir, const char *file, char *why, size_t len)
{
  char *path = path_of (dir, file);
  struct adaptra_profile *p = adaptra_profile_load (path, NULL, why, len);

  free (path);
  return p;
}

/* Is file the name the filter gives p's export?  A profile under any
 * other name (copied, renamed) is never loaded.
 */
static bool
well_named (const struct adaptra_profile *p, const char *file)
{
  char name[ADAPTRA_PROFILE_NAME_MAX];

  return adaptra_profile_file_name (p->identity, p->export_size, name,
                                    sizeof name) == 0 &&
    strcmp (name, file) == 0;
}

static int
is_profile (const struct dirent *de)
{
  size_t len = strlen (de->d_name), suffix = strlen (ADAPTRA_PROFILE_SUFFIX);

  return de->d_name[0] != '.' && len > suffix &&
    strcmp (de->d_name + len - suffix, ADAPTRA_PROFILE_SUFFIX) == 0;
}

static int
list (const char *dir)
{
  struct dirent **names;
  char why[512];
  int i, n;

  n = scandir (dir, &names, is_profile, alphasort);
  if (n == -1)
    cli_die ("%s: %s", dir, strerror (errno));
  for (i = 0; i < n; i++) {
    struct adaptra_profile *p = load (dir, names[i]->d_name, why,
                                      sizeof why);

    printf ("%s ", names[i]->d_name);
    if (p) {
      print_escaped (p->identity);
      printf (" size=%" PRIu64 " page=%" PRIu32 " boots=%" PRIu32
              " extents=%zu pages=%" PRIu64 " MiB=%.1f%s\n",
              p->export_size, p->page_size, p->boots, p->count, p->pages,
              (double) p->pages * p->page_size / (1024 * 1024),
              well_named (p, names[i]->d_name) ? ""
              : " (misnamed: the filter does not use it)");
      adaptra_profile_free (p);
    }
    else
      printf ("invalid: %s\n", why);
    free (names[i]);
  }
  free (names);
  return EXIT_SUCCESS;
}

static int
show (const char *dir, const char *file)
{
  uint64_t by_seen[ADAPTRA_PROFILE_SEEN_MAX + 1] = { 0 };
  struct adaptra_profile *p;
  char why[512];
  size_t i;
  unsigned k;

  check_name (file);
  p = load (dir, file, why, sizeof why);
  if (!p)
    cli_die ("%s/%s: %s", dir, file, why);
  printf ("file: %s%s\nexport: ", file, well_named (p, file) ? ""
          : " (misnamed: the filter does not use it)");
  print_escaped (p->identity);
  printf ("\nexport size: %" PRIu64 "\npage size: %" PRIu32
          "\nboots: %" PRIu32 "\nextents: %zu\npages: %" PRIu64 "\n",
          p->export_size, p->page_size, p->boots, p->count, p->pages);
  for (i = 0; i < p->count; i++)
    by_seen[p->extents[i].seen] += p->extents[i].pages;
  for (k = 1; k <= ADAPTRA_PROFILE_SEEN_MAX; k++)
    if (by_seen[k])
      printf ("pages seen in %u boot%s: %" PRIu64 "\n", k, k > 1 ? "s" : "",
              by_seen[k]);
  printf ("\n%-8s %14s %10s %16s %4s %6s\n", "#", "start page", "pages",
          "offset", "seen", "missed");
  for (i = 0; i < p->count; i++) {
    const struct adaptra_profile_extent *x = &p->extents[i];

    printf ("%-8zu %14" PRIu64 " %10" PRIu32 " %16" PRIu64 " %4u %6u\n",
            i, x->start, x->pages, x->start * p->page_size, x->seen,
            x->missed);
  }
  adaptra_profile_free (p);
  return EXIT_SUCCESS;
}

static int
delete (const char *dir, int n, char **files)
{
  int i, dfd, status = EXIT_SUCCESS;

  for (i = 0; i < n; i++)
    check_name (files[i]);
  for (i = 0; i < n; i++) {
    char *path = path_of (dir, files[i]);

    if (unlink (path) == -1) {
      fprintf (stderr, "%s: %s: %s\n", cli_name, path, strerror (errno));
      status = EXIT_FAILURE;
    }
    free (path);
  }
  /* As the filter's save does: the directory's change is durable. */
  dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd != -1) {
    fsync (dfd);
    close (dfd);
  }
  return status;
}

static int
name (const char *export, const char *size)
{
  char buf[ADAPTRA_PROFILE_NAME_MAX], *end;
  unsigned long long bytes;

  errno = 0;
  bytes = strtoull (size, &end, 10);
  if (errno || end == size || *end || size[0] == '-')
    cli_die ("%s: not a size in bytes", size);
  if (adaptra_profile_file_name (export, bytes, buf, sizeof buf) == -1)
    cli_die ("no file name for that export");
  puts (buf);
  return EXIT_SUCCESS;
}

/* Write DIR/FILE, validated, to out (atomically). */
static int
export (const char *dir, const char *file, const char *out)
{
  struct adaptra_profile *p;
  char why[512];

  check_name (file);
  p = load (dir, file, why, sizeof why);
  if (!p)
    cli_die ("%s/%s: %s", dir, file, why);
  if (adaptra_profile_save (p, out, why, sizeof why) == -1)
    cli_die ("%s", why);
  adaptra_profile_free (p);
  return EXIT_SUCCESS;
}

/* Install the profile in file in, as export's if given, in dir. */
static int
import (const char *dir, const char *in, const char *export)
{
  struct adaptra_profile *p;
  char name[ADAPTRA_PROFILE_NAME_MAX], why[512], *path;

  p = adaptra_profile_load (in, NULL, why, sizeof why);
  if (!p)
    cli_die ("%s: %s", in, why);
  if (export) {
    char *identity = strdup (export);

    if (!identity)
      cli_die ("out of memory");
    free (p->identity);
    p->identity = identity;
    if (adaptra_profile_check (p, why, sizeof why) == -1)
      cli_die ("%s: %s", export, why);
  }
  if (adaptra_profile_file_name (p->identity, p->export_size, name,
                                 sizeof name) == -1)
    cli_die ("no file name for that export");
  path = path_of (dir, name);
  if (adaptra_profile_lock (path, why, sizeof why) == -1)
    cli_die ("%s", why);
  if (adaptra_profile_save (p, path, why, sizeof why) == -1) {
    adaptra_profile_unlock (path);
    cli_die ("%s", why);
  }
  adaptra_profile_unlock (path);
  puts (name);
  free (path);
  adaptra_profile_free (p);
  return EXIT_SUCCESS;
}

int
main (int argc, char *argv[])
{
  const char *cmd;

  if (argc == 2 && (strcmp (argv[1], "--help") == 0 ||
                    strcmp (argv[1], "-h") == 0)) {
    usage (stdout);
    return EXIT_SUCCESS;
  }
  if (argc == 2 && strcmp (argv[1], "--version") == 0) {
    printf ("%s (adaptra) %s\n", cli_name, PACKAGE_VERSION);
    return EXIT_SUCCESS;
  }
  cmd = find_command (argc, argv)->name;
  if (strcmp (cmd, "list") == 0)
    return list (argv[2]);
  if (strcmp (cmd, "show") == 0)
    return show (argv[2], argv[3]);
  if (strcmp (cmd, "delete") == 0)
    return delete (argv[2], argc - 3, argv + 3);
  if (strcmp (cmd, "name") == 0)
    return name (argv[2], argv[3]);
  if (strcmp (cmd, "export") == 0)
    return export (argv[2], argv[3], argv[4]);
  return import (argv[2], argv[3], argc == 5 ? argv[4] : NULL);
}
