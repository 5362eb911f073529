/* SPDX-License-Identifier: BSD-3-Clause */
/* guards_options.c -- tor's entry guard options (NumEntryGuards,
 * NumPrimaryGuards, NumDirectoryGuards, GuardLifetime, UseEntryGuards) in
 * one table with tor's names, syntax and defaults. guards.c applies them
 * over the consensus parameters each time it updates its sets; the rules
 * between them (and the one tor warns about) are checked here once. */
#include "feature/client/guards.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <stddef.h>

#define OFF(f) offsetof(guards_options_t, f)
#define N_GUARDS_MAX 16 /* as many primary guards as guards.c keeps */
#define TEN_YEARS (3650 * 86400)

static int
guards_options_validate(void *obj, const unsigned char *set, char **err_out,
                        const conf_var_t **bad_var)
{
  (void)set;
  (void)err_out;
  (void)bad_var;
  const guards_options_t *o = obj;
  if (o->guard_lifetime > 0 && o->guard_lifetime < 86400)
    log_warn("GuardLifetime is below one day; the consensus' guard "
             "lifetimes are used instead (as tor does).");
  if (o->num_directory_guards > 0)
    log_notice("NumDirectoryGuards has no effect: pctor has no directory "
               "guards (its directory client picks caches itself).");
  return 0;
}

/* clang-format off */
static const conf_var_t guards_vars[] = {
  {"UseEntryGuards", CONF_TYPE_BOOL, "0|1", "1", "1", 1, 0, 0,
   OFF(use_entry_guards),
   "Client: if 1, the first hop of every circuit is one of a few "
   "long-term entry guards, chosen and kept in the state file as "
   "guard-spec describes. If 0 (as in tor, not recommended: it makes "
   "it much likelier that an observer sees both ends of some circuit), "
   "each first hop is drawn afresh among the relays that may be guards, "
   "weighted by bandwidth for the guard position, and the guards in the "
   "state file are neither used nor changed.", NULL},
  {"NumEntryGuards", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus' guard-n-primary-guards-to-use, else 1)", 1, 0,
   N_GUARDS_MAX, OFF(num_entry_guards),
   "Client: spread circuits over the first NUM usable primary guards "
   "(0 to 16). 0 takes the number from the consensus parameter "
   "guard-n-primary-guards-to-use, 1 when it is absent. Without "
   "NumPrimaryGuards, a NUM above 1 also keeps 2 x NUM primary guards "
   "(NUM + NUM/2 above 5, at most 16), as tor does.", NULL},
  {"NumPrimaryGuards", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus' guard-n-primary-guards, else 3)", 1, 0, N_GUARDS_MAX,
   OFF(num_primary_guards),
   "Client: keep NUM primary guards (0 to 16), the guards tried first. "
   "0 takes the number from the consensus parameter "
   "guard-n-primary-guards, 3 when it is absent.", NULL},
  {"NumDirectoryGuards", CONF_TYPE_INT, "NUM", "0", "0", 1, 0, INT32_MAX,
   OFF(num_directory_guards),
   "Accepted for tor's torrcs. pctor has no directory guards (its "
   "directory client picks directory caches itself), so this changes "
   "nothing; a value other than 0 is logged at start-up.", NULL},
  {"GuardLifetime", CONF_TYPE_INTERVAL, "N days|weeks|months", "0",
   "0 (the consensus' guard-lifetime-days, else 120 days)", 1, 0,
   TEN_YEARS, OFF(guard_lifetime),
   "Client: if at least one day, a sampled guard that has not been "
   "confirmed is dropped from the sample this long after it was "
   "sampled, and a confirmed guard this long after it was confirmed "
   "(replacing the consensus parameters guard-lifetime-days and "
   "guard-confirmed-min-lifetime-days, 120 and 60 days by default). "
   "At most 10 years; below one day (with a warning) and 0 leave the "
   "consensus' values, as in tor. A month is 30.44 days.", NULL},
};
/* clang-format on */

const conf_module_t guards_conf_module = {
  "guards", guards_vars, sizeof(guards_vars) / sizeof(guards_vars[0]),
  sizeof(guards_options_t), guards_options_validate,
};
