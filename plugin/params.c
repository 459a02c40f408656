/* params.c: the filter's parameters, parsed from the nbdkit command line.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nbdkit-filter.h>

#include "params.h"

/* What the user typed for each of adaptra_params (params_parse), so
 * that a refusal quotes it: "adaptra-page=3K", not the 3072 it became.
 */
static char **typed;

/* nbdkit's parse helpers print an error line of their own before they
 * fail, but a refusal should be the one line that names the parameter.
 * So a value is first checked here against exactly what the helper
 * accepts, and the helper only ever sees values it takes.
 *
 * nbdkit_parse_size: a decimal integer (strtoimax: leading blanks and
 * a sign allowed), not negative, with at most one unit letter (b and B
 * bytes, s and S 512-byte sectors, k to e powers of 1024), and at most
 * INT64_MAX bytes in all.
 */
static bool
nbdkit_takes_size (const char *value)
{
  static const char units[] = "bBsSkKmMgGtTpPeE";
  static const unsigned shifts[] = {
    0, 0, 9, 9, 10, 10, 20, 20, 30, 30, 40, 40, 50, 50, 60, 60
  };
  const char *u;
  char *end;
  intmax_t n;

  errno = 0;
  n = strtoimax (value, &end, 10);
  if (end == value || errno != 0 || n < 0)
    return false;
  if (*end == '\0')
    return true;
  u = strchr (units, *end);
  return u != NULL && end[1] == '\0'
    && (uint64_t) n <= (uint64_t) INT64_MAX >> shifts[u - units];
}

/* nbdkit_parse_unsigned: no minus sign anywhere, then strtoul in base
 * 0 (decimal, 0x hex, 0 octal) over the whole string, within UINT_MAX.
 */
static bool
nbdkit_takes_unsigned (const char *value)
{
  unsigned long long n;
  char *end;

  if (strchr (value, '-') != NULL)
    return false;
  errno = 0;
  n = strtoull (value, &end, 0);
  return end != value && *end == '\0' && errno == 0 && n <= UINT_MAX;
}

/* Parse value as p's type.  Returns 0, or -1 with why set. */
static int
parse_value (const struct adaptra_param *p, const char *value, uint64_t *v,
             char *why, size_t len)
{
  int64_t size;
  unsigned u;
  enum adaptra_mode mode;
  enum adaptra_bypass bypass;

  switch (p->type) {
  case ADAPTRA_PARAM_FILTER:
    abort ();                   /* the filter parses its own */
  case ADAPTRA_PARAM_SIZE_OR_AUTO:
    if (strcmp (value, "auto") == 0) {
      *v = 0;
      return 0;
    }
    /* 0 is how auto is stored, not a window: refuse it as a size. */
    if (nbdkit_takes_size (value) && nbdkit_parse_size (value) == 0) {
      snprintf (why, len, "adaptra-%s=%s is not a window: give a size, "
                "or auto", p->name, value);
      return -1;
    }
    /* fall through */
  case ADAPTRA_PARAM_SIZE:
    size = nbdkit_takes_size (value) ? nbdkit_parse_size (value) : -1;
    if (size < 0) {
      snprintf (why, len, "adaptra-%s=%s is not a size%s", p->name, value,
                p->type == ADAPTRA_PARAM_SIZE_OR_AUTO ? " or auto" : "");
      return -1;
    }
    *v = size;
    break;
  case ADAPTRA_PARAM_UNSIGNED:
    if (!nbdkit_takes_unsigned (value) ||
        nbdkit_parse_unsigned (p->name, value, &u) == -1) {
      snprintf (why, len, "adaptra-%s=%s is not a non-negative integer",
                p->name, value);
      return -1;
    }
    *v = u;
    break;
  case ADAPTRA_PARAM_MODE:
    if (adaptra_mode_parse (value, &mode) != 0) {
      snprintf (why, len,
                "adaptra-%s=%s is not adaptive, fixed or off", p->name, value);
      return -1;
    }
    *v = mode;
    break;
  case ADAPTRA_PARAM_BYPASS:
    if (adaptra_bypass_parse (value, &bypass) != 0) {
      snprintf (why, len,
                "adaptra-%s=%s is not auto, always or never", p->name, value);
      return -1;
    }
    *v = bypass;
    break;
  }
  /* A value must fit its field: adaptra-page=8G would wrap. */
  if (p->width == 4 && *v > UINT32_MAX) {
    snprintf (why, len, "adaptra-%s=%s is too large", p->name, value);
    return -1;
  }
  return 0;
}

