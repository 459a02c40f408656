/* server.c: the statistics and control socket's server thread.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The statistics and control socket server.
 *
 * One thread runs a private libev loop (never the default loop: nbdkit
 * or a plugin might use it) with one watcher for the listening socket,
 * one per client, and an ev_async through which server_stop wakes it.
 * The data path never waits for this thread: request handlers only take
 * the engine's short locks to copy counters, and a client that does not
 * read its replies is cut off rather than waited for.
 *
 * No client can hold the server's resources for good:
 *
 *  - At most SERVER_MAX_CLIENTS are served at once, and at most
 *    SERVER_MAX_CLIENTS - SERVER_PRIVILEGED_SLOTS unprivileged ones.
 *    One more is told so in an error reply (while up to
 *    SERVER_MAX_CLIENTS others are being turned away; past that it is
 *    just closed).
 *  - Each has a line buffer of SERVER_MAX_LINE bytes: a longer line
 *    gets an error line and the connection is closed.
 *  - Each has an output buffer of CLIENT_MAX_OUTPUT bytes.  A client
 *    whose output does not fit is not reading: it is dropped at once
 *    (nothing more can reach it) and counted.  So is a tracing client
 *    that still has more than TRACE_MAX_PENDING bytes to take when the
 *    next trace lines come.
 *  - A client is idle from its last complete command (bytes without a
 *    newline do not count), or for a tracing client from the last
 *    trace output the socket took; after adaptra-stats-idle seconds
 *    it is closed.
 *
 * A client that half-closes its side still receives the replies to
 * everything it sent.  The peer's credentials (SO_PEERCRED) decide
 * whether it may change anything: set, reset and trace are for root,
 * the user nbdkit runs as and the socket's owner; the rest is
 * read-only and open to anyone the socket's mode lets in.
 *
 * Trace lines ("trace on") are queued by the data path in one bounded
 * buffer (adaptra/tracebuf.h) and fanned out by a timer every
 * TRACE_TICK seconds while any client traces.
 *
 * The socket file is removed by server_stop, and by an exit handler
 * when nbdkit exits without stopping the filter (a failed start after
 * .get_ready).  Only the process that serves the socket removes it:
 * not the parent that nbdkit leaves behind when it forks.
 */

#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>

#include <nbdkit-filter.h>

#include "adaptra/tracebuf.h"
#include "runas.h"
#include "server.h"

/* A client's output buffer: replies it has not taken yet.  The largest
 * reply the control rows allow (ADAPTRA_CONTROL_MAX_*) is "metrics"
 * with 4096 volumes of 63-byte export names: about 2.2 MiB of export
 * families, measured with control/report.c, 3.2 MiB where every byte
 * of the names needs escaping; 4 MiB holds it.
 * It also bounds what clients make the server hold: 4 MiB each, at
 * most SERVER_MAX_CLIENTS of them.  Much smaller, a large reply would
 * drop a client that reads; much larger, clients that do not read
 * would hold that much each.
 */
#define CLIENT_MAX_OUTPUT (4 * 1024 * 1024)

#define STR_(x) #x
#define STRINGIFY(x) STR_ (x)

/* How long a client that was turned away or failed gets to read its
 * error reply.  The reply is one line and the empty line after it,
 * which a client that reads at all takes at once from a local socket;
 * 5 s bounds how long each of the at most SERVER_MAX_CLIENTS clients
 * being turned away holds a connection.  Much shorter, a loaded
 * client might be closed before it read why; much longer, clients
 * turned away and never reading would fill those places longer, and
 * the next ones would be closed without a reply.
 */
#define CLIENT_LINGER_SECS 5.

