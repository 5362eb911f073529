/* SPDX-License-Identifier: BSD-3-Clause */
/* buf.c -- chained byte buffers (see buf.h).
 *
 * Design:
 *  - A buffer is a singly linked list of chunks. Each chunk holds one
 *    contiguous run of data, [data, data+len), inside its storage
 *    mem[0..cap). Data is appended after the run of the tail chunk and
 *    removed from the front of the head chunk, so neither operation moves
 *    existing bytes.
 *  - Invariant: every chunk except the tail holds data (len > 0). The tail
 *    may be empty when buf_tail_space() reserved it and nothing was
 *    committed; an empty buffer holds no chunks otherwise (drained chunks
 *    are released at once, so idle connections hold no memory).
 *  - Standard chunks have BUF_CHUNK_CAP (16 KiB) of storage: one full TLS
 *    record (16384 plaintext bytes) fits in one chunk, so SSL_read() into
 *    the tail and SSL_write() from the head work on whole records and the
 *    number of read/write calls per byte stays low; a 514-byte cell
 *    straddles a chunk boundary only ~3% of the time (4 KiB chunks would
 *    make that ~12% and cut TLS records to 4 KiB). Larger chunks are made
 *    only on demand (buf_pullup() of more than a chunk, or
 *    buf_tail_space() asking for more) and are never recycled.
 *  - Released standard chunks go to a free list (at most
 *    BUF_FREELIST_MAX chunks, 16 MiB) so that the steady state of a relay
 *    (read a record, consume it as cells, release the chunk) does not call
 *    malloc. It is sized for one connection per circuit (PerCircuitTCP):
 *    with a thousand connections each filling and draining a chunk per
 *    write, a 64-chunk list made every write a malloc/free pair and the
 *    heap trimming and page faults cost ~7x the scheduler's CPU per cell
 *    (pctor-schedbench --channels 0 1000). The free list is process-global: pctor runs one thread, and a
 *    cache of unused memory has no observable state.
 *  - buf_add_unsplit() starts a new chunk rather than split what it adds
 *    (up to a chunk's size): an output buffer filled with cells that way
 *    holds 31 whole cells per chunk, so each SSL_write() from the head is
 *    one full record and no record carries the small remainder of a cell
 *    that straddled a boundary.
 *  - buf_pullup() makes the first n bytes contiguous by moving the short
 *    remainder in the head chunk to the start of its storage and copying
 *    the missing bytes from the following chunks into it; the common case
 *    (a cell split across two chunks) copies one cell's worth of bytes.
 */
#include "lib/buf/buf.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/malloc/alloc.h"
#include "lib/malloc/memacct.h"

#ifndef BUF_CHUNK_CAP /* overridable for benchmarks only */
#define BUF_CHUNK_CAP 16384
#endif
#define BUF_FREELIST_MAX 1024

typedef struct chunk_t {
  struct chunk_t *next;
  uint8_t *data; /* first byte of data, inside mem */
  size_t len;    /* bytes of data */
  size_t cap;    /* bytes of storage in mem */
  uint64_t added_us; /* when the chunk was taken (CLOCK_MONOTONIC, us) */
  uint8_t mem[];
} chunk_t;

struct buf_t {
  chunk_t *head;
  chunk_t *tail;
  size_t datalen;
  size_t alloc; /* bytes of chunk memory held */
  int acct;     /* memacct kind its chunk memory counts under, or NONE */
};

static chunk_t *freelist;
static int freelist_len;

static inline size_t
chunk_alloc_size(const chunk_t *ch)
{
  return sizeof(chunk_t) + ch->cap;
}

/* Every change of b->alloc goes through these two, so the budget
 * (lib/malloc/memacct) sees the same bytes as buf_allocation(). */
static inline void
alloc_grew(buf_t *b, size_t n)
{
  b->alloc += n;
  if (b->acct != MEMACCT_NONE)
    memacct_add(b->acct, n);
}

static inline void
alloc_shrank(buf_t *b, size_t n)
{
  b->alloc -= n;
  if (b->acct != MEMACCT_NONE)
    memacct_sub(b->acct, n);
}

static inline size_t
chunk_space(const chunk_t *ch)
{
  return (size_t)(ch->mem + ch->cap - (ch->data + ch->len));
}

static uint64_t (*clock_fn)(void);

/* The chunk's time stamp: one coarse monotonic clock read per chunk (the
 * clock evloop uses, so ages compare with queued cells'). */
