/* SPDX-License-Identifier: BSD-3-Clause */
/* check_edge.c -- the circuit end (core/or/edge.h) and the SENDME codec
 * (core/or/sendme.h), without circuits: the edge talks to a fake end that
 * records what it sends and hands out digests the test controls.
 *
 * The tests that need an end run twice (tcase_add_loop_test, _i):
 *   _i == 0: the exit-side owner -- relay end ops, the edge owns the
 *            controller (edge_set_cc), as stream.c binds an or_circuit;
 *   _i == 1: the client-side owner -- is_client set, the controller read
 *            through edge_end_ops_t.cc, as feature/client binds a circuit.
 * What is checked: SENDME v0/v1 parsing and its refusals (versions above
 * 1, a length field too short for a digest or longer than the body, a
 * truncated header), the digest FIFO, window arithmetic (circuit 1000/100,
 * stream 500/50, authenticated circuit SENDMEs carrying the digest of the
 * cell that completed an increment), held-back stream SENDMEs, XON/XOFF,
 * half-closed streams, and the stream table with many streams; and that
 * core's single-slot hooks refuse a second subscriber.
 */
#include <check.h>
#include <string.h>

#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/edge.h"
#include "core/or/relay.h"
#include "core/or/sendme.h"
#include "core/proto/relay_msg.h"
#include "lib/bytes/bytes.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/memacct.h"

Suite *suite_edge(void);

/* ---- SENDME codec ------------------------------------------------------ */

START_TEST(test_sendme_parse)
{
  uint8_t d[SENDME_DIGEST_LEN], b[64];
  const uint8_t *dg;
  const char *why = NULL;
  for (int i = 0; i < SENDME_DIGEST_LEN; i++)
    d[i] = (uint8_t)(i * 7 + 1);
  ck_assert_uint_eq(sendme_encode_v1(b, d), 23);
  /* The wire format by hand: version 1, length 20, digest. */
  ck_assert_uint_eq(b[0], 1);
  ck_assert_uint_eq(b[1], 0);
  ck_assert_uint_eq(b[2], 20);
  ck_assert_int_eq(memcmp(b + 3, d, 20), 0);
  ck_assert_int_eq(sendme_parse(b, 23, &dg, &why), 0);
  ck_assert_ptr_eq(dg, b + 3);
  /* v1 with padding after the body it announces: fine. */
  ck_assert_int_eq(sendme_parse(b, 30, &dg, &why), 0);
  ck_assert_ptr_eq(dg, b + 3);
  /* v0: empty, or a header with (ignored) data. */
  ck_assert_int_eq(sendme_parse(b, 0, &dg, &why), 0);
  ck_assert_ptr_null(dg);
  uint8_t v0[5] = {0, 0, 2, 9, 9};
  ck_assert_int_eq(sendme_parse(v0, 5, &dg, &why), 0);
  ck_assert_ptr_null(dg);
  /* Versions above 1. */
  b[0] = 2;
  ck_assert_int_eq(sendme_parse(b, 23, &dg, &why), -1);
  ck_assert_str_eq(why, "SENDME of an unknown version");
  b[0] = 0xff;
  ck_assert_int_eq(sendme_parse(b, 1, &dg, &why), -1);
  b[0] = 1;
  /* Short length field: no room for a digest. */
  set_u16(b + 1, 19);
  ck_assert_int_eq(sendme_parse(b, 23, &dg, &why), -1);
  ck_assert_ptr_null(dg);
  /* Long length field: beyond the body. */
  set_u16(b + 1, 21);
  ck_assert_int_eq(sendme_parse(b, 23, &dg, &why), -1);
  set_u16(b + 1, 0xffff);
  ck_assert_int_eq(sendme_parse(b, 23, &dg, &why), -1);
  v0[2] = 3; /* v0 whose length runs past the body */
  ck_assert_int_eq(sendme_parse(v0, 5, &dg, &why), -1);
  /* Body shorter than the digest its length field announces. */
  set_u16(b + 1, 20);
  ck_assert_int_eq(sendme_parse(b, 22, &dg, &why), -1);
  /* Truncated headers. */
  ck_assert_int_eq(sendme_parse(b, 1, &dg, &why), -1);
  ck_assert_int_eq(sendme_parse(b, 2, &dg, &why), -1);
}
END_TEST

START_TEST(test_sendme_digests)
{
  sendme_digests_t q;
  memset(&q, 0, sizeof(q));
  uint8_t d[12][SENDME_DIGEST_LEN];
  for (int i = 0; i < 12; i++)
    memset(d[i], i + 1, SENDME_DIGEST_LEN);
  /* Nothing recorded: a v1 SENDME is wrong, a v0 one is not checked. */
  ck_assert_int_eq(sendme_digests_check(&q, d[0]), -1);
  ck_assert_int_eq(sendme_digests_check(&q, NULL), 0);
  for (int i = 0; i < 12; i++)
    sendme_digests_record(&q, d[i]);
  ck_assert_uint_eq(q.n, SENDME_DIGESTS_MAX); /* bounded */
  ck_assert_int_eq(sendme_digests_check(&q, d[0]), 0);
  /* A wrong digest uses the oldest up too. */
  ck_assert_int_eq(sendme_digests_check(&q, d[5]), -1);
  ck_assert_int_eq(sendme_digests_check(&q, NULL), 0); /* pops d[2] */
  ck_assert_int_eq(sendme_digests_check(&q, d[3]), 0);
  ck_assert_uint_eq(q.n, SENDME_DIGESTS_MAX - 4);
}
END_TEST

