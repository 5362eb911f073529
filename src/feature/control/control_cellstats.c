/* SPDX-License-Identifier: BSD-3-Clause */
/* control_cellstats.c -- CONN_BW and CELL_STATS event text
 * (control_cellstats.h).
 *
 * Design: pure formatting of counts core took for the caller; no state,
 * no walking of channels or circuits.
 */
#include "feature/control/control_cellstats.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "core/proto/cell.h"
#include "lib/string/strbuf.h"

char *
control_connbw_event(uint64_t conn_id, const char *type, uint64_t rd,
                     uint64_t wr)
{
  if (rd == 0 && wr == 0)
    return NULL;
  strbuf_t b = {0};
  strbuf_addf(&b, "CONN_BW ID=%" PRIu64 " TYPE=%s READ=%" PRIu64
              " WRITTEN=%" PRIu64, conn_id, type, rd, wr);
  return b.s;
}

/* " Key=cmd:v,cmd:v" for the commands whose include count is non-zero;
 * nothing when none is. values: 32-bit counts, or (us) 64-bit
 * microseconds written as milliseconds. */
static void
add_by_command(strbuf_t *b, const char *dir, const char *key,
               const uint32_t *include, const uint32_t *counts,
               const uint64_t *us)
{
  int first = 1;
  for (int cmd = 0; cmd < CIRC_QUEUE_N_CMDS; cmd++) {
    if (!include[cmd])
      continue;
    char name[32];
    const char *n = cell_command_name((uint8_t)cmd);
    size_t i = 0;
    for (; n[i] && i + 1 < sizeof(name); i++)
      name[i] = (char)tolower((unsigned char)n[i]);
    name[i] = '\0';
    if (first)
      strbuf_addf(b, " %s%s=", dir, key);
    strbuf_addf(b, "%s%s:%" PRIu64, first ? "" : ",", name,
                us ? us[cmd] / 1000 : (uint64_t)counts[cmd]);
    first = 0;
  }
}

static int
side_counted(const control_cellstats_side_t *s)
{
  for (int i = 0; i < CIRC_QUEUE_N_CMDS; i++)
    if (s->counts.added[i] || s->counts.removed[i])
      return 1;
  return 0;
}

static void
add_side(strbuf_t *b, const char *dir, const control_cellstats_side_t *s)
{
  if (!s->present)
    return;
  const circ_queue_cmd_stats_t *c = &s->counts;
  strbuf_addf(b, " %sQueue=%u %sConn=%" PRIu64, dir, (unsigned)s->circ_id,
              dir, s->conn_id);
  add_by_command(b, dir, "Added", c->added, c->added, NULL);
  add_by_command(b, dir, "Removed", c->removed, c->removed, NULL);
  add_by_command(b, dir, "Time", c->removed, NULL, c->removed_us);
}

char *
control_cellstats_event(int has_id, uint64_t circ_gid,
                        const control_cellstats_side_t *inbound,
                        const control_cellstats_side_t *outbound)
{
  if (!(inbound->present && side_counted(inbound)) &&
      !(outbound->present && side_counted(outbound)))
    return NULL;
  strbuf_t b = {0};
  strbuf_addf(&b, "CELL_STATS");
  if (has_id)
    strbuf_addf(&b, " ID=%" PRIu64, circ_gid);
  add_side(&b, "Inbound", inbound);
  add_side(&b, "Outbound", outbound);
  return b.s;
}
