/* SPDX-License-Identifier: BSD-3-Clause */
/* policy.h -- exit policies: the torrc ExitPolicy option, the
 * accept/reject lines of our server descriptor, decisions for streams,
 * and the port summaries of dir-spec 3.8.2 ("p"/"p6" lines and the
 * descriptor's "ipv6-policy").
 *
 * An exit_policy_t is an ordered list of rules; the first rule that
 * matches an address:port decides (dir-spec 2.1.1; what no rule matches
 * is accepted). Every rule is for one address family: "*" in a torrc
 * entry becomes two rules, one for *4 and one for *6, and "private"
 * becomes one rule per private netblock.
 *
 * exit_policy_parse() builds our own policy from the ExitPolicy lines the
 * way tor does (see policy.c for the order of what it adds); the
 * descriptor lines, the summaries and stream decisions all come from the
 * result. Summaries are written here (exit_policy_summarize) and read as
 * port sets by feature/dir's policy_summary, pctor's one implementation
 * of those (path selection, the client, consensus and microdescriptor
 * parsing use it).
 */
#ifndef PCTOR_FEATURE_EXIT_POLICY_H
#define PCTOR_FEATURE_EXIT_POLICY_H
#include <stddef.h>
#include <stdint.h>

#include "lib/address/address.h"

/* tor's default exit policy (tor(1), ExitPolicy), appended to the
 * configured lines of an exit. "*" means IPv4 and IPv6. */
#define EXIT_POLICY_DEFAULT                                                   \
  "reject *:25,reject *:119,reject *:135-139,reject *:445,"                   \
  "reject *:563,reject *:1214,reject *:4661-4666,"                            \
  "reject *:6346-6429,reject *:6699,reject *:6881-6999,accept *:*"

/* tor's reduced exit policy (ReducedExitPolicy 1), appended instead of
 * EXIT_POLICY_DEFAULT: the ports tor 0.4.9 accepts with it, the rest
 * rejected. */
#define EXIT_POLICY_REDUCED                                                   \
  "accept *:20-23,accept *:43,accept *:53,accept *:79-81,accept *:88," \
  "accept *:110,accept *:143,accept *:194,accept *:220,accept *:389," \
  "accept *:443,accept *:464,accept *:465,accept *:531,accept *:543-544," \
  "accept *:554,accept *:563,accept *:587,accept *:636,accept *:706," \
  "accept *:749,accept *:873,accept *:902-904,accept *:981,accept *:989-995," \
  "accept *:1194,accept *:1220,accept *:1293,accept *:1500,accept *:1533," \
  "accept *:1677,accept *:1723,accept *:1755,accept *:1863," \
  "accept *:2082-2083,accept *:2086-2087,accept *:2095-2096," \
  "accept *:2102-2104,accept *:3128,accept *:3389,accept *:3690," \
  "accept *:4321,accept *:4643,accept *:5050,accept *:5190," \
  "accept *:5222-5223,accept *:5228,accept *:5900,accept *:6660-6669," \
  "accept *:6679,accept *:6697,accept *:8000,accept *:8008,accept *:8074," \
  "accept *:8080,accept *:8082,accept *:8087-8088,accept *:8232-8233," \
  "accept *:8332-8333,accept *:8443,accept *:8888,accept *:9418," \
  "accept *:9999,accept *:10000,accept *:11371,accept *:18080-18081," \
  "accept *:18089,accept *:19294,accept *:19638,accept *:50002," \
  "accept *:64738,reject *:*"

/* A summary is at most this long, "accept " or "reject " included
 * (dir-spec 3.8.2). */
#define EXIT_POLICY_SUMMARY_MAX_LEN 1000
/* At most this many rules in a policy (after "*" and "private" expand),
 * and this many characters in one comma-separated entry. */
#define EXIT_POLICY_MAX_RULES 4096
#define EXIT_POLICY_MAX_ENTRY_LEN 256

/* One rule. addr has its host bits (past maskbits) cleared. */
typedef struct exit_policy_rule_t {
  uint8_t accept;   /* 1: accept, 0: reject */
  uint8_t maskbits; /* 0-32 for IPv4, 0-128 for IPv6; 0 is "*" */
  uint16_t prt_min; /* 1 <= prt_min <= prt_max <= 65535 */
  uint16_t prt_max;
  int family;       /* AF_INET or AF_INET6 */
  uint8_t addr[16]; /* network order; IPv4 uses the first 4 bytes */
} exit_policy_rule_t;

typedef struct exit_policy_t exit_policy_t;

/* What exit_policy_parse() adds around the configured lines. */
typedef struct exit_policy_options_t {
  int is_exit;   /* 0: the policy is "reject *:*" whatever the lines say */
  int ipv6_exit; /* IPv6Exit: 0 prepends "reject *6:*" */
  int reject_private;          /* ExitPolicyRejectPrivate (default 1) */
  int reject_local_interfaces; /* ExitPolicyRejectLocalInterfaces (0) */
  int reduced;   /* ReducedExitPolicy: EXIT_POLICY_REDUCED, not _DEFAULT */
  /* Our advertised addresses: rejected when reject_private. */
  const pc_addr_t *our_addrs;
  int n_our_addrs;
  /* The addresses of our interfaces, OutboundBindAddress and our ports'
   * bind addresses: rejected when reject_local_interfaces. Of both lists
   * only public addresses are used (private ones are covered by
   * reject_private), and IPv6 ones only when ipv6_exit. */
  const pc_addr_t *local_addrs;
  int n_local_addrs;
} exit_policy_options_t;

