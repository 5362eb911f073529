/* SPDX-License-Identifier: BSD-3-Clause */
/* crypt_init.c -- OpenSSL start-up and the shared algorithm table.
 *
 * Design: OpenSSL 3 resolves algorithms through providers; an implicit
 * fetch ("EVP_sha1()" style) repeats that lookup on every init call. We
 * fetch each algorithm once into a table (crypt_algs_t, see
 * crypt_internal.h). The table is filled exactly once through
 * pthread_once, either from crypt_global_init() at start-up or lazily by
 * the first user (unit tests, tools), so no caller can forget the init.
 * crypt_global_init() reports failure to its caller; lazy users abort,
 * because a libcrypto without SHA-1 or AES cannot run a relay.
 */
#include <pthread.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "lib/crypt/crypt_init.h"
#include "lib/crypt/crypt_internal.h"
#include "lib/log/log.h"

static crypt_algs_t algs;
static int algs_ok;
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;

void
crypt_log_openssl_errors_(const char *what)
{
  unsigned long e;
  int any = 0;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    log_warn("%s: OpenSSL: %s", what, buf);
    any = 1;
  }
  if (!any)
    log_warn("%s: OpenSSL reported no error details", what);
}

void
crypt_fatal_(const char *what)
{
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    log_err("%s: OpenSSL: %s", what, buf);
  }
  log_err("%s: unrecoverable crypto failure, aborting", what);
  abort();
}

static EVP_MD *
fetch_md(const char *name)
{
  EVP_MD *md = EVP_MD_fetch(NULL, name, NULL);
  if (!md)
    crypt_log_openssl_errors_(name);
  return md;
}

static EVP_CIPHER *
fetch_cipher(const char *name)
{
  EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, NULL);
  if (!c)
    crypt_log_openssl_errors_(name);
  return c;
}

static void
algs_setup(void)
{
  if (OPENSSL_version_major() < 3) {
    log_err("OpenSSL %s is too old; pctor needs OpenSSL 3.0 or later",
            OpenSSL_version(OPENSSL_VERSION));
    return;
  }
  if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL)) {
    crypt_log_openssl_errors_("OPENSSL_init_crypto");
    return;
  }
  algs.sha3_256 = fetch_md("SHA3-256");
  algs.shake256 = fetch_md("SHAKE256");
  algs.aes128_ctr = fetch_cipher("AES-128-CTR");
  algs.aes256_ctr = fetch_cipher("AES-256-CTR");
  algs_ok = algs.sha3_256 && algs.shake256 && algs.aes128_ctr &&
            algs.aes256_ctr;
}

int
crypt_global_init(void)
{
  pthread_once(&algs_once, algs_setup);
  if (!algs_ok) {
    log_err("OpenSSL (%s) lacks an algorithm pctor needs",
            OpenSSL_version(OPENSSL_VERSION));
    return -1;
  }
  return 0;
}

const crypt_algs_t *
crypt_algs_(void)
{
  pthread_once(&algs_once, algs_setup);
  if (!algs_ok)
    crypt_fatal_("crypto library start-up");
  return &algs;
}

const char *
crypt_library_version(void)
{
  return OpenSSL_version(OPENSSL_VERSION);
}
