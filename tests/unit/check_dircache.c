/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dircache.c -- unit tests for feature/dircache's answers
 * (dircache_answer, what a BEGIN_DIR stream is sent): the encoding chosen
 * from Accept-Encoding and ".z" as tor's caches choose it (dir-spec 6.1),
 * every answer decoded back by the client's own parser
 * (dir_http_parse_response) to the provider's exact document, the cache of
 * compressed documents (hit for the same document, miss once it changed),
 * 404 and 400. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_http.h"
#include "feature/dircache/dircache.h"
#include "lib/compress/compress.h"
#include "lib/malloc/alloc.h"

Suite *suite_dircache(void);

/* tor 0.4.9's Accept-Encoding (its client preference order). */
#define TOR_AE "x-tor-lzma, x-zstd, deflate, gzip, identity"

static char doc[40000];

/* A consensus-like document of 40 kB: compressible, not trivially. */
static void
make_doc(char tag)
{
  size_t off = 0;
  for (int i = 0; off + 64 < sizeof(doc); i++)
    off += (size_t)snprintf(doc + off, sizeof(doc) - off,
                            "r relay%c%d %08x 127.0.0.%d %d\ns Fast Running\n",
                            tag, i, (unsigned)(i * 2654435761u), i % 250,
                            9000 + i);
}

static char last_path[8192];

static uint8_t *
provide(const char *path, size_t *len, void *arg)
{
  (void)arg;
  snprintf(last_path, sizeof(last_path), "%s", path);
  *len = strlen(doc);
  return (uint8_t *)pc_strdup(doc);
}

/* Ask for path with these extra header lines; check the status and the
 * Content-Encoding, and that the decoded body is doc. */
static void
ask(const char *path, const char *headers, int want_status,
    const char *want_encoding)
{
  char *req = pc_asprintf("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s\r\n",
                          path, headers);
  size_t len = 0;
  uint8_t *resp = dircache_answer(req, &len);
  ck_assert_ptr_nonnull(resp);
  /* The headers: status line and Content-Encoding. */
  char head[256];
  size_t hl = len < sizeof(head) - 1 ? len : sizeof(head) - 1;
  memcpy(head, resp, hl);
  head[hl] = 0;
  char line[64];
  snprintf(line, sizeof(line), "HTTP/1.0 %d ", want_status);
  ck_assert_msg(!strncmp(head, line, strlen(line)), "%s: got '%.40s'", path,
                head);
  snprintf(line, sizeof(line), "\r\nContent-Encoding: %s\r\n", want_encoding);
  ck_assert_msg(strstr(head, line) != NULL, "%s [%s]: wanted %s, got %.200s",
                path, headers, want_encoding, head);
  if (want_status == 200) {
    uint8_t *body = NULL;
    size_t blen = 0;
    char *err = NULL;
    size_t pl = strlen(path);
    int is_z = pl > 2 && !strcmp(path + pl - 2, ".z");
    ck_assert_int_eq(dir_http_parse_response(resp, len, is_z, 1 << 20, &body,
                                             &blen, &err),
                     200);
    ck_assert_uint_eq(blen, strlen(doc));
    ck_assert(memcmp(body, doc, blen) == 0);
    if (strcmp(want_encoding, "identity"))
      ck_assert_uint_lt(len, blen / 2); /* really compressed */
    free(body);
  }
  free(resp);
  free(req);
}

