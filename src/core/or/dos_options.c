/* SPDX-License-Identifier: BSD-3-Clause */
/* dos_options.c -- declarations of the DoS* options (see dos_options.h):
 * tor's names, syntax and defaults, and the man page's text, in one
 * table. "0 / auto: the consensus" is resolved in dos.c, not here. */
#include "core/or/dos_options.h"

#include <stddef.h>
#include <stdint.h>

#define OFF(f) offsetof(dos_options_t, f)
#define NUM_MAX INT32_MAX

/* clang-format off */
static const conf_var_t dos_vars[] = {
  {"DoSCircuitCreationEnabled", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto",
   "auto", 1, 0, 0, OFF(cc_enabled),
   "Relay: limit the rate at which one client address creates circuits "
   "(CREATE, CREATE2 and CREATE_FAST cells on connections from addresses "
   "the consensus does not list as relays). auto takes the consensus "
   "parameter of the same name; without one, off.", NULL},
  {"DoSCircuitCreationMinConnections", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 3)", 1, 0, NUM_MAX, OFF(cc_min_conns),
   "An address is marked only while it has at least this many "
   "connections open. 0: the consensus parameter; without one, 3.", NULL},
  {"DoSCircuitCreationRate", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 3)", 1, 0, NUM_MAX, OFF(cc_rate),
   "Circuits per second one client address may create on average. 0: the "
   "consensus parameter; without one, 3.", NULL},
  {"DoSCircuitCreationBurst", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 90)", 1, 0, NUM_MAX, OFF(cc_burst),
   "Circuits one client address may create at once; an address that has "
   "used them up (and has DoSCircuitCreationMinConnections connections) "
   "is marked. 0: the consensus parameter; without one, 90.", NULL},
  {"DoSCircuitCreationDefenseType", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 2)", 1, 0, 2, OFF(cc_defense_type),
   "What happens to a marked address: 1 nothing (only counted), 2 its "
   "CREATE cells are answered with DESTROY (RESOURCELIMIT) for "
   "DoSCircuitCreationDefenseTimePeriod. 0: the consensus parameter; "
   "without one, 2.", NULL},
  {"DoSCircuitCreationDefenseTimePeriod", CONF_TYPE_INTERVAL,
   "N seconds|minutes|hours", "0", "0 (the consensus; else 1 hour)", 1, 0,
   NUM_MAX, OFF(cc_defense_period),
   "How long a mark lasts: a random time between N+1 and 3/2 N seconds, "
   "drawn at each marking. 0: the consensus parameter; without one, "
   "3600 seconds.", NULL},
  {"DoSConnectionEnabled", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(conn_enabled),
   "Relay: limit the connections of one client address (an address the "
   "consensus does not list as a relay): how many at once, and how fast "
   "new ones come. auto takes the consensus parameter of the same name; "
   "without one, off.", NULL},
  {"DoSConnectionMaxConcurrentCount", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 100)", 1, 0, NUM_MAX, OFF(conn_max_concurrent),
   "The most connections one client address may have open at once; with "
   "DoSConnectionDefenseType 2 more are closed as they arrive. 0: the "
   "consensus parameter; without one, 100.", NULL},
  {"DoSConnectionDefenseType", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 2)", 1, 0, 2, OFF(conn_defense_type),
   "1: nothing (only counted); 2: close new connections from an address "
   "over DoSConnectionMaxConcurrentCount or marked by the connect rate. "
   "0: the consensus parameter; without one, 2.", NULL},
  {"DoSConnectionConnectRate", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 20)", 1, 0, NUM_MAX, OFF(conn_connect_rate),
   "New connections per second one client address may open on average; "
   "an address that exceeds it and DoSConnectionConnectBurst is marked "
   "for DoSConnectionConnectDefenseTimePeriod. 0: the consensus "
   "parameter; without one, 20.", NULL},
  {"DoSConnectionConnectBurst", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 40)", 1, 0, NUM_MAX, OFF(conn_connect_burst),
   "New connections one client address may open at once. 0: the "
   "consensus parameter; without one, 40.", NULL},
  {"DoSConnectionConnectDefenseTimePeriod", CONF_TYPE_INTERVAL,
   "N seconds|minutes|hours", "24 hours", "24 hours", 1, 0, NUM_MAX,
   OFF(conn_connect_defense_period),
   "How long a connect-rate mark lasts: a random time between N+1 and "
   "3/2 N seconds. 0: the consensus parameter; without one, 24 hours.",
   NULL},
  {"DoSRefuseSingleHopClientRendezvous", CONF_TYPE_AUTOBOOL, "0|1|auto",
   "auto", "auto", 1, 0, 0, OFF(refuse_single_hop_rendezvous),
   "Accepted for tor compatibility; pctor does not serve rendezvous "
   "points, so it has no effect.", NULL},
  {"DoSStreamCreationEnabled", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto",
   "auto", 1, 0, 0, OFF(stream_enabled),
   "Exit: limit the rate at which one circuit opens streams and asks for "
   "DNS resolutions (BEGIN and RESOLVE cells). auto takes the consensus "
   "parameter of the same name; without one, off.", NULL},
  {"DoSStreamCreationDefenseType", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 2)", 1, 0, 3, OFF(stream_defense_type),
   "Past the rate: 1 nothing, 2 refuse the stream or resolution (END "
   "RESOURCELIMIT), 3 close the circuit. 0: the consensus parameter; "
   "without one, 2.", NULL},
  {"DoSStreamCreationRate", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 100)", 1, 0, NUM_MAX, OFF(stream_rate),
   "Streams and resolutions per second one circuit may ask for on "
   "average. 0: the consensus parameter; without one, 100.", NULL},
  {"DoSStreamCreationBurst", CONF_TYPE_INT, "NUM", "0",
   "0 (the consensus; else 300)", 1, 0, NUM_MAX, OFF(stream_burst),
   "Streams and resolutions one circuit may ask for at once. 0: the "
   "consensus parameter; without one, 300.", NULL},
};
/* clang-format on */

const conf_module_t dos_conf_module = {
  "dos", dos_vars, sizeof(dos_vars) / sizeof(dos_vars[0]),
  sizeof(dos_options_t), NULL,
};
