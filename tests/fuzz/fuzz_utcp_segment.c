/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_utcp_segment.c -- fuzz target: TCP segments as an authenticated
 * peer's TCP-over-DTLS records deliver them (DGRAM_REC_TCP_SEGMENT) to the
 * user-level stack (lib/utcp: the pre-check, the rebuilt IPv4 header and
 * checksum, then lwIP's TCP input with its listening connection). The
 * input is a sequence of segments, each a 2-byte big-endian length and
 * that many bytes; each input gets a fresh peer, freed afterwards with
 * every connection the segments made. What the stack sends back is
 * dropped; connections that complete the handshake are accepted (the
 * stack's initial sequence numbers do not change while its timers do not
 * run, so a seed can complete it: syn-ack-data-fin). In a build without lwIP the target does nothing.
 * Bound: the peer and its map, and per SYN a half-open connection (lwIP's
 * control block and its SYN-ACK, about 450 bytes for a 22-byte record):
 * 64 KiB + 32 bytes per input byte.
 */
#include "fuzz.h"

#include "lib/evloop/evloop.h"
#include "lib/utcp/utcp.h"

static evloop_t *loop;
static utcp_t *stack;

static void
out_drop(void *arg, const uint8_t *seg, size_t len)
{
  (void)arg;
  fuzz_verbose("utcp_segment: sent %zu bytes, flags 0x%02x, seq %u", len,
               seg[13], (unsigned)seg[4] << 24 | (unsigned)seg[5] << 16 |
                            (unsigned)seg[6] << 8 | seg[7]);
}

static void
c_recv(void *arg, const uint8_t *data, size_t len)
{
  (void)arg;
  (void)data;
  (void)len;
}

static void
c_sent(void *arg)
{
  (void)arg;
}

static void
c_closed(void *arg, const char *why)
{
  (void)arg;
  (void)why;
}

static const utcp_conn_ops_t ops = {c_recv, c_sent, c_closed};

/* Connections that complete the handshake are taken, so that data, FIN
 * and RST reach an established connection. */
static const utcp_conn_ops_t *
accept_all(void *arg, utcp_conn_t *c, void **conn_arg)
{
  (void)arg;
  (void)c;
  *conn_arg = NULL;
  return &ops;
}

static void
setup(void)
{
  loop = evloop_new();
  if (utcp_available())
    stack = utcp_new(loop, 1146);
}

static void
run(const uint8_t *data, size_t len)
{
  if (!stack)
    return;
  utcp_peer_t *p = utcp_peer_new(stack, out_drop, accept_all, NULL);
  unsigned n = 0, ok = 0;
  while (len >= 2) {
    size_t l = (size_t)data[0] << 8 | data[1];
    data += 2;
    len -= 2;
    if (l > len)
      l = len;
    if (utcp_peer_input(p, data, l) == 0)
      ok++;
    n++;
    data += l;
    len -= l;
  }
  utcp_stats_t st;
  utcp_get_stats(stack, &st);
  fuzz_verbose("utcp_segment: %u segments, %u passed the pre-check; %llu "
               "connections accepted so far", n, ok,
               (unsigned long long)st.conns_accepted);
  utcp_peer_free(p);
}

const fuzz_target_t fuzz_target = {
  .name = "utcp_segment", .setup = setup, .run = run, .amp_factor = 32,
  .amp_slack = 64 * 1024,
};
