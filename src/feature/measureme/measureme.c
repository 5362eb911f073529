/* SPDX-License-Identifier: BSD-3-Clause */
/* measureme.c -- recording per-circuit statistics on request (see
 * measureme.h).
 *
 * Records refer to circuits by gid and look them up at every tick
 * (circuit_find_by_gid), so they never hold a pointer into freed memory; a
 * circuit-close observer writes a last record for the partial interval
 * before the circuit's queues and channels are detached. One timer
 * ticks every MEASUREME_MIN_INTERVAL_MS while anything is measured; each
 * record writes when its own interval has passed. Figures that are totals
 * in core (cells sent, time cells waited) are turned into per-interval
 * values here from the previous record's totals.
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
#include "core/or/relay.h"
#include "core/or/scheduler.h"
#include "lib/bytes/bytes.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/sockstat.h"

typedef struct mm_queue_prev_t {
  uint64_t sent, waited_us;
} mm_queue_prev_t;

typedef struct mm_record_t {
  uint64_t gid;
  uint8_t label[8];
  uint64_t interval_us, next_us, end_us; /* end 0: until closed */
  uint64_t seq;
  mm_queue_prev_t prev_n, prev_p;
  uint64_t prev_fwd, prev_bwd;
} mm_record_t;

static struct {
  int initialised;
  evloop_t *loop;
  int enabled;
  char *path;
  FILE *f;
  int file_full;
  mm_record_t recs[MEASUREME_MAX_CIRCUITS];
  unsigned n;
  evloop_timer_t *timer;
  uint64_t n_records;
} M;

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
  return 0;
}

static void
write_queue(FILE *f, const char *name, const circ_queue_t *q,
            mm_queue_prev_t *prev)
{
  uint64_t sent = q->stats.cells_sent - prev->sent;
  uint64_t waited = q->stats.queued_us_total - prev->waited_us;
  prev->sent = q->stats.cells_sent;
  prev->waited_us = q->stats.queued_us_total;
  fprintf(f,
          ",\"%s\":{\"queued\":%u,\"sent\":%" PRIu64
          ",\"delay_avg_us\":%" PRIu64 ",\"delay_max_us\":%" PRIu64
          ",\"ewma\":%.3f}",
          name, (unsigned)q->cells.n, sent, sent ? waited / sent : 0,
          q->stats.queued_us_max, circ_queue_ewma(q));
}

static void
write_channel(FILE *f, const char *name, const channel_t *chan)
{
  if (!chan) {
    fprintf(f, ",\"%s\":null", name);
    return;
  }
  fprintf(f, ",\"%s\":{\"id\":%" PRIu64 ",\"per_circuit\":%d,\"outbuf\":%zu",
          name, channel_global_id(chan), channel_is_per_circuit(chan),
          channel_outbuf_len(chan));
  sockstat_tcp_t st;
  if (channel_sockstat(chan, &st) == 0)
    fprintf(f,
            ",\"tcp\":{\"rtt_us\":%u,\"rttvar_us\":%u,\"cwnd\":%u,"
            "\"unacked\":%u,\"mss\":%u,\"retrans\":%u,\"sndq\":%u,"
            "\"notsent\":%u}",
            st.rtt_us, st.rttvar_us, st.cwnd, st.unacked, st.mss,
            st.total_retrans, st.outq, st.notsent);
  fputc('}', f);
}

static void
write_record(mm_record_t *r, or_circuit_t *oc)
{
  if (M.file_full || open_file() < 0)
    return;
  FILE *f = M.f;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char label[17];
  base16_encode(label, sizeof(label), r->label, 8, BASE16_LOWER);
  circuit_t *c = &oc->base;
  fprintf(f,
          "{\"time\":%lld.%03ld,\"label\":\"%s\",\"circuit\":%" PRIu64
          ",\"seq\":%" PRIu64 ",\"role\":\"%s\",\"age_ms\":%" PRIu64
          ",\"cells_fwd\":%" PRIu64 ",\"cells_bwd\":%" PRIu64,
          (long long)ts.tv_sec, ts.tv_nsec / 1000000, label, r->gid, r->seq++,
          c->n_chan ? "middle" : "last",
          (evloop_now_us(M.loop) - c->created_us) / 1000,
          c->cells_forward - r->prev_fwd, c->cells_backward - r->prev_bwd);
  r->prev_fwd = c->cells_forward;
  r->prev_bwd = c->cells_backward;
  write_queue(f, "queue_fwd", &c->n_queue, &r->prev_n);
  write_queue(f, "queue_bwd", &oc->p_queue, &r->prev_p);
  write_channel(f, "chan_fwd", c->n_chan);
  write_channel(f, "chan_bwd", oc->p_chan);
  fputs("}\n", f);
  fflush(f);
  M.n_records++;
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 &&
      (uint64_t)sb.st_size >= MEASUREME_MAX_FILE_BYTES) {
    log_warn("MeasureMe: %s reached %llu MB; not writing more records",
             M.path, (unsigned long long)(MEASUREME_MAX_FILE_BYTES >> 20));
    M.file_full = 1;
  }
}

