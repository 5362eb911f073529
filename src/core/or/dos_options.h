/* SPDX-License-Identifier: BSD-3-Clause */
/* dos_options.h -- the DoS* torrc options (tor's names and meanings),
 * owned by core/or/dos.
 *
 * The option manager (src/app/config) registers dos_conf_module; the
 * daemon reads dos_options_t with options_module() and turns it, with the
 * consensus, into dos_params_t (dos_params_resolve()). As in tor, a NUM
 * at 0 and an enable switch at auto mean "the consensus parameter of the
 * same name", and everything can be changed by SIGHUP.
 */
#ifndef PCTOR_CORE_OR_DOS_OPTIONS_H
#define PCTOR_CORE_OR_DOS_OPTIONS_H

#include "lib/conf/confdecl.h"

typedef struct dos_options_t {
  int cc_enabled; /* 1, 0, -1 auto */
  int cc_min_conns;
  int cc_rate;
  int cc_burst;
  int cc_defense_type;
  int cc_defense_period; /* seconds */
  int conn_enabled;
  int conn_max_concurrent;
  int conn_defense_type;
  int conn_connect_rate;
  int conn_connect_burst;
  int conn_connect_defense_period; /* seconds */
  int refuse_single_hop_rendezvous;
  int stream_enabled;
  int stream_defense_type;
  int stream_rate;
  int stream_burst;
} dos_options_t;

extern const conf_module_t dos_conf_module;

#endif
