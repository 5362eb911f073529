/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture_dgram.c -- a datagram link layer for unit tests
 * (fixture_dgram.h); the keys come from fixture_relay's helper. */
#include "fixture_dgram.h"

#include <check.h>

#include "fixture_relay.h"

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
