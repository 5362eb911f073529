/* onion.h -- the circuit-creation handshakes as the circuit layer uses
 * them: one entry point per side, dispatching on the handshake type
 * (CREATE_FAST, ntor, ntor v3) and always producing the 72 bytes of relay
 * key material that relay_crypto_new() takes. */
#ifndef PCTOR_CORE_OR_ONION_H
#define PCTOR_CORE_OR_ONION_H
#include <stddef.h>
#include <stdint.h>
#include "core/or/circuit.h"
#include "core/or/relay_keys.h"

/* Client: make the handshake data (CREATE2 HDATA, or the CREATE_FAST X) for
 * target into hdata (capacity cap), *hlen set; *state must be passed to
 * onion_client_finish() or onion_client_free(). Returns 0 or -1. */
int onion_client_start(const extend_target_t *target, uint8_t *hdata,
                       size_t cap, size_t *hlen, void **state);
int onion_client_finish(uint16_t htype, void *state, const uint8_t *reply,
                        size_t reply_len, uint8_t *keys, size_t keys_len);
void onion_client_free(uint16_t htype, void *state);

/* Relay: answer a CREATE2 (htype/hdata) or CREATE_FAST (htype
 * CIRC_HTYPE_FAST) with our keys. Writes the reply (CREATED2 HDATA or the
 * CREATED_FAST body) and the key material. Returns 0, or -1 with *why. */
int onion_server_handshake(const relay_keys_t *keys, uint16_t htype,
                           const uint8_t *hdata, size_t hlen, uint8_t *reply,
                           size_t reply_cap, size_t *reply_len,
                           uint8_t *keys_out, size_t keys_len,
                           const char **why);
#endif
