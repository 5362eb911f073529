/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_options.c -- declarations of the Conflux options (see
 * conflux_options.h): names, types, defaults and the man page's text in
 * one table; the one rule between them (ConfluxLegs 1) in validate. */
#include "feature/conflux/conflux_options.h"
#include "feature/conflux/conflux_cell.h"
#include "feature/conflux/conflux_set.h"
#include "lib/malloc/alloc.h"

#include <stddef.h>

#define OFF(f) offsetof(conflux_options_t, f)

static const conf_enum_t ux_names[] = {
  {"throughput", CFX_UX_HIGH_THROUGHPUT},
  {"latency", CFX_UX_MIN_LATENCY},
  {"throughput_lowmem", CFX_UX_LOW_MEM_THROUGHPUT},
  {"latency_lowmem", CFX_UX_LOW_MEM_LATENCY},
  {NULL, 0},
};

static const conf_enum_t alg_names[] = {
  {"auto", 0},
  {"minrtt", CFX_ALG_MINRTT},
  {"lowrtt", CFX_ALG_LOWRTT},
  {"proportional", CFX_ALG_PROPORTIONAL},
  {NULL, 0},
};

/* clang-format off */
static const conf_var_t conflux_vars[] = {
  {"ConfluxEnabled", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(enabled),
   "Client: 1 makes new circuits conflux sets (proposal 329) wherever the "
   "exit supports it (Conflux=1 and congestion control): several legs to "
   "the same exit through different guards and middles, one stream space, "
   "traffic split between them. 0 never does. auto (as tor) follows the "
   "consensus parameter cfx_enabled, which defaults to on. Exits serve "
   "conflux whatever this option says (unless the consensus sets "
   "cfx_enabled=0).", NULL},
  {"ConfluxClientUX", CONF_TYPE_ENUM,
   "throughput|latency|throughput_lowmem|latency_lowmem", "throughput",
   "throughput", 1, 0, 0, OFF(client_ux),
   "Client: the user experience asked from the exit for the data it sends "
   "(tor's values): throughput uses every leg with room in its congestion "
   "window (LowRTT), latency only the lowest-RTT leg (MinRTT); the lowmem "
   "variants keep the out-of-order queue small (MinRTT too).", ux_names},
  {"ConfluxLegs", CONF_TYPE_INT, "NUM", "0", "0 (the consensus' "
   "cfx_num_legs_set, 2)", 1, 0, 8, OFF(legs),
   "Client: legs per conflux set, 2 to 8; 0 takes the consensus parameter "
   "cfx_num_legs_set (default 2).", NULL},
  {"ConfluxScheduler", CONF_TYPE_ENUM,
   "auto|minrtt|lowrtt|proportional", "auto", "auto",
   1, 0, 0, OFF(scheduler),
   "How this pctor spreads what it sends over the legs of a conflux set, "
   "as a client (uploads) and as an exit (downloads). auto does what tor "
   "does: follow the other end's wish (an exit asks clients for latency; "
   "a client's ConfluxClientUX tells the exit). minrtt: only the "
   "lowest-RTT leg. lowrtt: the lowest-RTT leg with room in its congestion "
   "window. proportional: the splitter of AlSabah et al. (PETS 2013), each "
   "cell on a leg with room chosen at random in proportion to the leg's "
   "measured throughput (congestion window / RTT).", alg_names},
  {"ConfluxMaxOutOfOrder", CONF_TYPE_INT, "NUM", "32768", "32768",
   1, 16, 1000000, OFF(max_ooo),
   "The most stream messages (cells) one conflux set may hold waiting for "
   "an earlier one; a set that would hold more is closed with a notice.",
   NULL},
};
/* clang-format on */

static int
conflux_validate(void *obj, const unsigned char *set, char **err_out,
                 const conf_var_t **bad_var)
{
  (void)set;
  const conflux_options_t *o = obj;
  if (o->legs == 1) {
    *bad_var = &conflux_vars[2];
    *err_out = pc_strdup("must be 0 or 2 to 8 (use ConfluxEnabled 0 for "
                         "none)");
    return -1;
  }
  return 0;
}

const conf_module_t conflux_conf_module = {
  "conflux", conflux_vars, sizeof(conflux_vars) / sizeof(conflux_vars[0]),
  sizeof(conflux_options_t), conflux_validate,
};
