/* SPDX-License-Identifier: BSD-3-Clause */
/* dgram_frame.h -- the plaintext of one datagram on a datagram link: a
 * version byte, then records packed back to back.
 *
 *   FRAME   = VERSION(u8 = 1) RECORD*
 *   RECORD  = TYPE(u8) LEN(u16, big-endian) BODY[LEN]
 *
 * One frame travels as one DTLS record in one UDP datagram, so a frame is
 * at most DGRAM_FRAME_MAX bytes: that fits DTLS_LINK_MTU (1232, IPv6's
 * minimum MTU less headers) with the largest DTLS 1.2 record overhead, so
 * no datagram is ever fragmented. Two 514-byte cells with their record
 * headers fit one frame.
 *
 * Record types 0x00-0x1f belong to the link layer itself (below); types
 * from DGRAM_REC_USER_MIN up are for the transports above it (BackTap,
 * TCP-over-DTLS), which register a handler per type. PAD records are
 * skipped wherever they appear.
 *
 * Parsing is all or nothing: a frame whose version is unknown, or whose
 * last record runs past the end, delivers no record at all (a datagram is
 * either what the peer sent or not). Nothing is allocated; records are
 * handed to the callback as pointers into the datagram.
 */
#ifndef PCTOR_FEATURE_DGRAM_DGRAM_FRAME_H
#define PCTOR_FEATURE_DGRAM_DGRAM_FRAME_H
#include <stddef.h>
#include <stdint.h>

#define DGRAM_FRAME_VERSION 1
#define DGRAM_FRAME_MAX 1150
#define DGRAM_REC_HDR_LEN 3
/* The largest body one record can have. */
#define DGRAM_REC_BODY_MAX (DGRAM_FRAME_MAX - 1 - DGRAM_REC_HDR_LEN)

/* Link-layer record types. */
enum {
  DGRAM_REC_PAD = 0x00,          /* ignored */
  DGRAM_REC_CERTS = 0x01,        /* a CERTS cell's payload (link_auth.h) */
  DGRAM_REC_AUTHENTICATE = 0x02, /* AUTH0003 body, DTLS-bound */
  DGRAM_REC_AUTH_OK = 0x03,      /* responder: AUTHENTICATE verified */
  DGRAM_REC_PING = 0x04,         /* keepalive; body echoed in PONG */
  DGRAM_REC_PONG = 0x05,
  DGRAM_REC_CLOSE = 0x06,        /* the sender closes the link */
};
#define DGRAM_REC_USER_MIN 0x20
/* Well-known upper-layer types, so that transports do not collide. */
#define DGRAM_REC_CELL 0x20      /* one 514-byte cell (CircID 4 bytes) */
/* 0x21-0x2f: BackTap (feature/backtap/backtap_wire.h): its CELL record
 * (519 bytes: the cell with sequence number and flags) and its FEEDBACK
 * record (13 bytes: ACK and FWD of one circuit). One frame holds two CELL
 * records and six FEEDBACK records (1 + 2 * 522 + 6 * 16 = 1141 bytes). */
#define DGRAM_REC_BACKTAP_CELL 0x21
#define DGRAM_REC_BACKTAP_FEEDBACK 0x22
#define DGRAM_REC_TCP_SEGMENT 0x30 /* TCP-over-DTLS: one segment */

/* A frame being packed. */
typedef struct dgram_frame_t {
  uint8_t buf[DGRAM_FRAME_MAX];
  size_t len;   /* 0: empty (no version byte yet) */
  size_t max;   /* the limit in force, <= DGRAM_FRAME_MAX */
  unsigned n_records;
} dgram_frame_t;

/* Start an empty frame of at most max bytes (capped at DGRAM_FRAME_MAX). */
void dgram_frame_init(dgram_frame_t *f, size_t max);
/* The largest body a record added now could have (0 if none fits). */
size_t dgram_frame_room(const dgram_frame_t *f);
/* Append a record. 0; -1 if it does not fit this frame (send the frame and
 * start another); -2 if it can never fit an empty frame. */
int dgram_frame_add(dgram_frame_t *f, uint8_t type, const uint8_t *body,
                    size_t len);
int dgram_frame_is_empty(const dgram_frame_t *f);

/* Why a received frame was refused. */
typedef enum {
  DGRAM_FRAME_OK = 0,
  DGRAM_FRAME_EMPTY = -1,       /* no version byte */
  DGRAM_FRAME_BAD_VERSION = -2, /* a version we do not speak */
  DGRAM_FRAME_TRUNCATED = -3,   /* a record runs past the end */
  DGRAM_FRAME_OVERSIZE = -4,    /* longer than DGRAM_FRAME_MAX */
} dgram_frame_status_t;

typedef void (*dgram_frame_record_fn)(void *arg, uint8_t type,
                                      const uint8_t *body, size_t len);
/* Check the whole frame, then hand each record except PAD to fn in order.
 * DGRAM_FRAME_OK and *n_records set (when not NULL), or a refusal with no
 * record delivered. */
dgram_frame_status_t dgram_frame_parse(const uint8_t *d, size_t len,
                                       dgram_frame_record_fn fn, void *arg,
                                       unsigned *n_records);
const char *dgram_frame_status_str(dgram_frame_status_t s);
#endif
