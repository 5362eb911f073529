/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_core.c -- the loopback relay the unit tests share and relay
 * keys made in memory (see fixture_core.h). Every step asserts: a fixture
 * that cannot be built is a test failure, not a skip. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_core.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/relay.h"
#include "core/proto/torcert.h"
#include "lib/crypt/crypt_init.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/tls/x509.h"

#define FIXTURE_DAY ((time_t)86400)
#define FIXTURE_DAYS 30

/* The encoding of a new Ed25519 certificate of type for key, signed (and,
 * as CERTS cells want, named) by signer. */
static uint8_t *
signed_by(const ed25519_keypair_t *signer, uint8_t type, uint8_t key_type,
          const uint8_t key[TORCERT_KEY_LEN], time_t until, size_t *len)
{
  torcert_t *c = torcert_create(signer, type, key_type, key, until, 1);
  ck_assert_ptr_nonnull(c);
  uint8_t *enc = pc_memdup(c->encoded, c->encoded_len);
  *len = c->encoded_len;
  torcert_free(c);
  return enc;
}

relay_keys_t *
fixture_core_keys_new(time_t now)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  relay_keys_t *k = pc_zalloc(sizeof(*k));
  time_t until = now + FIXTURE_DAYS * FIXTURE_DAY;

  /* The legacy RSA identity, its X.509 self-signature and its word for
   * the Ed25519 identity. */
  ed25519_keypair_generate(&k->ed_identity);
  k->rsa_identity = crypt_rsa_generate(RSA1024_BITS);
  ck_assert_int_eq(crypt_rsa_fingerprint(k->rsa_identity, k->rsa_id_digest),
                   0);
  ck_assert_int_eq(x509_make_self_signed(k->rsa_identity,
                                         "www.pctorcorefixture.net",
                                         now - FIXTURE_DAY, until,
                                         &k->rsa_id_cert, &k->rsa_id_cert_len),
                   0);
  ck_assert_int_eq(rsa_ed_crosscert_create(k->ed_identity.pub,
                                           k->rsa_identity, until,
                                           &k->rsa_ed_crosscert,
                                           &k->rsa_ed_crosscert_len),
                   0);

  /* identity -> signing key -> TLS certificate and link auth key. */
  ed25519_keypair_generate(&k->ed_signing);
  k->ed_signing_cert = signed_by(&k->ed_identity, TORCERT_TYPE_ID_SIGNING,
                                 TORCERT_KEY_ED25519, k->ed_signing.pub, until,
                                 &k->ed_signing_cert_len);
  k->ed_signing_expires = until;
  k->tls = tls_context_new(FIXTURE_DAYS);
  ck_assert_ptr_nonnull(k->tls);
  size_t der_len = 0;
  const uint8_t *der = tls_context_cert_der(k->tls, &der_len);
  ck_assert(der != NULL && der_len > 0);
  uint8_t der_digest[DIGEST_SHA256_LEN];
  crypt_sha256(der_digest, der, der_len);
  k->tls_link_cert = signed_by(&k->ed_signing, TORCERT_TYPE_SIGNING_LINK,
                               TORCERT_KEY_SHA256_X509, der_digest, until,
                               &k->tls_link_cert_len);
  ed25519_keypair_generate(&k->ed_link_auth);
  k->ed_auth_cert = signed_by(&k->ed_signing, TORCERT_TYPE_SIGNING_AUTH,
                              TORCERT_KEY_ED25519, k->ed_link_auth.pub, until,
                              &k->ed_auth_cert_len);

  /* The ntor key CREATE2 handshakes answer with (no previous one). */
  curve25519_keypair_generate(&k->ntor_current);
  relay_keys_update_onion(k);
  ck_assert_ptr_nonnull(k->onion);
  return k;
}

void
fixture_core_keys_free_(relay_keys_t *k)
{
  if (!k)
    return;
  relay_keys_clear(k);
  free(k);
}

static void
on_timeout(void *arg)
{
  fixture_relay_t *f = arg;
  f->timed_out = 1;
  evloop_exit(f->loop);
}

void
fixture_relay_begin(fixture_relay_t *f, relay_keys_t *keys,
                    const char *verbose_env, const char *verbose_level)
{
  f->keys = keys;
  f->loop = evloop_new();
  channels_init(f->loop, f->keys);
  circuits_init();
  pc_addr_t any;
  ck_assert_int_eq(pc_addr_parse(&any, "127.0.0.1:0"), 0);
  const char *why = NULL;
  ck_assert_msg(channel_listen(&any, &f->orport, &why) == 0, "listen: %s",
                why ? why : "?");
  ck_assert_int_ne(f->orport.port, 0);
  f->timeout = evloop_timer_new(f->loop, on_timeout, f);
  if (verbose_env && getenv(verbose_env)) {
    char dest[64];
    snprintf(dest, sizeof(dest), "%s stderr",
             verbose_level ? verbose_level : "info");
    char *e = NULL;
    log_parse_destination(dest, &e);
    free(e);
  }
}

void
fixture_relay_end(fixture_relay_t *f)
{
  packed_cell_freelist_clear();
  evloop_timer_free(f->timeout);
  evloop_free(f->loop);
  f->timeout = NULL;
  f->loop = NULL;
}

void
fixture_core_relay_start(fixture_relay_t *f, const char *verbose_env,
                         const char *verbose_level)
{
  memset(f, 0, sizeof(*f));
  fixture_relay_begin(f, fixture_core_keys_new(time(NULL)), verbose_env,
                      verbose_level);
}

void
fixture_core_relay_free(fixture_relay_t *f)
{
  fixture_relay_end(f);
  fixture_core_keys_free(f->keys);
}

void
fixture_relay_shutdown(void)
{
  channels_shutdown();
  circuits_shutdown();
  relay_clear_handlers();
}

void
fixture_assert_no_circuits(void)
{
  ck_assert_uint_eq(circuits_count(CIRC_KIND_OR), 0);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_ORIGIN), 0);
}

int
fixture_relay_run_for(fixture_relay_t *f, uint64_t usec)
{
  f->timed_out = 0;
  evloop_timer_schedule(f->timeout, usec);
  evloop_run(f->loop);
  evloop_timer_cancel(f->timeout);
  return f->timed_out;
}

extend_target_t
fixture_relay_target(const fixture_relay_t *f, uint16_t handshake)
{
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  t.addr = f->orport;
  memcpy(t.rsa_id, f->keys->rsa_id_digest, 20);
  memcpy(t.ed_id, f->keys->ed_identity.pub, 32);
  t.has_ed_id = 1;
  memcpy(t.ntor_key, f->keys->ntor_current.pub, 32);
  t.handshake = handshake;
  return t;
}
