/* SPDX-License-Identifier: BSD-3-Clause */
/* onion_ntor_v3.h -- the ntor v3 handshake, CREATE2 handshake type 3
 * (proposal 332, instantiation A.1: PROTOID "ntor3-curve25519-sha3_256-1",
 * SHA3-256, SHAKE-256, AES-256-CTR, X25519), and the extension-list encoding
 * carried in its messages.
 *
 * Client -> relay:  ID[32] | KEYID = B[32] | X[32] | ENC(CM) | MAC[32]
 * Relay -> client:  Y[32] | AUTH[32] | ENC(SM)
 *
 * ID is the relay's ed25519 identity, B its ntor onion key. CM and SM are
 * messages carried inside the handshake, encrypted and authenticated (CM
 * without forward secrecy). Both sides also mix in a verification string
 * VER that must be equal on both ends; for circuit extension tor uses
 * ONION_NTOR3_CIRC_VERIFICATION ("circuit extend", no NUL) -- a value that
 * tor-spec/proposal 332 do not state, only the implementations.
 *
 * The relay side is two steps, because the reply depends on what the client
 * asked for: onion_ntor3_server_begin() authenticates the onionskin and
 * decrypts CM (read it with onion_ntor3_server_client_msg()); the caller
 * composes SM and calls onion_ntor3_server_reply(), which builds the reply
 * and the key material. The key material is the KDF_final stream after the
 * 32-byte message key: Df[20] | Db[20] | Kf[16] | Kb[16] | KH[20] | ...
 *
 * Failures (-1): short input, wrong ID, unknown KEYID, bad MAC or AUTH
 * (compared in constant time), all-zero X25519 output, output buffer too
 * small. States hold secrets and are wiped on free.
 *
 * Messages in circuit handshakes are extension lists:
 *   N_EXTENSIONS [1] then N times { TYPE [1] | LEN [1] | BODY [LEN] }
 * parsed strictly: the list must fill the message exactly.
 */
#ifndef PCTOR_CORE_CRYPTO_ONION_NTOR_V3_H
#define PCTOR_CORE_CRYPTO_ONION_NTOR_V3_H
#include <stddef.h>
#include <stdint.h>

#include "lib/crypt/curve25519.h"

#define ONION_NTOR3_HTYPE 3
#define ONION_NTOR3_ID_LEN 32
#define ONION_NTOR3_MAC_LEN 32
/* Client onionskin = CLIENT_OVERHEAD + len(CM); reply = SERVER_OVERHEAD +
 * len(SM). */
#define ONION_NTOR3_CLIENT_OVERHEAD \
  (ONION_NTOR3_ID_LEN + 2 * CURVE25519_KEY_LEN + ONION_NTOR3_MAC_LEN)
#define ONION_NTOR3_SERVER_OVERHEAD (CURVE25519_KEY_LEN + 32)
/* Upper bound on the key material one call derives. */
#define ONION_NTOR3_KEYS_MAX 1024
/* Verification string for CREATE2/EXTEND2 circuit handshakes. */
#define ONION_NTOR3_CIRC_VERIFICATION "circuit extend"
#define ONION_NTOR3_CIRC_VERIFICATION_LEN \
  (sizeof(ONION_NTOR3_CIRC_VERIFICATION) - 1)

typedef struct onion_ntor3_client_t onion_ntor3_client_t;
typedef struct onion_ntor3_server_t onion_ntor3_server_t;

/* Client: start a handshake with relay (id, onion_key), sending msg.
 * Writes the onionskin (CLIENT_OVERHEAD + msg_len bytes; out_cap must be at
 * least that) and *out_len, and sets *state_out. Returns 0 or -1. */
int onion_ntor3_client_create(const uint8_t id[ONION_NTOR3_ID_LEN],
                              const uint8_t onion_key[CURVE25519_KEY_LEN],
                              const uint8_t *ver, size_t ver_len,
                              const uint8_t *msg, size_t msg_len,
                              uint8_t *out, size_t out_cap, size_t *out_len,
                              onion_ntor3_client_t **state_out);
/* Client: verify the relay's reply, decrypt its message into msg_out
 * (reply_len - SERVER_OVERHEAD bytes; msg_cap must be at least that) and
 * derive keys_len (1..KEYS_MAX) bytes of key material. Returns 0, or -1
 * with nothing usable written. */