START_TEST(test_window_arithmetic)
{
  int w = CIRCWINDOW_START;
  for (int i = 1; i < CIRCWINDOW_INCREMENT; i++)
    ck_assert_int_eq(edge_window_delivered(&w, CIRCWINDOW_INCREMENT), 0);
  ck_assert_int_eq(edge_window_delivered(&w, CIRCWINDOW_INCREMENT), 1);
  ck_assert_int_eq(w, CIRCWINDOW_START);
  /* Congestion control: every sendme_inc cells. */
  for (int i = 1; i < 31; i++)
    ck_assert_int_eq(edge_window_delivered(&w, 31), 0);
  ck_assert_int_eq(edge_window_delivered(&w, 31), 1);
  ck_assert_int_eq(w, CIRCWINDOW_START);
  w = 0;
  ck_assert_int_eq(edge_window_delivered(&w, CIRCWINDOW_INCREMENT), -1);

  edge_circ_window_t cw;
  edge_circ_window_init(&cw);
  const char *why = NULL;
  uint8_t body[SENDME_V1_LEN], dg[SENDME_DIGEST_LEN];
  /* Window full: a SENDME would open it beyond 1000. */
  ck_assert_int_eq(edge_circ_window_sendme(&cw, NULL, 0, &why), -1);
  for (int i = 1; i <= 250; i++) {
    memset(dg, i & 0xff, sizeof(dg));
    edge_circ_window_packaged(&cw, dg);
  }
  ck_assert_int_eq(cw.package, 750);
  ck_assert_uint_eq(cw.digests.n, 2); /* cells 100 and 200 */
  memset(dg, 100, sizeof(dg));
  sendme_encode_v1(body, dg);
  ck_assert_int_eq(edge_circ_window_sendme(&cw, body, sizeof(body), &why),
                   0);
  ck_assert_int_eq(cw.package, 850);
  memset(dg, 100, sizeof(dg)); /* 200 is next, not 100 */
  sendme_encode_v1(body, dg);
  ck_assert_int_eq(edge_circ_window_sendme(&cw, body, sizeof(body), &why),
                   -1);
  ck_assert_str_eq(why, "authenticated SENDME with a wrong digest");
  ck_assert_int_eq(cw.package, 850);
}
END_TEST

/* ---- a fake circuit end ------------------------------------------------ */

#define MAX_IDS 4096

static struct {
  evloop_t *loop;
  int client;                 /* _i */
  cc_t *cc;                   /* client side: the circuit's controller */
  edge_t *e;
  uint32_t n_cells;           /* numbers the digests of sent cells */
  uint8_t sent_digest[SENDME_DIGEST_LEN];
  uint8_t recv_digest[SENDME_DIGEST_LEN];
  int fail_send;
  unsigned count[256];        /* messages sent, by command */
  uint8_t last_cmd;
  uint16_t last_id;
  uint8_t last_body[RELAY_BODY_MAX];
  uint16_t last_len;
  /* stream owner */
  size_t bytes_in;
  size_t pending;
  unsigned n_end, n_writable, n_connected;
  uint8_t end_reason;
  int end_forgets_other;      /* on_writable ends this other stream */
  edge_stream_t *other;
  size_t queued;              /* exit side: cells queued towards the peer */
  size_t queue_limit;         /* ... and what may wait (limit_ops) */
  int count_queued;           /* every DATA cell sent adds to queued */
} F;

static int
f_send(void *end, uint8_t cmd, uint16_t id, const uint8_t *body,
       uint16_t len)
{
  ck_assert_ptr_eq(end, &F);
  if (F.fail_send)
    return -1;
  F.count[cmd]++;
  F.last_cmd = cmd;
  F.last_id = id;
  F.last_len = len;
  if (len)
    memcpy(F.last_body, body, len);
  if (F.count_queued && cmd == RELAY_COMMAND_DATA)
    F.queued++;
  /* Every cell "encrypted" gets its own running digest. */
  F.n_cells++;
  memset(F.sent_digest, 0, sizeof(F.sent_digest));
  set_u32(F.sent_digest, F.n_cells);
  return 0;
}

static const uint8_t *
f_last_digest(void *end, int sent)
{
  (void)end;
  return sent ? F.sent_digest : F.recv_digest;
}

static const struct cc_t *
f_cc(void *end)
{
  (void)end;
  return F.cc;
}

static size_t
f_queued(void *end)
{
  (void)end;
  return F.queued;
}

static const edge_end_ops_t exit_side_ops = {
    f_send, f_last_digest, NULL, NULL, NULL, 0, NULL, f_queued, NULL,
};
static size_t
f_queue_limit(void *end)
{
  (void)end;
  return F.queue_limit;
}

/* Either side of a BackTap circuit: the queue's limit from the owner. */
static const edge_end_ops_t limit_ops = {
    f_send, f_last_digest, NULL, NULL, NULL, 0, NULL, f_queued, f_queue_limit,
};
static const edge_end_ops_t limit_ops_client = {
    f_send, f_last_digest, NULL, NULL, NULL, 1, NULL, f_queued, f_queue_limit,
};
static const edge_end_ops_t client_side_ops = {
    f_send, f_last_digest, f_cc, NULL, NULL, 1, NULL, NULL, NULL,
};

static void
o_data(edge_stream_t *s, const uint8_t *d, size_t n, void *arg)
{
  (void)s;
  (void)d;
  (void)arg;
  F.bytes_in += n;
}

static void
o_end(edge_stream_t *s, uint8_t reason, void *arg)
{
  (void)s;
  (void)arg;
  F.n_end++;
  F.end_reason = reason;
}

static void
o_writable(edge_stream_t *s, void *arg)
{
  (void)s;
  (void)arg;
  F.n_writable++;
  if (F.end_forgets_other && F.other) {
    edge_stream_forget(F.other);
    F.other = NULL;
  }
}

static size_t
o_pending(edge_stream_t *s, void *arg)
{
  (void)s;
  (void)arg;
  return F.pending;
}

static void
o_connected(edge_stream_t *s, const uint8_t *b, size_t n, void *arg)
{
  (void)s;
  (void)b;
  (void)n;
  (void)arg;
  F.n_connected++;
}

static const edge_stream_ops_t owner_ops = {
    .on_data = o_data, .on_end = o_end, .on_writable = o_writable,
    .pending_bytes = o_pending, .on_connected = o_connected};

/* A fresh end for side _i; with_cc: a controller with sendme_inc 31. */
static void
fake_end(int client, int with_cc)
{
  memset(&F, 0, sizeof(F));
  F.loop = evloop_new();
  F.client = client;
  F.e = edge_new(client ? &client_side_ops : &exit_side_ops, &F, F.loop);
  if (with_cc) {
    if (client)
      F.cc = cc_new(NULL, 31);
    else
      edge_set_cc(F.e, cc_new(NULL, 31));
  }
  ck_assert_int_eq(!!edge_cc(F.e), with_cc);
  ck_assert_int_eq(edge_is_windowless(F.e), with_cc);
}

static void
fake_end_free(void)
{
  edge_free(F.e);
  cc_free(F.cc);
  evloop_free_(F.loop);
}

static const uint8_t zeros[RELAY_BODY_MAX * 4];

