/* SPDX-License-Identifier: BSD-3-Clause */
/* bytes.h -- read and write big-endian integers in byte arrays.
 *
 * Wire formats are parsed with these helpers, never by casting a uint8_t *
 * to a wider type (which is both unaligned and endian-dependent).
 */
#ifndef PCTOR_LIB_BYTES_BYTES_H
#define PCTOR_LIB_BYTES_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t
get_u16(const uint8_t *p)
{
  return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t
get_u32(const uint8_t *p)
{
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t
get_u64(const uint8_t *p)
{
  return ((uint64_t)get_u32(p) << 32) | get_u32(p + 4);
}
static inline void
set_u16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static inline void
set_u32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
static inline void
set_u64(uint8_t *p, uint64_t v)
{
  set_u32(p, (uint32_t)(v >> 32));
  set_u32(p + 4, (uint32_t)v);
}
/* Constant-time comparison: 0 when equal. */
static inline int
pc_memneq(const void *a, const void *b, size_t n)
{
  const uint8_t *x = a, *y = b;
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++)
    d |= x[i] ^ y[i];
  return d != 0;
}
static inline int
pc_is_zero(const void *a, size_t n)
{
  const uint8_t *x = a;
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++)
    d |= x[i];
  return d == 0;
}

#endif
