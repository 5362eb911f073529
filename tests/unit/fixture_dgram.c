/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_dgram.c -- a datagram link layer for unit tests
 * (fixture_dgram.h); the keys come from fixture_relay's helper. */
#include "fixture_dgram.h"

#include <check.h>
#include <string.h>

#include "fixture_relay.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "lib/crypt/crypt_init.h"

void
fixture_dgram_start(fixture_dgram_t *f, evloop_t *loop, const char *tag,
                    unsigned handshake_timeout_s)
{
  char *err = NULL;
  f->keys = fixture_keys_new(f->dir, tag);
  dgram_config_t cfg;
  dgram_config_init(&cfg);
  ck_assert_int_eq(pc_addr_parse(&cfg.bind, "127.0.0.1:0"), 0);
  if (handshake_timeout_s)
    cfg.handshake_timeout_s = handshake_timeout_s;
  f->d = dgram_new(loop, f->keys, &cfg, &err);
  ck_assert_msg(f->d != NULL, "dgram: %s", err ? err : "?");
  ck_assert_uint_ne(dgram_bound_addr(f->d)->port, 0);
}

void
fixture_dgram_free(fixture_dgram_t *f)
{
  dgram_free(f->d);
  router_keys_free(f->keys);
  f->keys = NULL;
  fixture_rmtree(f->dir);
}

static void
exit_loop(void *arg)
{
  evloop_exit(arg);
}

void
fixture_dgram_pair_start(fixture_dgram_pair_t *p, const char *tag,
                         unsigned handshake_timeout_s, int with_circuits)
{
  memset(p, 0, sizeof(*p));
  ck_assert_int_eq(crypt_global_init(), 0);
  p->loop = evloop_new();
  p->timeout = evloop_timer_new(p->loop, exit_loop, p->loop);
  p->with_circuits = with_circuits;
  if (with_circuits) {
    channels_init(p->loop, NULL);
    channels_set_socketless_for_testing(1);
    circuits_init();
  }
  for (int i = 0; i < 2; i++)
    fixture_dgram_start(&p->fx[i], p->loop, tag, handshake_timeout_s);
}

void
fixture_dgram_pair_free(fixture_dgram_pair_t *p)
{
  if (p->with_circuits) {
    channels_shutdown();
    circuits_shutdown();
  }
  for (int i = 0; i < 2; i++)
    fixture_dgram_free(&p->fx[i]);
  evloop_timer_free(p->timeout);
  evloop_free(p->loop);
}