static uint64_t
buf_now_us(void)
{
  if (clock_fn)
    return clock_fn();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void
buf_set_clock_for_testing(uint64_t (*fn)(void))
{
  clock_fn = fn;
}

static chunk_t *
chunk_new(size_t cap)
{
  chunk_t *ch;
  if (cap <= BUF_CHUNK_CAP && freelist) {
    ch = freelist;
    freelist = ch->next;
    freelist_len--;
  } else {
    if (cap < BUF_CHUNK_CAP)
      cap = BUF_CHUNK_CAP;
    ch = pc_malloc(sizeof(chunk_t) + cap);
    ch->cap = cap;
  }
  ch->next = NULL;
  ch->data = ch->mem;
  ch->len = 0;
  ch->added_us = buf_now_us();
  return ch;
}

static void
chunk_release(chunk_t *ch)
{
  if (ch->cap == BUF_CHUNK_CAP && freelist_len < BUF_FREELIST_MAX) {
    ch->next = freelist;
    freelist = ch;
    freelist_len++;
  } else {
    free(ch);
  }
}

/* Append a new empty chunk of at least cap bytes to b. */
static chunk_t *
buf_append_chunk(buf_t *b, size_t cap)
{
  chunk_t *ch = chunk_new(cap);
  if (b->tail)
    b->tail->next = ch;
  else
    b->head = ch;
  b->tail = ch;
  alloc_grew(b, chunk_alloc_size(ch));
  return ch;
}

/* Unlink and release the head chunk. */
static void
buf_pop_head(buf_t *b)
{
  chunk_t *ch = b->head;
  b->head = ch->next;
  if (!b->head)
    b->tail = NULL;
  alloc_shrank(b, chunk_alloc_size(ch));
  chunk_release(ch);
}

buf_t *
buf_new(void)
{
  buf_t *b = pc_zalloc(sizeof(buf_t));
  b->acct = MEMACCT_NONE;
  return b;
}

void
buf_set_memacct(buf_t *b, int kind)
{
  if (b->acct == kind)
    return;
  if (b->acct != MEMACCT_NONE)
    memacct_sub(b->acct, b->alloc);
  b->acct = kind;
  if (kind != MEMACCT_NONE)
    memacct_add(kind, b->alloc);
}

void
buf_clear(buf_t *b)
{
  while (b->head)
    buf_pop_head(b);
  b->datalen = 0;
  assert(b->alloc == 0);
}

void
buf_free_(buf_t *b)
{
  if (!b)
    return;
  buf_clear(b);
  free(b);
}

size_t
buf_datalen(const buf_t *b)
{
  return b->datalen;
}

size_t
buf_allocation(const buf_t *b)
{
  return b->alloc;
}

void
buf_add(buf_t *b, const void *data, size_t len)
{
  const uint8_t *p = data;
  while (len) {
    chunk_t *t = b->tail;
    size_t space = t ? chunk_space(t) : 0;
    if (!space) {
      t = buf_append_chunk(b, BUF_CHUNK_CAP);
      space = chunk_space(t);
    }
    size_t n = len < space ? len : space;
    memcpy(t->data + t->len, p, n);
    t->len += n;
    b->datalen += n;
    p += n;
    len -= n;
  }
}

void
buf_add_unsplit(buf_t *b, const void *data, size_t len)
{
  chunk_t *t = b->tail;
  if (t && t->len > 0 && len <= BUF_CHUNK_CAP && chunk_space(t) < len)
    buf_append_chunk(b, BUF_CHUNK_CAP); /* leave the tail's rest unused */
  buf_add(b, data, len);
}

void
buf_peek(const buf_t *b, void *out, size_t len)
{
  assert(len <= b->datalen);
  uint8_t *o = out;
  for (const chunk_t *ch = b->head; len; ch = ch->next) {
    size_t n = len < ch->len ? len : ch->len;
    memcpy(o, ch->data, n);
    o += n;
    len -= n;
  }
}

void
buf_drain(buf_t *b, size_t n)
{
  assert(n <= b->datalen);
  b->datalen -= n;
  while (n) {
    chunk_t *ch = b->head;
    if (n < ch->len) {
      ch->data += n;
      ch->len -= n;
      break;
    }
    n -= ch->len;
    buf_pop_head(b);
  }
  /* Drop a leftover empty chunk so an empty buffer holds no memory (the
   * invariant allows only the tail to be empty). */
  if (b->datalen == 0)
    while (b->head)
      buf_pop_head(b);
}

void
buf_get(buf_t *b, void *out, size_t len)
{
  buf_peek(b, out, len);
  buf_drain(b, len);
}

const uint8_t *
buf_pullup(buf_t *b, size_t n)
{
  static const uint8_t empty[1];
  assert(n <= b->datalen);
  chunk_t *h = b->head;
  if (!h)
    return empty;
  if (h->len >= n)
    return h->data;

  if (h->cap >= n) {
    /* Room in the head chunk: slide its data to the front if needed. */
    if (h->data + n > h->mem + h->cap) {
      memmove(h->mem, h->data, h->len);
      h->data = h->mem;
    }
  } else {
    /* Bigger than the head chunk: a one-off chunk replaces it. */
    size_t cap = (n + BUF_CHUNK_CAP - 1) / BUF_CHUNK_CAP * BUF_CHUNK_CAP;
    chunk_t *nh = chunk_new(cap);
    memcpy(nh->data, h->data, h->len);
    nh->len = h->len;
    nh->next = h->next;
    nh->added_us = h->added_us;
    alloc_grew(b, chunk_alloc_size(nh));
    alloc_shrank(b, chunk_alloc_size(h));
    if (b->tail == h)
      b->tail = nh;
    b->head = nh;
    chunk_release(h);
    h = nh;
  }
  /* Move bytes from the following chunks to the end of the head. */
  while (h->len < n) {
    chunk_t *nx = h->next;
    size_t take = n - h->len;
    if (take > nx->len)
      take = nx->len;
    memcpy(h->data + h->len, nx->data, take);
    h->len += take;
    nx->data += take;
    nx->len -= take;
    if (nx->len == 0) {
      h->next = nx->next;
      if (b->tail == nx)
        b->tail = h;
      alloc_shrank(b, chunk_alloc_size(nx));
      chunk_release(nx);
    }
  }
  return h->data;
}

const uint8_t *
buf_head(const buf_t *b, size_t *len)
{
  if (!b->head) {
    *len = 0;
    return NULL;
  }
  *len = b->head->len;
  return b->head->data;
}

uint8_t *
buf_tail_space(buf_t *b, size_t min_space, size_t *avail)
{
  chunk_t *t = b->tail;
  if (min_space == 0)
    min_space = 1;
  if (t && t->len == 0 && t->data != t->mem) {
    /* An empty tail chunk: reuse its whole storage. */
    t->data = t->mem;
  }
  if (!t || chunk_space(t) < min_space)
    t = buf_append_chunk(b, min_space);
  *avail = chunk_space(t);
  return t->data + t->len;
}

void
buf_commit(buf_t *b, size_t n)
{
  chunk_t *t = b->tail;
  if (!n)
    return;
  assert(t && n <= chunk_space(t));
  t->len += n;
  b->datalen += n;
}

void
buf_move_all(buf_t *dst, buf_t *src)
{
  if (src == dst || src->datalen == 0) {
    if (src != dst)
      buf_clear(src);
    return;
  }
  /* Small amounts that fit into dst's tail are copied: linking a nearly
   * empty chunk would waste most of a chunk. */
  if (dst->tail && src->datalen <= chunk_space(dst->tail) &&
      src->datalen <= BUF_CHUNK_CAP / 4) {
    for (chunk_t *ch = src->head; ch; ch = ch->next) {
      memcpy(dst->tail->data + dst->tail->len, ch->data, ch->len);
      dst->tail->len += ch->len;
    }
    dst->datalen += src->datalen;
    buf_clear(src);
    return;
  }
  /* Keep the invariant: an empty tail in dst cannot stay in the middle. */
  if (dst->tail && dst->tail->len == 0) {
    if (dst->head == dst->tail) {
      buf_clear(dst);
    } else {
      chunk_t *p = dst->head;
      while (p->next != dst->tail)
        p = p->next;
      alloc_shrank(dst, chunk_alloc_size(dst->tail));
      chunk_release(dst->tail);
      p->next = NULL;
      dst->tail = p;
    }
  }
  if (dst->tail)
    dst->tail->next = src->head;
  else
    dst->head = src->head;
  dst->tail = src->tail;
  dst->datalen += src->datalen;
  size_t moved = src->alloc;
  alloc_shrank(src, moved);
  alloc_grew(dst, moved);
  src->head = src->tail = NULL;
  src->datalen = 0;
}

/* Does s[0..slen) occur at offset off of chunk ch (continuing into the
 * following chunks)? */
static int
buf_match_at(const chunk_t *ch, size_t off, const uint8_t *s, size_t slen)
{
  while (slen) {
    if (!ch)
      return 0;
    size_t n = ch->len - off;
    if (n > slen)
      n = slen;
    if (memcmp(ch->data + off, s, n))
      return 0;
    s += n;
    slen -= n;
    ch = ch->next;
    off = 0;
  }
  return 1;
}

long
buf_find(const buf_t *b, const void *s, size_t slen)
{
  const uint8_t *needle = s;
  if (slen == 0)
    return 0;
  if (slen > b->datalen)
    return -1;
  size_t base = 0;
  for (const chunk_t *ch = b->head; ch; ch = ch->next) {
    size_t off = 0;
    while (off < ch->len) {
      const uint8_t *p = memchr(ch->data + off, needle[0], ch->len - off);
      if (!p)
        break;
      off = (size_t)(p - ch->data);
      if (base + off + slen > b->datalen)
        return -1;
      if (buf_match_at(ch, off, needle, slen))
        return (long)(base + off);
      off++;
    }
    base += ch->len;
  }
  return -1;
}

uint64_t
buf_oldest_us(const buf_t *b)
{
  return b->datalen && b->head ? b->head->added_us : UINT64_MAX;
}
