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
 *
 * The answer (doc/measureme.md has the full description): a relay cell
 * RELAY_MEASUREME_ANSWER (225, stream 0) from the measured hop back to
 * the origin. Body:
 *   u8  version (1)
 *   u8  type: 1 status, 2 records
 *   u8[8] the request's label (zeros if the request was too short)
 *   status:  u8 result (measureme_result_t)
 *   records: u8 n (1..MEASUREME_ANSWER_MAX_RECORDS), then n records of
 *            MEASUREME_ANSWER_RECORD_LEN bytes: u32 seq, u32 ms since the
 *            measurement started, u32 cells forward, u32 cells backward
 *            (in the interval), then for the forward and the backward
 *            queue: u32 cells queued now, u32 sent in the interval, u32
 *            average and u32 largest wait in microseconds.
 * One status per request (so no more answer cells than request cells),
 * then records batched: a records cell when MEASUREME_ANSWER_MAX_RECORDS
 * are waiting or MEASUREME_ANSWER_FLUSH_US after the oldest one, and
 * when the measurement ends while the circuit stays open. Only figures
 * of the circuit itself travel back; those of the connections (TCP_INFO,
 * output buffers), which other circuits share, stay in the relay's
 * file.
 */
#ifndef PCTOR_FEATURE_MEASUREME_MEASUREME_H
#define PCTOR_FEATURE_MEASUREME_MEASUREME_H
#include <stddef.h>
#include <stdint.h>
#include "lib/evloop/evloop.h"
#include "lib/address/address.h"

/* An unassigned relay command (tor-spec 6.1 uses 1-22 and 32-44). */
#define RELAY_COMMAND_MEASUREME 224
#define MEASUREME_VERSION 1
#define MEASUREME_BODY_LEN 16
#define MEASUREME_MIN_INTERVAL_MS 100
#define MEASUREME_MAX_INTERVAL_MS 60000
#define MEASUREME_MAX_DURATION_S 86400
/* Circuits measured at once; further requests are refused (logged). */
#define MEASUREME_MAX_CIRCUITS 256
/* Circuits that asked (measured now or earlier, still open) remembered
 * for their rate limit; clients remembered. */
#define MEASUREME_MAX_STATE 1024
#define MEASUREME_MAX_CLIENTS 4096
#define MEASUREME_MAX_PER_CLIENT 64
#define MEASUREME_CIRC_BURST 3
#define MEASUREME_CIRC_REFILL_S 60
/* Defaults of the options (MeasureMeLogMaxSize, MeasureMeClientRate,
 * MeasureMeClientBurst). */
#define MEASUREME_DEFAULT_LOG_MAX_SIZE (100ULL * 1024 * 1024)
#define MEASUREME_DEFAULT_CLIENT_RATE 60  /* per minute */
#define MEASUREME_DEFAULT_CLIENT_BURST 120

/* The answer (see above). */
#define RELAY_COMMAND_MEASUREME_ANSWER 225
#define MEASUREME_ANSWER_STATUS 1
#define MEASUREME_ANSWER_RECORDS 2
#define MEASUREME_ANSWER_HEADER_LEN 10
#define MEASUREME_ANSWER_STATUS_LEN (MEASUREME_ANSWER_HEADER_LEN + 1)
#define MEASUREME_ANSWER_RECORD_LEN 48
#define MEASUREME_ANSWER_MAX_RECORDS 10
#define MEASUREME_ANSWER_MAX_LEN \
  (MEASUREME_ANSWER_HEADER_LEN + 1 + \
   MEASUREME_ANSWER_MAX_RECORDS * MEASUREME_ANSWER_RECORD_LEN) /* 491 */
#define MEASUREME_ANSWER_FLUSH_US 1000000ULL

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

typedef struct measureme_config_t {
  int enabled;            /* MeasureMeEnabled */
  uint64_t log_max_size;  /* MeasureMeLogMaxSize, bytes (>= 4096) */
  unsigned client_rate;   /* MeasureMeClientRate, requests per minute */
  unsigned client_burst;  /* MeasureMeClientBurst */
  int garbage_answers;    /* __MeasureMeGarbageAnswers: tests only */
} measureme_config_t;
/* The defaults above with enabled = 0. */
void measureme_config_default(measureme_config_t *cfg);

/* Relay side: register the handler. Records go to
 * data_dir/measureme.jsonl. measureme_configure() may be called at any
 * time (SIGHUP); turning it off stops the running measurements. */