static void
drop_record(unsigned i, const char *why)
{
  char label[17];
  base16_encode(label, sizeof(label), M.recs[i].label, 8, BASE16_LOWER);
  log_info("MeasureMe: stopped measuring circuit %" PRIu64 " (label %s): %s",
           M.recs[i].gid, label, why);
  M.recs[i] = M.recs[--M.n];
  if (M.n == 0)
    evloop_timer_cancel(M.timer);
}

static void
tick_cb(void *arg)
{
  (void)arg;
  uint64_t now = evloop_now_us(M.loop);
  for (unsigned i = 0; i < M.n;) {
    mm_record_t *r = &M.recs[i];
    circuit_t *c = circuit_find_by_gid(r->gid);
    if (!c) {
      drop_record(i, "the circuit closed");
      continue;
    }
    if (now >= r->next_us) {
      write_record(r, TO_OR_CIRCUIT(c));
      r->next_us += r->interval_us;
      if (r->next_us < now)
        r->next_us = now + r->interval_us; /* the loop was late */
    }
    if (r->end_us && now >= r->end_us) {
      drop_record(i, "the requested duration ended");
      continue;
    }
    i++;
  }
}

/* A measured circuit is closing: record the last partial interval. */
static void
circuit_closing_cb(circuit_t *c, void *arg)
{
  (void)arg;
  if (c->kind != CIRC_KIND_OR)
    return;
  for (unsigned i = 0; i < M.n; i++)
    if (M.recs[i].gid == c->gid) {
      write_record(&M.recs[i], TO_OR_CIRCUIT(c));
      drop_record(i, "the circuit closed");
      return;
    }
}

/* ---- the relay command -------------------------------------------- */

static int
handle_measureme(or_circuit_t *circ, const relay_header_t *h,
                 const uint8_t *body, int early)
{
  (void)early;
  measureme_request_t req;
  const char *err = NULL;
  if (!M.enabled) {
    log_info("MeasureMe: refusing a request (MeasureMeEnabled 0)");
    return 0;
  }
  if (measureme_request_parse(body, h->length, &req, &err) < 0) {
    log_info("MeasureMe: ignoring a malformed request: %s", err);
    return 0;
  }
  uint64_t gid = circ->base.gid;
  for (unsigned i = 0; i < M.n; i++)
    if (M.recs[i].gid == gid) {
      log_info("MeasureMe: circuit %" PRIu64 " is already measured", gid);
      return 0;
    }
  if (M.n == MEASUREME_MAX_CIRCUITS) {
    log_notice("MeasureMe: refusing a request: %d circuits are measured "
               "already", MEASUREME_MAX_CIRCUITS);
    return 0;
  }
  uint64_t now = evloop_now_us(M.loop);
  mm_record_t *r = &M.recs[M.n++];
  memset(r, 0, sizeof(*r));
  r->gid = gid;
  memcpy(r->label, req.label, 8);
  r->interval_us = (uint64_t)req.interval_ms * 1000;
  r->next_us = now; /* a first record at once: the starting point */
  r->end_us = req.duration_s ? now + (uint64_t)req.duration_s * 1000000 : 0;
  r->prev_fwd = circ->base.cells_forward;
  r->prev_bwd = circ->base.cells_backward;
  char label[17];
  base16_encode(label, sizeof(label), req.label, 8, BASE16_LOWER);
  log_info("MeasureMe: measuring circuit %" PRIu64 " every %u ms (label %s)",
           gid, req.interval_ms, label);
  if (!evloop_timer_is_pending(M.timer))
    evloop_timer_schedule_periodic(M.timer,
                                   MEASUREME_MIN_INTERVAL_MS * 1000ULL);
  tick_cb(NULL);
  return 0;
}

void
measureme_init(evloop_t *loop, const char *data_dir, int enabled)
{
  memset(&M, 0, sizeof(M));
  M.loop = loop;
  M.enabled = enabled;
  M.path = pc_asprintf("%s/measureme.jsonl", data_dir);
  M.timer = evloop_timer_new(loop, tick_cb, NULL);
  M.initialised = 1;
  relay_register_handler(RELAY_COMMAND_MEASUREME, handle_measureme);
  circuits_add_close_observer(circuit_closing_cb, NULL);
}

void
measureme_configure(int enabled)
{
  if (!M.initialised)
    return;
  M.enabled = enabled;
  while (!enabled && M.n)
    drop_record(M.n - 1, "MeasureMeEnabled is now 0");
}

void
measureme_shutdown(void)
{
  if (!M.initialised)
    return;
  relay_register_handler(RELAY_COMMAND_MEASUREME, NULL);
  circuits_remove_close_observer(circuit_closing_cb, NULL);
  evloop_timer_free(M.timer);
  if (M.f)
    fclose(M.f);
  free(M.path);
  memset(&M, 0, sizeof(M));
}

unsigned
measureme_n_active(void)
{
  return M.n;
}

uint64_t
measureme_n_records(void)
{
  return M.n_records;
}
