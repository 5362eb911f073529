/* SPDX-License-Identifier: BSD-3-Clause */
/* conflux_options.h -- the Conflux torrc options, owned by this module.
 *
 * The option manager (src/app/config) registers conflux_conf_module and
 * keeps one conflux_options_t per parsed configuration; the daemon reads
 * it with options_module(). Values are parsed once, by type (an ENUM for
 * the names, an AUTOBOOL for 0|1|auto), when the torrc is read.
 */
#ifndef PCTOR_FEATURE_CONFLUX_CONFLUX_OPTIONS_H
#define PCTOR_FEATURE_CONFLUX_CONFLUX_OPTIONS_H

#include "lib/conf/confdecl.h"

typedef struct {
  int enabled;    /* ConfluxEnabled: 1, 0, -1 auto */
  int client_ux;  /* ConfluxClientUX: a CFX_UX_* code */
  int legs;       /* ConfluxLegs: 0 (consensus) or 2..8 */
  int scheduler;  /* ConfluxScheduler: 0 auto, or a cfx_alg_t */
  int max_ooo;    /* ConfluxMaxOutOfOrder, messages */
} conflux_options_t;

extern const conf_module_t conflux_conf_module;

#endif
