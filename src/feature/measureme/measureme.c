/* SPDX-License-Identifier: BSD-3-Clause */
/* measureme.c -- recording per-circuit statistics on request (see
 * measureme.h).
 *
 * State: one mm_circ_t per circuit that asked (found by gid in a hash,
 * and holding the circuit itself, which the close observer lets go of
 * before the circuit is freed), one mm_client_t per client address (a
 * hash on the address). Measured circuits are also on a list that the
 * timer walks: one tick every MEASUREME_MIN_INTERVAL_MS while anything is
 * measured, O(1) per measured circuit, each writing when its own interval
 * has passed. Figures that are totals in core (cells sent, time cells
 * waited) are turned into per-interval values from the previous record's.
 *
 * Rate limits are token buckets in thousandths of a request, refilled
 * from the time since their last use. A client entry whose bucket is full
 * and that measures nothing carries no information and is dropped by a
 * sweep once a minute; a circuit's entry goes with the circuit.
 *
 * The record file: written with stdio, its size tracked from the bytes
 * written (no ftell, which is a system call on a file opened to append);
 * at log_max_size it is renamed to measureme.jsonl.1 and a new one is
 * started. A tick's records go out in one flush after the tick (a record
 * written outside a tick is flushed at once), not one write each.
 *
 * Answers: every request gets one status answer (so a client cannot make
 * the relay send more answer cells than it sent requests); a measured
 * circuit's records are also kept, in the answer's binary form, in a
 * batch inside its mm_circ_t (bounded: MEASUREME_ANSWER_MAX_RECORDS, so
 * the entry's size, counted in the budget, is fixed) that goes back in one
 * cell when full or a second after its oldest record. A circuit that
 * closes takes its unsent batch with it: the last records are only in the
 * file.
 */
#include "feature/measureme/measureme.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/congestion_control.h"
#include "core/or/relay.h"
#include "core/or/scheduler.h"
#include "core/or/stream.h"
#include "lib/bytes/bytes.h"
#include "lib/container/dlist.h"
#include "lib/container/hmap.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"
#include "lib/net/sockstat.h"

#define TOKEN 1000ULL /* one request, in bucket units */
#define CLIENT_SWEEP_USEC (60 * 1000000ULL)

typedef struct mm_queue_prev_t {
  uint64_t sent, waited_us;
} mm_queue_prev_t;

typedef struct bucket_t {
  uint64_t tokens;  /* thousandths of a request */
  uint64_t last_us;
} bucket_t;

typedef struct mm_client_t {
  uint8_t key[17];
  bucket_t bucket;
  unsigned n_active;
} mm_client_t;

typedef struct mm_circ_t {
  uint64_t gid;
  or_circuit_t *circ;
  mm_client_t *client;  /* while active */
  bucket_t bucket;
  int active;
  dlist_node_t active_node;
  uint8_t label[8];
  uint64_t interval_us, next_us, end_us; /* end 0: until closed */
  uint64_t seq;
  mm_queue_prev_t prev_n, prev_p;
  uint64_t prev_fwd, prev_bwd;
  uint64_t started_us;
  /* Records not yet sent back; batch_since_us: when the oldest was made. */
  unsigned n_batch;
  uint64_t batch_since_us;
  measureme_answer_record_t batch[MEASUREME_ANSWER_MAX_RECORDS];
} mm_circ_t;

static struct {
  int initialised;
  evloop_t *loop;
  measureme_config_t cfg;
  char *path, *path_old;
  FILE *f;
  uint64_t file_size;
  int unflushed; /* records written to f since its last fflush */
  hmap_t *circs;    /* gid (8 bytes) -> mm_circ_t */
  hmap_t *clients;  /* family + address (17 bytes) -> mm_client_t */
  dlist_t active;
  unsigned n_active;
  evloop_timer_t *timer;
  uint64_t last_client_sweep_us;
  uint64_t n_records;
  uint64_t n_answers;
  unsigned garbage_turn; /* __MeasureMeGarbageAnswers: the next fault */
  measureme_answer_sender_fn sender;
  measureme_stats_t st;
} M;

void
measureme_config_default(measureme_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->log_max_size = MEASUREME_DEFAULT_LOG_MAX_SIZE;
  cfg->client_rate = MEASUREME_DEFAULT_CLIENT_RATE;
  cfg->client_burst = MEASUREME_DEFAULT_CLIENT_BURST;
}