/* Trace lines waiting for the loop, how often it sends them, and how
 * far behind a tracing client may fall.  A line is about 95 bytes, so
 * TRACE_BUFFER holds about 11,000 lines a tick, 110,000 read-ahead
 * decisions a second, past which lines are dropped and counted.
 * With TRACE_TICK, lines reach a tracer within a tenth of a second and
 * the loop wakes ten times a second while anyone traces; much shorter,
 * it would wake more often for fewer lines; much longer, a tick's
 * lines would need a larger buffer.  TRACE_MAX_PENDING plus
 * a whole tick's TRACE_BUFFER fit in CLIENT_MAX_OUTPUT, so a client
 * that keeps up is never dropped for a burst; a client still 256 KiB
 * (some 2,700 lines) behind a tick later is not reading.  Much
 * smaller, a tracer descheduled for a tick in a burst would be
 * dropped; much larger, a stalled one would hold its lines longer.
 */
#define TRACE_BUFFER (1024 * 1024)
#define TRACE_TICK 0.1
#define TRACE_MAX_PENDING (256 * 1024)

/* What a client's input is still good for. */
enum client_input {
  INPUT_REQUESTS,               /* lines to execute */
  INPUT_DISCARD,                /* after an error: read and drop until
                                 * EOF, so that closing with unread data
                                 * does not reset the connection and
                                 * lose the error reply */
  INPUT_CLOSED,                 /* EOF, quit, or a dead peer */
};

struct client {
  ev_io io;                     /* first: the watcher's address is ours */
  ev_timer idle;
  char line[SERVER_MAX_LINE + 1];
  size_t line_len;
  struct adaptra_strbuf out;
  enum client_input input;
  bool write_shut;              /* we sent EOF (in INPUT_DISCARD) */
  bool dead;                    /* close it now, unsent output or not */
  bool refused;                 /* turned away: not one of nclients */
  bool tracing;                 /* "trace on" */
  bool privileged;              /* may run set, reset and trace */
  uid_t uid;                    /* the peer's, or (uid_t) -1 */
  pid_t pid;                    /* the peer's, or 0 */
  unsigned id;
  uint64_t commands;            /* complete lines executed */
  ev_tstamp last_active;        /* last command, or trace output taken */
  uint64_t trace_missed;        /* trace lines it has not been sent */
  struct client *next;
};

/* What became of the clients, for the "control" command and the debug
 * log.  Loop thread only.
 */
static struct {
  uint64_t accepted;            /* served */
  uint64_t refused;             /* turned away: too many clients */
  uint64_t dropped_output;      /* output buffer full: not reading */
  uint64_t closed_idle;         /* idle for idle_secs */
  uint64_t denied;              /* commands refused to the unprivileged */
} counts;

/* All of this belongs to the loop thread once it runs; before that
 * (listen) and after it is joined (stop) to the caller.
 */
static char socket_path[sizeof ((struct sockaddr_un *) 0)->sun_path];
static int listen_fd = -1;
static dev_t socket_dev;        /* the file we created, so that we never */
static ino_t socket_ino;        /* remove someone else's */
static struct ev_loop *loop;
static ev_io listen_watcher;
static ev_async stop_watcher;
static pthread_t thread;
static bool thread_running;
static server_line_fn handle_line;
static struct client *clients;
static unsigned nclients, nprivileged, nrefusing, next_id;

/* adaptra-stats-idle: seconds a client may go without a command. */
static int idle_secs;

/* adaptra-stats-owner: whom the socket is given to (-1: nobody). */
static uid_t owner_uid = (uid_t) -1;
static gid_t owner_gid = (gid_t) -1;

/* The process that removes the socket file if nbdkit exits without
 * .cleanup; 0 in a process that must not.
 */
static pid_t owner_pid;
static bool exit_handlers;

/* The data path reads ntracing without the loop's help, so atomically;
 * the loop alone changes it.
 */
static unsigned ntracing;
static struct adaptra_tracebuf trace_lines;
static ev_timer trace_timer;

