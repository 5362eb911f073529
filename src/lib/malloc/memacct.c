/* SPDX-License-Identifier: BSD-3-Clause */
/* memacct.c -- the process-wide memory budget (see memacct.h).
 *
 * Design: an array of counters, their running sum, and one trigger. The
 * sum is kept alongside the counters so that the check on an increase is
 * one comparison, never a loop over kinds. The trigger fires once per
 * arming so that a holder growing byte by byte above the limit does not
 * call the owner's callback per byte; the owner re-arms after it has
 * freed what it could (possibly higher, when nothing could be freed).
 */
#include "lib/malloc/memacct.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[MEMACCT_N_KINDS] = {
    "cells",    "chan_buf", "exit_buf",  "edge_buf",
    "streams",  "conflux",  "dircache",  "measureme", "backtap",
    "dos",      "utcp",     "compress",  "dns",       "dircopies",
};

static struct {
  uint64_t by_kind[MEMACCT_N_KINDS];
  uint64_t total;
  uint64_t trigger;
  uint64_t limit;
  memacct_over_fn fn;
  void *arg;
  uint64_t underflows;
  unsigned excluded; /* bit per kind: not in the total (tests) */
} A = {{0}, 0, UINT64_MAX, UINT64_MAX, NULL, NULL, 0, 0};

static int
in_total(int kind)
{
  return !(A.excluded & (1u << kind));
}

static int
kind_ok(int kind)
{
  return kind >= 0 && kind < MEMACCT_N_KINDS;
}

static void
check_trigger(void)
{
  if (A.total > A.trigger && A.fn) {
    memacct_over_fn fn = A.fn;
    A.trigger = UINT64_MAX; /* disarmed until the owner re-arms */
    fn(A.arg);
  }
}

void
memacct_add(int kind, size_t n)
{
  if (!kind_ok(kind) || !n)
    return;
  A.by_kind[kind] += n;
  if (!in_total(kind))
    return;
  A.total += n;
  if (A.total > A.trigger)
    check_trigger();
}

void
memacct_sub(int kind, size_t n)
{
  if (!kind_ok(kind) || !n)
    return;
  if (A.by_kind[kind] < n) {
    A.underflows++;
    n = (size_t)A.by_kind[kind];
  }
  A.by_kind[kind] -= n;
  if (!in_total(kind))
    return;
  A.total -= n;
  if (A.trigger != UINT64_MAX && A.trigger > A.limit && A.total <= A.limit)
    A.trigger = A.limit;
}

void
memacct_set(int kind, uint64_t n)
{
  if (!kind_ok(kind))
    return;
  uint64_t old = A.by_kind[kind];
  A.by_kind[kind] = n;
  if (!in_total(kind))
    return;
  A.total = A.total - old + n;
  if (n > old && A.total > A.trigger)
    check_trigger();
}

uint64_t
memacct_get(int kind)
{
  return kind_ok(kind) ? A.by_kind[kind] : 0;
}

uint64_t
memacct_total(void)
{
  return A.total;
}

const char *
memacct_kind_name(int kind)
{
  return kind_ok(kind) ? kind_names[kind] : "none";
}

int
memacct_largest_kind(void)
{
  int best = 0;
  for (int k = 1; k < MEMACCT_N_KINDS; k++)
    if (A.by_kind[k] > A.by_kind[best])
      best = k;
  return best;
}

void
memacct_set_trigger(uint64_t bytes, memacct_over_fn fn, void *arg)
{
  A.fn = fn;
  A.arg = arg;
  A.limit = fn ? bytes : UINT64_MAX;
  A.trigger = A.limit;
  check_trigger();
}

void
memacct_rearm(uint64_t above)
{
  if (!A.fn)
    return;
  A.trigger = above > A.limit ? above : A.limit;
  check_trigger();
}

uint64_t
memacct_trigger(void)
{
  return A.trigger;
}

uint64_t
memacct_limit(void)
{
  return A.limit;
}

void
memacct_describe(char *out, size_t outlen)
{
  size_t off = 0;
  if (!outlen)
    return;
  out[0] = '\0';
  for (int k = 0; k < MEMACCT_N_KINDS && off < outlen; k++) {
    if (!A.by_kind[k])
      continue;
    int w = snprintf(out + off, outlen - off, "%s%s=%llu KB",
                     off ? ", " : "", kind_names[k],
                     (unsigned long long)((A.by_kind[k] + 1023) >> 10));
    if (w < 0)
      break;
    off += (size_t)w;
  }
  if (!off)
    snprintf(out, outlen, "nothing");
}

uint64_t
memacct_underflows(void)
{
  return A.underflows;
}

void
memacct_exclude_for_testing(int kind, int excluded)
{
  if (!kind_ok(kind) || !in_total(kind) == !!excluded)
    return;
  if (excluded) {
    A.excluded |= 1u << kind;
    A.total -= A.by_kind[kind];
  } else {
    A.excluded &= ~(1u << kind);
    A.total += A.by_kind[kind];
  }
}

void
memacct_reset_for_testing(void)
{
  memset(A.by_kind, 0, sizeof(A.by_kind));
  A.total = 0;
  A.trigger = UINT64_MAX;
  A.limit = UINT64_MAX;
  A.fn = NULL;
  A.arg = NULL;
  A.underflows = 0;
  A.excluded = 0;
}
