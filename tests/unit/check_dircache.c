/* SPDX-License-Identifier: BSD-3-Clause */
/* check_dircache.c -- unit tests for feature/dircache's answers
 * (dircache_answer, what a BEGIN_DIR stream is sent): the encoding chosen
 * from Accept-Encoding and ".z" as tor's caches choose it (dir-spec 6.1),
 * every answer decoded back by the client's own parser
 * (dir_http_parse_response) to the provider's exact document, the cache of
 * compressed documents (hit for the same document, miss once it changed),
 * 404 and 400.
 *
 * And the streams, in one process on an edge whose circuit side is a
 * test double (as check_edge.c): what each memory holder keeps and that
 * it is counted (dircache_edge_mem, what MaxMemInQueues sees) and bounded
 * -- a flood of BEGIN_DIR streams on one circuit, readers that never send
 * SENDMEs, a document replaced while readers still hold it, the idle
 * timeout -- with the heap growth measured by mallinfo2(). */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/or/relay.h"
#include "core/proto/relay_msg.h"
#include "feature/dir/dir_http.h"
#include "feature/dircache/dircache.h"
#include "lib/bytes/bytes.h"
#include "lib/compress/compress.h"
#include "lib/evloop/evloop.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

Suite *suite_dircache(void);

/* tor 0.4.9's Accept-Encoding (its client preference order). */
#define TOR_AE "x-tor-lzma, x-zstd, deflate, gzip, identity"

static char doc[40000];
static int doc_gen;
/* The provider's reference to the shared copy of doc (generation
 * cur_gen), as dirdocs.c keeps one per cache file. */
static dircache_doc_t *cur;
static int cur_gen;

/* A consensus-like document of 40 kB: compressible, not trivially. */
static void
make_doc(char tag)
{
  size_t off = 0;
  doc_gen++;
  for (int i = 0; off + 64 < sizeof(doc); i++)
    off += (size_t)snprintf(doc + off, sizeof(doc) - off,
                            "r relay%c%d %08x 127.0.0.%d %d\ns Fast Running\n",
                            tag, i, (unsigned)(i * 2654435761u), i % 250,
                            9000 + i);
}

static char last_path[8192];

/* The consensus and certificates are shared documents (one copy,
 * replaced when doc changes); other paths get a document of their own. */
static dircache_doc_t *
provide(const char *path, void *arg)
{
  (void)arg;
  snprintf(last_path, sizeof(last_path), "%s", path);
  size_t len = strlen(doc);
  if (strncmp(path, "/tor/status-vote/", 17) && strncmp(path, "/tor/keys/", 10))
    return dircache_doc_new((uint8_t *)pc_strdup(doc), len, 0);
  if (!cur || cur_gen != doc_gen) {
    dircache_doc_retire(cur);
    cur = dircache_doc_new((uint8_t *)pc_strdup(doc), len, 1);
    cur_gen = doc_gen;
  }
  return dircache_doc_ref(cur);
}

/* Drop the provider's copy; nothing may be left. */
static void
provider_done(void)
{
  dircache_doc_retire(cur);
  cur = NULL;
  unsigned n;
  size_t bytes;
  dircache_docs_alive(&n, &bytes);
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(bytes, 0);
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
  provider_done();
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
  dircache_shutdown();
  provider_done(); /* every copy freed (ASan checks the rest) */
}
END_TEST


/* ---- streams on a test edge ---------------------------------------- */

#define MAX_STREAM_ID 12000

static struct {
  evloop_t *loop;
  edge_t *e;
  uint64_t n_cells;
  uint8_t digest[20];
  unsigned n_data[MAX_STREAM_ID + 1]; /* DATA cells sent per stream */
  unsigned n_connected, n_end;
  uint8_t end_reason[MAX_STREAM_ID + 1];
  uint8_t *got;                        /* DATA bytes of stream 1 */
  size_t got_len, got_cap;
} E;