static int
msg(uint8_t cmd, uint16_t id, const uint8_t *b, uint16_t len)
{
  return edge_handle_stream_msg(F.e, cmd, id, b, len);
}

/* ---- windows ------------------------------------------------------------- */

START_TEST(test_send_windows)
{
  fake_end(_i, 0);
  edge_stream_t *s = edge_stream_new(F.e, 7, &owner_ops, NULL);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_null(edge_stream_new(F.e, 7, &owner_ops, NULL));
  ck_assert_ptr_null(edge_stream_new(F.e, 0, &owner_ops, NULL));
  /* The stream window: 500 cells, then held back. */
  for (int i = 0; i < STREAMWINDOW_START; i++)
    ck_assert_uint_eq(edge_stream_send(s, zeros, RELAY_BODY_MAX),
                      RELAY_BODY_MAX);
  ck_assert_int_eq(edge_stream_can_send(s), 0);
  ck_assert_uint_eq(edge_stream_send(s, zeros, 10), 0);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_DATA], STREAMWINDOW_START);
  /* A stream SENDME reopens it (50 more) and wakes the owner. */
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 7, NULL, 0), 0);
  ck_assert_uint_eq(F.n_writable, 1);
  ck_assert_int_eq(edge_stream_can_send(s), 1);
  /* More SENDMEs than data sent: a violation. */
  for (int i = 0; i < STREAMWINDOW_START / STREAMWINDOW_INCREMENT - 1; i++)
    ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 7, NULL, 0), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 7, NULL, 0), -1);
  ck_assert_str_eq(edge_last_violation(F.e), "unexpected stream SENDME");

  /* The circuit window: 1000 cells over several streams. */
  edge_stream_t *t = edge_stream_new(F.e, 8, &owner_ops, NULL);
  for (int i = 0; i < 500; i++)
    ck_assert_uint_eq(edge_stream_send(t, zeros, 1), 1);
  ck_assert_int_eq(edge_stream_can_send(s), 0); /* circuit window empty */
  edge_stats_t st;
  edge_get_stats(F.e, &st);
  ck_assert_int_eq(st.package_window, 0);
  ck_assert_uint_eq(st.n_streams, 2);
  /* The authenticated SENDME must carry the digest of cell 100. */
  uint8_t dg[SENDME_DIGEST_LEN] = {0}, body[SENDME_V1_LEN];
  /* Cells counted: 500 DATA on s, then 500 on t; stream SENDMEs were
   * received, not sent, so cell k is DATA k. */
  set_u32(dg, 100);
  sendme_encode_v1(body, dg);
  ck_assert_int_eq(edge_circ_sendme(F.e, body, sizeof(body), 0), 0);
  edge_wake(F.e);
  ck_assert_int_eq(edge_stream_can_send(s), 1);
  /* Next expected: cell 200; anything else is refused. */
  set_u32(dg, 201);
  sendme_encode_v1(body, dg);
  ck_assert_int_eq(edge_circ_sendme(F.e, body, sizeof(body), 0), -1);
  ck_assert_str_eq(edge_last_violation(F.e),
                   "authenticated SENDME with a wrong digest");
  body[0] = 2;
  ck_assert_int_eq(edge_circ_sendme(F.e, body, sizeof(body), 0), -1);
  ck_assert_str_eq(edge_last_violation(F.e), "SENDME of an unknown version");
  sendme_encode_v1(body, dg);
  set_u16(body + 1, 300);
  ck_assert_int_eq(edge_circ_sendme(F.e, body, sizeof(body), 0), -1);
  /* v0 is still accepted and uses a digest up. */
  ck_assert_int_eq(edge_circ_sendme(F.e, NULL, 0, 0), 0);
  fake_end_free();
}
END_TEST

START_TEST(test_receive_windows)
{
  fake_end(_i, 0);
  edge_stream_t *s = edge_stream_new(F.e, 3, &owner_ops, NULL);
  uint8_t d = 0;
  /* 100 DATA cells: one v1 circuit SENDME with the 100th cell's digest,
   * and stream SENDMEs every 50 (the owner holds nothing). */
  for (int i = 1; i <= 100; i++) {
    memset(F.recv_digest, i, sizeof(F.recv_digest));
    ck_assert_int_eq(edge_data_arrived(F.e), 0);
    ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 3, &d, 1), 0);
    if (i == 99)
      ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 1); /* stream, 50 */
  }
  ck_assert_uint_eq(F.bytes_in, 100);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 3);
  /* The circuit SENDME came before the 100th cell's stream SENDME. */
  ck_assert_uint_eq(F.last_id, 3);
  /* Check the circuit one by resending the 100th with a held stream. */
  F.pending = 10 * RELAY_BODY_MAX;
  for (int i = 1; i <= 100; i++) {
    memset(F.recv_digest, 0x80 + i, sizeof(F.recv_digest));
    ck_assert_int_eq(edge_data_arrived(F.e), 0);
    if (i == 100) {
      ck_assert_uint_eq(F.last_id, 0);
      ck_assert_uint_eq(F.last_len, SENDME_V1_LEN);
      const uint8_t *dg;
      const char *why;
      ck_assert_int_eq(sendme_parse(F.last_body, F.last_len, &dg, &why), 0);
      ck_assert_uint_eq(dg[0], 0x80 + 100);
    }
    ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 3, &d, 1), 0);
  }
  /* Stream SENDMEs were held back while the owner held ten cells. */
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 4);
  F.pending = 0;
  edge_stream_flushed(s);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 6);
  /* Beyond the stream deliver window: a violation. */
  F.pending = 1 << 20;
  int r = 0;
  for (int i = 0; i <= STREAMWINDOW_START && r == 0; i++)
    r = msg(RELAY_COMMAND_DATA, 3, &d, 1);
  ck_assert_int_eq(r, -1);
  /* Beyond the circuit deliver window (SENDMEs are sent automatically, so
   * empty it by hand through the arithmetic it uses). */
  int w = 0;
  ck_assert_int_eq(edge_window_delivered(&w, CIRCWINDOW_INCREMENT), -1);
  fake_end_free();
}
END_TEST

static void
stop_loop(void *arg)
{
  evloop_exit(arg);
}

/* Without end-to-end circuit windows (a BackTap path, doc/backtap.md):
 * more than 1000 cells leave and arrive without a circuit SENDME either
 * way, a circuit SENDME is a violation, and the stream windows (500, +50
 * per stream SENDME, held back while the owner holds data) stay. */
