/* SPDX-License-Identifier: BSD-3-Clause */
/* onion.h -- the circuit-creation handshakes as the circuit layer uses
 * them: one entry point per side, dispatching on the handshake type
 * (CREATE_FAST, ntor, ntor v3) and always producing the 72 bytes of relay
 * key material that relay_crypto_new() takes.
 *
 * ntor v3 also settles circuit parameters (onion_circ_params_t): the
 * client asks for congestion control when the target says so
 * (extend_target_t.cc_request), the relay agrees when its parameters
 * enable it (cc_alg != 0, congestion_control.h) and names its SENDME
 * increment, and the client checks that answer (proposal 324 10.5).
 *
 * pctor's private extension (doc/backtap.md, "End-to-end windows"): a
 * client whose first hop is BackTap asks the exit (type 0xf0, empty) to
 * drop the end-to-end circuit windows; the exit agrees (type 0xf1, empty,
 * and then no congestion control) only when the caller says that the
 * circuit reached it over hop-by-hop backpressure all the way (nowin_ok).
 * tor ignores both types, as unknown extensions must be. */
#ifndef PCTOR_CORE_OR_ONION_H
#define PCTOR_CORE_OR_ONION_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay_keys.h"

/* What a handshake settled besides the keys. */
typedef struct onion_circ_params_t {
  int cc_enabled;        /* congestion control negotiated (ntor v3) */
  uint8_t sendme_inc;    /* its SENDME increment */
  int nowin;             /* no end-to-end circuit windows (pctor) */
} onion_circ_params_t;

/* ntor v3 extension types of pctor's own, from the top of the one-byte
 * space: tor allocates from 1 upwards (1-3 in use) and ignores types it
 * does not know. */
#define ONION_EXT_NOWIN_REQUEST 0xf0
#define ONION_EXT_NOWIN_RESPONSE 0xf1
/* What a client asked of a hop (onion_client_finish's `requested`). */
#define ONION_REQ_CC 1      /* extend_target_t.cc_request */
#define ONION_REQ_NOWIN 2   /* extend_target_t.nowin_request, as sent */

/* The client's message: the requests in type order (an empty list when
 * none). Returns the length, or -1 if cap is too small. */
int onion_ext_build_request(int cc, int nowin, uint8_t *out, size_t cap);
/* Is there a well-formed no-windows extension of `type` in msg? 1 yes,
 * 0 no, -1 malformed list or a non-empty body (*why set). */
int onion_ext_find_nowin(const uint8_t *msg, size_t len, uint8_t type,
                         const char **why);

/* Client: make the handshake data (CREATE2 HDATA, or the CREATE_FAST X) for
 * target into hdata (capacity cap), *hlen set; *state must be passed to
 * onion_client_finish() or onion_client_free(). Returns 0 or -1. */
int onion_client_start(const extend_target_t *target, uint8_t *hdata,
                       size_t cap, size_t *hlen, void **state);
/* Client: check the reply and derive keys. requested: what the client
 * message asked for (ONION_REQ_*; 1 is congestion control alone); the
 * outcome goes to *params. Returns 0, or -1 (the circuit must be closed:
 * bad reply, an answer to something not asked, or both congestion control
 * and no windows). */
int onion_client_finish(uint16_t htype, void *state, const uint8_t *reply,
                        size_t reply_len, uint8_t *keys, size_t keys_len,
                        int requested, onion_circ_params_t *params);
void onion_client_free(uint16_t htype, void *state);

/* Relay: answer a CREATE2 (htype/hdata) or CREATE_FAST (htype
 * CIRC_HTYPE_FAST) with our onion keys, agreeing to congestion control
 * as ccp says (both are read only, so a worker thread may run this on a
 * copy of the parameters and a referenced key set), and to no end-to-end
 * windows when asked and nowin_ok (the CREATE2 came over a channel with
 * channel_path_backpressure()); agreed, it replaces congestion control. Writes the reply (CREATED2 HDATA or the
 * CREATED_FAST body), the key material and what was negotiated (*params;
 * the caller applies it to the new circuit with or_circuit_set_cc()).
 * Returns 0, or -1 with *why. */
int onion_server_handshake(const onion_keys_t *keys, const cc_params_t *ccp,
                           int nowin_ok, uint16_t htype,
                           const uint8_t *hdata, size_t hlen, uint8_t *reply,
                           size_t reply_cap, size_t *reply_len,
                           uint8_t *keys_out, size_t keys_len,
                           onion_circ_params_t *params, const char **why);
#endif