int
server_config_owner (const char *value)
{
  char user[256], *group;
  struct passwd *pw;
  unsigned long id;

  if (value[0] == '\0' || strlen (value) >= sizeof user) {
    nbdkit_error ("adaptra-stats-owner=%s: expected USER or USER:GROUP",
                  value);
    return -1;
  }
  strcpy (user, value);
  group = strchr (user, ':');
  if (group)
    *group++ = '\0';
  if (user[0] != '\0') {
    if (!runas_lookup_id (user, false, &id)) {
      nbdkit_error ("adaptra-stats-owner=%s: no user '%s'", value, user);
      return -1;
    }
    owner_uid = (uid_t) id;
    /* USER alone: that user's primary group, as chown(1) does with
     * USER: (a trailing colon); a number names none, the group stays.
     */
    if (group == NULL) {
      pw = getpwnam (user);
      owner_gid = pw ? pw->pw_gid : (gid_t) -1;
    }
  }
  if (group && group[0] != '\0') {
    if (!runas_lookup_id (group, true, &id)) {
      nbdkit_error ("adaptra-stats-owner=%s: no group '%s'", value, group);
      return -1;
    }
    owner_gid = (gid_t) id;
  }
  return 0;
}

int
server_config_idle (const char *value)
{
  unsigned long secs;
  char *end;

  errno = 0;
  secs = strtoul (value, &end, 10);
  if (errno || !isdigit ((unsigned char) value[0]) || *end != '\0' ||
      secs < ADAPTRA_STATS_IDLE_SECS_MIN ||
      secs > ADAPTRA_STATS_IDLE_SECS_MAX) {
    nbdkit_error ("adaptra-stats-idle=%s is not a number of seconds "
                  "(%d..%d)", value, ADAPTRA_STATS_IDLE_SECS_MIN,
                  ADAPTRA_STATS_IDLE_SECS_MAX);
    return -1;
  }
  idle_secs = (int) secs;
  return 0;
}

/* Is a server accepting on path?  Used to tell a stale socket file,
 * left by a server that died, from a live one.
 */
static bool
socket_is_live (const struct sockaddr_un *addr)
{
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool live;

  if (fd == -1)
    return false;
  live = connect (fd, (const struct sockaddr *) addr, sizeof *addr) == 0;
  close (fd);
  return live;
}

/* Remove the socket file if it is still the one we created. */
static void
remove_socket_file (void)
{
  struct stat st;

  if (socket_path[0] == '\0')
    return;
  if (lstat (socket_path, &st) == 0 && st.st_dev == socket_dev
      && st.st_ino == socket_ino && unlink (socket_path) == -1)
    nbdkit_debug ("adaptra-stats: cannot remove %s: %m", socket_path);
  socket_path[0] = '\0';
}

/* nbdkit exits without .cleanup when it fails after .get_ready (its
 * own socket is in use, a plugin fails in .after_fork...): the socket
 * file goes all the same.
 */
static void
at_exit (void)
{
  if (owner_pid != 0 && owner_pid == getpid ())
    remove_socket_file ();
}

/* Before the loop runs, a fork hands the socket file to the child:
 * nbdkit forks into the background, or to run --run in the parent,
 * and the parent then exits without serving.  Once the loop runs, the
 * children of forks (a plugin's helpers) never own it.
 */
static void
atfork_parent (void)
{
  if (loop == NULL)
    owner_pid = 0;
}

static void
atfork_child (void)
{
  owner_pid = loop == NULL && listen_fd >= 0 ? getpid () : 0;
}

/* An error about the socket's directory, or 0 if it is fine. */
static int
check_directory (const char *path)
{
  char copy[sizeof socket_path];
  const char *dir;
  struct stat st;

  strcpy (copy, path);
  dir = dirname (copy);
  if (stat (dir, &st) == -1) {
    if (errno == ENOENT)
      nbdkit_error ("adaptra-stats=%s: directory %s does not exist",
                    path, dir);
    else
      nbdkit_error ("adaptra-stats=%s: directory %s: %m", path, dir);
    return -1;
  }
  if (!S_ISDIR (st.st_mode)) {
    nbdkit_error ("adaptra-stats=%s: %s is not a directory", path, dir);
    return -1;
  }
  return 0;
}