START_TEST(test_no_circ_windows)
{
  fake_end(_i, 0);
  edge_set_no_circ_windows(F.e, 1);
  ck_assert_int_eq(edge_has_no_circ_windows(F.e), 1);
  ck_assert_int_eq(edge_is_windowless(F.e), 0);
  edge_stream_t *s[3];
  for (int k = 0; k < 3; k++)
    s[k] = edge_stream_new(F.e, (uint16_t)(20 + k), &owner_ops, NULL);
  /* 1500 DATA cells out (three full stream windows), none held back by a
   * circuit window. */
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < STREAMWINDOW_START; i++)
      ck_assert_uint_eq(edge_stream_send(s[k], zeros, 1), 1);
    ck_assert_int_eq(edge_stream_can_send(s[k]), 0); /* stream window */
  }
  ck_assert_uint_eq(F.count[RELAY_COMMAND_DATA], 3 * STREAMWINDOW_START);
  edge_stats_t st;
  edge_get_stats(F.e, &st);
  ck_assert_int_eq(st.package_window, CIRCWINDOW_START); /* untouched */
  ck_assert_int_eq(st.no_circ_windows, 1);
  ck_assert_uint_eq(st.n_data_sent, 3 * STREAMWINDOW_START);
  /* A stream SENDME reopens its stream. */
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 20, NULL, 0), 0);
  ck_assert_int_eq(edge_stream_can_send(s[0]), 1);
  /* A circuit SENDME is not expected. */
  ck_assert_int_eq(edge_circ_sendme(F.e, NULL, 0, 0), -1);
  ck_assert_str_eq(edge_last_violation(F.e),
                   "circuit SENDME on a circuit without end-to-end windows");
  /* 1200 DATA cells in over three streams: no circuit SENDME sent, the
   * stream SENDMEs go as usual (every 50 per stream). */
  memset(F.count, 0, sizeof(F.count));
  uint8_t d = 0;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 400; i++) {
      ck_assert_int_eq(edge_data_arrived(F.e), 0);
      ck_assert_int_eq(msg(RELAY_COMMAND_DATA, (uint16_t)(20 + k), &d, 1),
                       0);
      ck_assert_uint_ne(F.last_id, 0); /* never a circuit SENDME */
    }
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 3 * 400 / 50);
  edge_get_stats(F.e, &st);
  ck_assert_int_eq(st.deliver_window, CIRCWINDOW_START);
  ck_assert_uint_eq(st.n_data_received, 1200);
  ck_assert_uint_eq(st.n_circ_sendmes_sent, 0);
  ck_assert_uint_eq(st.n_circ_sendmes_received, 1); /* the refused one */
  /* ... and beyond a stream's deliver window is still a violation. */
  F.pending = 1 << 20;
  int r = 0;
  for (int i = 0; i <= STREAMWINDOW_START && r == 0; i++)
    r = msg(RELAY_COMMAND_DATA, 20, &d, 1);
  ck_assert_int_eq(r, -1);
  ck_assert_str_eq(edge_last_violation(F.e),
                   "the peer exceeded a stream deliver window");
  /* The exit side's queue towards the client bounds packaging too: a
   * stream with window left waits while EDGE_NOWIN_QUEUE_MAX cells are
   * queued, and edge_wake_soon() lets it go on from the event loop. */
  if (_i == 0) {
    edge_stream_t *q = edge_stream_new(F.e, 30, &owner_ops, NULL);
    F.queued = EDGE_NOWIN_QUEUE_MAX - 1;
    ck_assert_int_eq(edge_stream_can_send(q), 1);
    F.queued = EDGE_NOWIN_QUEUE_MAX;
    ck_assert_int_eq(edge_stream_can_send(q), 0);
    ck_assert_uint_eq(edge_stream_send(q, zeros, 10), 0);
    F.queued = EDGE_NOWIN_QUEUE_MAX / 2 - 1;
    unsigned w = F.n_writable;
    edge_wake_soon(F.e);
    ck_assert_uint_eq(F.n_writable, w); /* not from inside the caller */
    /* Run the loop until the deferred wake came (a timer ends each run;
     * bounded, not timed). */
    evloop_timer_t *stop = evloop_timer_new(F.loop, stop_loop, F.loop);
    for (int k = 0; k < 100 && F.n_writable == w; k++) {
      evloop_timer_schedule(stop, 0);
      evloop_run(F.loop);
    }
    evloop_timer_free(stop);
    ck_assert_uint_eq(F.n_writable, w + 1);
    ck_assert_int_eq(edge_stream_can_send(q), 1);
  }
  /* Restored: the circuit windows start full again. */
  edge_set_no_circ_windows(F.e, 0);
  ck_assert_int_eq(edge_has_no_circ_windows(F.e), 0);
  edge_get_stats(F.e, &st);
  ck_assert_int_eq(st.package_window, CIRCWINDOW_START);
  ck_assert_int_eq(edge_circ_sendme(F.e, NULL, 0, 0), -1); /* window full */
  fake_end_free();
}
END_TEST

/* An end without circuit windows whose owner gives a queue limit (the
 * BackTap hop's window, circ_queue_nowin_limit()): edge_stream_send()
 * stops when the queue reaches that limit, far below EDGE_NOWIN_QUEUE_MAX,
 * whatever the stream window still allows; it follows the limit as it
 * changes; after the queue drained and edge_wake_soon() the stream is
 * told it is writable and goes on, up to the limit again. Both sides (the
 * client's uploads and the exit's downloads) use this same path. */
