/* SPDX-License-Identifier: BSD-3-Clause */
/* delayq.c -- link model, random numbers and deadline heap of pctor-delayd
 * (see delayq.h for the design).
 *
 * Parsing copies each ':'-separated field into a small bounded buffer and
 * converts it with strtoul/strtod, rejecting empty fields, trailing junk,
 * NaN/infinity and out-of-range values, so a link spec from the command
 * line is either fully valid or refused with a message.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/malloc/alloc.h"
#include "tools/delayd/delayq.h"

/* ---- random numbers ---- */

static uint64_t
splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

void
delayd_rng_seed(delayd_rng_t *rng, uint64_t seed)
{
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    rng->s[i] = splitmix64(&x);
  rng->has_spare = 0;
  rng->spare = 0;
}

uint64_t
delayd_rng_next(delayd_rng_t *rng)
{
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double
delayd_rng_uniform(delayd_rng_t *rng)
{
  return (double)(delayd_rng_next(rng) >> 11) * 0x1.0p-53;
}

double
delayd_rng_normal(delayd_rng_t *rng)
{
  if (rng->has_spare) {
    rng->has_spare = 0;
    return rng->spare;
  }
  double u, v, s;
  do {
    u = 2.0 * delayd_rng_uniform(rng) - 1.0;
    v = 2.0 * delayd_rng_uniform(rng) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  double f = sqrt(-2.0 * log(s) / s);
  rng->spare = v * f;
  rng->has_spare = 1;
  return u * f;
}

/* ---- links ---- */

/* Copy field [p, end) into buf (size n); -1 if empty or too long. */
static int
field_copy(char *buf, size_t n, const char *p, const char *end)
{
  size_t len = (size_t)(end - p);
  if (len == 0 || len >= n)
    return -1;
  memcpy(buf, p, len);
  buf[len] = '\0';
  return 0;
}

static int
parse_u32(const char *s, uint32_t *out)
{
  if (s[0] < '0' || s[0] > '9')
    return -1;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > UINT32_MAX)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int
parse_num(const char *s, double lo, double hi, double *out)
{
  /* Digits and at most one '.', nothing else (no signs, exponents, hex,
   * "nan" or "inf"). */
  int dots = 0, digits = 0;
  for (const char *c = s; *c; c++) {
    if (*c == '.')
      dots++;
    else if (*c >= '0' && *c <= '9')
      digits++;
    else
      return -1;
  }
  if (dots > 1 || digits == 0)
    return -1;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

int
delayd_link_parse(const char *spec, delayd_link_t *out, char *err,
                  size_t errlen)
{
  static const char *names[4] = {"id", "delay", "jitter", "loss"};
  char buf[32];
  double v[4] = {0, 0, 0, 0};
  uint32_t id = 0;
  int nf = 0;
  const char *p = spec;
  memset(out, 0, sizeof(*out));
  for (;;) {
    const char *end = strchr(p, ':');
    if (!end)
      end = p + strlen(p);
    if (nf >= 4) {
      snprintf(err, errlen, "'%s': too many fields (ID:DELAY_MS[:JITTER_MS"
               "[:LOSS_PCT]])", spec);
      return -1;
    }
    if (field_copy(buf, sizeof(buf), p, end) < 0) {
      snprintf(err, errlen, "'%s': %s field is empty or too long", spec,
               names[nf]);
      return -1;
    }
    int bad;
    if (nf == 0)
      bad = parse_u32(buf, &id);
    else if (nf == 1)
      bad = parse_num(buf, 0, DELAYD_MAX_DELAY_MS, &v[1]);
    else if (nf == 2)
      bad = parse_num(buf, 0, DELAYD_MAX_JITTER_MS, &v[2]);
    else
      bad = parse_num(buf, 0, 100, &v[3]);
    if (bad) {
      snprintf(err, errlen, "'%s': bad %s '%s'%s", spec, names[nf], buf,
               nf == 0 ? " (a number 0..4294967295)"
               : nf == 3 ? " (percent, 0..100)"
                         : " (milliseconds, 0..60000)");
      return -1;
    }
    nf++;
    if (!*end)
      break;
    p = end + 1;
  }
  if (nf < 2) {
    snprintf(err, errlen, "'%s': needs at least ID:DELAY_MS", spec);
    return -1;
  }
  out->id = id;
  out->delay_ns = (uint64_t)llround(v[1] * 1e6);
  out->jitter_ns = (uint64_t)llround(v[2] * 1e6);
  out->loss = v[3] / 100.0;
  return 0;
}

int
delayd_link_lose(const delayd_link_t *l, delayd_rng_t *rng)
{
  if (l->loss <= 0)
    return 0;
  return delayd_rng_uniform(rng) < l->loss;
}

uint64_t
delayd_link_sample_delay(const delayd_link_t *l, delayd_rng_t *rng)
{
  if (l->jitter_ns == 0)
    return l->delay_ns;
  double z;
  do {
    z = delayd_rng_normal(rng);
  } while (z < -3.0 || z > 3.0);
  double d = (double)l->delay_ns + z * (double)l->jitter_ns;
  if (d <= 0)
    return 0;
  return (uint64_t)d;
}

uint64_t
delayd_link_deadline(delayd_link_t *l, uint64_t now_ns, delayd_rng_t *rng,
                     int fifo)
{
  uint64_t t = now_ns + delayd_link_sample_delay(l, rng);
  if (fifo) {
    if (t < l->last_deadline_ns)
      t = l->last_deadline_ns;
    l->last_deadline_ns = t;
  }
  return t;
}

/* ---- heap ---- */

struct delayq_t {
  delayq_ent_t *v;
  size_t n, cap;
  uint64_t next_seq;
};

delayq_t *
delayq_new(size_t cap)
{
  if (cap < 1)
    cap = 1;
  delayq_t *q = pc_zalloc(sizeof(*q));
  q->v = pc_calloc(cap, sizeof(delayq_ent_t));
  q->cap = cap;
  return q;
}

void
delayq_free_(delayq_t *q)
{
  if (!q)
    return;
  free(q->v);
  free(q);
}

size_t
delayq_len(const delayq_t *q)
{
  return q->n;
}

size_t
delayq_cap(const delayq_t *q)
{
  return q->cap;
}

static inline int
ent_less(const delayq_ent_t *a, const delayq_ent_t *b)
{
  if (a->deadline_ns != b->deadline_ns)
    return a->deadline_ns < b->deadline_ns;
  return a->seq < b->seq;
}

int
delayq_push(delayq_t *q, uint64_t deadline_ns, uint32_t pkt_id, uint32_t link)
{
  if (q->n >= q->cap)
    return -1;
  delayq_ent_t e = {deadline_ns, q->next_seq++, pkt_id, link};
  size_t i = q->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!ent_less(&e, &q->v[parent]))
      break;
    q->v[i] = q->v[parent];
    i = parent;
  }
  q->v[i] = e;
  return 0;
}

const delayq_ent_t *
delayq_top(const delayq_t *q)
{
  return q->n ? &q->v[0] : NULL;
}

int
delayq_pop(delayq_t *q, delayq_ent_t *out)
{
  if (q->n == 0)
    return -1;
  *out = q->v[0];
  delayq_ent_t last = q->v[--q->n];
  size_t i = 0, n = q->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && ent_less(&q->v[c + 1], &q->v[c]))
      c++;
    if (!ent_less(&q->v[c], &last))
      break;
    q->v[i] = q->v[c];
    i = c;
  }
  if (n)
    q->v[i] = last;
  return 0;
}
