/* SPDX-License-Identifier: BSD-3-Clause */
/* relay_keys.c -- the reference-counted onion key sets that CREATE2
 * handshakes read (relay_keys.h explains why they exist), and freeing
 * what a relay_keys_t holds, for whoever made it.
 *
 * A set is written only by onion_keys_new(), before anyone else can see
 * it, and is read-only afterwards, so workers read it without a lock.
 * Only the count changes after that; it is updated with atomic
 * operations (acquire/release on the last drop, so that the freeing
 * thread sees every other thread's reads finished), which lets a
 * reference be dropped on any thread although today all of them are
 * dropped on the event loop.
 */
#include "core/or/relay_keys.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

onion_keys_t *
onion_keys_new(const uint8_t rsa_id_digest[20],
               const uint8_t ed_id[ED25519_PUBKEY_LEN],
               const curve25519_keypair_t *current,
               const curve25519_keypair_t *previous)
{
  onion_keys_t *k = pc_zalloc(sizeof(*k));
  k->refs = 1;
  memcpy(k->rsa_id_digest, rsa_id_digest, sizeof(k->rsa_id_digest));
  memcpy(k->ed_id, ed_id, sizeof(k->ed_id));
  k->ntor[0] = *current;
  k->n_ntor = 1;
  if (previous) {
    k->ntor[1] = *previous;
    k->n_ntor = 2;
  }
  return k;
}

onion_keys_t *
onion_keys_ref(onion_keys_t *k)
{
  __atomic_add_fetch(&k->refs, 1, __ATOMIC_RELAXED);
  return k;
}

void
onion_keys_unref_(onion_keys_t *k)
{
  if (!k)
    return;
  if (__atomic_sub_fetch(&k->refs, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  pc_memwipe(k, sizeof(*k));
  free(k);
}

void
relay_keys_update_onion(relay_keys_t *k)
{
  onion_keys_t *old = k->onion;
  k->onion = onion_keys_new(k->rsa_id_digest, k->ed_identity.pub,
                            &k->ntor_current,
                            k->has_ntor_previous ? &k->ntor_previous : NULL);
  onion_keys_unref(old);
}

void
relay_keys_clear_onion(relay_keys_t *k)
{
  onion_keys_unref(k->onion);
}

void
relay_keys_clear(relay_keys_t *k)
{
  relay_keys_clear_onion(k);
  crypt_rsa_free(k->rsa_identity);
  crypt_rsa_free(k->tap_onion_key);
  free(k->rsa_id_cert);
  free(k->rsa_ed_crosscert);
  free(k->ed_signing_cert);
  tls_context_free(k->tls);
  free(k->tls_link_cert);
  free(k->ed_auth_cert);
  pc_memwipe(k, sizeof(*k));
}
