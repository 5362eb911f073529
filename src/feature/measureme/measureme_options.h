/* SPDX-License-Identifier: BSD-3-Clause */
/* measureme_options.h -- the MeasureMe torrc options, owned by this
 * module (registered by the option manager in src/app/config). */
#ifndef PCTOR_FEATURE_MEASUREME_MEASUREME_OPTIONS_H
#define PCTOR_FEATURE_MEASUREME_MEASUREME_OPTIONS_H

#include <stdint.h>

#include "lib/conf/confdecl.h"

typedef struct {
  int enabled;     /* MeasureMeEnabled */
  int hops;        /* MeasureMeHops: bit h-1 for hop h; 0: none */
  int interval_ms; /* MeasureMeInterval */
  uint64_t log_max_size; /* MeasureMeLogMaxSize, bytes */
  int client_rate;  /* MeasureMeClientRate, requests per minute */
  int client_burst; /* MeasureMeClientBurst */
  int garbage_answers; /* __MeasureMeGarbageAnswers (tests only) */
} measureme_options_t;

extern const conf_module_t measureme_conf_module;

#endif