int
server_listen (const char *path, mode_t mode)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  struct stat st;
  mode_t old_umask;
  int fd, r;

  if (strlen (path) >= sizeof addr.sun_path) {
    nbdkit_error ("adaptra-stats: socket path is too long (%zu bytes, "
                  "limit %zu): %s",
                  strlen (path), sizeof addr.sun_path - 1, path);
    return -1;
  }
  strcpy (addr.sun_path, path);
  if (check_directory (path) == -1)
    return -1;

  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      nbdkit_error ("adaptra-stats: %s exists and is not a socket", path);
      return -1;
    }
    if (socket_is_live (&addr)) {
      nbdkit_error ("adaptra-stats: %s is in use by a running server", path);
      return -1;
    }
    if (unlink (path) == -1) {
      nbdkit_error ("adaptra-stats: removing stale socket %s: %m", path);
      return -1;
    }
  }

  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd == -1) {
    nbdkit_error ("adaptra-stats: socket: %m");
    return -1;
  }
  /* Create the file with no access for others, then give it away and
   * widen it to the requested mode: no moment exists at which it is
   * more open than asked.  nbdkit is still single-threaded here.
   */
  old_umask = umask (0177);
  r = bind (fd, (struct sockaddr *) &addr, sizeof addr);
  umask (old_umask);
  if (r == -1) {
    nbdkit_error ("adaptra-stats=%s: bind: %m", path);
    close (fd);
    return -1;
  }
  if (lstat (path, &st) == -1) {
    nbdkit_error ("adaptra-stats=%s: %m", path);
    close (fd);
    unlink (path);
    return -1;
  }
  socket_dev = st.st_dev;
  socket_ino = st.st_ino;
  strcpy (socket_path, path);
  if ((owner_uid != (uid_t) -1 || owner_gid != (gid_t) -1)
      && lchown (path, owner_uid, owner_gid) == -1) {
    nbdkit_error ("adaptra-stats-owner: cannot give %s to uid %d gid %d: "
                  "%m%s", path, (int) owner_uid, (int) owner_gid,
                  errno == EPERM ? " (only root can give it away)" : "");
    goto fail;
  }
  if (chmod (path, mode) == -1 || listen (fd, SOMAXCONN) == -1) {
    nbdkit_error ("adaptra-stats=%s: %m", path);
    goto fail;
  }
  listen_fd = fd;
  owner_pid = getpid ();
  if (!exit_handlers) {
    if (atexit (at_exit) != 0
        || pthread_atfork (NULL, atfork_parent, atfork_child) != 0) {
      nbdkit_error ("adaptra-stats: cannot register exit handlers");
      goto fail;
    }
    exit_handlers = true;
  }
  return 0;

 fail:
  close (fd);
  remove_socket_file ();
  return -1;
}

/* Start or stop streaming trace lines to c; the timer runs while any
 * client traces.
 */
static void
set_tracing (struct client *c, bool on)
{
  if (c->tracing == on)
    return;
  c->tracing = on;
  c->trace_missed = 0;
  __atomic_store_n (&ntracing, ntracing + (on ? 1 : -1), __ATOMIC_RELAXED);
  if (on && ntracing == 1)
    ev_timer_again (loop, &trace_timer);
  else if (!on && ntracing == 0)
    ev_timer_stop (loop, &trace_timer);
}

static void
client_close (struct client *c)
{
  struct client **pp;

  set_tracing (c, false);
  ev_io_stop (loop, &c->io);
  ev_timer_stop (loop, &c->idle);
  close (c->io.fd);
  for (pp = &clients; *pp != c; pp = &(*pp)->next)
    ;
  *pp = c->next;
  if (c->refused)
    nrefusing--;
  else {
    nclients--;
    nprivileged -= c->privileged;
  }
  adaptra_strbuf_free (&c->out);
  free (c);
}

/* Cut c off: its output does not fit, so it is not reading, and
 * nothing more can reach it.
 */
