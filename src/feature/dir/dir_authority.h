/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_authority.h -- the directory authorities a relay publishes to and a
 * client fetches from: parsed from torrc DirAuthority lines (tor's syntax),
 * or the built-in default list when none are configured.
 *
 *   DirAuthority [NICKNAME] [FLAGS] IPV4:DIRPORT FINGERPRINT
 *   FLAGS: orport=PORT  v3ident=HEX40  no-v2  ipv6=[ADDR]:PORT  bridge
 *          weight=NUM
 *   FINGERPRINT: the authority's RSA identity, 40 hex digits, spaces allowed
 *                (as tor prints it: 10 groups of 4).
 */
#ifndef PCTOR_FEATURE_DIR_DIR_AUTHORITY_H
#define PCTOR_FEATURE_DIR_DIR_AUTHORITY_H
#include <stdint.h>
#include "lib/address/address.h"

typedef struct dir_authority_t {
  char nickname[20];        /* "" when not given */
  pc_addr_t dir_addr;       /* IPv4 address and DirPort */
  uint16_t or_port;         /* 0 when not given */
  uint8_t rsa_id[20];       /* relay identity fingerprint */
  int has_v3ident;
  uint8_t v3ident[20];      /* authority signing identity (v3ident=) */
  int is_bridge_auth;
  int no_v2;
  int has_ipv6;
  pc_addr_t ipv6_or_addr;
  double weight;            /* default 1.0 */
} dir_authority_t;

/* Parse the value of one DirAuthority line into *out. Returns 0, or -1 with
 * *err set to a newly allocated message naming the problem. */
int dir_authority_parse(dir_authority_t *out, const char *value, char **err);

/* The authorities of the public Tor network (used only when no
 * DirAuthority line is configured and TestingTorNetwork is 0). Sets *n. */
const dir_authority_t *dir_authority_defaults(int *n);
#endif