START_TEST(test_negotiation)
{
  make_doc('a');
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
  dircache_register_prefix("/tor/micro/d/", provide, NULL);
  dircache_register_prefix("/tor/keys/", provide, NULL);
  const char *cons = "/tor/status-vote/current/consensus-microdesc";
  const char *consz = "/tor/status-vote/current/consensus-microdesc.z";
  /* A tor 0.4.9 client: lzma for the consensus and the certificates
   * (compressed once), zstd for descriptors (per request). */
  ask(consz, "Accept-Encoding: " TOR_AE "\r\n", 200, "x-tor-lzma");
  ask("/tor/keys/all.z", "Accept-Encoding: " TOR_AE "\r\n", 200,
      "x-tor-lzma");
  ask("/tor/micro/d/AAAA-BBBB.z", "Accept-Encoding: " TOR_AE "\r\n", 200,
      "x-zstd");
  /* Without Accept-Encoding: ".z" means deflate, else identity. */
  ask(consz, "", 200, "deflate");
  ask(cons, "", 200, "identity");
  ask("/tor/micro/d/AAAA.z", "", 200, "deflate");
  /* The header overrides the missing ".z"; names are case-insensitive,
   * parameters and unknown names ignored. */
  ask(cons, "accept-encoding: gzip\r\n", 200, "gzip");
  ask(cons, "Accept-Encoding: br, X-ZSTD;q=0.9\r\n", 200, "x-zstd");
  ask(consz, "Accept-Encoding: identity\r\n", 200, "deflate");
  ask(cons, "Accept-Encoding: identity\r\n", 200, "identity");
  ask("/tor/micro/d/AAAA", "Accept-Encoding: x-tor-lzma, deflate\r\n", 200,
      "deflate");
  /* The header is found among others. */
  ask("/tor/micro/d/AAAA",
      "X-Other: 1\r\nAccept-Encoding: x-zstd\r\nX-More: 2\r\n", 200,
      "x-zstd");
  /* A long path (92 microdescriptor digests, as clients ask for) is
   * passed whole to the provider. */
  {
    char *longp = pc_malloc(92 * 44 + 64);
    strcpy(longp, "/tor/micro/d/");
    for (int i = 0; i < 92; i++)
      strcat(longp, i ? "-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      : "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    strcat(longp, ".z");
    last_path[0] = 0;
    ask(longp, "Accept-Encoding: " TOR_AE "\r\n", 200, "x-zstd");
    longp[strlen(longp) - 2] = 0;
    ck_assert_str_eq(last_path, longp);
    free(longp);
  }
  /* Not found; not a GET. */
  ask("/tor/nothing.z", "Accept-Encoding: " TOR_AE "\r\n", 404, "identity");
  size_t len;
  uint8_t *r = dircache_answer("POST /tor/ HTTP/1.0\r\n\r\n", &len);
  ck_assert(!memcmp(r, "HTTP/1.0 400 ", 13));
  free(r);
  r = dircache_answer("GET\r\n\r\n", &len);
  ck_assert(!memcmp(r, "HTTP/1.0 400 ", 13));
  free(r);
  dircache_stats_t st;
  dircache_get_stats(&st);
  ck_assert_uint_ge(st.n_by_method[COMPRESS_LZMA], 2);
  ck_assert_uint_ge(st.n_by_method[COMPRESS_ZSTD], 3);
  dircache_shutdown();
}
END_TEST

START_TEST(test_compressed_cache)
{
  make_doc('b');
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
  const char *hdr = "Accept-Encoding: " TOR_AE "\r\n";
  dircache_stats_t st0, st1;
  dircache_get_stats(&st0);
  ask("/tor/status-vote/current/consensus-microdesc.z", hdr, 200,
      "x-tor-lzma");
  ask("/tor/status-vote/current/consensus-microdesc.z", hdr, 200,
      "x-tor-lzma");
  ask("/tor/status-vote/current/consensus-microdesc.z", "", 200, "deflate");
  ask("/tor/status-vote/current/consensus-microdesc.z", "", 200, "deflate");
  dircache_get_stats(&st1);
  /* The second of each pair came from the cache. */
  ck_assert_uint_eq(st1.n_compress_cached - st0.n_compress_cached, 2);
  /* A new document is compressed anew (and decodes to the new text). */
  make_doc('c');
  ask("/tor/status-vote/current/consensus-microdesc.z", hdr, 200,
      "x-tor-lzma");
  dircache_get_stats(&st0);
  ck_assert_uint_eq(st0.n_compress_cached, st1.n_compress_cached);
  /* More documents than cache entries: still right, never stale. */
  for (char t = 'd'; t < 'd' + 12; t++) {
    make_doc(t);
    ask("/tor/status-vote/current/consensus-microdesc.z", hdr, 200,
        "x-tor-lzma");
    ask("/tor/status-vote/current/consensus-microdesc.z", "", 200,
        "deflate");
  }
  dircache_shutdown(); /* frees the cache (ASan checks) */
}
END_TEST

Suite *
suite_dircache(void)
{
  Suite *s = suite_create("dircache");
  TCase *tc = tcase_create("dircache");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_negotiation);
  tcase_add_test(tc, test_compressed_cache);
  suite_add_tcase(s, tc);
  return s;
}
