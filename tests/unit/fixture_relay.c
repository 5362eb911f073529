/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_relay.c -- the loopback relay with keys on disk (see
 * fixture_relay.h; the relay itself is fixture_core.c's).  Everything
 * fails the running Check test on error: a fixture that cannot be built
 * is a test failure, not a skip. */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture_relay.h"

#include "lib/crypt/crypt_init.h"

static int
rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

void
fixture_rmtree(const char *dir)
{
  nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

relay_keys_t *
fixture_keys_new(char *dir, const char *tag)
{
  ck_assert_int_eq(crypt_global_init(), 0);
  int n = snprintf(dir, 64, "/tmp/pctor-check-%s.XXXXXX", tag);
  ck_assert(n > 0 && n < 64);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char *err = NULL;
  relay_keys_t *k = router_keys_load_or_create(dir, NULL, time(NULL), &err);
  ck_assert_msg(k != NULL, "keys: %s", err ? err : "?");
  return k;
}

void
fixture_relay_start(fixture_relay_t *f, const char *tag,
                    const char *verbose_env, const char *verbose_level)
{
  memset(f, 0, sizeof(*f));
  relay_keys_t *keys = fixture_keys_new(f->dir, tag);
  fixture_relay_begin(f, keys, verbose_env, verbose_level);
}

void
fixture_relay_free(fixture_relay_t *f)
{
  fixture_relay_end(f);
  router_keys_free(f->keys);
  fixture_rmtree(f->dir);
}
