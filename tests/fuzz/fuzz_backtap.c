/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_backtap.c -- fuzz target: BackTap's record parsers and engine
 * (feature/backtap) as a peer's datagrams drive one link.
 *
 * The link has one circuit we opened (ID 0x100) with 16 cells sent, so
 * ACKs and FWDs have something to refer to; circuits the peer opens by SYN
 * are accepted. Input: a sequence of operations, each one byte then its
 * argument:
 *   0 LEN[2] BYTES  a CELL record of LEN bytes (LEN capped by what is left)
 *   1 LEN[2] BYTES  a FEEDBACK record
 *   2 MS[1]         time passes by MS milliseconds, the link's timer fires
 *                   if due
 *   3               the oldest delivered cell is reported forwarded
 *   4               flush pending feedback
 * Checked: nothing crashes, the stats never count more drops than inputs.
 * Bound: a record of 519 bytes can hold one out-of-order cell (510 bytes)
 * or open one circuit (a few hundred bytes): 4 bytes per input byte, after
 * 64 KiB for the link, our 16 cells and their ring.
 */
#include "fuzz.h"

#include "feature/backtap/backtap.h"
#include "lib/bytes/bytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELD 256

typedef struct fz_t {
  uint64_t now;
  backtap_flow_t *held_flow[HELD];
  uint32_t held_seq[HELD];
  size_t held_head, held_len;
  int failed;
} fz_t;

static uint64_t
fz_now(void *arg)
{
  return ((fz_t *)arg)->now;
}

static void
fz_send(void *arg, backtap_rec_type_t type, const uint8_t *rec, size_t len)
{
  (void)arg;
  /* what the engine sends must parse */
  const char *why;
  if (type == BACKTAP_REC_CELL) {
    backtap_cell_hdr_t h;
    const uint8_t *body;
    if (backtap_cell_parse(rec, len, &h, &body, &why) < 0) {
      fprintf(stderr, "fuzz_backtap: sent a bad cell record: %s\n", why);
      abort();
    }
  } else {
    backtap_feedback_t fb;
    if (backtap_feedback_parse(rec, len, &fb, &why) < 0) {
      fprintf(stderr, "fuzz_backtap: sent bad feedback: %s\n", why);
      abort();
    }
  }
}

static void
fz_timer(void *arg, uint64_t when)
{
  (void)arg;
  (void)when;
}

static int
fz_open(void *arg, backtap_link_t *link, uint32_t circid, void **flow_arg)
{
  (void)link;
  (void)circid;
  *flow_arg = arg;
  return 0;
}

static void
fz_deliver(void *arg, backtap_flow_t *flow, uint32_t seq, const uint8_t *cell)
{
  fz_t *z = arg;
  (void)cell;
  if (z->held_len == HELD) {
    if (z->held_flow[z->held_head])
      backtap_flow_forwarded(z->held_flow[z->held_head],
                             z->held_seq[z->held_head]);
    z->held_head = (z->held_head + 1) % HELD;
    z->held_len--;
  }
  size_t i = (z->held_head + z->held_len++) % HELD;
  z->held_flow[i] = flow;
  z->held_seq[i] = seq;
}

static void
fz_writable(void *arg, backtap_flow_t *flow)
{
  (void)arg;
  (void)flow;
}

static void
fz_failed(void *arg, backtap_link_t *link, const char *why)
{
  (void)link;
  (void)why;
  ((fz_t *)arg)->failed = 1;
}

static const backtap_lower_ops_t lower = {fz_now, fz_send, fz_timer};
static void
fz_flow_failed(void *arg, backtap_flow_t *flow, const char *why)
{
  fz_t *z = arg;
  (void)why;
  /* forget what we held for it */
  for (size_t i = 0; i < z->held_len; i++) {
    size_t j = (z->held_head + i) % HELD;
    if (z->held_flow[j] == flow)
      z->held_flow[j] = NULL;
  }
}

static const backtap_upper_ops_t upper = {fz_open, fz_deliver, fz_writable,
                                          fz_failed, fz_flow_failed};

static void
run(const uint8_t *data, size_t len)
{
  fz_t z;
  memset(&z, 0, sizeof(z));
  z.now = 1000000;
  backtap_params_t p;
  backtap_params_default(&p);
  p.swnd_init = 16;
  p.swnd_max = 64;
  p.link_max_cells = 256;
  p.max_flows = 64;
  backtap_link_t *link = backtap_link_new(&p, &lower, &z, &upper, &z);
  backtap_flow_t *ours = backtap_flow_new(link, 0x100, &z);
  uint8_t cell[BACKTAP_LINK_CELL_LEN];
  memset(cell, 0, sizeof(cell));
  for (int i = 0; i < 16; i++)
    backtap_flow_send(ours, cell);
  uint64_t inputs = 0;
  size_t off = 0;
  while (off < len) {
    uint8_t op = data[off++];
    switch (op % 5) {
    case 0:
    case 1: {
      if (len - off < 2)
        goto done;
      size_t n = get_u16(data + off);
      off += 2;
      if (n > len - off)
        n = len - off;
      inputs++;
      backtap_link_input(link, op % 5 ? BACKTAP_REC_FEEDBACK : BACKTAP_REC_CELL,
                         data + off, n);
      off += n;
      break;
    }
    case 2:
      if (off >= len)
        goto done;
      z.now += 1000ULL * data[off++];
      backtap_link_timer(link);
      break;
    case 3:
      if (z.held_len) {
        if (z.held_flow[z.held_head])
          backtap_flow_forwarded(z.held_flow[z.held_head],
                                 z.held_seq[z.held_head]);
        z.held_head = (z.held_head + 1) % HELD;
        z.held_len--;
      }
      break;
    default:
      backtap_link_flush(link);
      break;
    }
  }
done:;
  const backtap_stats_t *st = backtap_link_stats(link);
  uint64_t drops = st->malformed + st->unknown_flow + st->duplicate +
                   st->out_of_window + st->excess_dropped +
                   st->forged_feedback;
  if (drops > inputs) {
    fprintf(stderr, "fuzz_backtap: %llu drops for %llu records\n",
            (unsigned long long)drops, (unsigned long long)inputs);
    abort();
  }
  fuzz_verbose("backtap: %llu records, %llu delivered, %zu circuits",
               (unsigned long long)inputs,
               (unsigned long long)st->cells_delivered,
               backtap_link_n_flows(link));
  backtap_link_free(link);
}

const fuzz_target_t fuzz_target = {
  .name = "backtap",
  .run = run,
  .amp_factor = 4,
  .amp_slack = 65536,
};
