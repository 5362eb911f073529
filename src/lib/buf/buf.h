/* SPDX-License-Identifier: BSD-3-Clause */
/* buf.h -- chained byte buffers for network I/O.
 *
 * A buf_t is a FIFO of bytes stored in a list of fixed-size chunks, so that
 * adding at the tail and draining at the head never moves the bulk of the
 * data. Readers that need contiguous bytes (a cell header) call
 * buf_pullup(). Socket/TLS code reads straight into the tail chunk with
 * buf_tail_space()/buf_commit() and writes straight from the head with
 * buf_head(), so relayed data is copied as little as possible.
 * Freed chunks go to a small free list to avoid malloc churn per cell.
 */
#ifndef PCTOR_LIB_BUF_BUF_H
#define PCTOR_LIB_BUF_BUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct buf_t buf_t;

/* Never returns NULL. */
buf_t *buf_new(void);
void buf_free_(buf_t *b);
#define buf_free(b) do { buf_free_(b); (b) = NULL; } while (0)
size_t buf_datalen(const buf_t *b);
void buf_clear(buf_t *b);
/* Append len bytes. */
void buf_add(buf_t *b, const void *data, size_t len);
/* Append len bytes, in one chunk when len fits one (a new chunk is
 * started if the tail has less room): records written from the head
 * then end at these boundaries. */
void buf_add_unsplit(buf_t *b, const void *data, size_t len);
/* Copy the first len bytes (len <= datalen) to out without removing. */
void buf_peek(const buf_t *b, void *out, size_t len);
/* Copy then remove the first len bytes (len <= datalen). */
void buf_get(buf_t *b, void *out, size_t len);
/* Remove the first n bytes (n <= datalen). */
void buf_drain(buf_t *b, size_t n);
/* Make the first n bytes (n <= datalen) contiguous and return a pointer
 * to them, valid until the next modification of b. */
const uint8_t *buf_pullup(buf_t *b, size_t n);
/* Pointer to and length of the first contiguous run of data (for writing
 * to a socket); *len is 0 when the buffer is empty. */
const uint8_t *buf_head(const buf_t *b, size_t *len);
/* Writable space at the tail, at least min_space bytes (a new chunk is
 * added if needed); pass the number actually written to buf_commit(). */
uint8_t *buf_tail_space(buf_t *b, size_t min_space, size_t *avail);
void buf_commit(buf_t *b, size_t n);
/* Move all data from src to the end of dst (no copy of whole chunks). */
void buf_move_all(buf_t *dst, buf_t *src);
/* Position of the first occurrence of the byte string s (len slen) at or
 * after the start, or -1. Used for HTTP header parsing. */
long buf_find(const buf_t *b, const void *s, size_t slen);
/* Bytes of memory held (chunks), for memory accounting. */
size_t buf_allocation(const buf_t *b);
/* When the oldest byte in b arrived, approximately (the time its chunk
 * was taken; CLOCK_MONOTONIC microseconds, as evloop_now_us), or
 * UINT64_MAX when b is empty. The OOM handler closes the connections
 * holding the oldest data first. */
uint64_t buf_oldest_us(const buf_t *b);
/* Tests: the clock chunks are stamped with (NULL: the real one). */
void buf_set_clock_for_testing(uint64_t (*fn)(void));
/* Count b's chunk memory under a lib/malloc/memacct kind from now on
 * (MEMACCT_NONE: stop counting); what it holds already is moved over. */
void buf_set_memacct(buf_t *b, int kind);
#endif
