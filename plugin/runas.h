/* runas.h: start-up checks as the user nbdkit will run as (-u, -g).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* nbdkit calls a filter's .config_complete as the user it was started
 * as (root, with -u), and changes to -u USER and -g GROUP only later,
 * without telling filters.  A directory the filter will write at run
 * time (boot profiles, the statistics socket's) must be writable by
 * that user, or the failure would only show at run time.  So the user
 * is read from nbdkit's own command line, and the directory's modes
 * are checked for it.
 */

#ifndef ADAPTRA_RUNAS_H
#define ADAPTRA_RUNAS_H

#include <stdbool.h>
#include <stddef.h>

/* If nbdkit will change user, check that dir is writable (and
 * searchable) by that user, as nbdkit leaves it: the -u user, the -g
 * group (without -g, root's group 0, which nbdkit keeps), and no other
 * group.  Returns 0, or -1 after an nbdkit_error naming param, dir,
 * the user and the directory's mode and owner.  Does nothing (0) when
 * nbdkit will not change user.
 */
extern int runas_check_dir (const char *param, const char *dir);

/* The user (-u, --user) and group (-g, --group) in nbdkit's command
 * line: args holds its n bytes, NUL-separated, the program's name
 * first, as /proc/self/cmdline gives them.  They are read as nbdkit
 * reads them, by getopt_long with nbdkit's options: a cluster of
 * short options ("-ru USER", "-fuUSER") ends at the first that takes
 * an argument, which is the rest of the cluster or else the next
 * argument ("-uUSER", "-u USER"; the pid file of "-Pu" is "u"); a
 * long option's is after '=' or the next argument ("--user=USER",
 * "--user USER"), and an unambiguous abbreviation ("--us USER") is
 * the option; an option's argument is never read as an option;
 * options may follow the plugin's name (getopt_long permutes them,
 * unless POSIXLY_CORRECT is set) and "--" ends them; the last one
 * wins.  Sets *user and *group to their values in args, or to NULL
 * where nbdkit has none.  Returns 0, or -1 (errno set) when out of
 * memory.
 */
extern int runas_options (char *args, size_t n, const char **user,
                          const char **group);

/* A user id (or, if group, a group id) given as a number, as chown(1)
 * takes one: decimal digits only (no sign, space or base prefix, which
 * strtoul alone would take: "-1" is ULONG_MAX), and a value that the
 * id type holds and that is not (uid_t) -1, which chown(2) reads as
 * "leave the owner as it is".  Without the bound, 4294967296 would wrap
 * to 0 and give the socket to root.  Sets *id and returns true, or
 * returns false.
 */
extern bool runas_parse_id (const char *s, bool group, unsigned long *id);

/* A user (or, if group, a group) named as nbdkit's -u and -g and
 * chown(1) name one: a name in the user (group) database, else an id
 * as runas_parse_id takes it; a name wins over the number it spells.
 * Used for nbdkit's user and for adaptra-stats-owner.  Sets *id and
 * returns true, or returns false.
 */
extern bool runas_lookup_id (const char *name, bool group,
                             unsigned long *id);

#endif /* ADAPTRA_RUNAS_H */