/* Levenshtein's edit distance between a and b, at most TYPO_NAME_MAX
 * bytes each (else TYPO_NAME_MAX): how many letters to add, drop or
 * change to turn one into the other.
 */
#define TYPO_NAME_MAX 64
static size_t
edit_distance (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b), i, j;
  size_t row[TYPO_NAME_MAX + 1];

  if (la > TYPO_NAME_MAX || lb > TYPO_NAME_MAX)
    return TYPO_NAME_MAX;
  for (j = 0; j <= lb; j++)
    row[j] = j;
  for (i = 1; i <= la; i++) {
    size_t diag = row[0], up;

    row[0] = i;
    for (j = 1; j <= lb; j++) {
      up = row[j];
      row[j] = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < row[j])
        row[j] = up + 1;
      if (row[j - 1] + 1 < row[j])
        row[j] = row[j - 1] + 1;
      diag = up;
    }
  }
  return row[lb];
}

/* A key that starts like the filter's but is none of its parameters
 * (adaptra-pol, adaptra_ratio, Adaptra-pool) would reach the plugin,
 * whose refusal says nothing of adaptra's names: refuse it here, with
 * the parameter it most looks like, when a typo or two away
 * (TYPO_DISTANCE_MAX: adaptra-pol, adaptra-ratoi).
 */
#define TYPO_DISTANCE_MAX 2
static bool
unknown_param (const char *key, const char *value, char *why, size_t len)
{
  const struct adaptra_param *p, *best = NULL;
  size_t d, best_d = TYPO_DISTANCE_MAX + 1;
  char name[TYPO_NAME_MAX + 1];

  if (strncasecmp (key, ADAPTRA_PARAM_PREFIX, ADAPTRA_PARAM_PREFIX_LEN - 1)
      != 0 || adaptra_param_find (key) != NULL)
    return false;
  for (p = adaptra_params; p < adaptra_params + adaptra_nparams; p++) {
    snprintf (name, sizeof name, ADAPTRA_PARAM_PREFIX "%s", p->name);
    d = edit_distance (key, name);
    if (d < best_d) {
      best_d = d;
      best = p;
    }
  }
  /* (The key and value cut to TYPO_NAME_MAX, so that what follows
   * them, which names the filter's parameters, fits any why.)
   */
  if (best != NULL)
    snprintf (why, len, "%.*s=%.*s is not a parameter of adaptra: did you "
              "mean " ADAPTRA_PARAM_PREFIX "%s? (nbdkit --filter=adaptra "
              "null --help lists them)", TYPO_NAME_MAX, key, TYPO_NAME_MAX,
              value, best->name);
  else
    snprintf (why, len, "%.*s=%.*s is not a parameter of adaptra (nbdkit "
              "--filter=adaptra null --help lists the " ADAPTRA_PARAM_PREFIX
              "* ones)", TYPO_NAME_MAX, key, TYPO_NAME_MAX, value);
  return true;
}

int
params_parse (struct adaptra_config *cfg, const char *key, const char *value,
              char *why, size_t len)
{
  const struct adaptra_param *p;
  uint64_t v;

  if (unknown_param (key, value, why, len))
    return -1;
  if (strncmp (key, ADAPTRA_PARAM_PREFIX, ADAPTRA_PARAM_PREFIX_LEN) != 0
      || (p = adaptra_param_find (key)) == NULL
      || p->type == ADAPTRA_PARAM_FILTER)
    return 0;
  if (parse_value (p, value, &v, why, len) == -1)
    return -1;
  if (typed == NULL &&
      (typed = calloc (adaptra_nparams, sizeof *typed)) == NULL) {
    snprintf (why, len, "adaptra-%s=%s: out of memory", p->name, value);
    return -1;
  }
  free (typed[p - adaptra_params]);
  typed[p - adaptra_params] = strdup (value);
  adaptra_param_put (cfg, p, v);
  /* adaptra-min not given (yet) follows the page. */
  if (strcmp (p->name, "page") == 0 &&
      typed[adaptra_param_find ("min") - adaptra_params] == NULL)
    cfg->min_bytes = adaptra_config_default_min (cfg->page_size);
  return 1;
}

