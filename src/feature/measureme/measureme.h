/* SPDX-License-Identifier: BSD-3-Clause */
/* measureme.h -- MeasureMe: per-circuit statistics that a client asks the
 * relays on its circuit to record (after AlSabah & Goldberg's PCTCP
 * experiments).
 *
 * A client sends a RELAY_MEASUREME cell to one hop of its circuit. A pctor
 * relay that gets it (and has MeasureMeEnabled 1) records, for that circuit
 * only and until it closes or the requested duration ends, every interval:
 * cells in and out per direction, the circuit's queues (cells waiting,
 * time cells waited, EWMA average), the output-buffer and kernel
 * send-queue sizes of the channels on each side, and the channels' TCP_INFO
 * (rtt, cwnd, retransmissions) -- with PerCircuitTCP those are the
 * circuit's own connections. Records are JSON lines appended to
 * DataDirectory/measureme.jsonl. Nothing is recorded for circuits that
 * did not ask. tor relays do not know the command and drop the cell (the
 * circuit stays up).
 *
 * The cell body (all integers big-endian):
 *   u8  version (1)
 *   u8  flags (0; others ignored)
 *   u16 interval in milliseconds (100..60000)
 *   u32 duration in seconds (0: until the circuit closes; at most 1 day)
 *   u8[8] label chosen by the client, copied into every record so that
 *         records from several relays can be joined
 */
#ifndef PCTOR_FEATURE_MEASUREME_MEASUREME_H
#define PCTOR_FEATURE_MEASUREME_MEASUREME_H
#include <stddef.h>
#include <stdint.h>
#include "lib/evloop/evloop.h"

/* An unassigned relay command (tor-spec 6.1 uses 1-22 and 32-44). */
#define RELAY_COMMAND_MEASUREME 224
#define MEASUREME_VERSION 1
#define MEASUREME_BODY_LEN 16
#define MEASUREME_MIN_INTERVAL_MS 100
#define MEASUREME_MAX_INTERVAL_MS 60000
#define MEASUREME_MAX_DURATION_S 86400
/* Circuits measured at once; further requests are refused (logged). */
#define MEASUREME_MAX_CIRCUITS 256
/* The record file stops growing at this size (a warning says so). */
#define MEASUREME_MAX_FILE_BYTES (1024ULL * 1024 * 1024)

typedef struct measureme_request_t {
  uint16_t interval_ms;
  uint32_t duration_s;
  uint8_t label[8];
} measureme_request_t;

/* Encode a request body into out (MEASUREME_BODY_LEN bytes). */
void measureme_request_encode(uint8_t out[MEASUREME_BODY_LEN],
                              const measureme_request_t *req);
/* Parse a body; 0, or -1 with *err set to a static reason. */
int measureme_request_parse(const uint8_t *body, size_t len,
                            measureme_request_t *out, const char **err);

/* Relay side: register the handler. enabled 0 refuses requests; records go
 * to data_dir/measureme.jsonl. measureme_configure() may be called at any
 * time (SIGHUP); turning it off stops the running measurements. */
void measureme_init(evloop_t *loop, const char *data_dir, int enabled);
void measureme_configure(int enabled);
void measureme_shutdown(void);
/* Circuits being measured now; records written so far. */
unsigned measureme_n_active(void);
uint64_t measureme_n_records(void);
#endif