/* Refill b (burst requests, one per refill_us) and take one request. */
static int
bucket_take(bucket_t *b, uint64_t burst, uint64_t refill_us, uint64_t now)
{
  uint64_t cap = burst * TOKEN;
  if (now > b->last_us && refill_us) {
    uint64_t add = (now - b->last_us) * TOKEN / refill_us;
    b->tokens = add >= cap - b->tokens ? cap : b->tokens + add;
  }
  b->last_us = now;
  if (b->tokens < TOKEN)
    return -1;
  b->tokens -= TOKEN;
  return 0;
}

static uint64_t
client_refill_us(void)
{
  return M.cfg.client_rate ? 60000000ULL / M.cfg.client_rate : 0;
}

void
measureme_request_encode(uint8_t out[MEASUREME_BODY_LEN],
                         const measureme_request_t *req)
{
  out[0] = MEASUREME_VERSION;
  out[1] = 0;
  set_u16(out + 2, req->interval_ms);
  set_u32(out + 4, req->duration_s);
  memcpy(out + 8, req->label, 8);
}

int
measureme_request_parse(const uint8_t *body, size_t len,
                        measureme_request_t *out, const char **err)
{
  if (len < MEASUREME_BODY_LEN) {
    *err = "body too short";
    return -1;
  }
  if (body[0] != MEASUREME_VERSION) {
    *err = "unknown version";
    return -1;
  }
  uint16_t iv = get_u16(body + 2);
  uint32_t dur = get_u32(body + 4);
  if (iv < MEASUREME_MIN_INTERVAL_MS || iv > MEASUREME_MAX_INTERVAL_MS) {
    *err = "interval out of range (100 to 60000 ms)";
    return -1;
  }
  if (dur > MEASUREME_MAX_DURATION_S) {
    *err = "duration longer than a day";
    return -1;
  }
  out->interval_ms = iv;
  out->duration_s = dur;
  memcpy(out->label, body + 8, 8);
  return 0;
}

static const char *const result_names[MEASUREME_N_RESULTS] = {
    [MEASUREME_ACCEPTED] = "accepted",
    [MEASUREME_REFUSED_DISABLED] = "disabled",
    [MEASUREME_REFUSED_MALFORMED] = "malformed",
    [MEASUREME_REFUSED_BUSY] = "busy",
    [MEASUREME_REFUSED_CIRCUIT_RATE] = "circuit_rate",
    [MEASUREME_REFUSED_CLIENT_RATE] = "client_rate",
    [MEASUREME_REFUSED_CLIENT_MAX] = "client_max",
    [MEASUREME_REFUSED_FULL] = "full"};

const char *
measureme_result_name(unsigned r)
{
  return r < MEASUREME_N_RESULTS ? result_names[r] : NULL;
}

static uint8_t *
put_queue(uint8_t *p, const measureme_answer_queue_t *q)
{
  set_u32(p, q->queued);
  set_u32(p + 4, q->sent);
  set_u32(p + 8, q->delay_avg_us);
  set_u32(p + 12, q->delay_max_us);
  return p + 16;
}

static const uint8_t *
get_queue(const uint8_t *p, measureme_answer_queue_t *q)
{
  q->queued = get_u32(p);
  q->sent = get_u32(p + 4);
  q->delay_avg_us = get_u32(p + 8);
  q->delay_max_us = get_u32(p + 12);
  return p + 16;
}

size_t
measureme_answer_encode(uint8_t out[MEASUREME_ANSWER_MAX_LEN],
                        const measureme_answer_t *a)
{
  out[0] = MEASUREME_VERSION;
  out[1] = a->type;
  memcpy(out + 2, a->label, 8);
  if (a->type == MEASUREME_ANSWER_STATUS) {
    if (a->result >= MEASUREME_N_RESULTS)
      return 0;
    out[MEASUREME_ANSWER_HEADER_LEN] = a->result;
    return MEASUREME_ANSWER_STATUS_LEN;
  }
  if (a->type != MEASUREME_ANSWER_RECORDS || a->n_records < 1 ||
      a->n_records > MEASUREME_ANSWER_MAX_RECORDS)
    return 0;
  out[MEASUREME_ANSWER_HEADER_LEN] = (uint8_t)a->n_records;
  uint8_t *p = out + MEASUREME_ANSWER_HEADER_LEN + 1;
  for (unsigned i = 0; i < a->n_records; i++) {
    const measureme_answer_record_t *r = &a->records[i];
    set_u32(p, r->seq);
    set_u32(p + 4, r->offset_ms);
    set_u32(p + 8, r->cells_fwd);
    set_u32(p + 12, r->cells_bwd);
    p = put_queue(put_queue(p + 16, &r->fwd), &r->bwd);
  }
  return (size_t)(p - out);
}