START_TEST(test_nowin_queue_limit)
{
  memset(&F, 0, sizeof(F));
  F.loop = evloop_new();
  F.client = _i;
  F.e = edge_new(_i ? &limit_ops_client : &limit_ops, &F, F.loop);
  edge_set_no_circ_windows(F.e, 1);
  F.count_queued = 1;
  F.queue_limit = 24;
  edge_stream_t *q = edge_stream_new(F.e, 40, &owner_ops, NULL);
  static uint8_t big[RELAY_BODY_MAX * 100];
  /* 100 cells offered, 24 leave: the limit, not the stream window (500) */
  ck_assert_uint_eq(edge_stream_send(q, big, sizeof(big)),
                    24 * RELAY_BODY_MAX);
  ck_assert_uint_eq(F.queued, 24);
  ck_assert_int_eq(edge_stream_can_send(q), 0);
  /* the window grew: more may wait */
  F.queue_limit = 30;
  ck_assert_int_eq(edge_stream_can_send(q), 1);
  ck_assert_uint_eq(edge_stream_send(q, big, sizeof(big)),
                    6 * RELAY_BODY_MAX);
  ck_assert_uint_eq(F.queued, 30);
  /* it shrank: nothing until the queue is below the new limit */
  F.queue_limit = 16;
  F.queued = 16;
  ck_assert_int_eq(edge_stream_can_send(q), 0);
  ck_assert_uint_eq(edge_stream_send(q, big, RELAY_BODY_MAX), 0);
  /* drained to half, the circuit layer wakes the edge: the stream hears
   * it from the event loop and sends up to the limit again */
  F.queued = 8;
  unsigned w = F.n_writable;
  edge_wake_soon(F.e);
  evloop_timer_t *stop = evloop_timer_new(F.loop, stop_loop, F.loop);
  for (int k = 0; k < 100 && F.n_writable == w; k++) {
    evloop_timer_schedule(stop, 0);
    evloop_run(F.loop);
  }
  evloop_timer_free(stop);
  ck_assert_uint_eq(F.n_writable, w + 1);
  ck_assert_uint_eq(edge_stream_send(q, big, sizeof(big)),
                    8 * RELAY_BODY_MAX);
  ck_assert_uint_eq(F.queued, 16);
  /* 24 + 6 + 8 DATA cells in all; no circuit SENDME either way */
  ck_assert_uint_eq(F.count[RELAY_COMMAND_DATA], 38);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], 0);
  edge_free(F.e);
  evloop_free_(F.loop);
}
END_TEST

/* ---- half-closed streams --------------------------------------------------- */

START_TEST(test_half_closed)
{
  fake_end(_i, 0);
  edge_stream_t *s = edge_stream_new(F.e, 5, &owner_ops, NULL);
  edge_stream_send_msg(s, RELAY_COMMAND_CONNECTED, NULL, 0);
  for (int i = 0; i < 120; i++)
    edge_stream_send(s, zeros, 1);
  uint8_t d = 0;
  for (int i = 0; i < 10; i++)
    msg(RELAY_COMMAND_DATA, 5, &d, 1);
  edge_stream_end(s, END_STREAM_REASON_DONE);
  ck_assert_uint_eq(F.last_cmd, RELAY_COMMAND_END);
  ck_assert_uint_eq(F.last_body[0], END_STREAM_REASON_DONE);
  ck_assert_int_eq(edge_is_half_closed(F.e, 5), 1);
  ck_assert_uint_eq(F.n_end, 0); /* our own END: no callback */
  /* What the peer may still send: 490 DATA, 2 SENDMEs (120 cells sent
   * unacknowledged), one END. */
  for (int i = 0; i < 490; i++)
    ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 5, &d, 1), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 5, NULL, 0), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 5, NULL, 0), 0);
  edge_stats_t st;
  edge_get_stats(F.e, &st);
  ck_assert_uint_eq(st.n_cells_half_closed, 492);
  ck_assert_uint_eq(st.n_cells_invalid, 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 5, &d, 1), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 5, NULL, 0), 0);
  edge_get_stats(F.e, &st);
  ck_assert_uint_eq(st.n_cells_invalid, 2); /* dropped, circuit kept */
  ck_assert_int_eq(msg(RELAY_COMMAND_END, 5, &d, 1), 0);
  ck_assert_int_eq(edge_is_half_closed(F.e, 5), 0);
  edge_get_stats(F.e, &st);
  ck_assert_uint_eq(st.n_cells_half_closed, 493);
  ck_assert_uint_eq(st.n_half_closed, 0);

  /* A stream ended before CONNECTED: the client may still get one. */
  edge_stream_t *u = edge_stream_new(F.e, 6, &owner_ops, NULL);
  edge_stream_end(u, END_STREAM_REASON_DONE);
  ck_assert_int_eq(msg(RELAY_COMMAND_CONNECTED, 6, NULL, 0), 0);
  edge_get_stats(F.e, &st);
  ck_assert_uint_eq(st.n_cells_half_closed, 493 + (F.client ? 1 : 0));
  ck_assert_uint_eq(st.n_cells_invalid, 2 + (F.client ? 0 : 1));
  ck_assert_uint_eq(F.n_connected, 0);

  /* Our own IDs skip open and half-closed ones. */
  edge_stream_t *v = edge_stream_new_next(F.e, &owner_ops, NULL);
  ck_assert_ptr_nonnull(v);
  ck_assert_uint_ne(edge_stream_id(v), 0);
  ck_assert_uint_ne(edge_stream_id(v), 6);
  /* The peer reusing a half-closed ID drops the record. */
  ck_assert_ptr_nonnull(edge_stream_new(F.e, 6, &owner_ops, NULL));
  ck_assert_int_eq(edge_is_half_closed(F.e, 6), 0);
  /* The peer's END reaches the owner; the circuit going away too. */
  ck_assert_int_eq(msg(RELAY_COMMAND_END, 6, (const uint8_t *)"\x03", 1),
                   0);
  ck_assert_uint_eq(F.n_end, 1);
  ck_assert_uint_eq(F.end_reason, 3);
  edge_free(F.e);
  ck_assert_uint_eq(F.n_end, 2);
  ck_assert_uint_eq(F.end_reason, END_STREAM_REASON_DESTROY);
  cc_free(F.cc);
  evloop_free_(F.loop);
}
END_TEST

/* RESOLVED goes to on_resolved with its body, then the stream is gone,
 * leaving a half-closed record and sending nothing; without the op it is
 * ignored and the stream stays. */
static unsigned n_resolved;
static uint8_t resolved_first;
static void
o_resolved(edge_stream_t *s, const uint8_t *b, size_t n, void *arg)
{
  (void)s;
  (void)arg;
  n_resolved++;
  resolved_first = n ? b[0] : 0xff;
}
static const edge_stream_ops_t resolve_ops = {.on_end = o_end,
                                              .on_resolved = o_resolved};

