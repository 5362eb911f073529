/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_circuit.c -- fuzz target: relay cells on a live circuit at a relay
 * that is a middle, an exit and a directory cache at once.
 *
 * Each input sets up, in process, what a relay has once a client built a
 * circuit through it: the circuit layer (channels_init, circuits_init), a
 * socketless incoming channel (core/or/channel.h: cells written to it go
 * nowhere, no socket is made) opened as after a link handshake, and an
 * or_circuit on it with relay crypto from fixed key material, as
 * command.c makes one for a CREATE2. Registered on it: the EXTEND2
 * handler (feature/relay/extend: a middle, private addresses allowed; the
 * next hop's channel is a socketless one too, and cells relay crypto does
 * not recognise go to it), BEGIN_DIR (feature/dircache, serving a small
 * shared document), BEGIN and RESOLVE (feature/exit: an exit whose policy
 * rejects every destination unless byte 0 says otherwise; a resolver
 * whose nameserver is 127.0.0.1:9, so a name that reaches it costs one
 * UDP datagram on loopback), the CONFLUX commands and MeasureMe (enabled,
 * its records in a temporary directory removed at exit). The cells then go
 * through the same code as on the network, so the stream state machines
 * after the parsers are reached: BEGIN/BEGIN_DIR/DATA/END/RESOLVE/SENDME/
 * XOFF/XON bodies, the edge's windows, a directory request fed in DATA
 * cells and its answer sent as the windows allow.
 *
 * Input: byte 0 chooses the circuit (bit 0: the previous hop proved a
 * relay identity, so the exit takes BEGIN; bit 1: made with CREATE_FAST,
 * the client's first hop; bit 2: congestion control negotiated, as with
 * ntor v3, so XON/XOFF and conflux apply; bit 3: the exit policy accepts
 * 127.0.0.1:9, so a BEGIN to it connects there -- on loopback, where
 * nothing listens as a rule, or the discard service -- and DATA is
 * buffered while it connects); then records of one control
 * byte and up to 509 bytes of relay payload (the last one padded with
 * zeros). Control bits:
 *   1  the payload is encrypted as the client would (its digest set by
 *      the client's crypto) and given to command_process_cell() as a
 *      RELAY cell, so relay crypto recognises it; without it, the payload
 *      goes to relay_handle_recognized() as already decrypted;
 *   2  RELAY_EARLY;
 *   4  run the event loop once after it (deferred work: closing, the
 *      reaper);
 *   8  with 1: encrypted for a hop beyond this relay, so relay crypto
 *      passes it on (to the next hop after an EXTEND2, else the circuit
 *      is closed);
 *   16 once an EXTEND2 made a next hop: its channel opens and the payload
 *      arrives from it as CREATED2 (which the relay turns into EXTENDED2);
 *   32 the same, as a RELAY cell from the next hop (passed back to the
 *      client under our layer).
 * Everything is torn down after the input.
 *
 * Bound: the circuit layer and the features' fixed state, a few open
 * streams' records and the directory answer's header: 1 MiB + 64 bytes
 * per input byte.
 */
#include "fuzz.h"

#include "core/or/cell_queue.h"
#include "core/or/channel.h"
#include "core/or/circuit.h"
#include "core/or/command.h"
#include "core/or/relay.h"
#include "core/crypto/relay_crypto.h"
#include "core/proto/cell.h"
#include "core/proto/relay_msg.h"
#include "feature/conflux/conflux.h"
#include "feature/dircache/dircache.h"
#include "feature/exit/exit_conn.h"
#include "feature/exit/policy.h"
#include "feature/measureme/measureme.h"
#include "feature/relay/extend.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/crypt_init.h"
#include "lib/evloop/dns.h"
#include "lib/evloop/evloop.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/address/address.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOC_TEXT "network-status-version 3 microdesc\nvote-status consensus\n"

static struct {
  evloop_t *loop;
  evloop_timer_t *stop;
  dns_resolver_t *dns;
  exit_policy_t *policy;       /* reject *:* */
  exit_policy_t *policy_port9; /* accept 127.0.0.1:9 only */
  dircache_doc_t *doc;
  char datadir[64]; /* MeasureMe's records; removed at exit */
} F;

static void
remove_datadir(void)
{
  DIR *d = opendir(F.datadir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[512];
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", F.datadir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(F.datadir);
}

static dircache_doc_t *
provide(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  return dircache_doc_ref(F.doc);
}

static void
stop_cb(void *arg)
{
  (void)arg;
  evloop_exit(F.loop);
}

static void
run_loop_once(void)
{
  evloop_timer_schedule(F.stop, 1);
  evloop_run(F.loop);
}

/* A fixed-length cell arriving on chan, as command.c gets it. */
static void
feed_cell(channel_t *chan, uint32_t circ_id, uint8_t command,
          const uint8_t *payload)
{
  packed_cell_t *pc = packed_cell_new();
  memset(pc->body, 0, sizeof(pc->body));
  set_u32(pc->body, circ_id);
  pc->body[4] = command;
  memcpy(pc->body + 5, payload, CELL_PAYLOAD_LEN);
  pc->len = CELL_MAX_NETWORK_LEN;
  command_process_cell(chan, pc);
}

static void
setup(void)
{
  if (crypt_global_init() < 0)
    abort();
  F.loop = evloop_new();
  F.stop = evloop_timer_new(F.loop, stop_cb, NULL);
  snprintf(F.datadir, sizeof(F.datadir), "/tmp/pctor-fuzz-circuit.XXXXXX");
  if (!mkdtemp(F.datadir))
    abort();
  atexit(remove_datadir);
  char path[128];
  snprintf(path, sizeof(path), "%s/resolv.conf", F.datadir);
  FILE *f = fopen(path, "w");
  if (!f)
    abort();
  fputs("nameserver 127.0.0.1:9\noptions timeout:1 attempts:1\n", f);
  fclose(f);
  F.dns = dns_resolver_new(F.loop, path, NULL);
  unlink(path);
  if (!F.dns)
    abort();
  const char *lines[] = {"reject *:*"};
  char *err = NULL;
  F.policy = exit_policy_parse_plain(lines, 1, &err);
  const char *lines9[] = {"accept 127.0.0.1:9", "reject *:*"};
  F.policy_port9 = exit_policy_parse_plain(lines9, 2, &err);
  if (!F.policy || !F.policy_port9)
    abort();
  F.doc = dircache_doc_new((uint8_t *)pc_strdup(DOC_TEXT), strlen(DOC_TEXT),
                           1);
}

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  uint8_t mode = data[0];
  data++;
  len--;

  channels_init(F.loop, NULL);
  channels_set_socketless_for_testing(1);
  circuits_init();
  extend_init(1);
  dircache_init(F.loop);
  dircache_register("/tor/status-vote/current/consensus-microdesc", provide,
                    NULL);
  exit_config_t ecfg;
  memset(&ecfg, 0, sizeof(ecfg));
  ecfg.policy = (mode & 8) ? F.policy_port9 : F.policy;
  ecfg.dns = F.dns;
  exit_init(F.loop, &ecfg);
  conflux_exit_config_t ccfg = {.enabled = 1};
  conflux_exit_init(F.loop, &ccfg);
  measureme_config_t mcfg;
  measureme_config_default(&mcfg);
  mcfg.enabled = 1;
  measureme_init(F.loop, F.datadir, &mcfg);

  pc_addr_t peer;
  pc_addr_parse_ip(&peer, "127.0.0.2", 5000);
  static const uint8_t rsa_id[20] = {0x11, 0x22, 0x33};
  static const uint8_t ed_id[32] = {0x44, 0x55, 0x66};
  channel_t *chan = channel_accept_socketless_for_testing(
      &peer, (mode & 1) ? rsa_id : NULL, (mode & 1) ? ed_id : NULL);
  channel_open_socketless_for_testing(chan);
  const uint32_t circ_id = 0x80000001u;
  or_circuit_t *oc = or_circuit_new(chan, circ_id);
  uint8_t km[RELAY_CRYPTO_KEY_MATERIAL_LEN];
  for (size_t i = 0; i < sizeof(km); i++)
    km[i] = (uint8_t)(i * 7 + 1);
  relay_crypto_init(&oc->crypto, km);
  if (mode & 2)
    oc->created_fast = 1;
  if (mode & 4)
    or_circuit_set_cc(oc, 31);
  relay_crypto_t *client = relay_crypto_new(km);
  for (size_t i = 0; i < sizeof(km); i++)
    km[i] = (uint8_t)(i * 13 + 5);
  relay_crypto_t *beyond = relay_crypto_new(km);
  uint64_t gid = oc->base.gid;

  while (len > 0) {
    uint8_t ctl = data[0];
    data++;
    len--;
    uint8_t payload[CELL_PAYLOAD_LEN] = {0};
    size_t n = len < CELL_PAYLOAD_LEN ? len : CELL_PAYLOAD_LEN;
    memcpy(payload, data, n);
    data += n;
    len -= n;
    /* The circuit may have been closed by an earlier cell. */
    circuit_t *c = circuit_find_by_gid(gid);
    if (!c)
      break;
    if (ctl & 0x30) {
      channel_t *next = c->n_chan;
      if (!next)
        continue;
      if (!channel_is_open(next))
        channel_open_socketless_for_testing(next);
      c = circuit_find_by_gid(gid);
      if (!c || c->n_chan != next || !c->n_circ_id)
        continue;
      feed_cell(next, c->n_circ_id,
                (ctl & 0x10) ? CELL_CREATED2 : CELL_RELAY, payload);
    } else if (ctl & 1) {
      /* recognized and digest are the client's to set. */
      memset(payload + 1, 0, 2);
      memset(payload + 5, 0, 4);
      if (ctl & 8) {
        /* For a hop beyond us: our layer does not recognise it. */
        relay_crypto_t *hops[2] = {client, beyond};
        relay_crypto_origin_encrypt(hops, 1, payload);
      } else {
        relay_crypto_origin_encrypt(&client, 0, payload);
      }
      feed_cell(chan, circ_id, (ctl & 2) ? CELL_RELAY_EARLY : CELL_RELAY,
                payload);
    } else {
      relay_handle_recognized(TO_OR_CIRCUIT(c), payload, (ctl & 2) != 0);
    }
    if (ctl & 4)
      run_loop_once();
  }

  relay_crypto_free(client);
  relay_crypto_free(beyond);
  measureme_shutdown();
  conflux_exit_shutdown();
  exit_shutdown();
  dircache_shutdown();
  circuits_shutdown();
  channels_shutdown();
  relay_clear_handlers();
  /* Cancelled DNS requests and closed connections are freed here. */
  run_loop_once();
}

const fuzz_target_t fuzz_target = {
  .name = "circuit", .setup = setup, .run = run, .amp_factor = 64,
  .amp_slack = 1024 * 1024,
};