int
measureme_answer_parse(const uint8_t *body, size_t len,
                       measureme_answer_t *out, const char **err)
{
  memset(out, 0, sizeof(*out));
  if (len < MEASUREME_ANSWER_STATUS_LEN) {
    *err = "answer too short";
    return -1;
  }
  if (body[0] != MEASUREME_VERSION) {
    *err = "unknown answer version";
    return -1;
  }
  out->type = body[1];
  memcpy(out->label, body + 2, 8);
  uint8_t v = body[MEASUREME_ANSWER_HEADER_LEN];
  if (out->type == MEASUREME_ANSWER_STATUS) {
    if (v >= MEASUREME_N_RESULTS) {
      *err = "unknown result in a status answer";
      return -1;
    }
    out->result = v;
    return 0;
  }
  if (out->type != MEASUREME_ANSWER_RECORDS) {
    *err = "unknown answer type";
    return -1;
  }
  if (v < 1 || v > MEASUREME_ANSWER_MAX_RECORDS) {
    *err = "record count out of range (1 to 10)";
    return -1;
  }
  if (len < MEASUREME_ANSWER_HEADER_LEN + 1 +
                (size_t)v * MEASUREME_ANSWER_RECORD_LEN) {
    *err = "answer shorter than its records";
    return -1;
  }
  out->n_records = v;
  const uint8_t *p = body + MEASUREME_ANSWER_HEADER_LEN + 1;
  for (unsigned i = 0; i < v; i++) {
    measureme_answer_record_t *r = &out->records[i];
    r->seq = get_u32(p);
    r->offset_ms = get_u32(p + 4);
    r->cells_fwd = get_u32(p + 8);
    r->cells_bwd = get_u32(p + 12);
    p = get_queue(get_queue(p + 16, &r->fwd), &r->bwd);
  }
  return 0;
}

/* ---- answers -------------------------------------------------------- */

void
measureme_set_answer_sender(measureme_answer_sender_fn fn)
{
  M.sender = fn;
}

uint64_t
measureme_n_answers(void)
{
  return M.n_answers;
}

/* __MeasureMeGarbageAnswers (tests): a bad copy of the answer body just
 * sent, a different fault each time. */
static void
send_garbage(or_circuit_t *circ, const uint8_t *good, size_t len)
{
  uint8_t body[MEASUREME_ANSWER_MAX_LEN];
  memcpy(body, good, len);
  switch (M.garbage_turn++ % 4) {
  case 0:
    body[2] ^= 0xff; /* another label */
    break;
  case 1:
    body[0] = 0x7f; /* an unknown version */
    break;
  case 2:
    body[1] = 9; /* an unknown type */
    break;
  default: /* records cut short, or a count out of range */
    if (body[1] == MEASUREME_ANSWER_RECORDS)
      len--;
    else
      body[MEASUREME_ANSWER_HEADER_LEN] = 0xee;
    break;
  }
  int r = M.sender ? M.sender(circ, body, len)
                   : or_circuit_send_relay(circ,
                                           RELAY_COMMAND_MEASUREME_ANSWER, 0,
                                           body, (uint16_t)len);
  if (r == 0)
    log_info("MeasureMe: sent a garbage answer on circuit %" PRIu64
             " (__MeasureMeGarbageAnswers)", circ->base.gid);
}

static void
send_answer(or_circuit_t *circ, const measureme_answer_t *a)
{
  uint8_t body[MEASUREME_ANSWER_MAX_LEN];
  size_t len = measureme_answer_encode(body, a);
  if (!len) {
    log_bug("MeasureMe: an answer that does not encode");
    return;
  }
  int r = M.sender ? M.sender(circ, body, len)
                   : or_circuit_send_relay(circ,
                                           RELAY_COMMAND_MEASUREME_ANSWER, 0,
                                           body, (uint16_t)len);
  if (r < 0) {
    log_info("MeasureMe: could not answer on circuit %" PRIu64,
             circ->base.gid);
    return;
  }
  M.n_answers++;
  if (M.cfg.garbage_answers)
    send_garbage(circ, body, len);
}

static void
send_status(or_circuit_t *circ, const uint8_t label[8],
            measureme_result_t result)
{
  measureme_answer_t a;
  memset(&a, 0, sizeof(a));
  a.type = MEASUREME_ANSWER_STATUS;
  memcpy(a.label, label, 8);
  a.result = (uint8_t)result;
  send_answer(circ, &a);
}

/* Send r's waiting records back (nothing if none). */
static void
flush_batch(mm_circ_t *r)
{
  if (!r->n_batch)
    return;
  measureme_answer_t a;
  memset(&a, 0, sizeof(a));
  a.type = MEASUREME_ANSWER_RECORDS;
  memcpy(a.label, r->label, 8);
  a.n_records = r->n_batch;
  memcpy(a.records, r->batch, r->n_batch * sizeof(r->batch[0]));
  r->n_batch = 0;
  send_answer(r->circ, &a);
}

