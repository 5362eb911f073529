/* SPDX-License-Identifier: BSD-3-Clause */
/* dirreq_options.c -- the statistics options of a directory cache
 * (DirReqStatistics, ExtraInfoStatistics, and the testing interval
 * __DirReqStatisticsInterval) in one table, with tor's names and
 * defaults. app reads them (options_module) and configures the
 * dirreq_stats_t it hands to the directory cache and the publisher. */
#include "feature/dircache/dirreq_stats.h"

#include <stddef.h>

#define OFF(f) offsetof(dirreq_options_t, f)

/* clang-format off */
static const conf_var_t dirreq_vars[] = {
  {"DirReqStatistics", CONF_TYPE_BOOL, "0|1", "1", "1", 1, 0, 0,
   OFF(dirreq_statistics),
   "Relay with a directory cache (DirCache 1 or a DirPort): if 1 (as "
   "tor), count the requests for a consensus, by client country "
   "(GeoIPFile, else \"??\"), by answer status and by download outcome "
   "(DirPort and BEGIN_DIR apart), over 24-hour intervals; each "
   "finished interval is written to DataDirectory/stats/dirreq-stats "
   "and, with ExtraInfoStatistics 1, published for a day in the "
   "extra-info document as dir-spec's dirreq-* lines, rounded as tor "
   "rounds them. The interval under way is kept in the state file. If "
   "0, nothing is counted.", NULL},
  {"ExtraInfoStatistics", CONF_TYPE_BOOL, "0|1", "1", "1", 1, 0, 0,
   OFF(extra_info_statistics),
   "If 1 (as tor), the relay's extra-info document carries its "
   "bandwidth history and its statistics (DirReqStatistics). If 0, as "
   "in tor, it carries neither (the statistics are still written to "
   "DataDirectory/stats).", NULL},
  {"__DirReqStatisticsInterval", CONF_TYPE_INTERVAL, "INTERVAL",
   "24 hours", "24 hours", 1, 10, 7 * 86400, OFF(interval),
   "For tests: the length of a DirReqStatistics interval (tor's is "
   "fixed at 24 hours; the end of an interval is noticed within a "
   "minute).", NULL},
};
/* clang-format on */

const conf_module_t dirreq_conf_module = {
  "dirreq", dirreq_vars, sizeof(dirreq_vars) / sizeof(dirreq_vars[0]),
  sizeof(dirreq_options_t), NULL,
};