static int
e_send(void *end, uint8_t cmd, uint16_t id, const uint8_t *body,
       uint16_t len)
{
  (void)end;
  E.n_cells++;
  set_u32(E.digest, (uint32_t)E.n_cells);
  if (cmd == RELAY_COMMAND_DATA && id <= MAX_STREAM_ID) {
    E.n_data[id]++;
    if (id == 1) {
      if (E.got_len + len > E.got_cap) {
        E.got_cap = (E.got_len + len) * 2;
        E.got = pc_realloc(E.got, E.got_cap);
      }
      memcpy(E.got + E.got_len, body, len);
      E.got_len += len;
    }
  } else if (cmd == RELAY_COMMAND_CONNECTED) {
    E.n_connected++;
  } else if (cmd == RELAY_COMMAND_END && id <= MAX_STREAM_ID) {
    E.n_end++;
    E.end_reason[id] = len ? body[0] : 0;
  }
  return 0;
}

static const uint8_t *
e_digest(void *end, int sent)
{
  (void)end;
  (void)sent;
  return E.digest;
}

static const edge_end_ops_t e_ops = {e_send, e_digest, NULL, NULL,
                                       NULL,   0,        NULL, NULL, NULL};

static void
edge_setup(void)
{
  memset(&E, 0, sizeof(E));
  E.loop = evloop_new();
  E.e = edge_new(&e_ops, &E, E.loop);
  dircache_init(E.loop);
}

static void
edge_teardown(void)
{
  edge_free(E.e); /* ends every stream: their records and references go */
  dircache_shutdown();
  /* Every holder gave back exactly what it counted. */
  ck_assert_uint_eq(memacct_underflows(), 0);
  free(E.got);
  evloop_free(E.loop);
  provider_done();
  dircache_stats_t st;
  dircache_get_stats(&st);
  ck_assert_uint_eq(st.n_streams, 0);
}

/* DATA from the client on stream id. */
static void
client_data(uint16_t id, const char *text)
{
  size_t len = strlen(text);
  while (len) {
    uint16_t n = len > RELAY_BODY_MAX ? RELAY_BODY_MAX : (uint16_t)len;
    ck_assert_int_eq(edge_data_arrived(E.e), 0);
    ck_assert_int_eq(edge_handle_stream_msg(E.e, RELAY_COMMAND_DATA, id,
                                            (const uint8_t *)text, n),
                     0);
    text += n;
    len -= n;
  }
}

static size_t
heap_used(void)
{
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

/* A stream with its request answered in full: the bytes on the wire are
 * the HTTP answer, sent from the shared copy. */
START_TEST(test_stream_answer)
{
  edge_setup();
  make_doc('s');
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
  int refused = 1;
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, 1, &refused));
  ck_assert_int_eq(refused, 0);
  ck_assert_uint_eq(E.n_connected, 1);
  /* Only a small record until bytes arrive. */
  size_t before_bytes = dircache_edge_mem(E.e);
  ck_assert_uint_le(before_bytes, 64);
  const char *req = "GET /tor/status-vote/current/consensus-microdesc "
                    "HTTP/1.0\r\nHost: x\r\n\r\n";
  client_data(1, "GET /tor/status-vote/current/consensus-micro");
  ck_assert_uint_gt(dircache_edge_mem(E.e), before_bytes);
  /* The record and the bytes so far: well under the 8 KiB buffer each
   * stream once had (the record grew with statistics and copy counts). */
  ck_assert_uint_le(dircache_edge_mem(E.e), 1024);
  client_data(1, req + strlen("GET /tor/status-vote/current/consensus-micro"));
  /* 40 kB: within the windows, so all sent and the stream ended DONE. */
  ck_assert_uint_eq(E.n_end, 1);
  ck_assert_uint_eq(E.end_reason[1], END_STREAM_REASON_DONE);
  size_t len = 0;
  uint8_t *want = dircache_answer(req, &len);
  ck_assert_uint_eq(E.got_len, len);
  ck_assert(memcmp(E.got, want, len) == 0);
  free(want);
  ck_assert_uint_eq(dircache_edge_streams(E.e), 0);
  ck_assert_uint_eq(dircache_doc_refcount(cur), 1); /* the provider's */
  edge_teardown();
}
END_TEST

