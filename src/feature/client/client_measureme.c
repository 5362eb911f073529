/* SPDX-License-Identifier: BSD-3-Clause */
/* client_measureme.c -- the client's side of MeasureMe (MeasureMeHops):
 * asking hops of a new circuit to measure it, and taking their answers
 * (feature/measureme/measureme.h, doc/measureme.md).
 *
 * Design:
 *  - One random label per circuit (leg), sent to every hop asked and kept
 *    in the leg with a bit per hop asked; the label is logged so that the
 *    relays' own record files can be joined too.
 *  - An answer (RELAY_MEASUREME_ANSWER from any hop, stream 0) is checked
 *    before anyone sees it: a hop that was not asked, a body that does not
 *    parse or a label that is not the one sent is a garbage answer. It is
 *    reported to the observer as an error (controllers: a MEASUREME event
 *    with Type=ERROR) and logged, at notice the first time for that hop of
 *    that leg and at info after, so a hostile hop cannot fill the log;
 *    the circuit stays up (the answer is not part of any protocol the
 *    circuit needs). Good answers go to the observer as they are.
 *  - The client keeps nothing per answer: what a hop returns is passed on
 *    at once, so its memory does not grow with the answers.
 */
#include <stdio.h>
#include <string.h>

#include "feature/client/client_internal.h"
#include "feature/measureme/measureme.h"
#include "lib/crypt/rand.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"

static client_measureme_observer_fn mm_observer;
static void *mm_observer_arg;

int
client_set_measureme_observer(client_measureme_observer_fn fn, void *arg)
{
  if (fn && mm_observer && (fn != mm_observer || arg != mm_observer_arg)) {
    log_warn("A second observer of MeasureMe answers was refused: one is "
             "registered already");
    return -1;
  }
  mm_observer = fn;
  mm_observer_arg = fn ? arg : NULL;
  return 0;
}

/* MeasureMeHops: ask those hops of a new circuit to measure it, with one
 * random label per circuit (logged, to join the relays' records). */
void
client_ask_measureme(cleg_t *leg, origin_circuit_t *circ)
{
  if (!client_g.cfg.measureme_hops || !circ)
    return;
  measureme_request_t req;
  memset(&req, 0, sizeof(req));
  req.interval_ms = client_g.cfg.measureme_interval_ms;
  crypt_rand(req.label, sizeof(req.label));
  uint8_t body[MEASUREME_BODY_LEN];
  measureme_request_encode(body, &req);
  char label[17];
  base16_encode(label, sizeof(label), req.label, 8, BASE16_LOWER);
  if (leg) {
    memcpy(leg->mm_label, req.label, 8);
    leg->mm_asked = 0;
    leg->mm_garbage_logged = 0;
  }
  for (int h = 0; h < CLIENT_HOPS; h++) {
    if (!(client_g.cfg.measureme_hops & (1u << h)))
      continue;
    if (origin_circuit_send_relay(circ, h, RELAY_COMMAND_MEASUREME, 0, body,
                                  sizeof(body)) < 0)
      return;
    if (leg)
      leg->mm_asked |= (uint8_t)(1u << h);
    log_notice("MeasureMe: asked hop %d of circuit %llu to measure it "
               "every %u ms (label %s)",
               h + 1, (unsigned long long)circ->base.gid, req.interval_ms,
               label);
  }
}

static void
garbage(cleg_t *leg, uint64_t gid, int hop, const char *why)
{
  client_g.stats.n_measureme_garbage++;
  unsigned bit = hop >= 1 && hop <= 8 ? 1u << (hop - 1) : 0;
  int first = !(leg->mm_garbage_logged & bit);
  leg->mm_garbage_logged |= (uint8_t)bit;
  if (first)
    log_notice("MeasureMe: a garbage answer from hop %d of circuit %llu "
               "(%s); ignored, the circuit stays up (more from this hop "
               "are logged at info)",
               hop, (unsigned long long)gid, why);
  else
    log_info("MeasureMe: a garbage answer from hop %d of circuit %llu "
             "(%s)",
             hop, (unsigned long long)gid, why);
  if (mm_observer) {
    client_measureme_event_t ev = {gid, hop, NULL, why};
    mm_observer(&ev, mm_observer_arg);
  }
}

void
client_measureme_answer(cleg_t *leg, origin_circuit_t *circ, int hop,
                        const uint8_t *body, size_t len)
{
  uint64_t gid = circ->base.gid;
  int hop1 = hop + 1;
  if (hop < 0 || hop >= 8 ||
      !(leg->mm_asked & (1u << hop))) {
    garbage(leg, gid, hop1, "an answer from a hop that was not asked");
    return;
  }
  measureme_answer_t a;
  const char *err = NULL;
  if (measureme_answer_parse(body, len, &a, &err) < 0) {
    garbage(leg, gid, hop1, err);
    return;
  }
  if (memcmp(a.label, leg->mm_label, 8) != 0) {
    garbage(leg, gid, hop1, "the label is not the one sent");
    return;
  }
  client_g.stats.n_measureme_answers++;
  if (a.type == MEASUREME_ANSWER_STATUS)
    log_info("MeasureMe: hop %d of circuit %llu answered: %s", hop1,
             (unsigned long long)gid, measureme_result_name(a.result));
  if (mm_observer) {
    client_measureme_event_t ev = {gid, hop1, &a, NULL};
    mm_observer(&ev, mm_observer_arg);
  }
}