void measureme_init(evloop_t *loop, const char *data_dir,
                    const measureme_config_t *cfg);
void measureme_configure(const measureme_config_t *cfg);
void measureme_shutdown(void);
/* Circuits being measured now; records written so far. */
unsigned measureme_n_active(void);
/* Whether requests are accepted (MeasureMeEnabled as last configured). */
int measureme_is_enabled(void);
/* Whether the circuit with this gid is being measured now (the
 * ControlPort adds MeasureMe's figures to its CIRC_BW events). */
int measureme_is_active(uint64_t gid);
uint64_t measureme_n_records(void);

/* What became of a request. */
typedef enum {
  MEASUREME_ACCEPTED = 0,
  MEASUREME_REFUSED_DISABLED,
  MEASUREME_REFUSED_MALFORMED,
  MEASUREME_REFUSED_BUSY,        /* this circuit is measured already */
  MEASUREME_REFUSED_CIRCUIT_RATE,
  MEASUREME_REFUSED_CLIENT_RATE,
  MEASUREME_REFUSED_CLIENT_MAX,  /* MEASUREME_MAX_PER_CLIENT measured */
  MEASUREME_REFUSED_FULL,        /* a global bound */
  MEASUREME_N_RESULTS
} measureme_result_t;
/* "accepted", "disabled", ... (the names in answers and events); NULL
 * for a value out of range. */
const char *measureme_result_name(unsigned r);

/* One queue's figures in an answer record. */
typedef struct measureme_answer_queue_t {
  uint32_t queued, sent, delay_avg_us, delay_max_us;
} measureme_answer_queue_t;
typedef struct measureme_answer_record_t {
  uint32_t seq, offset_ms, cells_fwd, cells_bwd;
  measureme_answer_queue_t fwd, bwd;
} measureme_answer_record_t;
typedef struct measureme_answer_t {
  uint8_t type;          /* MEASUREME_ANSWER_STATUS or _RECORDS */
  uint8_t label[8];
  uint8_t result;        /* status: a measureme_result_t */
  unsigned n_records;    /* records: 1..MEASUREME_ANSWER_MAX_RECORDS */
  measureme_answer_record_t records[MEASUREME_ANSWER_MAX_RECORDS];
} measureme_answer_t;
/* Encode a into out (room for MEASUREME_ANSWER_MAX_LEN bytes); returns
 * the body's length, or 0 if a is not a valid answer. */
size_t measureme_answer_encode(uint8_t out[MEASUREME_ANSWER_MAX_LEN],
                               const measureme_answer_t *a);
/* Parse an answer body; 0, or -1 with *err set to a static reason. Bytes
 * after the answer (a later version's fields) are ignored. */
int measureme_answer_parse(const uint8_t *body, size_t len,
                           measureme_answer_t *out, const char **err);
typedef struct measureme_stats_t {
  uint64_t n_by_result[MEASUREME_N_RESULTS];
  uint64_t n_rotations;
  unsigned n_circuits_known, n_clients_known;
  size_t mem_bytes;             /* all MeasureMe state */
} measureme_stats_t;
void measureme_get_stats(measureme_stats_t *out);

struct or_circuit_t;
struct circuit_t;
/* Tests: the handler's work for a request on circ from client at now_us
 * (the handler takes the client from the circuit's previous hop). */
measureme_result_t measureme_request_at(struct or_circuit_t *circ,
                                        const pc_addr_t *client,
                                        const uint8_t *body, size_t len,
                                        uint64_t now_us);
/* Tests: where answers go instead of the circuit (NULL: the circuit,
 * with or_circuit_send_relay); set after measureme_init(). Returns 0 or
 * -1 as that. */
typedef int (*measureme_answer_sender_fn)(struct or_circuit_t *circ,
                                          const uint8_t *body, size_t len);
void measureme_set_answer_sender(measureme_answer_sender_fn fn);
/* Answer cells sent (status and records) and records sent in them. */
uint64_t measureme_n_answers(void);
/* Tests: one tick at now_us; the close observer's work for circ. */
void measureme_tick_at(uint64_t now_us);
void measureme_circuit_closing(struct circuit_t *circ);
/* Bytes of MeasureMe state charged to circ (what MaxMemInQueues
 * counts for it). */
size_t measureme_circuit_mem(struct circuit_t *circ);
#endif