/* Defaults: not an exit, no IPv6 exit, reject_private 1,
 * reject_local_interfaces 0, no addresses. */
void exit_policy_options_init(exit_policy_options_t *opts);

/* tor's rule for whether we are an exit: ExitRelay 1 yes, 0 no, auto (-1)
 * yes exactly when an ExitPolicy line or IPv6Exit 1 was given. */
int exit_policy_want_exit(int exit_relay, int n_policy_lines, int ipv6_exit);

/* Build our exit policy from the values of the ExitPolicy lines (each a
 * comma-separated list of entries "accept[6]|reject[6] ADDR[/MASK][:PORT]").
 * Non-exit: "reject *4:*, reject *6:*" (the lines are still checked).
 * Exit: ["reject *6:*" unless ipv6_exit], ["reject private:*", our public
 * addresses if reject_private], [our local public addresses if
 * reject_local_interfaces], the lines, then EXIT_POLICY_DEFAULT; then
 * redundant rules are dropped as tor drops them. Returns NULL and a
 * newly allocated *err ("ExitPolicy: 'accept 1.2.3.4:99999': bad port")
 * on a malformed entry. */
exit_policy_t *exit_policy_parse(const char *const *lines, int n,
                                 const exit_policy_options_t *opts,
                                 char **err);
/* Just the entries of the lines, in order, nothing added or removed. */
exit_policy_t *exit_policy_parse_plain(const char *const *lines, int n,
                                       char **err);
void exit_policy_free_(exit_policy_t *p);
#define exit_policy_free(p)                                                   \
  do {                                                                        \
    exit_policy_free_(p);                                                     \
    (p) = NULL;                                                               \
  } while (0)

int exit_policy_n_rules(const exit_policy_t *p);
const exit_policy_rule_t *exit_policy_get_rule(const exit_policy_t *p,
                                               int idx);

typedef enum {
  EXIT_POLICY_ACCEPTED = 0,
  EXIT_POLICY_PROBABLY_ACCEPTED = 1,
  EXIT_POLICY_PROBABLY_REJECTED = 2,
  EXIT_POLICY_REJECTED = 3,
} exit_policy_result_t;

/* ACCEPTED or REJECTED for a stream to addr:port (the first matching
 * rule; none matching accepts). Port 0 and an unset address are
 * rejected; an IPv4-mapped IPv6 address is judged as its IPv4 address.
 * No allocation. */
exit_policy_result_t exit_policy_allows(const exit_policy_t *p,
                                        const pc_addr_t *addr, uint16_t port);
/* The address is not known yet (a hostname): tor's rule -- the first
 * rule for the port that covers every address decides, but a rule for
 * some addresses before it turns that decision into a "probably". Only
 * rules of family (AF_INET, AF_INET6) count; AF_UNSPEC counts all. */
exit_policy_result_t exit_policy_allows_unknown(const exit_policy_t *p,
                                                uint16_t port, int family);
/* 1 if the policy certainly rejects every address:port of family
 * (AF_INET or AF_INET6): no accept rule comes before a reject-all. */
int exit_policy_is_reject_star(const exit_policy_t *p, int family);

/* One rule as text: for_desc 1 gives the descriptor form ("accept *:80",
 * "reject 10.0.0.0/8:*", IPv6 as "accept6 [2001:db8::]/32:*"), 0 the
 * torrc form that parses back to the same rule ("accept *4:80",
 * "reject [::]/8:*"). Returns buf. 80 bytes always suffice. */
#define EXIT_POLICY_RULE_BUF_LEN 80
char *exit_policy_rule_format(const exit_policy_rule_t *r, int for_desc,
                              char *buf, size_t buflen);

/* The exit-policy part of our server descriptor: every IPv4 rule as an
 * "accept"/"reject" line ("reject *:*" if there is none), then
 * "ipv6-policy <summary>" unless the IPv6 summary is "reject 1-65535".
 * Each line ends in "\n". Newly allocated. */
char *exit_policy_format_descriptor(const exit_policy_t *p);

/* The rules of family (AF_INET, AF_INET6, or AF_UNSPEC for all), in
 * order and in the descriptor's form, one per line without a final
 * newline: GETINFO exit-policy/ipv4, exit-policy/ipv6 and exit-policy/full
 * (which for tor's own policies gives what tor 0.4.9 gives). A family
 * without rules (or p NULL) gives "reject *:*" (or "reject6 *:*" for
 * AF_INET6 alone). Newly allocated. */
char *exit_policy_format_rules(const exit_policy_t *p, int family);

/* The dir-spec 3.8.2 summary of the rules of family (AF_INET or
 * AF_INET6), computed as tor's authorities compute it, e.g.
 * "reject 25,119,135-139" or "accept 80,443". Newly allocated. */
char *exit_policy_summarize(const exit_policy_t *p, int family);

#endif
