/* What the command-line tools share: one line on stderr, then exit.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#ifndef ADAPTRA_CLI_H
#define ADAPTRA_CLI_H

/* The tool's name, for its messages: each tool defines it. */
extern const char *const cli_name;

/* Print "NAME: message" and exit with EXIT_FAILURE. */
extern void cli_die (const char *fmt, ...)
  __attribute__ ((noreturn, format (printf, 1, 2)));

#endif /* ADAPTRA_CLI_H */