/* The flood: 10,000 BEGIN_DIR cells on one circuit grew tor's
 * heap by 89 MB. Now at most DIRCACHE_MAX_STREAMS_PER_CIRCUIT are opened,
 * the rest refused with END RESOURCELIMIT; each open one may hold a
 * request of up to DIR_REQUEST_MAX bytes. Bound on what they hold:
 * DIRCACHE_MAX_STREAMS_PER_CIRCUIT * (DIR_REQUEST_MAX + 1 + 256) bytes
 * (580 kB), all of it counted; heap growth (with the edge's own
 * half-closed records) under 1 MB. */
START_TEST(test_begin_dir_flood)
{
  edge_setup();
  uint64_t budget0 = memacct_get(MEMACCT_DIRCACHE);
  size_t heap0 = heap_used();
  unsigned n_open = 0, n_refused = 0;
  for (uint16_t id = 1; id <= 10000; id++) {
    int refused = 0;
    if (dircache_stream_open(E.e, id, &refused))
      n_open++;
    n_refused += refused;
    /* Every stream sends an almost full request that never ends. */
    if (!refused) {
      char part[DIR_REQUEST_MAX];
      memset(part, 'a', sizeof(part) - 1);
      part[sizeof(part) - 1] = 0;
      memcpy(part, "GET /", 5);
      client_data(id, part);
    }
  }
  ck_assert_uint_eq(n_open, DIRCACHE_MAX_STREAMS_PER_CIRCUIT);
  ck_assert_uint_eq(n_refused, 10000 - DIRCACHE_MAX_STREAMS_PER_CIRCUIT);
  ck_assert_uint_eq(E.end_reason[10000], END_STREAM_REASON_RESOURCELIMIT);
  ck_assert_uint_eq(E.end_reason[1], 0);
  ck_assert_uint_eq(dircache_edge_streams(E.e),
                    DIRCACHE_MAX_STREAMS_PER_CIRCUIT);
  size_t counted = dircache_edge_mem(E.e);
  ck_assert_uint_ge(counted,
                    DIRCACHE_MAX_STREAMS_PER_CIRCUIT * (size_t)DIR_REQUEST_MAX);
  ck_assert_uint_le(counted, DIRCACHE_MAX_STREAMS_PER_CIRCUIT *
                                 (size_t)(DIR_REQUEST_MAX + 1 + 256));
  size_t grown = heap_used() - heap0;
  ck_assert_msg(grown < 1024 * 1024, "heap grew by %zu bytes", grown);
  /* The memory budget holds the same bytes. */
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE) - budget0, counted);
  /* One byte more makes each request too long: 400, and the request
   * buffers are freed. */
  for (uint16_t id = 1; id <= DIRCACHE_MAX_STREAMS_PER_CIRCUIT; id++)
    client_data(id, "aa");
  ck_assert_uint_eq(dircache_edge_streams(E.e), 0);
  ck_assert_uint_eq(dircache_edge_mem(E.e), 0);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), budget0);
  dircache_stats_t st;
  dircache_get_stats(&st);
  ck_assert_uint_ge(st.n_streams_refused,
                    10000 - DIRCACHE_MAX_STREAMS_PER_CIRCUIT);
  edge_teardown();
}
END_TEST

/* The second case: 50 GETs of a 2 MiB document by a client that
 * never sends SENDMEs (+106 MB). Each stream sends one stream window
 * (500 cells; the circuit window of 1000 stops the rest) and then holds
 * only its header and a reference to the one shared copy: heap growth
 * under 512 kB besides that copy, counted bytes under 512 per stream.
 * When a new copy replaces the document, the old one lives on while
 * readers hold it, charged to them, and is freed with the last. */