int onion_ntor3_client_finish(const onion_ntor3_client_t *st,
                              const uint8_t *reply, size_t reply_len,
                              uint8_t *msg_out, size_t msg_cap,
                              size_t *msg_len_out, uint8_t *keys_out,
                              size_t keys_len);
void onion_ntor3_client_free_(onion_ntor3_client_t *st);
#define onion_ntor3_client_free(st) \
  do { onion_ntor3_client_free_(st); (st) = NULL; } while (0)

/* Relay, step 1: check and decrypt a client onionskin addressed to my_id,
 * using whichever of keys (current, previous; NULL entries skipped) matches
 * KEYID. On success sets *state_out and returns 0; -1 otherwise. */
int onion_ntor3_server_begin(const uint8_t *onionskin, size_t len,
                             const uint8_t my_id[ONION_NTOR3_ID_LEN],
                             const curve25519_keypair_t *const *keys,
                             size_t n_keys, const uint8_t *ver,
                             size_t ver_len, onion_ntor3_server_t **state_out);
/* The client's decrypted message (owned by st; *len_out set). */
const uint8_t *onion_ntor3_server_client_msg(const onion_ntor3_server_t *st,
                                             size_t *len_out);
/* Relay, step 2: reply with msg. Writes SERVER_OVERHEAD + msg_len bytes to
 * out (out_cap must be at least that), *out_len, and keys_len bytes of key
 * material. Call at most once per state. Returns 0 or -1. */
int onion_ntor3_server_reply(onion_ntor3_server_t *st, const uint8_t *msg,
                             size_t msg_len, uint8_t *out, size_t out_cap,
                             size_t *out_len, uint8_t *keys_out,
                             size_t keys_len);
void onion_ntor3_server_free_(onion_ntor3_server_t *st);
#define onion_ntor3_server_free(st) \
  do { onion_ntor3_server_free_(st); (st) = NULL; } while (0)

/* Deterministic variants for known-answer tests: the ephemeral keypair
 * (x,X) resp. (y,Y) is given instead of generated. */
int onion_ntor3_client_create_with_key_(
    const uint8_t id[ONION_NTOR3_ID_LEN],
    const uint8_t onion_key[CURVE25519_KEY_LEN],
    const uint8_t *ver, size_t ver_len, const uint8_t *msg, size_t msg_len,
    const curve25519_keypair_t *eph, uint8_t *out, size_t out_cap,
    size_t *out_len, onion_ntor3_client_t **state_out);
int onion_ntor3_server_reply_with_key_(onion_ntor3_server_t *st,
                                       const uint8_t *msg, size_t msg_len,
                                       const curve25519_keypair_t *eph,
                                       uint8_t *out, size_t out_cap,
                                       size_t *out_len, uint8_t *keys_out,
                                       size_t keys_len);

/* ---- Extension lists ---- */
#define ONION_NTOR3_MAX_EXTS 255
#define ONION_NTOR3_EXT_MAX_BODY 255

typedef struct {
  uint8_t type;
  size_t len;          /* <= ONION_NTOR3_EXT_MAX_BODY */
  const uint8_t *body; /* len bytes; points into the parsed message */
} onion_ntor3_ext_t;

/* Encoded size of exts[0..n), or 0 if n or a body length is too big. */
size_t onion_ntor3_exts_encoded_len(const onion_ntor3_ext_t *exts, size_t n);
/* Encode exts[0..n) into out (cap bytes); sets *len_out. Returns 0, or -1
 * if n > 255, a body is longer than 255 bytes, or out is too small. */
int onion_ntor3_exts_encode(const onion_ntor3_ext_t *exts, size_t n,
                            uint8_t *out, size_t cap, size_t *len_out);
/* Parse msg[0..len) into exts_out (room for max_exts entries; bodies point
 * into msg). Returns 0 and sets *n_out; -1 if the message is empty,
 * truncated, has trailing bytes, or holds more than max_exts entries. */
int onion_ntor3_exts_parse(const uint8_t *msg, size_t len,
                           onion_ntor3_ext_t *exts_out, size_t max_exts,
                           size_t *n_out);
/* First extension of the given type (later duplicates are to be ignored,
 * proposal 332 A.2), or NULL. */
const onion_ntor3_ext_t *onion_ntor3_exts_find(const onion_ntor3_ext_t *exts,
                                               size_t n, uint8_t type);
#endif
