/* SPDX-License-Identifier: BSD-3-Clause */
/* evloop_internal.h -- for other files of src/lib/evloop only (dns.c):
 * access to the libevent base behind an evloop_t, so that libevent
 * add-ons (evdns) can run on the same loop. Not for use outside this
 * directory: everything else sees only evloop.h. */
#ifndef PCTOR_LIB_EVLOOP_EVLOOP_INTERNAL_H
#define PCTOR_LIB_EVLOOP_EVLOOP_INTERNAL_H
#include "lib/evloop/evloop.h"

struct event_base;
struct event_base *evloop_event_base_(evloop_t *loop);
#endif