START_TEST(test_reader_without_sendmes)
{
  edge_setup();
  /* A 2 MiB document, identity-encoded (no Accept-Encoding). */
  static char big[2 * 1024 * 1024 + 1];
  for (size_t i = 0; i < sizeof(big) - 1; i++)
    big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
  dircache_doc_t *d = dircache_doc_new((uint8_t *)pc_memdup(big, sizeof(big) - 1),
                                       sizeof(big) - 1, 1);
  cur = d;
  cur_gen = doc_gen; /* provide() serves it as is */
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
  size_t heap0 = heap_used();
  for (uint16_t id = 1; id <= 50; id++) {
    int refused = 0;
    ck_assert_ptr_nonnull(dircache_stream_open(E.e, id, &refused));
    client_data(id, "GET /tor/status-vote/current/consensus HTTP/1.0\r\n\r\n");
  }
  /* The first two streams filled the circuit window (1000 cells). */
  ck_assert_uint_eq(E.n_data[1], STREAMWINDOW_START);
  ck_assert_uint_eq(E.n_data[2], CIRCWINDOW_START - STREAMWINDOW_START);
  ck_assert_uint_eq(E.n_data[3], 0);
  ck_assert_uint_eq(E.n_end, 0);
  ck_assert_uint_eq(dircache_doc_refcount(d), 51);
  unsigned n_docs;
  size_t doc_bytes;
  dircache_docs_alive(&n_docs, &doc_bytes);
  ck_assert_uint_eq(n_docs, 1);
  size_t grown = heap_used() - heap0;
  ck_assert_msg(grown < 512 * 1024, "heap grew by %zu bytes", grown);
  /* The provider holds the copy: streams are charged their own bytes. */
  size_t counted = dircache_edge_mem(E.e);
  ck_assert_uint_le(counted, 50 * 512);
  /* A new consensus arrives: the provider replaces its copy. */
  make_doc('n');
  dircache_doc_t *ref = provide("/tor/status-vote/current/consensus", NULL);
  dircache_doc_unref(ref);
  dircache_docs_alive(&n_docs, &doc_bytes);
  ck_assert_uint_eq(n_docs, 2);
  ck_assert_uint_eq(dircache_doc_refcount(d), 50);
  /* The readers now keep the old copy alone: it is charged to them, and
   * counts in the memory budget. */
  ck_assert_uint_ge(memacct_get(MEMACCT_DIRCACHE), dircache_doc_mem(d));
  size_t charged = dircache_edge_mem(E.e);
  ck_assert_uint_ge(charged, counted + dircache_doc_mem(d));
  ck_assert_uint_le(charged, counted + dircache_doc_mem(d) + 50);
  /* They go idle: the sweep ends them all, and the old copy is freed. */
  size_t old_mem = dircache_doc_mem(d);
  ck_assert_uint_eq(dircache_sweep_idle(evloop_now_us(E.loop) +
                                        DIRCACHE_IDLE_TIMEOUT_USEC + 1),
                    50);
  ck_assert_uint_eq(E.end_reason[50], END_STREAM_REASON_TIMEOUT);
  dircache_docs_alive(&n_docs, &doc_bytes);
  ck_assert_uint_eq(n_docs, 1); /* only the new copy */
  ck_assert_uint_lt(memacct_get(MEMACCT_DIRCACHE), old_mem);
  edge_teardown();
}
END_TEST

/* A stream that never sends a byte is ended after the idle timeout, and
 * not before; activity restarts the clock. */
START_TEST(test_idle_timeout)
{
  edge_setup();
  uint64_t t0 = evloop_now_us(E.loop);
  int refused = 0;
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, 7, &refused));
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, 8, &refused));
  ck_assert_uint_eq(dircache_sweep_idle(t0 + DIRCACHE_IDLE_TIMEOUT_USEC - 1),
                    0);
  ck_assert_uint_eq(dircache_edge_streams(E.e), 2);
  /* Stream 8 sends part of a request later: it is not idle then. */
  usleep(2000);
  evloop_update_time(E.loop);
  uint64_t t1 = evloop_now_us(E.loop);
  ck_assert_uint_gt(t1, t0);
  client_data(8, "GET /");
  ck_assert_uint_eq(dircache_sweep_idle(t1 + DIRCACHE_IDLE_TIMEOUT_USEC - 1),
                    1);
  ck_assert_uint_eq(E.end_reason[7], END_STREAM_REASON_TIMEOUT);
  ck_assert_uint_eq(E.end_reason[8], 0);
  evloop_update_time(E.loop);
  ck_assert_uint_eq(dircache_sweep_idle(evloop_now_us(E.loop) +
                                        DIRCACHE_IDLE_TIMEOUT_USEC),
                    1);
  ck_assert_uint_eq(E.end_reason[8], END_STREAM_REASON_TIMEOUT);
  ck_assert_uint_eq(dircache_edge_streams(E.e), 0);
  ck_assert_uint_eq(dircache_edge_mem(E.e), 0);
  edge_teardown();
}
END_TEST