START_TEST(test_resolved)
{
  fake_end(1, 0);
  n_resolved = 0;
  edge_stream_t *s = edge_stream_new_next(F.e, &resolve_ops, NULL);
  uint16_t id = edge_stream_id(s);
  edge_stream_send_msg(s, RELAY_COMMAND_RESOLVE, (const uint8_t *)"x\0", 2);
  uint8_t last = F.last_cmd;
  const uint8_t ans[] = {4, 4, 127, 0, 0, 1, 0, 0, 0, 60};
  ck_assert_int_eq(msg(RELAY_COMMAND_RESOLVED, id, ans, sizeof(ans)), 0);
  ck_assert_uint_eq(n_resolved, 1);
  ck_assert_uint_eq(resolved_first, 4);
  ck_assert_ptr_null(edge_stream_find(F.e, id));
  ck_assert_int_eq(edge_is_half_closed(F.e, id), 1);
  ck_assert_uint_eq(F.last_cmd, last); /* no END sent */
  ck_assert_uint_eq(F.n_end, 0);
  /* A second RESOLVED: absorbed by the record, not delivered. */
  ck_assert_int_eq(msg(RELAY_COMMAND_RESOLVED, id, ans, sizeof(ans)), 0);
  ck_assert_uint_eq(n_resolved, 1);
  /* Streams without the op ignore RESOLVED. */
  edge_stream_t *t = edge_stream_new_next(F.e, &owner_ops, NULL);
  uint16_t tid = edge_stream_id(t);
  ck_assert_int_eq(msg(RELAY_COMMAND_RESOLVED, tid, ans, sizeof(ans)), 0);
  ck_assert_ptr_eq(edge_stream_find(F.e, tid), t);
  fake_end_free();
}
END_TEST

/* ---- congestion control: XON/XOFF ---------------------------------------- */

START_TEST(test_xon_xoff)
{
  fake_end(_i, 1);
  edge_stream_t *s = edge_stream_new(F.e, 9, &owner_ops, NULL);
  /* No stream windows: a stream SENDME is a violation. */
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 9, NULL, 0), -1);
  /* Sending stops at XOFF and resumes at XON. */
  ck_assert_uint_eq(edge_stream_send(s, zeros, 3 * RELAY_BODY_MAX),
                    3 * RELAY_BODY_MAX);
  uint8_t xoff[CC_XOFF_LEN], xon[CC_XON_LEN];
  cc_flow_encode_xoff(xoff);
  cc_flow_encode_xon(xon, 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_XOFF, 9, xoff, sizeof(xoff)), 0);
  ck_assert_int_eq(edge_stream_can_send(s), 0);
  ck_assert_uint_eq(edge_stream_send(s, zeros, 10), 0);
  edge_stream_info_t in;
  edge_stream_get_info(s, &in);
  ck_assert_int_eq(in.xoff_received, 1);
  ck_assert_int_eq(in.blocked, 1);
  /* A malformed XON is ignored. */
  uint8_t bad[CC_XON_LEN] = {1, 0, 0, 0, 0};
  ck_assert_int_eq(msg(RELAY_COMMAND_XON, 9, bad, sizeof(bad)), 0);
  ck_assert_int_eq(edge_stream_can_send(s), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_XON, 9, xon, sizeof(xon)), 0);
  ck_assert_int_eq(edge_stream_can_send(s), 1);
  ck_assert_uint_eq(F.n_writable, 1);
  /* Arriving data the owner cannot pass on: XOFF once past the limit, XON
   * once drained. */
  const cc_t *cc = edge_cc(F.e);
  size_t limit = F.client ? cc->p.xoff_client_bytes : cc->p.xoff_exit_bytes;
  F.pending = limit + 1;
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 100), 0);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_XOFF], 1);
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 100), 0);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_XOFF], 1);
  unsigned xons = F.count[RELAY_COMMAND_XON];
  F.pending = 0;
  edge_stream_flushed(s);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_XON], xons + 1);
  ck_assert_uint_eq(F.last_cmd, RELAY_COMMAND_XON);
  /* With a controller the circuit SENDMEs come every sendme_inc cells. */
  unsigned sm = F.count[RELAY_COMMAND_SENDME];
  for (int i = 0; i < 31; i++)
    ck_assert_int_eq(edge_data_arrived(F.e), 0);
  ck_assert_uint_eq(F.count[RELAY_COMMAND_SENDME], sm + 1);
  ck_assert_uint_eq(F.last_len, SENDME_V1_LEN);
  /* A circuit SENDME nothing asked for: refused where the edge runs the
   * controller (exit side); on the client side core has checked it. */
  ck_assert_int_eq(edge_circ_sendme(F.e, NULL, 0, 0), F.client ? 0 : -1);
  fake_end_free();
}
END_TEST

/* A peer that goes on sending to an owner holding EDGE_STREAM_MAX_PENDING
 * bytes it cannot pass on (a destination that does not read, a client
 * ignoring XOFF) gets the stream ended with RESOURCELIMIT; the owner hears
 * it first so that it drops what it holds. */
START_TEST(test_pending_cap)
{
  fake_end(_i, 1);
  uint64_t ended0 = edge_streams_ended_over_pending();
  edge_stream_t *s = edge_stream_new(F.e, 9, &owner_ops, NULL);
  ck_assert_ptr_nonnull(s);
  F.pending = EDGE_STREAM_MAX_PENDING - 100;
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 100), 0);
  ck_assert_uint_eq(F.bytes_in, 100);
  ck_assert_uint_eq(F.n_end, 0);
  F.pending = EDGE_STREAM_MAX_PENDING;
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 1), 0);
  ck_assert_uint_eq(F.bytes_in, 100); /* not delivered */
  ck_assert_uint_eq(F.n_end, 1);
  ck_assert_uint_eq(F.end_reason, END_STREAM_REASON_RESOURCELIMIT);
  ck_assert_uint_eq(F.last_cmd, RELAY_COMMAND_END);
  ck_assert_uint_eq(F.last_body[0], END_STREAM_REASON_RESOURCELIMIT);
  ck_assert_ptr_null(edge_stream_find(F.e, 9));
  ck_assert_uint_eq(edge_streams_ended_over_pending(), ended0 + 1);
  /* What the peer still sends on it is dropped as half-closed. */
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 10), 0);
  ck_assert_uint_eq(F.bytes_in, 100);
  fake_end_free();
}
END_TEST

static int
f_mux_yes(void *end)
{
  (void)end;
  return 1;
}

static size_t
f_mux_burst(void *end)
{
  (void)end;
  return 100000;
}

/* A multiplexed (conflux) end may deliver its whole reordering queue at
 * once: its burst bound adds to the cap, and the cap still holds. */
