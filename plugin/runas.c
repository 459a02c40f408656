/* runas.c: start-up checks as the user nbdkit will run as (-u, -g).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <nbdkit-filter.h>

#include "runas.h"

/* nbdkit's command line, NUL-separated, from /proc/self/cmdline. */
#define CMDLINE_MAX (64 * 1024)

/* nbdkit's options, as nbdkit 1.32's server/options.h gives them to
 * getopt_long (`nbdkit --short-options` and `--long-options` list
 * them).  Only -u and -g are read here, but every option that takes
 * an argument must be known, or its argument would be read as options
 * (the pid file of "-P -u" is "-u", not a user), and every long name,
 * or an abbreviation would be taken where nbdkit finds it ambiguous.
 * The long options without a short one all return 0 here (distinct
 * values in nbdkit): that only makes getopt_long accept abbreviations
 * nbdkit refuses, and the filter never sees a line nbdkit refused.
 * An option of a later nbdkit missing here is skipped as unknown, and
 * a separate argument of it taken, as nbdkit would not, as a plugin
 * parameter: harmless unless that argument reads as -u or -g.
 */
static const char nbdkit_short_options[] = "46D:e:fg:i:nop:P:rst:u:U:vV";
static const struct option nbdkit_long_options[] = {
  { "ipv4-only", no_argument, NULL, '4' },
  { "ipv6-only", no_argument, NULL, '6' },
  { "debug", required_argument, NULL, 'D' },
  { "dump-config", no_argument, NULL, 0 },
  { "dump-plugin", no_argument, NULL, 0 },
  { "exit-with-parent", no_argument, NULL, 0 },
  { "export", required_argument, NULL, 'e' },
  { "export-name", required_argument, NULL, 'e' },
  { "exportname", required_argument, NULL, 'e' },
  { "filter", required_argument, NULL, 0 },
  { "foreground", no_argument, NULL, 'f' },
  { "no-fork", no_argument, NULL, 'f' },
  { "group", required_argument, NULL, 'g' },
  { "help", no_argument, NULL, 0 },
  { "ip-addr", required_argument, NULL, 'i' },
  { "ipaddr", required_argument, NULL, 'i' },
  { "log", required_argument, NULL, 0 },
  { "long-options", no_argument, NULL, 0 },
  { "mask-handshake", required_argument, NULL, 0 },
  { "new-style", no_argument, NULL, 'n' },
  { "newstyle", no_argument, NULL, 'n' },
  { "no-sr", no_argument, NULL, 0 },
  { "old-style", no_argument, NULL, 'o' },
  { "oldstyle", no_argument, NULL, 'o' },
  { "pid-file", required_argument, NULL, 'P' },
  { "pidfile", required_argument, NULL, 'P' },
  { "port", required_argument, NULL, 'p' },
  { "read-only", no_argument, NULL, 'r' },
  { "readonly", no_argument, NULL, 'r' },
  { "run", required_argument, NULL, 0 },
  { "selinux-label", required_argument, NULL, 0 },
  { "short-options", no_argument, NULL, 0 },
  { "single", no_argument, NULL, 's' },
  { "stdin", no_argument, NULL, 's' },
  { "swap", no_argument, NULL, 0 },
  { "threads", required_argument, NULL, 't' },
  { "tls", required_argument, NULL, 0 },
  { "tls-certificates", required_argument, NULL, 0 },
  { "tls-psk", required_argument, NULL, 0 },
  { "tls-verify-peer", no_argument, NULL, 0 },
  { "unix", required_argument, NULL, 'U' },
  { "user", required_argument, NULL, 'u' },
  { "verbose", no_argument, NULL, 'v' },
  { "version", no_argument, NULL, 'V' },
  { "vsock", no_argument, NULL, 0 },
  { NULL, 0, NULL, 0 },
};

int
runas_options (char *args, size_t n, const char **user, const char **group)
{
  int saved_optind = optind, saved_opterr = opterr;
  size_t argc = 0, i;
  char **argv, *p;
  int c;

  for (p = args; p < args + n; p += strlen (p) + 1)
    argc++;
  argv = calloc (argc + 1, sizeof *argv);
  if (argv == NULL)
    return -1;
  for (p = args, i = 0; i < argc; p += strlen (p) + 1)
    argv[i++] = p;

  /* nbdkit parsed its own command line before it loaded the filter and
   * never calls getopt again, so its state may be borrowed: optind 0
   * asks glibc for a fresh scan, opterr 0 for silence on the options
   * nbdkit has already reported.
   */
  *user = *group = NULL;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long ((int) argc, argv, nbdkit_short_options,
                           nbdkit_long_options, NULL)) != -1) {
    if (c == 'u')
      *user = optarg;
    else if (c == 'g')
      *group = optarg;
  }
  optind = saved_optind;
  opterr = saved_opterr;
  free (argv);
  return 0;
}

bool
runas_parse_id (const char *s, bool group, unsigned long *id)
{
  unsigned long v, none = group ? (unsigned long) (gid_t) -1
                                : (unsigned long) (uid_t) -1;
  char *end;

  if (!(*s >= '0' && *s <= '9'))
    return false;
  errno = 0;
  v = strtoul (s, &end, 10);
  if (errno != 0 || *end != '\0' || v >= none)
    return false;
  *id = v;
  return true;
}

bool
runas_lookup_id (const char *name, bool group, unsigned long *id)
{
  struct passwd *pw;
  struct group *gr;

  if (!group && (pw = getpwnam (name)) != NULL) {
    *id = pw->pw_uid;
    return true;
  }
  if (group && (gr = getgrnam (name)) != NULL) {
    *id = gr->gr_gid;
    return true;
  }
  return runas_parse_id (name, group, id);
}

int
runas_check_dir (const char *param, const char *dir)
{
  static char args[CMDLINE_MAX];
  const char *user, *group;
  unsigned long uid, gid = 0;
  struct stat st;
  unsigned need;
  size_t n;
  FILE *fp;

  fp = fopen ("/proc/self/cmdline", "r");
  if (fp == NULL)
    return 0;                   /* not Linux: nbdkit will tell at run time */
  n = fread (args, 1, sizeof args - 1, fp);
  fclose (fp);
  args[n] = '\0';
  if (runas_options (args, n, &user, &group) == -1) {
    nbdkit_error ("%s: %m", param);
    return -1;
  }
  if (user == NULL)
    return 0;
  if (!runas_lookup_id (user, false, &uid) ||
      (group && !runas_lookup_id (group, true, &gid)))
    return 0;                   /* nbdkit refuses those itself */
  if (uid == 0)
    return 0;
  if (stat (dir, &st) == -1)
    return 0;                   /* the parameter's own check says so */
  if (st.st_uid == uid)
    need = S_IWUSR | S_IXUSR;
  else if (st.st_gid == gid)
    need = S_IWGRP | S_IXGRP;
  else
    need = S_IWOTH | S_IXOTH;
  if ((st.st_mode & need) == need)
    return 0;
  nbdkit_error ("%s: nbdkit runs as user %s (-u) and group %s, who may not "
                "write the directory %s (mode %04o, owner uid %u, group "
                "gid %u): give it to that user, or its group write access",
                param, user, group ? group : "root (no -g)", dir,
                (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid,
                (unsigned) st.st_gid);
  return -1;
}
