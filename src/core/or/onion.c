/* SPDX-License-Identifier: BSD-3-Clause */
/* onion.c -- dispatch to the CREATE_FAST / ntor / ntor v3 implementations
 * in core/crypto (see onion.h).
 *
 * ntor v3 carries a message each way, an extension list (proposal 332
 * A.2). The client's holds the congestion-control request (type 1, empty)
 * when the target asks for it, else nothing. The relay answers a request
 * with type 2 carrying its cc_sendme_inc when its parameters enable
 * congestion control (cc_alg != 0), and with an empty list otherwise,
 * which tells the client that the circuit keeps the fixed windows.
 * Unknown extensions are ignored; a malformed list fails the handshake.
 * The client refuses a response it did not ask for and an increment more
 * than 1 away from its own cc_sendme_inc, as tor does.
 *
 * The no-windows extension (onion.h) rides in the same lists; asked for
 * and allowed, its answer replaces the congestion-control one, so a client
 * that asks for both learns which one the circuit runs.
 */
#include "core/or/onion.h"
#include "core/or/congestion_control.h"
#include "core/crypto/onion_fast.h"
#include "core/crypto/onion_ntor.h"
#include "core/crypto/onion_ntor_v3.h"
#include "core/crypto/relay_crypto.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#include <string.h>

int
onion_ext_build_request(int cc, int nowin, uint8_t *out, size_t cap)
{
  size_t n = 1 + 2 * (size_t)(!!cc + !!nowin);
  if (cap < n)
    return -1;
  size_t off = 1;
  out[0] = (uint8_t)(!!cc + !!nowin);
  if (cc) {
    out[off++] = CC_EXT_TYPE_REQUEST;
    out[off++] = 0;
  }
  if (nowin) {
    out[off++] = ONION_EXT_NOWIN_REQUEST;
    out[off++] = 0;
  }
  return (int)n;
}

typedef struct {
  uint8_t type;
  int found, bad;
} nowin_visit_t;

static int
visit_nowin(uint8_t type, const uint8_t *body, uint8_t blen, void *arg)
{
  nowin_visit_t *v = arg;
  (void)body;
  if (type != v->type || v->found)
    return 0; /* others, and later copies, are ignored */
  v->found = 1;
  v->bad = blen != 0;
  return 0;
}

int
onion_ext_find_nowin(const uint8_t *msg, size_t len, uint8_t type,
                     const char **why)
{
  nowin_visit_t v = {type, 0, 0};
  if (len == 0)
    return 0;
  if (cc_ext_walk(msg, len, visit_nowin, &v) < 0) {
    *why = "malformed ntor v3 extension list";
    return -1;
  }
  if (v.bad) {
    *why = "no-windows extension with a body";
    return -1;
  }
  return v.found;
}