static uint32_t
clamp32(uint64_t v)
{
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* ---- writing records ---------------------------------------------- */

static int
open_file(void)
{
  if (M.f)
    return 0;
  M.f = fopen(M.path, "a");
  if (!M.f) {
    log_warn("MeasureMe: cannot open %s: %s", M.path, strerror(errno));
    return -1;
  }
  struct stat sb;
  M.file_size = fstat(fileno(M.f), &sb) == 0 ? (uint64_t)sb.st_size : 0;
  return 0;
}

/* The file reached its size: keep it as measureme.jsonl.1 and start a
 * new one (opened with the next record). */
static void
rotate_file(void)
{
  if (fclose(M.f) != 0)
    log_warn("MeasureMe: cannot write %s: %s", M.path, strerror(errno));
  M.f = NULL;
  M.unflushed = 0;
  if (rename(M.path, M.path_old) < 0) {
    log_warn("MeasureMe: cannot rename %s to %s: %s; truncating it",
             M.path, M.path_old, strerror(errno));
    FILE *t = fopen(M.path, "w");
    if (t)
      fclose(t);
  }
  M.st.n_rotations++;
  log_notice("MeasureMe: %s reached %llu bytes; moved to %s", M.path,
             (unsigned long long)M.cfg.log_max_size, M.path_old);
}

/* fprintf's count, 0 on an error (which the next fflush reports). */
static size_t
counted(int n)
{
  return n > 0 ? (size_t)n : 0;
}

/* Write q's figures for the interval since prev; also into *out (the
 * answer's record). Returns the bytes written to f. */
static size_t
write_queue(FILE *f, const char *name, const circ_queue_t *q,
            mm_queue_prev_t *prev, measureme_answer_queue_t *out)
{
  uint64_t sent = q->stats.cells_sent - prev->sent;
  uint64_t waited = q->stats.queued_us_total - prev->waited_us;
  prev->sent = q->stats.cells_sent;
  prev->waited_us = q->stats.queued_us_total;
  out->queued = (uint32_t)q->cells.n;
  out->sent = clamp32(sent);
  out->delay_avg_us = clamp32(sent ? waited / sent : 0);
  out->delay_max_us = clamp32(q->stats.queued_us_max);
  if (!f)
    return 0;
  return counted(fprintf(f,
            ",\"%s\":{\"queued\":%u,\"sent\":%" PRIu64
            ",\"delay_avg_us\":%" PRIu64 ",\"delay_max_us\":%" PRIu64
            ",\"ewma\":%.3f}",
            name, (unsigned)q->cells.n, sent, sent ? waited / sent : 0,
            q->stats.queued_us_max, circ_queue_ewma(q)));
}

static size_t
write_channel(FILE *f, const char *name, const channel_t *chan)
{
  if (!chan)
    return counted(fprintf(f, ",\"%s\":null", name));
  /* per_circuit: a per-circuit connection this relay opened; the relay
   * that accepted one cannot tell it from a shared connection (nothing
   * on the wire says so), but "circuits" (how many the connection
   * carries now) and "outgoing" let an analysis see it from that side
   * too. */
  size_t n = counted(fprintf(f,
          ",\"%s\":{\"id\":%" PRIu64 ",\"transport\":\"%s\","
          "\"per_circuit\":%d,\"outgoing\":%d,\"circuits\":%u,\"outbuf\":%zu",
          name, channel_global_id(chan), channel_transport_name(chan),
          channel_is_per_circuit(chan),
          channel_is_outgoing(chan) ? 1 : 0, channel_n_circuits(chan),
          channel_outbuf_len(chan)));
  sockstat_tcp_t st;
  if (channel_sockstat(chan, &st) == 0)
    n += counted(fprintf(f,
            ",\"tcp\":{\"rtt_us\":%u,\"rttvar_us\":%u,\"cwnd\":%u,"
            "\"unacked\":%u,\"mss\":%u,\"retrans\":%u,\"sndq\":%u,"
            "\"notsent\":%u,\"ssthresh\":%u,\"rto_us\":%u,\"snd_wnd\":%u,"
            "\"sndbuf_full\":%u,\"sndbuf_full_ms\":%u}",
            st.rtt_us, st.rttvar_us, st.cwnd, st.unacked, st.mss,
            st.total_retrans, st.outq, st.notsent, st.ssthresh, st.rto_us,
            st.snd_wnd, st.sndbuf_full, st.sndbuf_full_ms));
  channel_flowstat_t fs;
  if (channel_carried_flowstat(chan, &fs) == 0)
    n += counted(fprintf(f,
            ",\"flow\":{\"window\":%u,\"inflight\":%u,\"unacked\":%u,"
            "\"queued\":%u,\"base_rtt_us\":%u,\"rtt_us\":%u,"
            "\"srtt_us\":%u,\"rto_us\":%u,\"retrans\":%u,\"dropped\":%u,"
            "\"slow_start\":%u}",
            fs.window, fs.inflight, fs.unacked, fs.queued, fs.base_rtt_us,
            fs.rtt_us, fs.srtt_us, fs.rto_us, fs.retransmitted, fs.dropped,
            fs.slow_start));
  if (fputc('}', f) != EOF)
    n++;
  return n;
}

/* The congestion controller of the streams ending here (an exit's; the
 * window of the DATA cells it packages towards the client), and whether
 * the circuit is one leg of a multiplexed set (conflux). */
static size_t
write_cc(FILE *f, const or_circuit_t *oc)
{
  size_t n = 0;
  if (oc->mux)
    n += counted(fprintf(f, ",\"mux_leg\":1"));
  const cc_t *cc = circ_edge_cc(oc);
  if (!cc)
    return n;
  return n + counted(fprintf(f,
          ",\"cc\":{\"cwnd\":%" PRIu64 ",\"inflight\":%" PRIu64
          ",\"rtt_us\":%" PRIu64 ",\"min_rtt_us\":%" PRIu64
          ",\"slow_start\":%u,\"blocked_chan\":%u,\"acks\":%" PRIu64 "}",
          cc->cwnd, cc->inflight, cc->ewma_rtt_us, cc->min_rtt_us,
          (unsigned)cc->in_slow_start, (unsigned)cc->blocked_chan,
          cc->n_acks));
}

/* Write what the file has buffered (after a tick, or after a record
 * written outside one). */
static void
flush_file(void)
{
  if (!M.f || !M.unflushed)
    return;
  M.unflushed = 0;
  if (fflush(M.f) != 0)
    log_warn("MeasureMe: cannot write %s: %s", M.path, strerror(errno));
}

/* One record at now: into the file (if it can be opened; buffered until
 * flush_file) and into r's batch for the client; with_answer 0 when the
 * circuit is closing. */
static void
write_record(mm_circ_t *r, or_circuit_t *oc, uint64_t now, int with_answer)
{
  FILE *f = open_file() < 0 ? NULL : M.f;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char label[17];
  base16_encode(label, sizeof(label), r->label, 8, BASE16_LOWER);
  circuit_t *c = &oc->base;
  measureme_answer_record_t *rec = &r->batch[r->n_batch];
  memset(rec, 0, sizeof(*rec));
  rec->seq = clamp32(r->seq);
  rec->offset_ms = clamp32(now > r->started_us
                               ? (now - r->started_us) / 1000 : 0);
  rec->cells_fwd = clamp32(c->cells_forward - r->prev_fwd);
  rec->cells_bwd = clamp32(c->cells_backward - r->prev_bwd);
  size_t n = 0;
  if (f)
    n = counted(fprintf(f,
            "{\"time\":%lld.%03ld,\"label\":\"%s\",\"circuit\":%" PRIu64
            ",\"seq\":%" PRIu64 ",\"role\":\"%s\",\"age_ms\":%" PRIu64
            ",\"cells_fwd\":%" PRIu64 ",\"cells_bwd\":%" PRIu64,
            (long long)ts.tv_sec, ts.tv_nsec / 1000000, label, r->gid, r->seq,
            c->n_chan ? "middle" : "last",
            (evloop_now_us(M.loop) - c->created_us) / 1000,
            c->cells_forward - r->prev_fwd, c->cells_backward - r->prev_bwd));
  r->seq++;
  r->prev_fwd = c->cells_forward;
  r->prev_bwd = c->cells_backward;
  n += write_queue(f, "queue_fwd", &c->n_queue, &r->prev_n, &rec->fwd);
  n += write_queue(f, "queue_bwd", &oc->p_queue, &r->prev_p, &rec->bwd);
  if (with_answer) {
    if (r->n_batch++ == 0)
      r->batch_since_us = now;
    if (r->n_batch == MEASUREME_ANSWER_MAX_RECORDS)
      flush_batch(r);
  }
  if (!f)
    return;
  n += write_channel(f, "chan_fwd", c->n_chan);
  n += write_channel(f, "chan_bwd", oc->p_chan);
  n += write_cc(f, oc);
  n += counted(fprintf(f, "}\n"));
  M.unflushed++;
  M.n_records++;
  M.file_size += n;
  if (M.file_size >= M.cfg.log_max_size)
    rotate_file(); /* fclose writes what was buffered */
}

static size_t
circ_key(uint64_t gid, uint8_t key[8])
{
  set_u64(key, gid);
  return 8;
}

static mm_circ_t *
find_circ(uint64_t gid)
{
  uint8_t key[8];
  circ_key(gid, key);
  return M.circs ? hmap_get(M.circs, key) : NULL;
}

int
measureme_is_active(uint64_t gid)
{
  const mm_circ_t *r = find_circ(gid);
  return r && r->active;
}

/* Stop measuring r (it stays known while its circuit lives); its waiting
 * records go back to the client unless the circuit is closing. */
static void
deactivate(mm_circ_t *r, const char *why, int closing)
{
  if (!r->active)
    return;
  if (!closing)
    flush_batch(r);
  r->n_batch = 0;
  char label[17];
  base16_encode(label, sizeof(label), r->label, 8, BASE16_LOWER);
  log_info("MeasureMe: stopped measuring circuit %" PRIu64 " (label %s): %s",
           r->gid, label, why);
  r->active = 0;
  dlist_remove(&r->active_node);
  M.n_active--;
  if (r->client) {
    r->client->n_active--;
    r->client = NULL;
  }
  if (M.n_active == 0 && M.timer)
    evloop_timer_cancel(M.timer);
}

static void
forget_circ(mm_circ_t *r, const char *why)
{
  deactivate(r, why, 1);
  uint8_t key[8];
  circ_key(r->gid, key);
  hmap_remove(M.circs, key);
  memacct_sub(MEMACCT_MEASUREME, sizeof(*r));
  free(r);
}

/* Drop the clients that measure nothing and whose bucket is full again:
 * they hold nothing a new entry would not. */
static void
sweep_clients(uint64_t now)
{
  if (!M.clients || now - M.last_client_sweep_us < CLIENT_SWEEP_USEC)
    return;
  M.last_client_sweep_us = now;
  hmap_iter_t it;
  const uint8_t *k;
  void *v;
  uint64_t burst = M.cfg.client_burst;
  hmap_iter_init(&it, M.clients);
  while (hmap_iter_next(&it, &k, &v)) {
    mm_client_t *c = v;
    bucket_t b = c->bucket;
    bucket_take(&b, burst, client_refill_us(), now); /* refill only */
    if (!c->n_active && b.tokens + TOKEN >= burst * TOKEN) {
      hmap_iter_remove_current(&it);
      memacct_sub(MEMACCT_MEASUREME, sizeof(*c));
      free(c);
    }
  }
}

void
measureme_tick_at(uint64_t now)
{
  dlist_node_t *n, *next;
  for (n = dlist_first(&M.active); n; n = next) {
    next = dlist_next(&M.active, n);
    mm_circ_t *r = DLIST_ENTRY(n, mm_circ_t, active_node);
    if (now >= r->next_us) {
      write_record(r, r->circ, now, 1);
      r->next_us += r->interval_us;
      if (r->next_us < now)
        r->next_us = now + r->interval_us; /* the loop was late */
    }
    if (r->n_batch && now - r->batch_since_us >= MEASUREME_ANSWER_FLUSH_US)
      flush_batch(r);
    if (r->end_us && now >= r->end_us)
      deactivate(r, "the requested duration ended", 0);
  }
  flush_file();
  sweep_clients(now);
}

static void
tick_cb(void *arg)
{
  (void)arg;
  measureme_tick_at(evloop_now_us(M.loop));
}

void
measureme_circuit_closing(circuit_t *c)
{
  if (c->kind != CIRC_KIND_OR)
    return;
  mm_circ_t *r = find_circ(c->gid);
  if (!r)
    return;
  if (r->active) { /* the last partial interval */
    write_record(r, r->circ, evloop_now_us(M.loop), 0);
    flush_file();
  }
  forget_circ(r, "the circuit closed");
}

/* A measured circuit is closing: record the last partial interval. */
static void
circuit_closing_cb(circuit_t *c, void *arg)
{
  (void)arg;
  measureme_circuit_closing(c);
}

size_t
measureme_circuit_mem(circuit_t *c)
{
  if (c->kind != CIRC_KIND_OR)
    return 0;
  return find_circ(c->gid) ? sizeof(mm_circ_t) : 0;
}

/* ---- the relay command -------------------------------------------- */

static mm_client_t *
get_client(const pc_addr_t *addr, uint64_t now)
{
  uint8_t key[17];
  memset(key, 0, sizeof(key));
  key[0] = (uint8_t)addr->family;
  memcpy(key + 1, addr->addr, 16);
  mm_client_t *c = hmap_get(M.clients, key);
  if (c)
    return c;
  if (hmap_size(M.clients) >= MEASUREME_MAX_CLIENTS) {
    M.last_client_sweep_us = 0;
    sweep_clients(now);
    if (hmap_size(M.clients) >= MEASUREME_MAX_CLIENTS)
      return NULL;
  }
  c = pc_zalloc(sizeof(*c));
  memacct_add(MEMACCT_MEASUREME, sizeof(*c));
  memcpy(c->key, key, sizeof(key));
  c->bucket.tokens = (uint64_t)M.cfg.client_burst * TOKEN;
  c->bucket.last_us = now;
  hmap_set(M.clients, key, c);
  return c;
}

static measureme_result_t
refuse(measureme_result_t why, uint64_t gid, const char *text)
{
  M.st.n_by_result[why]++;
  log_info("MeasureMe: refusing a request on circuit %" PRIu64 ": %s", gid,
           text);
  return why;
}

static measureme_result_t
request_decide(or_circuit_t *circ, const pc_addr_t *client,
               const uint8_t *body, size_t len, uint64_t now)
{
  measureme_request_t req;
  const char *err = NULL;
  uint64_t gid = circ->base.gid;
  if (!M.cfg.enabled) {
    M.st.n_by_result[MEASUREME_REFUSED_DISABLED]++;
    log_info("MeasureMe: refusing a request (MeasureMeEnabled 0)");
    return MEASUREME_REFUSED_DISABLED;
  }
  if (measureme_request_parse(body, len, &req, &err) < 0)
    return refuse(MEASUREME_REFUSED_MALFORMED, gid, err);
  mm_circ_t *r = find_circ(gid);
  if (r && r->active)
    return refuse(MEASUREME_REFUSED_BUSY, gid, "it is measured already");
  if (!r && hmap_size(M.circs) >= MEASUREME_MAX_STATE)
    return refuse(MEASUREME_REFUSED_FULL, gid, "too many circuits asked");
  if (M.n_active >= MEASUREME_MAX_CIRCUITS)
    return refuse(MEASUREME_REFUSED_FULL, gid,
                  "256 circuits are measured already");
  mm_client_t *c = get_client(client, now);
  if (!c)
    return refuse(MEASUREME_REFUSED_FULL, gid, "too many clients asked");
  if (c->n_active >= MEASUREME_MAX_PER_CLIENT)
    return refuse(MEASUREME_REFUSED_CLIENT_MAX, gid,
                  "its client has 64 circuits measured");
  bucket_t cb = r ? r->bucket
                  : (bucket_t){MEASUREME_CIRC_BURST * TOKEN, now};
  if (bucket_take(&cb, MEASUREME_CIRC_BURST,
                  MEASUREME_CIRC_REFILL_S * 1000000ULL, now) < 0)
    return refuse(MEASUREME_REFUSED_CIRCUIT_RATE, gid,
                  "the circuit asked too often");
  if (bucket_take(&c->bucket, M.cfg.client_burst, client_refill_us(),
                  now) < 0)
    return refuse(MEASUREME_REFUSED_CLIENT_RATE, gid,
                  "its client asked too often");
  if (!r) {
    r = pc_zalloc(sizeof(*r));
    memacct_add(MEMACCT_MEASUREME, sizeof(*r));
    r->gid = gid;
    r->circ = circ;
    dlist_node_init(&r->active_node);
    uint8_t key[8];
    circ_key(gid, key);
    hmap_set(M.circs, key, r);
  }
  r->bucket = cb;
  r->active = 1;
  r->client = c;
  c->n_active++;
  dlist_insert_tail(&M.active, &r->active_node);
  M.n_active++;
  memcpy(r->label, req.label, 8);
  r->interval_us = (uint64_t)req.interval_ms * 1000;
  r->next_us = now; /* a first record at once: the starting point */
  r->end_us = req.duration_s ? now + (uint64_t)req.duration_s * 1000000 : 0;
  r->seq = 0;
  memset(&r->prev_n, 0, sizeof(r->prev_n));
  memset(&r->prev_p, 0, sizeof(r->prev_p));
  r->prev_fwd = circ->base.cells_forward;
  r->prev_bwd = circ->base.cells_backward;
  r->started_us = now;
  r->n_batch = 0;
  M.st.n_by_result[MEASUREME_ACCEPTED]++;
  char label[17];
  base16_encode(label, sizeof(label), req.label, 8, BASE16_LOWER);
  log_info("MeasureMe: measuring circuit %" PRIu64 " every %u ms (label %s)",
           gid, req.interval_ms, label);
  if (M.timer && !evloop_timer_is_pending(M.timer))
    evloop_timer_schedule_periodic(M.timer,
                                   MEASUREME_MIN_INTERVAL_MS * 1000ULL);
  return MEASUREME_ACCEPTED;
}

measureme_result_t
measureme_request_at(or_circuit_t *circ, const pc_addr_t *client,
                     const uint8_t *body, size_t len, uint64_t now)
{
  measureme_result_t res = request_decide(circ, client, body, len, now);
  uint8_t label[8];
  memset(label, 0, sizeof(label));
  if (len >= MEASUREME_BODY_LEN)
    memcpy(label, body + 8, 8);
  send_status(circ, label, res);
  if (res == MEASUREME_ACCEPTED) {
    /* The first record, now (after the status, which it follows). */
    mm_circ_t *r = find_circ(circ->base.gid);
    write_record(r, circ, now, 1);
    flush_file();
    r->next_us = now + r->interval_us;
  }
  return res;
}

static int
handle_measureme(or_circuit_t *circ, const relay_header_t *h,
                 const uint8_t *body, int early)
{
  (void)early;
  pc_addr_t none;
  memset(&none, 0, sizeof(none));
  none.family = AF_UNSPEC;
  const pc_addr_t *client = circ->p_chan ? channel_peer_addr(circ->p_chan)
                                         : NULL;
  measureme_request_at(circ, client ? client : &none, body, h->length,
                       evloop_now_us(M.loop));
  return 0;
}

static size_t
extra_mem(circuit_t *c)
{
  return measureme_circuit_mem(c);
}

void
measureme_init(evloop_t *loop, const char *data_dir,
               const measureme_config_t *cfg)
{
  memset(&M, 0, sizeof(M));
  M.loop = loop;
  M.cfg = *cfg;
  if (M.cfg.log_max_size < 4096)
    M.cfg.log_max_size = 4096;
  M.path = pc_asprintf("%s/measureme.jsonl", data_dir);
  M.path_old = pc_asprintf("%s/measureme.jsonl.1", data_dir);
  M.circs = hmap_new(8);
  M.clients = hmap_new(17);
  dlist_init(&M.active);
  if (loop)
    M.timer = evloop_timer_new(loop, tick_cb, NULL);
  M.initialised = 1;
  relay_register_handler(RELAY_COMMAND_MEASUREME, handle_measureme);
  circuits_add_close_observer(circuit_closing_cb, NULL);
  if (circuits_add_extra_mem_fn(extra_mem) < 0)
    log_warn("MeasureMe state cannot be counted in MaxMemInQueues: too "
             "many memory reporters");
}

void
measureme_configure(const measureme_config_t *cfg)
{
  if (!M.initialised)
    return;
  M.cfg = *cfg;
  if (M.cfg.log_max_size < 4096)
    M.cfg.log_max_size = 4096;
  if (!cfg->enabled) {
    dlist_node_t *n;
    while ((n = dlist_first(&M.active)))
      deactivate(DLIST_ENTRY(n, mm_circ_t, active_node),
                 "MeasureMeEnabled is now 0", 0);
  }
}

void
measureme_shutdown(void)
{
  if (!M.initialised)
    return;
  relay_register_handler(RELAY_COMMAND_MEASUREME, NULL);
  circuits_remove_close_observer(circuit_closing_cb, NULL);
  circuits_remove_extra_mem_fn(extra_mem);
  dlist_node_t *n;
  while ((n = dlist_first(&M.active)))
    deactivate(DLIST_ENTRY(n, mm_circ_t, active_node), "shutting down", 1);
  hmap_free(M.circs, free);
  hmap_free(M.clients, free);
  memacct_set(MEMACCT_MEASUREME, 0);
  evloop_timer_free(M.timer);
  if (M.f)
    fclose(M.f);
  free(M.path);
  free(M.path_old);
  memset(&M, 0, sizeof(M));
}

unsigned
measureme_n_active(void)
{
  return M.n_active;
}

int
measureme_is_enabled(void)
{
  return M.initialised && M.cfg.enabled;
}

uint64_t
measureme_n_records(void)
{
  return M.n_records;
}

void
measureme_get_stats(measureme_stats_t *out)
{
  *out = M.st;
  out->n_circuits_known = M.circs ? (unsigned)hmap_size(M.circs) : 0;
  out->n_clients_known = M.clients ? (unsigned)hmap_size(M.clients) : 0;
  out->mem_bytes = out->n_circuits_known * sizeof(mm_circ_t) +
                   out->n_clients_known * sizeof(mm_client_t);
}
