/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dir_tunnel.c -- directory requests over BEGIN_DIR
 * (feature/dir/dir_tunnel) against pctor's own directory cache
 * (feature/dircache), in one process: a relay listening on 127.0.0.1 and
 * one-hop CREATE_FAST circuits to it over real TCP+TLS, as in
 * check_stream.c.
 *
 * What is checked:
 *  - a 1 MB document (pseudo-random text that compresses only to ~3/4,
 *    so the answer is well over 1000 cells): it arrives whole and equal,
 *    which needs our circuit SENDMEs (authenticated, with the right
 *    digest, else the relay closes the circuit) and stream SENDMEs (else
 *    the relay stalls at 500 cells and the request times out); zstd for
 *    descriptors, lzma for a consensus, as negotiated;
 *  - a missing document: the relay's 404 with its reason;
 *  - an answer over the caller's limit: refused with a clear error;
 *  - a request cancelled at once: no callback, no leak (ASan), its
 *    circuit closed;
 *  - nothing listening: an error through the callback, never from
 *    inside dir_tunnel_get().
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture_relay.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/relay.h"
#include "feature/dir/dir_tunnel.h"
#include "feature/dircache/dircache.h"
#include "feature/relay/router_keys.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"

Suite *suite_dir_tunnel(void);

#define DOC_LEN (1000 * 1000)

static struct {
  fixture_relay_t r; /* dir, keys, loop, timeout, orport */
  char *doc;
  /* the callback */
  int done, status;
  uint8_t *body;
  size_t len;
  char err[256];
  int inside_get; /* set while dir_tunnel_get() runs */
  int cb_inside_get;
} T;

static void
run_loop_for(uint64_t usec)
{
  fixture_relay_run_for(&T.r, usec);
}

static dircache_doc_t *
provide(const char *path, void *arg)
{
  (void)arg;
  return dircache_doc_new(pc_memdup(T.doc, DOC_LEN), DOC_LEN,
                          !strncmp(path, "/tor/status-vote/", 17));
}

static void
done_cb(int status, const uint8_t *body, size_t len, const char *err,
        void *arg)
{
  (void)arg;
  T.done++;
  T.cb_inside_get = T.inside_get;
  T.status = status;
  free(T.body);
  T.body = NULL;
  T.len = 0;
  if (status >= 0 && body) {
    T.body = pc_memdup(body, len + 1);
    T.len = len;
  }
  snprintf(T.err, sizeof(T.err), "%s", err ? err : "");
  evloop_exit(T.r.loop);
}

static extend_target_t
target(void)
{
  extend_target_t t;
  memset(&t, 0, sizeof(t));
  t.addr = T.r.orport;
  memcpy(t.rsa_id, T.r.keys->rsa_id_digest, 20);
  memcpy(t.ed_id, T.r.keys->ed_identity.pub, 32);
  t.has_ed_id = 1;
  return t;
}

/* GET path through the tunnel; wait for the answer (at most 30 s). */
static void
get(const char *path, size_t max_body)
{
  extend_target_t t = target();
  T.done = 0;
  T.inside_get = 1;
  dir_tunnel_get(T.r.loop, &t, path, max_body, 30000, done_cb, NULL);
  T.inside_get = 0;
  for (int k = 0; k < 300 && !T.done; k++)
    run_loop_for(100000);
  ck_assert_msg(T.done == 1, "%s: no answer", path);
  ck_assert(!T.cb_inside_get);
}

static void
setup(void)
{
  memset(&T, 0, sizeof(T));
  fixture_relay_start(&T.r, "dir-tunnel", NULL, NULL);
  /* Pseudo-random base64-like text lines: compresses to about 3/4. */
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  T.doc = pc_malloc(DOC_LEN + 1);
  uint32_t x = 12345;
  for (size_t i = 0; i < DOC_LEN; i++) {
    x = x * 1103515245u + 12345u;
    T.doc[i] = (i % 65 == 64) ? '\n' : alphabet[(x >> 16) & 63];
  }
  T.doc[DOC_LEN] = 0;
  dircache_init(channels_loop());
  dircache_register_prefix("/tor/micro/d/", provide, NULL);
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
}