static void
client_drop_full (struct client *c, const char *what)
{
  counts.dropped_output++;
  nbdkit_debug ("adaptra-stats: dropping control client %u (uid %d, pid %d):"
                " %s does not fit its output buffer (it is not reading)",
                c->id, (int) c->uid, (int) c->pid, what);
  c->dead = true;
}

/* Watch for what the client can do next: read more requests while it
 * sends them, write while replies are pending.  Returns false (after
 * closing it) when there is nothing left to do.
 */
static bool
client_rearm (struct client *c)
{
  int events = (c->input == INPUT_CLOSED ? 0 : EV_READ)
               | (c->out.len ? EV_WRITE : 0);

  if (c->input == INPUT_DISCARD && c->out.len == 0 && !c->write_shut) {
    shutdown (c->io.fd, SHUT_WR);
    c->write_shut = true;
  }
  if (events == 0 || c->dead) {
    client_close (c);
    return false;
  }
  ev_io_stop (loop, &c->io);
  ev_io_set (&c->io, c->io.fd, events);
  ev_io_start (loop, &c->io);
  return true;
}

/* c has just done something that counts against idleness. */
static void
client_active (struct client *c)
{
  c->last_active = ev_now (loop);
}

/* Reply with an error line and execute nothing more: the connection
 * closes once the reply has been sent and the client has closed its
 * side, or CLIENT_LINGER_SECS later.
 */
static void
client_fail (struct client *c, const char *msg)
{
  set_tracing (c, false);
  adaptra_strbuf_clear (&c->out);
  adaptra_strbuf_printf (&c->out, "error: %s\n\n", msg);
  c->input = INPUT_DISCARD;
  c->line_len = 0;
  c->idle.repeat = CLIENT_LINGER_SECS;
  c->last_active = ev_now (loop);
  ev_timer_again (loop, &c->idle);
}

/* Is line (len bytes) the one-word command word? */
static bool
is_command (const char *line, size_t len, const char *word)
{
  size_t n = strlen (word);

  if (strlen (line) != len)
    return false;               /* NULs inside: let the parser refuse it */
  line += strspn (line, " \t");
  return strncmp (line, word, n) == 0
    && line[n + strspn (line + n, " \t")] == '\0';
}

/* The "control" command: this server's own state and counters. */
static void
control_status (struct client *self, struct adaptra_strbuf *out)
{
  ev_tstamp now = ev_now (loop);
  struct client *c;

  adaptra_strbuf_printf (out,
                         "control_clients %u\n"
                         "control_clients_max %u\n"
                         "control_clients_privileged_slots %u\n"
                         "control_idle_secs %d\n"
                         "control_accepted %" PRIu64 "\n"
                         "control_refused %" PRIu64 "\n"
                         "control_dropped_output %" PRIu64 "\n"
                         "control_closed_idle %" PRIu64 "\n"
                         "control_denied %" PRIu64 "\n",
                         nclients, SERVER_MAX_CLIENTS,
                         SERVER_PRIVILEGED_SLOTS, idle_secs,
                         counts.accepted, counts.refused,
                         counts.dropped_output, counts.closed_idle,
                         counts.denied);
  adaptra_strbuf_printf (out, "%-6s %-7s %-8s %-5s %-5s %9s %10s %9s\n",
                         "id", "uid", "pid", "you", "admin", "commands",
                         "pending", "idle_s");
  /* Others' uids and pids are for the privileged. */
  for (c = clients; c; c = c->next) {
    if (c->refused || (c != self && !self->privileged))
      continue;
    adaptra_strbuf_printf (out, "%-6u %-7d %-8d %-5s %-5s %9" PRIu64
                           " %10zu %9.1f%s\n",
                           c->id, (int) c->uid, (int) c->pid,
                           c == self ? "yes" : "no",
                           c->privileged ? "yes" : "no", c->commands,
                           c->out.len, now - c->last_active,
                           c->tracing ? " tracing" : "");
  }
  adaptra_strbuf_printf (out, "\n");
}