int
onion_client_start(const extend_target_t *t, uint8_t *hdata, size_t cap,
                   size_t *hlen, void **state)
{
  *state = NULL;
  switch (t->handshake) {
  case CIRC_HTYPE_FAST:
    if (cap < ONION_FAST_ONIONSKIN_LEN)
      return -1;
    *state = onion_fast_client_create(hdata);
    *hlen = ONION_FAST_ONIONSKIN_LEN;
    return 0;
  case HTYPE_NTOR:
    if (cap < ONION_NTOR_ONIONSKIN_LEN)
      return -1;
    *state = onion_ntor_client_create(t->rsa_id, t->ntor_key, hdata);
    *hlen = ONION_NTOR_ONIONSKIN_LEN;
    return *state ? 0 : -1;
  case HTYPE_NTOR_V3: {
    if (!t->has_ed_id)
      return -1; /* ntor v3 is keyed by the Ed25519 identity */
    onion_ntor3_client_t *st = NULL;
    uint8_t cm[8];
    int cmlen = onion_ext_build_request(t->cc_request, t->nowin_request,
                                        cm, sizeof(cm));
    if (cmlen < 0 ||
        onion_ntor3_client_create(
            t->ed_id, t->ntor_key,
            (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION,
            ONION_NTOR3_CIRC_VERIFICATION_LEN, cm, (size_t)cmlen, hdata, cap,
            hlen, &st) < 0)
      return -1;
    *state = st;
    return 0;
  }
  default:
    return -1;
  }
}

int
onion_client_finish(uint16_t htype, void *state, const uint8_t *reply,
                    size_t reply_len, uint8_t *keys, size_t keys_len,
                    int requested, onion_circ_params_t *params)
{
  memset(params, 0, sizeof(*params));
  switch (htype) {
  case CIRC_HTYPE_FAST:
    if (reply_len < ONION_FAST_REPLY_LEN)
      return -1;
    return onion_fast_client_finish(state, reply, keys, keys_len);
  case HTYPE_NTOR:
    if (reply_len < ONION_NTOR_REPLY_LEN)
      return -1;
    return onion_ntor_client_finish(state, reply, keys, keys_len);
  case HTYPE_NTOR_V3: {
    uint8_t msg[CREATED2_HDATA_MAX];
    size_t msglen = 0;
    if (onion_ntor3_client_finish(state, reply, reply_len, msg, sizeof(msg),
                                  &msglen, keys, keys_len) < 0)
      return -1;
    const char *why = NULL;
    uint8_t inc = 0;
    int r = cc_ext_parse_response(msg, msglen, requested & ONION_REQ_CC,
                                  cc_params_current()->sendme_inc, &inc,
                                  &why);
    int nw = r < 0 ? 0
                   : onion_ext_find_nowin(msg, msglen,
                                          ONION_EXT_NOWIN_RESPONSE, &why);
    if (nw > 0 && !(requested & ONION_REQ_NOWIN)) {
      why = "no-windows response we did not ask for";
      nw = -1;
    } else if (nw > 0 && r > 0) {
      why = "both congestion control and no windows in the reply";
      nw = -1;
    }
    if (r < 0 || nw < 0) {
      log_info("Refusing the ntor v3 reply: %s", why);
      pc_memwipe(keys, keys_len);
      return -1;
    }
    params->cc_enabled = r;
    params->sendme_inc = inc;
    params->nowin = nw;
    return 0;
  }
  default:
    return -1;
  }
}

void
onion_client_free(uint16_t htype, void *state)
{
  if (!state)
    return;
  switch (htype) {
  case CIRC_HTYPE_FAST: {
    onion_fast_client_t *st = state;
    onion_fast_client_free(st);
    break;
  }
  case HTYPE_NTOR: {
    onion_ntor_client_t *st = state;
    onion_ntor_client_free(st);
    break;
  }
  case HTYPE_NTOR_V3: {
    onion_ntor3_client_t *st = state;
    onion_ntor3_client_free(st);
    break;
  }
  default:
    break;
  }
}

int
onion_server_handshake(const onion_keys_t *k, const cc_params_t *ccp,
                       int nowin_ok, uint16_t htype,
                       const uint8_t *hdata, size_t hlen, uint8_t *reply,
                       size_t reply_cap, size_t *reply_len, uint8_t *keys_out,
                       size_t keys_len, onion_circ_params_t *params,
                       const char **why)
{
  memset(params, 0, sizeof(*params));
  const curve25519_keypair_t *ntor_keys[2] = {&k->ntor[0], &k->ntor[1]};
  size_t n_keys = k->n_ntor;
  switch (htype) {
  case CIRC_HTYPE_FAST:
    if (hlen < ONION_FAST_ONIONSKIN_LEN || reply_cap < ONION_FAST_REPLY_LEN)
      goto bad_len;
    if (onion_fast_server_handshake(hdata, reply, keys_out, keys_len) < 0) {
      *why = "CREATE_FAST handshake failed";
      return -1;
    }
    *reply_len = ONION_FAST_REPLY_LEN;
    return 0;
  case HTYPE_NTOR:
    if (hlen != ONION_NTOR_ONIONSKIN_LEN || reply_cap < ONION_NTOR_REPLY_LEN)
      goto bad_len;
    if (onion_ntor_server_handshake(hdata, k->rsa_id_digest, ntor_keys,
                                    n_keys, reply, keys_out, keys_len) < 0) {
      *why = "ntor handshake failed (unknown onion key or bad input)";
      return -1;
    }
    *reply_len = ONION_NTOR_REPLY_LEN;
    return 0;
  case HTYPE_NTOR_V3: {
    onion_ntor3_server_t *st = NULL;
    if (onion_ntor3_server_begin(
            hdata, hlen, k->ed_id, ntor_keys, n_keys,
            (const uint8_t *)ONION_NTOR3_CIRC_VERIFICATION,
            ONION_NTOR3_CIRC_VERIFICATION_LEN, &st) < 0) {
      *why = "ntor v3 handshake failed (unknown onion key or bad input)";
      return -1;
    }
    size_t cmlen = 0;
    const uint8_t *cm = onion_ntor3_server_client_msg(st, &cmlen);
    int req = cc_ext_parse_request(cm, cmlen);
    const char *nwhy = NULL;
    int nw = req < 0 ? 0
                     : onion_ext_find_nowin(cm, cmlen,
                                            ONION_EXT_NOWIN_REQUEST, &nwhy);
    if (req < 0 || nw < 0) {
      onion_ntor3_server_free(st);
      *why = "malformed ntor v3 client message";
      return -1;
    }
    params->nowin = nw && nowin_ok;
    params->cc_enabled =
        !params->nowin && req && ccp->alg != CC_ALG_SENDME;
    params->sendme_inc = (uint8_t)ccp->sendme_inc;
    uint8_t sm[8];
    int smlen = 3;
    if (params->nowin) {
      sm[0] = 1;
      sm[1] = ONION_EXT_NOWIN_RESPONSE;
      sm[2] = 0;
    } else {
      smlen = cc_ext_build_response(params->cc_enabled, params->sendme_inc,
                                    sm, sizeof(sm));
    }
    int r = smlen < 0 ? -1
                      : onion_ntor3_server_reply(st, sm, (size_t)smlen, reply,
                                                 reply_cap, reply_len,
                                                 keys_out, keys_len);
    onion_ntor3_server_free(st);
    if (r < 0) {
      *why = "ntor v3 reply failed";
      return -1;
    }
    return 0;
  }
  default:
    *why = "unsupported handshake type";
    return -1;
  }
bad_len:
  *why = "handshake data has the wrong length";
  return -1;
}
