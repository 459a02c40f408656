/* runas.c: start-up checks as the user nbdkit will run as (-u, -g).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <nbdkit-filter.h>

#include "runas.h"

/* nbdkit's command line, NUL-separated, from /proc/self/cmdline. */
#define CMDLINE_MAX (64 * 1024)

/* The value of nbdkit's option -S/--LONG (as "-u X", "-uX", "--user X"
 * or "--user=X") in the n bytes of args, or NULL.  The last one wins,
 * as with getopt.
 */
static const char *
find_option (const char *args, size_t n, char shortopt, const char *longopt)
{
  const char *p, *end = args + n, *value = NULL;
  size_t longlen = strlen (longopt);

  for (p = args; p < end; p += strlen (p) + 1) {
    const char *next = p + strlen (p) + 1;

    if (p[0] == '-' && p[1] == shortopt)
      value = p[2] ? p + 2 : (next < end ? next : NULL);
    else if (strncmp (p, "--", 2) == 0 && strncmp (p + 2, longopt, longlen) == 0)
      {
        if (p[2 + longlen] == '=')
          value = p + 3 + longlen;
        else if (p[2 + longlen] == '\0')
          value = next < end ? next : NULL;
      }
  }
  return value;
}

/* name as a user's (or, if group, a group's) name, or a number. */
static bool
lookup_id (const char *name, bool group, unsigned long *id)
{
  struct passwd *pw;
  struct group *gr;
  char *end;

  if (!group && (pw = getpwnam (name)) != NULL) {
    *id = pw->pw_uid;
    return true;
  }
  if (group && (gr = getgrnam (name)) != NULL) {
    *id = gr->gr_gid;
    return true;
  }
  errno = 0;
  *id = strtoul (name, &end, 10);
  return *name && *end == '\0' && errno == 0;
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
  user = find_option (args, n, 'u', "user");
  group = find_option (args, n, 'g', "group");
  if (user == NULL)
    return 0;
  if (!lookup_id (user, false, &uid) ||
      (group && !lookup_id (group, true, &gid)))
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