/* Execute one request line of c. */
static enum adaptra_control_next
client_execute (struct client *c, const char *line, size_t len)
{
  if (!c->privileged && adaptra_control_needs_privilege (line, len)) {
    counts.denied++;
    adaptra_strbuf_printf (&c->out,
                           "error: permission denied: set, reset and trace "
                           "are for root and the user nbdkit runs as "
                           "(uid %d), not uid %d\n\n",
                           (int) (owner_uid != (uid_t) -1
                                  ? owner_uid : geteuid ()), (int) c->uid);
    return ADAPTRA_CONTROL_CONTINUE;
  }
  if (is_command (line, len, "control")) {
    control_status (c, &c->out);
    return ADAPTRA_CONTROL_CONTINUE;
  }
  return handle_line (line, len, &c->out);
}

/* Execute each complete line in the buffer. */
static void
client_run_lines (struct client *c)
{
  char *nl;

  while (c->input == INPUT_REQUESTS && !c->dead
         && (nl = memchr (c->line, '\n', c->line_len)) != NULL) {
    size_t len = nl - c->line;
    size_t used = len + 1;

    if (len > 0 && c->line[len - 1] == '\r')
      len--;
    c->line[len] = '\0';
    switch (client_execute (c, c->line, len)) {
    case ADAPTRA_CONTROL_CONTINUE: break;
    case ADAPTRA_CONTROL_QUIT: c->input = INPUT_CLOSED; break;
    case ADAPTRA_CONTROL_TRACE_ON: set_tracing (c, true); break;
    case ADAPTRA_CONTROL_TRACE_OFF: set_tracing (c, false); break;
    }
    memmove (c->line, c->line + used, c->line_len - used);
    c->line_len -= used;
    c->commands++;
    client_active (c);
    if (c->out.overflow)
      client_drop_full (c, "a reply");
  }
  if (c->input == INPUT_REQUESTS && !c->dead
      && c->line_len == SERVER_MAX_LINE)
    client_fail (c, "line too long (limit 4096 bytes)");
}

static void
client_read (struct client *c)
{
  ssize_t n;

  /* Discarded input lands in the line buffer, which is not used any
   * more.
   */
  if (c->input == INPUT_DISCARD)
    c->line_len = 0;
  n = read (c->io.fd, c->line + c->line_len, SERVER_MAX_LINE - c->line_len);
  if (n == -1) {
    if (errno != EAGAIN && errno != EINTR)
      c->input = INPUT_CLOSED;
    return;
  }
  if (c->input == INPUT_DISCARD) {
    if (n == 0)
      c->input = INPUT_CLOSED;
    return;
  }
  if (n == 0) {
    /* Half-closed: a final request without a newline still runs. */
    if (c->line_len > 0)
      c->line[c->line_len++] = '\n';
    client_run_lines (c);
    c->input = INPUT_CLOSED;
    return;
  }
  c->line_len += n;
  client_run_lines (c);
}

static void
client_write (struct client *c)
{
  ssize_t n = send (c->io.fd, c->out.data, c->out.len, MSG_NOSIGNAL);

  if (n == -1) {
    if (errno != EAGAIN && errno != EINTR) {
      adaptra_strbuf_clear (&c->out);     /* peer gone: drop the reply */
      c->input = INPUT_CLOSED;
    }
    return;
  }
  adaptra_strbuf_consume (&c->out, n);
  /* A tracing client that takes its lines is not idle. */
  if (n > 0 && c->tracing)
    client_active (c);
}

static void
client_cb (struct ev_loop *l, ev_io *w, int revents)
{
  struct client *c = (struct client *) w;

  if (revents & EV_READ)
    client_read (c);
  if (!c->dead && ((revents & EV_WRITE) || c->out.len))
    client_write (c);
  client_rearm (c);
}

/* The idle timer fires idle_secs (CLIENT_LINGER_SECS for the
 * refused and failed) after it was last armed; it closes the client if
 * it has not been active since, or runs until that much after the
 * client's last activity.
 */