/* v as a size the way one types it: 512, 4K, 1M. */
static void
format_size (uint64_t v, char *buf, size_t len)
{
  static const char units[] = "KMGTPE";
  int u = -1;

  while (v != 0 && v % 1024 == 0 && u + 1 < (int) sizeof units - 1) {
    v /= 1024;
    u++;
  }
  if (u < 0)
    snprintf (buf, len, "%" PRIu64, v);
  else
    snprintf (buf, len, "%" PRIu64 "%c", v, units[u]);
}

/* Does get show p (settable false), or set change it (true)? */
static bool
param_listed (const struct adaptra_param *p, bool settable)
{
  return settable ? p->set != NULL : p->width > 0;
}

/* The names of the parameters get shows (settable false) or set
 * changes (true), as "a, b or c", for a refusal to say what is allowed.
 */
static void
param_names (bool settable, char *buf, size_t len)
{
  size_t i, n = 0, count = 0, k = 0;

  for (i = 0; i < adaptra_nparams; i++)
    count += param_listed (&adaptra_params[i], settable);
  buf[0] = '\0';
  for (i = 0; i < adaptra_nparams && n < len; i++)
    if (param_listed (&adaptra_params[i], settable)) {
      k++;
      n += snprintf (buf + n, len - n, "%s%s",
                     k == 1 ? "" : k == count ? " or " : ", ",
                     adaptra_params[i].name);
    }
}

/* why with each adaptra-NAME=DIGITS in it as the user would write it:
 * for set_p, set_value (a run-time set: what the command said); with
 * use_typed, what the command line said; else a size in its units
 * (256M), or the digits.  The values typed on the command line are
 * not used at run time, where set may have changed them since.
 */
static void
quote (const char *why, bool use_typed, const struct adaptra_param *set_p,
       const char *set_value, char *out, size_t len)
{
  size_t n = 0;

  while (*why && n + 1 < len) {
    const struct adaptra_param *p = NULL;
    size_t name_len = 0, digits = 0;

    if (strncmp (why, ADAPTRA_PARAM_PREFIX, ADAPTRA_PARAM_PREFIX_LEN) == 0) {
      const char *name = why + ADAPTRA_PARAM_PREFIX_LEN;

      name_len = strcspn (name, "= ");
      for (p = adaptra_params; p < adaptra_params + adaptra_nparams; p++)
        if (strlen (p->name) == name_len &&
            strncmp (p->name, name, name_len) == 0)
          break;
      if (p < adaptra_params + adaptra_nparams && name[name_len] == '=')
        digits = strspn (name + name_len + 1, "0123456789");
    }
    if (digits > 0) {
      const char *value = NULL;
      char size[32];

      if (p == set_p)
        value = set_value;
      else if (use_typed && typed != NULL && typed[p - adaptra_params])
        value = typed[p - adaptra_params];
      else if (p->type == ADAPTRA_PARAM_SIZE ||
               p->type == ADAPTRA_PARAM_SIZE_OR_AUTO) {
        format_size (strtoull (why + ADAPTRA_PARAM_PREFIX_LEN + name_len + 1,
                               NULL, 10), size, sizeof size);
        value = size;
      }
      if (value != NULL) {
        n += snprintf (out + n, len - n, ADAPTRA_PARAM_PREFIX "%s=%s",
                       p->name, value);
        why += ADAPTRA_PARAM_PREFIX_LEN + name_len + 1 + digits;
        if (n >= len)
          n = len - 1;
        continue;
      }
    }
    out[n++] = *why++;
  }
  out[n] = '\0';
}

int
params_set_runtime (struct adaptra_engine *e, const char *name,
                    const char *value, char *why, size_t len)
{
  const struct adaptra_param *p = adaptra_param_find (name);
  char names[128], raw[ADAPTRA_WHY_LEN];
  uint64_t v;

  param_names (true, names, sizeof names);
  if (p == NULL) {
    snprintf (why, len, "unknown parameter '%s' (set changes %s)", name,
              names);
    return -1;
  }
  if (p->set == NULL) {
    snprintf (why, len, "adaptra-%s is fixed once the server runs (set "
              "changes %s)", p->name, names);
    return -1;
  }
  if (parse_value (p, value, &v, why, len) == -1)
    return -1;
  if (p->set (e, v, raw, sizeof raw) == 0)
    return 0;
  quote (raw, false, p, value, why, len);
  return -1;
}

