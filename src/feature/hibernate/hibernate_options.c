/* SPDX-License-Identifier: BSD-3-Clause */
/* hibernate_options.c -- the accounting options (AccountingMax,
 * AccountingRule, AccountingStart) in one table, with tor's names, syntax
 * and defaults. AccountingStart is a CUSTOM option stored as a parsed
 * acct_start_t, so the module never re-parses the string. */
#include "feature/hibernate/hibernate.h"
#include "lib/malloc/alloc.h"

#include <stddef.h>
#include <stdio.h>

#define OFF(f) offsetof(hibernate_options_t, f)

static const conf_enum_t rule_names[] = {
  {"max", ACCT_RULE_MAX},
  {"sum", ACCT_RULE_SUM},
  {"in", ACCT_RULE_IN},
  {"out", ACCT_RULE_OUT},
  {NULL, 0},
};

static int
start_assign(void *field, const char *value, void *arg,
             const conf_line_t *line, char **err_out)
{
  (void)arg;
  (void)line;
  return hibernate_parse_start(value, field, err_out);
}

static void
start_format(const void *field, conf_strlist_t *out)
{
  const acct_start_t *s = field;
  static const char *const units[] = {"month", "week", "day"};
  char b[48];
  if (s->unit == ACCT_UNIT_DAY)
    snprintf(b, sizeof(b), "day %02d:%02d", s->hour, s->min);
  else
    snprintf(b, sizeof(b), "%s %d %02d:%02d", units[s->unit], s->day,
             s->hour, s->min);
  conf_strlist_add(out, b);
}

static const conf_custom_t start_type = {
  CONF_STORE_BLOB, sizeof(acct_start_t), 0, start_assign, start_format,
  NULL};

/* clang-format off */
static const conf_var_t hibernate_vars[] = {
  {"AccountingMax", CONF_TYPE_MEMUNIT,
   "N bytes|KBytes|MBytes|GBytes|TBytes", "0", "0 (no accounting)",
   1, 0, 0, OFF(max),
   "Relay: the most bytes to use in each accounting interval "
   "(AccountingStart), counted as AccountingRule says. When little is "
   "left (the soft limit: the last 5% of it, or the last 500 MBytes, or "
   "the last three hours at the usage measured in the previous interval, "
   "whichever leaves most), the relay stops accepting connections and "
   "circuits and publishes its descriptor with \"hibernating 1\"; open "
   "circuits go on. When it is used up, every relay connection is "
   "closed until the next interval. Each interval the relay wakes at a "
   "time picked as tor picks it: at the start when it has no estimate "
   "of its usage, else at a point derived from its identity key within "
   "the part of the interval that leaves time to use the quota. The "
   "counters are kept in the state file under tor's Accounting* keys. "
   "1 GByte is 2^30 bytes. 0 turns accounting off.", NULL},
  {"AccountingRule", CONF_TYPE_ENUM, "sum|max|in|out", "max", "max",
   1, 0, 0, OFF(rule),
   "Relay: which figure is held against AccountingMax: max, the larger "
   "of the bytes received and sent; sum, the two added; in, only the "
   "bytes received; out, only the bytes sent.", rule_names},
  {"AccountingStart", CONF_TYPE_CUSTOM, "day|week|month [DAY] HH:MM",
   "month 1 0:00", "month 1 0:00", 1, 0, 0, OFF(start),
   "Relay: the accounting interval. month: from HH:MM on day DAY (1 to "
   "28) of a month to the same time of the next month; week: from HH:MM "
   "on day DAY of a week (1 Monday to 7 Sunday) to the same time a week "
   "later; day: from HH:MM to the same time the next day. Times are "
   "local, 24-hour.", &start_type},
};
/* clang-format on */

const conf_module_t hibernate_conf_module = {
  "hibernate", hibernate_vars,
  sizeof(hibernate_vars) / sizeof(hibernate_vars[0]),
  sizeof(hibernate_options_t), NULL,
};
