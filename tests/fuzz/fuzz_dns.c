/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_dns.c -- fuzz target: what lib/evloop/dns parses itself.
 *
 * DNS answers on the wire are decoded by libevent's evdns, not by pctor;
 * pctor's own parsing is of names: the hostname check applied to every
 * BEGIN/RESOLVE target before a query is sent, IP literals, and reverse
 * names (in-addr.arpa / ip6.arpa) from RESOLVE_PTR. Input: one name (cut
 * at the first NUL). Bound: nothing is allocated: 1 KiB + 1 byte per
 * input byte.
 */
#include "fuzz.h"

#include "lib/evloop/dns.h"

#include <stdlib.h>

static void
run(const uint8_t *data, size_t len)
{
  char *name = fuzz_strndup(data, len);
  pc_addr_t a;
  (void)dns_hostname_is_valid(name);
  (void)dns_parse_ip_literal(name, &a);
  (void)dns_reverse_name_parse(name, &a);
  free(name);
}

const fuzz_target_t fuzz_target = {
  .name = "dns", .run = run, .amp_factor = 1, .amp_slack = 1024,
};