static void
print_param (const struct adaptra_param *p, const struct adaptra_config *cfg,
             struct adaptra_strbuf *out)
{
  uint64_t v = adaptra_param_get (cfg, p);

  if (p->type == ADAPTRA_PARAM_MODE)
    adaptra_strbuf_printf (out, "%s %s\n", p->name, adaptra_mode_name (v));
  else if (p->type == ADAPTRA_PARAM_BYPASS)
    adaptra_strbuf_printf (out, "%s %s\n", p->name, adaptra_bypass_name (v));
  else if (p->type == ADAPTRA_PARAM_SIZE_OR_AUTO && v == 0)
    adaptra_strbuf_printf (out, "%s auto\n", p->name);
  else
    adaptra_strbuf_printf (out, "%s %" PRIu64 "\n", p->name, v);
}

int
params_get (struct adaptra_engine *e, const char *name,
            struct adaptra_strbuf *out, char *why, size_t len)
{
  struct adaptra_config cfg;
  const struct adaptra_param *p = NULL;
  size_t i;

  if (name != NULL && ((p = adaptra_param_find (name)) == NULL
                       || !param_listed (p, false))) {
    char names[256];

    param_names (false, names, sizeof names);
    if (p == NULL)
      snprintf (why, len, "unknown parameter '%s' (get shows %s)", name,
                names);
    else
      snprintf (why, len, "adaptra-%s is not shown at run time: see the "
                "server's command line (get shows %s)", p->name, names);
    return -1;
  }
  adaptra_engine_get_config (e, &cfg);
  if (p != NULL)
    print_param (p, &cfg, out);
  else
    for (i = 0; i < adaptra_nparams; i++)
      if (param_listed (&adaptra_params[i], false))
        print_param (&adaptra_params[i], &cfg, out);
  return 0;
}

void
params_quote (const char *why, char *out, size_t len)
{
  quote (why, true, NULL, NULL, out, len);
}

void
params_free (void)
{
  size_t i;

  if (typed == NULL)
    return;
  for (i = 0; i < adaptra_nparams; i++)
    free (typed[i]);
  free (typed);
  typed = NULL;
}

/* Append text to out, wrapped at HELP_WIDTH columns, each line
 * indented by HELP_INDENT spaces.
 */
#define HELP_WIDTH 76
#define HELP_INDENT 4
static void
append_wrapped (struct adaptra_strbuf *out, const char *text)
{
  while (*text) {
    size_t room = HELP_WIDTH - HELP_INDENT, n = strlen (text);

    if (n > room) {
      n = room;
      while (n > 0 && text[n] != ' ')
        n--;
      if (n == 0)
        n = strcspn (text, " ");
    }
    adaptra_strbuf_printf (out, "%*s%.*s\n", HELP_INDENT, "", (int) n, text);
    text += n;
    while (*text == ' ')
      text++;
  }
}

void
params_help (struct adaptra_strbuf *out)
{
  size_t i;

  for (i = 0; i < adaptra_nparams; i++) {
    const struct adaptra_param *p = &adaptra_params[i];
    char lo[32], hi[32];

    adaptra_strbuf_printf (out, "adaptra-%s=%s", p->name, p->metavar);
    if (p->def != NULL)
      adaptra_strbuf_printf (out, " (default %s)", p->def);
    adaptra_strbuf_printf (out, "\n");
    append_wrapped (out, p->help);
    if (p->max != 0) {
      if (p->type == ADAPTRA_PARAM_SIZE ||
          p->type == ADAPTRA_PARAM_SIZE_OR_AUTO) {
        format_size (p->min, lo, sizeof lo);
        format_size (p->max, hi, sizeof hi);
      }
      else {
        snprintf (lo, sizeof lo, "%" PRIu64, p->min);
        snprintf (hi, sizeof hi, "%" PRIu64, p->max);
      }
      adaptra_strbuf_printf (out, "%*sFrom %s to %s.\n", HELP_INDENT, "",
                             lo, hi);
    }
    if (p->set != NULL)
      adaptra_strbuf_printf (out, "%*sAlso at run time: set %s VALUE.\n",
                             HELP_INDENT, "", p->name);
  }
}
