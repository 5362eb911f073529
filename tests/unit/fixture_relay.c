/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_relay.c -- the loopback relay the unit tests share (see
 * fixture_relay.h).  Everything fails the running Check test on error:
 * a fixture that cannot be built is a test failure, not a skip. */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "lib/crypt/crypt_init.h"
#include "lib/log/log.h"

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

static void
on_timeout(void *arg)
{
  fixture_relay_t *f = arg;
  f->timed_out = 1;
  evloop_exit(f->loop);
}

void
fixture_relay_start(fixture_relay_t *f, const char *tag,
                    const char *verbose_env, const char *verbose_level)
{
  memset(f, 0, sizeof(*f));
  f->keys = fixture_keys_new(f->dir, tag);
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

void
fixture_relay_free(fixture_relay_t *f)
{
  packed_cell_freelist_clear();
  evloop_timer_free(f->timeout);
  evloop_free(f->loop);
  router_keys_free(f->keys);
  fixture_rmtree(f->dir);
  f->timeout = NULL;
  f->loop = NULL;
  f->keys = NULL;
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