static void
idle_cb (struct ev_loop *l, ev_timer *w, int revents)
{
  struct client *c = (struct client *) ((char *) w
                                        - offsetof (struct client, idle));
  ev_tstamp left = c->last_active + c->idle.repeat - ev_now (loop);

  if (left > 0.001) {
    ev_timer_stop (loop, &c->idle);
    ev_timer_set (&c->idle, left, c->idle.repeat);
    ev_timer_start (loop, &c->idle);
    return;
  }
  if (!c->refused && c->input == INPUT_REQUESTS) {
    counts.closed_idle++;
    nbdkit_debug ("adaptra-stats: closing control client %u (uid %d, "
                  "pid %d): idle for %d s", c->id, (int) c->uid,
                  (int) c->pid, idle_secs);
  }
  client_close (c);
}

/* Send the trace lines queued since the last tick to every tracing
 * client; a client too far behind to take them is dropped.  Lines the
 * data path could not queue are reported to each client as dropped.
 */
static void
trace_cb (struct ev_loop *l, ev_timer *w, int revents)
{
  static struct adaptra_strbuf batch = ADAPTRA_STRBUF_INIT (TRACE_BUFFER);
  uint64_t dropped = adaptra_tracebuf_take (&trace_lines, &batch);
  struct client *c, *next;

  for (c = clients; c; c = next) {
    next = c->next;
    if (!c->tracing)
      continue;
    c->trace_missed += dropped;
    if (c->trace_missed == 0 && batch.len == 0)
      continue;
    /* Still behind with the last lines, or no room for these: the
     * client is not reading.  (A burst larger than TRACE_MAX_PENDING
     * is fine for a client that keeps up.)
     */
    if (c->out.len > TRACE_MAX_PENDING
        || (c->trace_missed > 0
            && adaptra_strbuf_printf (&c->out,
                                      "trace: dropped %" PRIu64 " lines\n",
                                      c->trace_missed) == -1)
        || (batch.len > 0
            && adaptra_strbuf_printf (&c->out, "%s", batch.data) == -1)) {
      client_drop_full (c, "its trace output");
      client_rearm (c);
      continue;
    }
    c->trace_missed = 0;
    client_write (c);
    client_rearm (c);
  }
  adaptra_strbuf_clear (&batch);
}

