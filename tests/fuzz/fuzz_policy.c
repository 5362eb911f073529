/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_policy.c -- fuzz target: exit policies (feature/exit/policy) and
 * the policy summaries of microdescriptors (feature/dir/policy_summary).
 *
 * Input: byte 0 selects the parse mode (bit 0: exit_policy_parse with the
 * relay options -- reject private, IPv6 exit -- else the plain parser;
 * bit 1: also parse the text as one "p" summary line); the rest is split
 * into ExitPolicy lines at newlines. A parsed policy is queried, formatted
 * for a descriptor and summarised, as a relay does when it publishes.
 * Bound: the rules, the descriptor text and the summaries: 16 KiB + 64
 * bytes per input byte.
 */
#include "fuzz.h"

#include "feature/dir/policy_summary.h"
#include "feature/exit/policy.h"
#include "lib/address/address.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MAX_LINES 256

static void
run(const uint8_t *data, size_t len)
{
  if (len < 1)
    return;
  uint8_t mode = data[0];
  char *text = fuzz_strndup(data + 1, len - 1);
  const char *lines[MAX_LINES];
  int n = 0;
  for (char *p = text; p && n < MAX_LINES;) {
    lines[n++] = p;
    char *nl = strchr(p, '\n');
    if (nl)
      *nl++ = '\0';
    p = nl;
  }
  char *err = NULL;
  exit_policy_t *pol;
  if (mode & 1) {
    exit_policy_options_t o;
    exit_policy_options_init(&o);
    o.is_exit = 1;
    o.ipv6_exit = 1;
    pol = exit_policy_parse(lines, n, &o, &err);
  } else {
    pol = exit_policy_parse_plain(lines, n, &err);
  }
  if (pol) {
    pc_addr_t a;
    memset(&a, 0, sizeof(a));
    (void)exit_policy_n_rules(pol);
    (void)exit_policy_allows_unknown(pol, 80, AF_INET);
    (void)exit_policy_is_reject_star(pol, AF_INET6);
    if (pc_addr_parse_ip(&a, "10.1.2.3", 0) == 0)
      (void)exit_policy_allows(pol, &a, 443);
    free(exit_policy_format_descriptor(pol));
    char *s4 = exit_policy_summarize(pol, AF_INET);
    if (s4) {
      char *serr = NULL;
      policy_summary_t *ps = policy_summary_parse_line(s4, &serr);
      if (ps) {
        /* A summary we wrote must read back. */
        policy_summary_free(ps);
      } else {
        fprintf(stderr, "fuzz_policy: our own summary \"%s\" does not "
                        "parse: %s\n", s4, serr ? serr : "?");
        abort();
      }
      free(serr);
    }
    free(s4);
    free(exit_policy_summarize(pol, AF_INET6));
    exit_policy_free(pol);
  }
  free(err);
  if (mode & 2) {
    char *serr = NULL;
    policy_summary_t *ps = policy_summary_parse_line(lines[0], &serr);
    if (ps) {
      (void)policy_summary_allows_port(ps, 80);
      (void)policy_summary_allows_any(ps);
    }
    policy_summary_free(ps);
    free(serr);
  }
  free(text);
}

const fuzz_target_t fuzz_target = {
  .name = "policy", .run = run, .amp_factor = 64, .amp_slack = 16 * 1024,
};