static void
teardown(void)
{
  dircache_shutdown();
  /* Let closing circuits and channels finish. */
  run_loop_for(200000);
  fixture_relay_shutdown();
  ck_assert_uint_eq(circuits_count(CIRC_KIND_ORIGIN), 0);
  free(T.body);
  free(T.doc);
  fixture_relay_free(&T.r);
}

START_TEST(test_big_answer)
{
  dircache_stats_t before, after;
  dircache_get_stats(&before);
  get("/tor/micro/d/AAAA.z", 4 * DOC_LEN);
  ck_assert_msg(T.status == 200, "status %d: %s", T.status, T.err);
  ck_assert_uint_eq(T.len, DOC_LEN);
  ck_assert(memcmp(T.body, T.doc, DOC_LEN) == 0);
  dircache_get_stats(&after);
  ck_assert_uint_eq(after.n_by_method[COMPRESS_ZSTD] -
                        before.n_by_method[COMPRESS_ZSTD],
                    1);
  /* A consensus: lzma. */
  get("/tor/status-vote/current/consensus-microdesc.z", 4 * DOC_LEN);
  ck_assert_msg(T.status == 200, "status %d: %s", T.status, T.err);
  ck_assert_uint_eq(T.len, DOC_LEN);
  ck_assert(memcmp(T.body, T.doc, DOC_LEN) == 0);
  dircache_get_stats(&before);
  ck_assert_uint_eq(before.n_by_method[COMPRESS_LZMA] -
                        after.n_by_method[COMPRESS_LZMA],
                    1);
  /* Each request had its own circuit, closed once answered. */
  run_loop_for(200000);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_ORIGIN), 0);
}
END_TEST

START_TEST(test_errors)
{
  get("/tor/nothing-here", 1000);
  ck_assert_int_eq(T.status, 404);
  ck_assert_str_eq(T.err, "HTTP 404 Not found");
  /* Over the caller's limit: refused while it arrives. */
  get("/tor/micro/d/AAAA", DOC_LEN / 2);
  ck_assert_int_eq(T.status, DIR_HTTP_ERR);
  ck_assert_msg(strstr(T.err, "exceeds") != NULL, "%s", T.err);
  /* Cancelled while its circuit is being built: no callback; the
   * circuit goes away. (Cancelling after the callback is not allowed:
   * the request is gone.) */
  extend_target_t t = target();
  T.done = 0;
  dir_tunnel_req_t *r =
      dir_tunnel_get(T.r.loop, &t, "/tor/micro/d/AAAA", 4 * DOC_LEN, 30000,
                     done_cb, NULL);
  dir_tunnel_cancel(r);
  run_loop_for(300000);
  ck_assert_int_eq(T.done, 0);
  ck_assert_uint_eq(circuits_count(CIRC_KIND_ORIGIN), 0);
  /* Nothing listening there: an error from the loop. */
  t.addr.port = 1; /* tcpmux: closed on any test machine */
  T.done = 0;
  T.inside_get = 1;
  dir_tunnel_get(T.r.loop, &t, "/tor/micro/d/AAAA", 1000, 10000, done_cb,
                 NULL);
  T.inside_get = 0;
  for (int k = 0; k < 150 && !T.done; k++)
    run_loop_for(100000);
  ck_assert_int_eq(T.done, 1);
  ck_assert(!T.cb_inside_get);
  ck_assert_int_eq(T.status, DIR_HTTP_ERR);
  ck_assert_msg(T.err[0] != 0, "no message");
}
END_TEST

Suite *
suite_dir_tunnel(void)
{
  Suite *s = suite_create("dir_tunnel");
  TCase *tc = tcase_create("dir_tunnel");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_big_answer);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