/* Documents made per request (descriptor lists) are capped in all: a
 * client whose streams hold them without reading gets 503 once
 * DIRCACHE_PRIVATE_BYTES_MAX is held, and service resumes when they go. */
static dircache_doc_t *
provide_private(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  size_t len = 2 * 1024 * 1024;
  uint8_t *b = pc_malloc(len);
  memset(b, 'm', len);
  return dircache_doc_new(b, len, 0);
}

START_TEST(test_private_cap)
{
  edge_setup();
  dircache_register_prefix("/tor/micro/d/", provide_private, NULL);
  const char *get = "GET /tor/micro/d/AAAA HTTP/1.0\r\n\r\n";
  uint16_t id = 1;
  int refused = 0;
  /* Seven 2 MiB answers fit (with their records); the eighth would not. */
  for (; id < DIRCACHE_PRIVATE_BYTES_MAX / (2 * 1024 * 1024); id++) {
    ck_assert_ptr_nonnull(dircache_stream_open(E.e, id, &refused));
    client_data(id, get);
  }
  dircache_stats_t st;
  dircache_get_stats(&st);
  ck_assert_uint_eq(st.n_busy, 0);
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, id, &refused));
  E.got_len = 0;
  client_data(id, get);
  dircache_get_stats(&st);
  ck_assert_uint_eq(st.n_busy, 1);
  /* (its 503 waits for the circuit window like everything else) */
  /* The holders are charged in full for what they hold. */
  ck_assert_uint_ge(dircache_edge_mem(E.e),
                    DIRCACHE_PRIVATE_BYTES_MAX - 2 * 1024 * 1024);
  ck_assert_uint_le(dircache_edge_mem(E.e),
                    DIRCACHE_PRIVATE_BYTES_MAX + 4 * 1024 * 1024);
  /* They go idle and are ended: the next request is served. */
  dircache_sweep_idle(evloop_now_us(E.loop) + DIRCACHE_IDLE_TIMEOUT_USEC + 1);
  unsigned n;
  size_t bytes;
  dircache_docs_alive(&n, &bytes);
  ck_assert_uint_eq(n, 0);
  id++;
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, id, &refused));
  client_data(id, get);
  dircache_get_stats(&st);
  ck_assert_uint_eq(st.n_busy, 1);
  /* A compressed answer made for one request keeps only its compressed
   * form (the windows are closed, so both streams still hold theirs). */
  id++;
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, id, &refused));
  client_data(id, "GET /tor/micro/d/AAAA HTTP/1.0\r\n"
                  "Accept-Encoding: x-zstd\r\n\r\n");
  dircache_docs_alive(&n, &bytes);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_ge(bytes, 2 * 1024 * 1024);
  ck_assert_uint_lt(bytes, 2 * 1024 * 1024 + 64 * 1024);
  edge_teardown();
}
END_TEST

/* The compressed forms of the current shared documents are a cache:
 * counted as MEMACCT_DIRCOPIES, freed by dircache_free_copies (what
 * MaxMemInQueues calls before closing circuits) unless a stream is still
 * sending them, made again on the next request, and moved to the
 * streams' MEMACCT_DIRCACHE when the document is retired. */
