/* SPDX-License-Identifier: BSD-3-Clause */
/* measureme_options.c -- declarations of the MeasureMe options (see
 * measureme_options.h). MeasureMeHops is a list of hop numbers parsed
 * once into a bit mask by a custom type. */
#include "feature/measureme/measureme_options.h"
#include "lib/malloc/alloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define OFF(f) offsetof(measureme_options_t, f)

/* "1,3" -> bits 0 and 2. */
static int
hops_assign(void *field, const char *value, void *arg,
            const conf_line_t *line, char **err_out)
{
  (void)arg;
  (void)line;
  unsigned mask = 0;
  int bad = 0;
  char *copy = pc_strdup(value);
  for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t;
       t = strtok_r(NULL, ", \t", &save)) {
    if (!strcmp(t, "1") || !strcmp(t, "2") || !strcmp(t, "3"))
      mask |= 1u << (t[0] - '1');
    else
      bad = 1;
  }
  free(copy);
  if (bad || !mask) {
    *err_out = pc_strdup("must list hops 1, 2 and/or 3");
    return -1;
  }
  *(int *)field = (int)mask;
  return 0;
}

static void
hops_format(const void *field, conf_strlist_t *out)
{
  int mask = *(const int *)field;
  char buf[8] = "";
  for (int h = 0; h < 3; h++)
    if (mask & (1 << h)) {
      size_t n = strlen(buf);
      snprintf(buf + n, sizeof(buf) - n, "%s%d", n ? "," : "", h + 1);
    }
  if (*buf)
    conf_strlist_add(out, buf);
}

static const conf_custom_t hops_type = {
  CONF_STORE_INT, 0, 0, hops_assign, hops_format, NULL,
};

/* clang-format off */
static const conf_var_t measureme_vars[] = {
  {"MeasureMeEnabled", CONF_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(enabled),
   "If 1, a client may ask this relay (with a MeasureMe relay cell) to "
   "record statistics of its circuit, for that circuit only, as JSON lines "
   "in DataDirectory/measureme.jsonl: cells per direction, queueing delay, "
   "EWMA average, output-buffer and kernel send-queue sizes and the "
   "connections' TCP_INFO, within per-circuit and per-client rate limits. "
   "0 refuses such requests.", NULL},
  {"MeasureMeHops", CONF_TYPE_CUSTOM, "HOP[,HOP...]", NULL, "unset (none)",
   1, 0, 0, OFF(hops),
   "Client: ask these hops (1 = guard, 2 = middle, 3 = exit) of every new "
   "circuit to record statistics of it (MeasureMe; relays without it "
   "ignore the request). Each circuit gets a random label, logged at "
   "notice level with the circuit, that the relays' records carry.",
   &hops_type},
  {"MeasureMeInterval", CONF_TYPE_MSEC_INTERVAL, "MILLISECONDS", "1000",
   "1000", 1, 100, 60000, OFF(interval_ms),
   "Client: how often the relays asked by MeasureMeHops record (100 to "
   "60000 milliseconds; units such as \"2 seconds\" are accepted).", NULL},
  {"MeasureMeLogMaxSize", CONF_TYPE_MEMUNIT, "N bytes|KB|MB|GB", "100 MB",
   "100 MB", 1, 64 * 1024, 0, OFF(log_max_size),
   "MeasureMe: when DataDirectory/measureme.jsonl reaches this size it is "
   "renamed measureme.jsonl.1 (replacing the previous one) and a new file "
   "is started. At least 64 KB.", NULL},
  {"MeasureMeClientRate", CONF_TYPE_INT, "NUM", "60", "60", 1, 1, 60000,
   OFF(client_rate),
   "MeasureMe: requests per minute accepted from one client address (the "
   "connection a circuit came from), on average.", NULL},
  {"MeasureMeClientBurst", CONF_TYPE_INT, "NUM", "120", "120", 1, 1, 60000,
   OFF(client_burst),
   "MeasureMe: requests one client address may make at once before "
   "MeasureMeClientRate applies.", NULL},
  {"__MeasureMeGarbageAnswers", CONF_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(garbage_answers),
   "For tests, only with TestingTorNetwork 1: after each MeasureMe answer "
   "also send a garbage one (another label, an unknown version or type, "
   "records cut short, in turn), so that clients' handling of bad "
   "answers can be tested.", NULL},
};
/* clang-format on */

const conf_module_t measureme_conf_module = {
  "measureme", measureme_vars,
  sizeof(measureme_vars) / sizeof(measureme_vars[0]),
  sizeof(measureme_options_t), NULL,
};
