/* SPDX-License-Identifier: BSD-3-Clause */
/* hibernate.h -- bandwidth accounting and hibernation, as tor's
 * AccountingMax, AccountingStart and AccountingRule (tor(1), SERVER
 * OPTIONS).
 *
 * Time is cut into accounting intervals (a day, a week or a month from
 * AccountingStart, local time). The relay counts the bytes it reads and
 * writes in the current interval; AccountingRule says which figure is
 * held against AccountingMax (the larger of the two, their sum, only
 * reads, only writes). Three states:
 *   awake  relaying normally;
 *   soft   the soft limit is reached (the last 5% of the quota, more for
 *          big quotas or fast relays): no new connections or circuits,
 *          the descriptor says "hibernating 1", open circuits go on;
 *   hard   the quota is used up, or the interval's wake-up time has not
 *          come: every OR connection is closed until the wake-up time
 *          of the next interval.
 * The wake-up time is picked as tor picks it (see hibernate.c), so that
 * relays with quotas spread over the interval instead of all waking at
 * its start. The counters live in tor's state-file keys (Accounting*),
 * so a restart (of pctor or of tor on the same DataDirectory) keeps them.
 *
 * A hibernate_t is pure logic over the times and byte counts it is
 * given; hibernate_start() adds the once-a-second timer that feeds it the
 * process's traffic totals. What hibernating means for the relay
 * (listeners, connections, descriptor) is the host's, told through
 * hibernate_host_t.
 */
#ifndef PCTOR_FEATURE_HIBERNATE_HIBERNATE_H
#define PCTOR_FEATURE_HIBERNATE_HIBERNATE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/conf/confdecl.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/statefile.h"

typedef enum {
  HIBERNATE_AWAKE = 0,
  HIBERNATE_SOFT,
  HIBERNATE_HARD,
} hibernate_state_t;

typedef enum {
  ACCT_RULE_MAX = 0,
  ACCT_RULE_SUM,
  ACCT_RULE_IN,
  ACCT_RULE_OUT,
} acct_rule_t;

typedef enum {
  ACCT_UNIT_MONTH = 0,
  ACCT_UNIT_WEEK,
  ACCT_UNIT_DAY,
} acct_unit_t;

/* AccountingStart: unit, day (month: 1-28; week: 1 Monday .. 7 Sunday;
 * day: 0), and the local time of day. */
typedef struct {
  int unit, day, hour, min;
} acct_start_t;

/* The torrc options (hibernate_conf_module). */
typedef struct {
  uint64_t max;       /* AccountingMax, bytes; 0: accounting off */
  int rule;           /* AccountingRule: an acct_rule_t */
  acct_start_t start; /* AccountingStart */
} hibernate_options_t;

extern const conf_module_t hibernate_conf_module;

/* Parse an AccountingStart value. Returns 0, or -1 with *err. */
int hibernate_parse_start(const char *s, acct_start_t *out, char **err);

/* The local-time boundaries of the accounting period holding now. */
time_t hibernate_period_start(const acct_start_t *s, time_t now);
time_t hibernate_period_end(const acct_start_t *s, time_t now);

/* What the host does when the state changes (listeners, connections,
 * descriptor, controller events), and when the counters should be
 * written to the state file (state changes, every 10 minutes). */
typedef struct {
  void (*changed)(hibernate_state_t from, hibernate_state_t to, void *arg);
  void (*save)(void *arg);
  void *arg;
} hibernate_host_t;

typedef struct hibernate_t hibernate_t;

/* id_digest: the relay's RSA identity digest (20 bytes), which seeds the
 * wake-up time. rate: the configured rate (RelayBandwidthRate, else
 * BandwidthRate; bytes/s), the ceiling of the expected usage. */
hibernate_t *hibernate_new(const hibernate_options_t *o,
                           const uint8_t *id_digest, uint64_t rate,
                           const hibernate_host_t *host);
/* New options (SIGHUP). A changed AccountingStart starts a new interval
 * when the current one no longer fits it. */
void hibernate_configure(hibernate_t *h, const hibernate_options_t *o,
                         uint64_t rate, time_t now);
/* Read the counters of tor's state-file keys (before the first tick);
 * write them back. */
void hibernate_load_state(hibernate_t *h, const statefile_t *st);
void hibernate_save_state(const hibernate_t *h, statefile_t *st);

/* Bytes read and written since the last call, over `seconds`. */
void hibernate_add_bytes(hibernate_t *h, uint64_t rd, uint64_t wr,
                         int seconds);
/* Once a second: start a new interval when the current one ended, and
 * change state as the limits and times say. */
void hibernate_tick(hibernate_t *h, time_t now);
/* Sample conn_get_totals() once a second on loop and tick. */
void hibernate_start(hibernate_t *h, evloop_t *loop);

hibernate_state_t hibernate_state(const hibernate_t *h);
/* "awake", "soft", "hard" (GETINFO accounting/hibernating; upper case in
 * HIBERNATION_STATUS events). */
const char *hibernate_state_name(hibernate_state_t s);
/* The figure AccountingRule holds against AccountingMax. */
uint64_t hibernate_used(const hibernate_t *h);
time_t hibernate_wake_time(const hibernate_t *h);

/* Whether to advertise directory service (tunnelled-dir-server), as tor
 * decides with accounting on: not when the relay could use its quota
 * (AccountingRule in excepted), that is when its advertised rate
 * (bytes/s) is at least the quota (half of it under sum) over the
 * interval's length. 1 when h is NULL or accounting is off. */
int hibernate_dircache_allowed(const hibernate_t *h, uint64_t rate,
                               time_t now);

/* tor's heartbeat line about accounting ("Heartbeat: Accounting
 * enabled. Sent: ..."), for a relay with AccountingMax; "" otherwise. */
void hibernate_heartbeat_line(const hibernate_t *h, time_t now, char *buf,
                              size_t len);

/* GETINFO accounting/... (control-spec): 1 with *value, 0 when key is
 * not an accounting key. h may be NULL (accounting off). */
int hibernate_getinfo(const hibernate_t *h, const char *key, char **value);

void hibernate_free_(hibernate_t *h);
#define hibernate_free(h) do { hibernate_free_(h); (h) = NULL; } while (0)

#endif
