/* SPDX-License-Identifier: BSD-3-Clause */
/* allocator.h -- which malloc serves the process: glibc's, jemalloc or
 * mimalloc, chosen at build time (./configure --with-malloc=...).
 *
 * jemalloc and mimalloc are linked so that they replace malloc/free for
 * the whole process (pctor, libevent and OpenSSL alike), not through
 * prefixed functions: pctor's code keeps calling malloc. This module only
 * names the allocator, gives its run-time version, and checks that a
 * block from malloc() really belongs to it (a library linked but not
 * interposing would otherwise go unnoticed). Its headers
 * (<jemalloc/...>, <mimalloc.h>) are confined here by
 * tests/check-layers.sh.
 */
#ifndef PCTOR_LIB_MALLOC_ALLOCATOR_H
#define PCTOR_LIB_MALLOC_ALLOCATOR_H

/* The configured allocator: "glibc", "jemalloc" or "mimalloc". */
const char *allocator_name(void);
/* Name and run-time version, e.g. "jemalloc 5.3.0-0-g54eaed1d", in a
 * static buffer. */
const char *allocator_version(void);
/* 0 when malloc() returns memory of the configured allocator, -1 when it
 * does not (glibc: always 0). */
int allocator_check(void);

#endif