START_TEST(test_pending_cap_mux)
{
  static const edge_end_ops_t mux_ops = {
      f_send, f_last_digest, NULL, f_mux_yes, f_mux_yes, 0, f_mux_burst, NULL,
      NULL,
  };
  memset(&F, 0, sizeof(F));
  F.loop = evloop_new();
  F.e = edge_new(&mux_ops, &F, F.loop);
  edge_stream_t *s = edge_stream_new(F.e, 9, &owner_ops, NULL);
  ck_assert_ptr_nonnull(s);
  F.pending = EDGE_STREAM_MAX_PENDING + 100000 - 100;
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 100), 0);
  ck_assert_uint_eq(F.bytes_in, 100);
  ck_assert_uint_eq(F.n_end, 0);
  F.pending = EDGE_STREAM_MAX_PENDING + 100000;
  ck_assert_int_eq(msg(RELAY_COMMAND_DATA, 9, zeros, 1), 0);
  ck_assert_uint_eq(F.bytes_in, 100);
  ck_assert_uint_eq(F.n_end, 1);
  ck_assert_uint_eq(F.end_reason, END_STREAM_REASON_RESOURCELIMIT);
  fake_end_free();
}
END_TEST

START_TEST(test_xon_without_cc_ignored)
{
  fake_end(_i, 0);
  edge_stream_t *s = edge_stream_new(F.e, 2, &owner_ops, NULL);
  uint8_t xoff[CC_XOFF_LEN];
  cc_flow_encode_xoff(xoff);
  ck_assert_int_eq(msg(RELAY_COMMAND_XOFF, 2, xoff, sizeof(xoff)), 0);
  ck_assert_int_eq(edge_stream_can_send(s), 1);
  fake_end_free();
}
END_TEST

/* ---- the stream table ---------------------------------------------------- */

static void
count_stream(const edge_stream_t *s, void *arg)
{
  struct {
    unsigned n;
    uint16_t first, last;
  } *seen = arg;
  edge_stream_info_t in;
  edge_stream_get_info(s, &in);
  ck_assert_uint_eq(in.id, edge_stream_id(s));
  ck_assert_int_eq(in.package_window, STREAMWINDOW_START);
  if (seen->n++ == 0)
    seen->first = in.id;
  seen->last = in.id;
}

START_TEST(test_many_streams)
{
  fake_end(_i, 0);
  uint64_t counted0 = memacct_get(MEMACCT_STREAMS);
  for (unsigned id = 1; id <= MAX_IDS; id++)
    ck_assert_ptr_nonnull(edge_stream_new(F.e, (uint16_t)id, &owner_ops,
                                          NULL));
  for (unsigned id = 1; id <= MAX_IDS; id++) {
    edge_stream_t *s = edge_stream_find(F.e, (uint16_t)id);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(edge_stream_id(s), id);
    ck_assert_ptr_eq(edge_stream_edge(s), F.e);
  }
  ck_assert_ptr_null(edge_stream_find(F.e, MAX_IDS + 1));
  /* Each stream record counts in the memory budget. */
  ck_assert_uint_ge(memacct_get(MEMACCT_STREAMS) - counted0,
                    MAX_IDS * (uint64_t)64);
  /* Observers see every stream, oldest first. */
  struct {
    unsigned n;
    uint16_t first, last;
  } seen = {0, 0, 0};
  edge_foreach_stream(F.e, count_stream, &seen);
  ck_assert_uint_eq(seen.n, MAX_IDS);
  ck_assert_uint_eq(seen.first, 1);
  ck_assert_uint_eq(seen.last, MAX_IDS);
  for (unsigned id = 2; id <= MAX_IDS; id += 2)
    edge_stream_forget(edge_stream_find(F.e, (uint16_t)id));
  edge_stats_t st;
  edge_get_stats(F.e, &st);
  ck_assert_uint_eq(st.n_streams, MAX_IDS / 2);
  ck_assert_ptr_null(edge_stream_find(F.e, 2));
  ck_assert_ptr_nonnull(edge_stream_find(F.e, 3));
  /* Moving streams to another end keeps them findable there. */
  edge_t *to = edge_new(&exit_side_ops, &F, F.loop);
  edge_move_streams(F.e, to);
  ck_assert_ptr_null(edge_stream_find(F.e, 3));
  ck_assert_ptr_eq(edge_stream_edge(edge_stream_find(to, 3)), to);
  edge_free(to);
  fake_end_free();
}
END_TEST

/* An owner ending another stream from on_writable must not break the
 * wake-up loop. */
START_TEST(test_wake_survives_ends)
{
  fake_end(_i, 0);
  edge_stream_t *a = edge_stream_new(F.e, 1, &owner_ops, NULL);
  edge_stream_t *b = edge_stream_new(F.e, 2, &owner_ops, NULL);
  for (int i = 0; i < STREAMWINDOW_START; i++)
    edge_stream_send(a, zeros, 1);
  for (int i = 0; i < STREAMWINDOW_START; i++)
    edge_stream_send(b, zeros, 1);
  ck_assert_uint_eq(edge_stream_send(a, zeros, 1), 0);
  ck_assert_uint_eq(edge_stream_send(b, zeros, 1), 0);
  /* Both blocked by the circuit window (1000 sent). */
  F.other = b;
  F.end_forgets_other = 1;
  uint8_t dg[SENDME_DIGEST_LEN] = {0}, body[SENDME_V1_LEN];
  set_u32(dg, 100);
  sendme_encode_v1(body, dg);
  ck_assert_int_eq(edge_circ_sendme(F.e, body, sizeof(body), 0), 0);
  ck_assert_int_eq(msg(RELAY_COMMAND_SENDME, 1, NULL, 0), 0);
  ck_assert_uint_eq(F.n_writable, 1);
  ck_assert_ptr_null(F.other);
  ck_assert_ptr_null(edge_stream_find(F.e, 2));
  fake_end_free();
}
END_TEST

/* ---- single-slot hooks refuse a second subscriber ------------------------
 * (the multiplexer hooks of circuit.h and relay.h, channel upcalls). */

static or_circuit_t *
h_pick(or_circuit_t *c, uint8_t cmd)
{
  (void)cmd;
  return c;
}
static void
h_sent(or_circuit_t *c, uint8_t cmd)
{
  (void)c;
  (void)cmd;
}
static int
h_can(or_circuit_t *c)
{
  (void)c;
  return 1;
}
static or_circuit_t *
h_home(or_circuit_t *c)
{
  return c;
}
static int
h_in1(or_circuit_t *c, const relay_header_t *h, const uint8_t *b)
{
  (void)c;
  (void)h;
  (void)b;
  return 0;
}
static int
h_in2(or_circuit_t *c, const relay_header_t *h, const uint8_t *b)
{
  (void)c;
  (void)h;
  (void)b;
  return -1;
}

