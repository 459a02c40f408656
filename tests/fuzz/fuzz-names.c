/* fuzz-names.c: libFuzzer harness for export names in the reports.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for the control plane's reports of exports and
 * clients (control/report.c), whose export names an NBD client
 * chooses: any bytes but NUL, kept in the rows' 63 bytes.  An input is
 * up to ROWS names separated by NUL bytes; each becomes a volume row
 * and a client row reading it, and every report that prints a name is
 * rendered.
 *
 * Beyond "no crash, no sanitizer report", what a name must never do is
 * checked: a table keeps one line per row and no empty line (which
 * would end the control reply early); the JSON parses (json-c) and is
 * UTF-8, and gives each name back in its row, the same as the input's
 * where that was UTF-8 (as glibc's iconv judges it); the Prometheus exposition is UTF-8 and each
 * label value stays inside its quotes on its own line.
 */

#include <config.h>

#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "../../control/report.h"
#include "expect.h"

/* Names per input: enough for names that collide and merge in the
 * per-export series, few enough to keep an input quick.
 */
#define ROWS 4

/* Is s, n bytes, UTF-8 (RFC 3629: no surrogates, which json-c's
 * JSON_TOKENER_VALIDATE_UTF8 lets through)?  glibc's iconv decides.
 */
static bool
is_utf8 (const char *s, size_t n)
{
  static iconv_t cd = (iconv_t) -1;
  char buf[4096], *in = (char *) s, *o;
  size_t left = n, room;

  if (cd == (iconv_t) -1) {
    cd = iconv_open ("UTF-32LE", "UTF-8");
    expect (cd != (iconv_t) -1, "no iconv from UTF-8");
  }
  iconv (cd, NULL, NULL, NULL, NULL);
  while (left > 0) {
    o = buf;
    room = sizeof buf;
    if (iconv (cd, &in, &left, &o, &room) == (size_t) -1 && errno != E2BIG)
      return false;
  }
  return true;
}

static size_t
count (const char *s, size_t n, const char *what)
{
  size_t k = 0, w = strlen (what);

  for (const char *p = s; (p = memmem (p, n - (size_t) (p - s), what, w));
       p += w)
    k++;
  return k;
}

static void
check_table (const struct adaptra_strbuf *out, size_t rows)
{
  expect (count (out->data, out->len, "\n") == rows + 1,
          "a table line per row broken");
  expect (count (out->data, out->len, "\n\n") == 0, "an empty line");
}

static void
check_json (const struct adaptra_strbuf *out,
            const struct adaptra_volume_row *rows, size_t n)
{
  struct json_tokener *tok = json_tokener_new ();
  struct json_object *o, *exports, *x, *name;

  expect (tok != NULL, "out of memory");
  expect (is_utf8 (out->data, out->len), "JSON that is not UTF-8");
  json_tokener_set_flags (tok, JSON_TOKENER_STRICT);
  o = json_tokener_parse_ex (tok, out->data, (int) out->len - 1);
  expect (o != NULL, "JSON that does not parse");
  expect (json_object_object_get_ex (o, "exports", &exports) &&
          json_object_array_length (exports) == n, "rows lost in JSON");
  for (size_t i = 0; i < n; i++) {
    x = json_object_array_get_idx (exports, i);
    expect (json_object_object_get_ex (x, "export", &name),
            "a row without its name");
    if (is_utf8 (rows[i].name, strlen (rows[i].name)))
      expect (strcmp (json_object_get_string (name), rows[i].name) == 0,
              "a UTF-8 name changed in JSON");
  }
  json_object_put (o);
  json_tokener_free (tok);
}

/* Every line ends with a newline, and a sample's labels, {...} with
 * each value quoted and escaped, close on its line before its value.
 */
static void
check_prometheus (const struct adaptra_strbuf *out)
{
  const char *line = out->data, *end;

  expect (is_utf8 (out->data, out->len), "an exposition not in UTF-8");
  for (; *line; line = end + 1) {
    const char *p;
    bool quoted;

    end = strchr (line, '\n');
    expect (end != NULL, "a last line without its newline");
    if (*line == '#' || line == end)
      continue;
    if (memchr (line, '{', (size_t) (end - line)) != NULL) {
      /* Skip the labels: a space inside a value is no separator. */
      quoted = false;
      for (p = strchr (line, '{'); p < end; p++) {
        if (quoted && *p == '\\')
          p++;
        else if (*p == '"')
          quoted = !quoted;
        else if (!quoted && *p == '}')
          break;
      }
      expect (p < end && !quoted, "a label value past its line");
      expect (p[1] == ' ', "no space after the labels");
    }
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct adaptra_volume_row vols[ROWS];
  struct adaptra_client_row clients[ROWS];
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1 << 20);
  size_t n = 0, at = 0;

  memset (vols, 0, sizeof vols);
  memset (clients, 0, sizeof clients);
  while (n < ROWS && at <= size) {
    const uint8_t *nul = memchr (data + at, '\0', size - at);
    size_t len = nul ? (size_t) (nul - (data + at)) : size - at;

    /* As the engine keeps it: snprintf into 64 bytes. */
    snprintf (vols[n].name, sizeof vols[n].name, "%.*s", (int) len,
              (const char *) data + at);
    vols[n].id = (int) n;
    vols[n].flags = len % 2 ? ADAPTRA_VOLUME_PER_CONNECTION : 0;
    vols[n].size = len;
    clients[n].id = (int) n;
    snprintf (clients[n].name, sizeof clients[n].name, "unix:pid=%zu", n);
    memcpy (clients[n].volume_name, vols[n].name, sizeof vols[n].name);
    clients[n].bytes = len;
    n++;
    at += len + 1;
  }

  expect (adaptra_report_volumes (vols, n, &out) == 0, "overflow");
  check_table (&out, n);
  adaptra_strbuf_clear (&out);
  expect (adaptra_report_clients (clients, n, &out) == 0, "overflow");
  check_table (&out, n);
  adaptra_strbuf_clear (&out);
  expect (adaptra_report_volumes_json (vols, n, &out) == 0, "overflow");
  check_json (&out, vols, n);
  adaptra_strbuf_clear (&out);
  expect (adaptra_report_volumes_prometheus (vols, n, &out) == 0,
          "overflow");
  check_prometheus (&out);
  adaptra_strbuf_clear (&out);
  expect (adaptra_report_clients_prometheus (clients, n, &out) == 0,
          "overflow");
  check_prometheus (&out);
  adaptra_strbuf_free (&out);
  return 0;
}