/* The peer's credentials; privileged peers may change the server. */
static void
client_credentials (struct client *c)
{
  struct ucred cred;
  socklen_t len = sizeof cred;

  c->uid = (uid_t) -1;
  if (getsockopt (c->io.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
    return;
  c->uid = cred.uid;
  c->pid = cred.pid;
  c->privileged = cred.uid == 0 || cred.uid == geteuid ()
    || (owner_uid != (uid_t) -1 && cred.uid == owner_uid);
}

/* Is there a slot for c (credentials known)? */
static bool
slot_for (const struct client *c)
{
  return nclients < SERVER_MAX_CLIENTS
    && (c->privileged
        || nclients - nprivileged
           < SERVER_MAX_CLIENTS - SERVER_PRIVILEGED_SLOTS);
}

static void
accept_cb (struct ev_loop *l, ev_io *w, int revents)
{
  struct client *c;
  int fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

  if (fd == -1)
    return;
  if ((c = calloc (1, sizeof *c)) == NULL) {
    close (fd);
    return;
  }
  ev_io_init (&c->io, client_cb, fd, EV_READ);
  client_credentials (c);
  if (!slot_for (c) && nrefusing >= SERVER_MAX_CLIENTS) {
    counts.refused++;
    close (fd);
    free (c);
    return;
  }
  c->out = ADAPTRA_STRBUF_INIT (CLIENT_MAX_OUTPUT);
  ev_init (&c->idle, idle_cb);
  c->idle.repeat = idle_secs;
  c->last_active = ev_now (loop);
  c->id = next_id++;
  ev_timer_again (loop, &c->idle);
  c->next = clients;
  clients = c;
  if (!slot_for (c)) {
    char why[320];

    /* Say why, in a reply it can read: it may have sent its first
     * request already, and closing with that unread would reset the
     * connection.
     */
    counts.refused++;
    nrefusing++;
    c->refused = true;
    nbdkit_debug ("adaptra-stats: refusing a control client (uid %d, "
                  "pid %d): %u clients connected, %u of them privileged",
                  (int) c->uid, (int) c->pid, nclients, nprivileged);
    snprintf (why, sizeof why, "too many clients: %s; close one, or wait "
              "for an idle one to be closed (%d s without a command)",
              nclients >= SERVER_MAX_CLIENTS
              ? STRINGIFY (SERVER_MAX_CLIENTS) " are connected, the most "
                "served at once"
              : "the slots open to users who may not change the server "
                "are taken (" STRINGIFY (SERVER_PRIVILEGED_SLOTS) " of "
                STRINGIFY (SERVER_MAX_CLIENTS) " are kept for root and the "
                "user nbdkit runs as)", idle_secs);
    client_fail (c, why);
    client_write (c);
    client_rearm (c);
    return;
  }
  counts.accepted++;
  nclients++;
  nprivileged += c->privileged;
  ev_io_start (loop, &c->io);
}

static void
stop_cb (struct ev_loop *l, ev_async *w, int revents)
{
  ev_break (loop, EVBREAK_ALL);
}

static void *
server_thread (void *arg)
{
  ev_run (loop, 0);
  while (clients)
    client_close (clients);
  return NULL;
}

void
server_trace (const char *line)
{
  char prefixed[SERVER_MAX_LINE];

  if (__atomic_load_n (&ntracing, __ATOMIC_RELAXED) == 0)
    return;
  snprintf (prefixed, sizeof prefixed, "trace: %s", line);
  adaptra_tracebuf_push (&trace_lines, prefixed);
}

int
server_start (server_line_fn fn)
{
  struct stat st;
  int err;

  if (listen_fd == -1)
    return 0;
  /* After nbdkit -u, the socket should belong to that user. */
  if (owner_uid == (uid_t) -1 && stat (socket_path, &st) == 0
      && st.st_uid != geteuid ())
    nbdkit_debug ("adaptra-stats: %s belongs to uid %d, but nbdkit now "
                  "runs as uid %d: with -u, give adaptra-stats-owner too",
                  socket_path, (int) st.st_uid, (int) geteuid ());
  loop = ev_loop_new (EVFLAG_AUTO);
  if (loop == NULL) {
    nbdkit_error ("adaptra-stats: cannot create an event loop");
    return -1;
  }
  owner_pid = getpid ();
  handle_line = fn;
  adaptra_tracebuf_init (&trace_lines, TRACE_BUFFER);
  ev_init (&trace_timer, trace_cb);
  trace_timer.repeat = TRACE_TICK;
  ev_io_init (&listen_watcher, accept_cb, listen_fd, EV_READ);
  ev_io_start (loop, &listen_watcher);
  ev_async_init (&stop_watcher, stop_cb);
  ev_async_start (loop, &stop_watcher);
  err = pthread_create (&thread, NULL, server_thread, NULL);
  if (err) {
    errno = err;
    nbdkit_error ("adaptra-stats: pthread_create: %m");
    adaptra_tracebuf_fini (&trace_lines);
    ev_loop_destroy (loop);
    loop = NULL;
    return -1;
  }
  thread_running = true;
  return 0;
}

void
server_stop (void)
{
  if (thread_running) {
    ev_async_send (loop, &stop_watcher);
    pthread_join (thread, NULL);
    thread_running = false;
  }
  if (loop) {
    ev_loop_destroy (loop);
    loop = NULL;
    adaptra_tracebuf_fini (&trace_lines);
  }
  if (listen_fd >= 0) {
    close (listen_fd);
    listen_fd = -1;
    remove_socket_file ();
  }
}