START_TEST(test_copies_are_a_cache)
{
  edge_setup();
  /* 1 MiB of random letters: zstd keeps over half of it, so a stream
   * sending the zstd form stops at its window, unfinished. */
  size_t n = 1024 * 1024;
  uint8_t *body = pc_malloc(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    body[i] = (uint8_t)('a' + (x >> 16) % 26);
  }
  dircache_doc_t *d = dircache_doc_new(body, n, 1);
  cur = d;
  cur_gen = doc_gen;
  dircache_register_prefix("/tor/status-vote/current/consensus", provide,
                           NULL);
  uint64_t c0 = memacct_get(MEMACCT_DIRCOPIES);
  uint64_t dc0 = memacct_get(MEMACCT_DIRCACHE);
  size_t mem0 = dircache_doc_mem(d);
  int refused = 0;
  ck_assert_ptr_nonnull(dircache_stream_open(E.e, 1, &refused));
  client_data(1, "GET /tor/status-vote/current/consensus HTTP/1.0\r\n"
                 "Accept-Encoding: x-zstd\r\n\r\n");
  ck_assert_uint_eq(E.n_data[1], STREAMWINDOW_START);
  ck_assert_uint_eq(E.n_end, 0);
  /* The zstd form is counted as a copy, not as the stream's. */
  uint64_t c1 = memacct_get(MEMACCT_DIRCOPIES);
  ck_assert_uint_gt(c1 - c0, n / 2);
  ck_assert_uint_eq(c1 - c0, dircache_doc_mem(d) - mem0);
  ck_assert_uint_lt(dircache_edge_mem(E.e), 4096);
  /* A deflate answer, sent whole: a second copy. */
  size_t len = 0;
  uint8_t *a = dircache_answer("GET /tor/status-vote/current/consensus.z "
                               "HTTP/1.0\r\n\r\n", &len);
  free(a);
  uint64_t c2 = memacct_get(MEMACCT_DIRCOPIES);
  ck_assert_uint_gt(c2, c1);
  /* Over the limit: the deflate copy goes, the one being sent stays. */
  ck_assert_uint_eq(dircache_free_copies(), c2 - c1);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCOPIES), c1);
  ck_assert_uint_eq(dircache_doc_mem(d), mem0 + (c1 - c0));
  dircache_stats_t st;
  dircache_get_stats(&st);
  ck_assert_uint_eq(st.n_copies_freed_bytes, c2 - c1);
  ck_assert_uint_eq(dircache_free_copies(), 0);
  /* Asked again: compressed again, and still right. */
  a = dircache_answer("GET /tor/status-vote/current/consensus.z "
                      "HTTP/1.0\r\n\r\n", &len);
  uint8_t *got = NULL;
  size_t got_len = 0;
  char *err = NULL;
  ck_assert_int_eq(dir_http_parse_response(a, len, 1, 2 * n, &got, &got_len,
                                           &err), 200);
  ck_assert_uint_eq(got_len, n);
  ck_assert(memcmp(got, body, n) == 0);
  free(got);
  free(a);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCOPIES), c2);
  /* A new document: the old one (body and both forms) is now the
   * stream's, in MEMACCT_DIRCACHE, and no longer a cache. */
  make_doc('r');
  dircache_doc_unref(provide("/tor/status-vote/current/consensus", NULL));
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCOPIES), c0);
  ck_assert_uint_ge(memacct_get(MEMACCT_DIRCACHE) - dc0,
                    dircache_doc_mem(d));
  ck_assert_uint_eq(dircache_free_copies(), 0);
  ck_assert_uint_ge(dircache_edge_mem(E.e), dircache_doc_mem(d));
  edge_teardown();
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCACHE), dc0);
  ck_assert_uint_eq(memacct_get(MEMACCT_DIRCOPIES), c0);
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
  tcase_add_test(tc, test_stream_answer);
  tcase_add_test(tc, test_begin_dir_flood);
  tcase_add_test(tc, test_reader_without_sendmes);
  tcase_add_test(tc, test_idle_timeout);
  tcase_add_test(tc, test_private_cap);
  tcase_add_test(tc, test_copies_are_a_cache);
  suite_add_tcase(s, tc);
  return s;
}