static void
vc1(channel_t *chan, const var_cell_t *vc)
{
  (void)chan;
  (void)vc;
}
static void
vc2(channel_t *chan, const var_cell_t *vc)
{
  (void)chan;
  (void)vc;
}

START_TEST(test_mux_hooks_refuse_second)
{
  static const circuit_mux_ops_t a = {h_pick, h_sent, h_can, h_home, NULL};
  static const circuit_mux_ops_t b = {h_pick, h_sent, h_can, h_home, NULL};
  const circuit_mux_ops_t *before = circuits_mux_ops();
  ck_assert_ptr_null(before); /* nothing registered in the unit tests */
  ck_assert_int_eq(circuits_set_mux_ops(&a), 0);
  ck_assert_int_eq(circuits_set_mux_ops(&a), 0);
  ck_assert_int_eq(circuits_set_mux_ops(&b), -1);
  ck_assert_ptr_eq(circuits_mux_ops(), &a);
  ck_assert_int_eq(circuits_set_mux_ops(NULL), 0);
  ck_assert_int_eq(circuits_set_mux_ops(&b), 0);
  ck_assert_int_eq(circuits_set_mux_ops(NULL), 0);
  ck_assert_int_eq(relay_set_mux_inbound(h_in1), 0);
  ck_assert_int_eq(relay_set_mux_inbound(h_in2), -1);
  ck_assert_int_eq(relay_set_mux_inbound(NULL), 0);
  ck_assert_int_eq(relay_set_mux_inbound(h_in2), 0);
  ck_assert_int_eq(relay_set_mux_inbound(NULL), 0);
  /* Channels' upcalls: one set. */
  static const channel_upcalls_t u1 = {NULL, NULL, NULL};
  static const channel_upcalls_t u2 = {NULL, NULL, NULL};
  ck_assert_int_eq(channels_set_upcalls(&u1), 0);
  ck_assert_int_eq(channels_set_upcalls(&u1), 0);
  ck_assert_int_eq(channels_set_upcalls(&u2), -1);
  ck_assert_int_eq(channels_set_upcalls(NULL), 0);
  ck_assert_int_eq(channels_set_upcalls(&u2), 0);
  ck_assert_int_eq(channels_set_upcalls(NULL), 0);
  /* Variable-length cell handlers: one a command (250 is nobody's). */
  ck_assert_int_eq(channel_register_var_cell_handler(250, vc1), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(250, vc1), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(250, vc2), -1);
  ck_assert_int_eq(channel_register_var_cell_handler(251, vc2), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(250, NULL), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(250, vc2), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(250, NULL), 0);
  ck_assert_int_eq(channel_register_var_cell_handler(251, NULL), 0);
}
END_TEST

static void
obs1(origin_circuit_t *c, void *arg)
{
  (void)c;
  (void)arg;
}

static void
obs2(origin_circuit_t *c, void *arg)
{
  (void)c;
  (void)arg;
}

static void
count_refusals(log_severity_t sev, const char *msg, void *arg)
{
  if (sev == LOG_SEV_WARN && strstr(msg, "second observer of our own circuits"))
    ++*(int *)arg;
}

/* The observer of our own circuits is one slot, like the multiplexer: a
 * second subscriber is refused with a warning instead of silently taking
 * the place of the first. */
START_TEST(test_origin_observer_refuse_second)
{
  int warned = 0, a = 0, b = 0;
  log_set_hook(LOG_SEV_WARN, count_refusals, &warned);
  ck_assert_int_eq(circuits_set_origin_observer(obs1, &a), 0);
  ck_assert_int_eq(circuits_set_origin_observer(obs1, &a), 0); /* same */
  ck_assert_int_eq(warned, 0);
  ck_assert_int_eq(circuits_set_origin_observer(obs2, &a), -1);
  ck_assert_int_eq(warned, 1);
  ck_assert_int_eq(circuits_set_origin_observer(obs1, &b), -1); /* arg */
  ck_assert_int_eq(warned, 2);
  ck_assert_int_eq(circuits_set_origin_observer(NULL, NULL), 0);
  ck_assert_int_eq(circuits_set_origin_observer(obs2, &b), 0);
  ck_assert_int_eq(circuits_set_origin_observer(obs1, &a), -1);
  ck_assert_int_eq(circuits_set_origin_observer(NULL, NULL), 0);
  ck_assert_int_eq(circuits_set_origin_observer(NULL, NULL), 0);
  ck_assert_int_eq(warned, 3);
  log_set_hook(LOG_SEV_ERR, NULL, NULL);
}
END_TEST

Suite *
suite_edge(void)
{
  Suite *s = suite_create("edge");
  TCase *tc = tcase_create("sendme");
  tcase_add_test(tc, test_sendme_parse);
  tcase_add_test(tc, test_sendme_digests);
  tcase_add_test(tc, test_window_arithmetic);
  suite_add_tcase(s, tc);
  tc = tcase_create("end");
  /* _i: 0 exit-side owner, 1 client-side owner. */
  tcase_add_loop_test(tc, test_send_windows, 0, 2);
  tcase_add_loop_test(tc, test_receive_windows, 0, 2);
  tcase_add_loop_test(tc, test_no_circ_windows, 0, 2);
  tcase_add_loop_test(tc, test_half_closed, 0, 2);
  tcase_add_test(tc, test_resolved);
  tcase_add_loop_test(tc, test_xon_xoff, 0, 2);
  tcase_add_test(tc, test_pending_cap_mux);
  tcase_add_loop_test(tc, test_nowin_queue_limit, 0, 2);
  tcase_add_loop_test(tc, test_pending_cap, 0, 2);
  tcase_add_loop_test(tc, test_xon_without_cc_ignored, 0, 2);
  tcase_add_loop_test(tc, test_many_streams, 0, 2);
  tcase_add_loop_test(tc, test_wake_survives_ends, 0, 2);
  suite_add_tcase(s, tc);
  tc = tcase_create("hooks");
  tcase_add_test(tc, test_mux_hooks_refuse_second);
  tcase_add_test(tc, test_origin_observer_refuse_second);
  suite_add_tcase(s, tc);
  return s;
}
