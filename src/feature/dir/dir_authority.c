/* SPDX-License-Identifier: BSD-3-Clause */
/* dir_authority.c -- parse DirAuthority values (tor's torrc syntax) and
 * provide the built-in list of the public network's authorities.
 *
 * Syntax (as tor's manual describes it):
 *   [NICKNAME] [FLAGS...] IPV4:DIRPORT FINGERPRINT
 * The first word is the nickname when it is a legal relay nickname (1-19
 * ASCII letters and digits). Words after it are flags until one starts
 * with a digit: that word is the IPv4 address and DirPort (the port is
 * required), and everything after it, spaces removed, is the 40-hex-digit
 * RSA identity fingerprint. Flags: orport=PORT, v3ident=HEX40, no-v2,
 * bridge, ipv6=[ADDR]:PORT, weight=NUM. Like tor, an unknown flag word
 * draws a warning and is ignored (old torrc files carry "v1", "hs",
 * "no-hs"); a known flag with a bad value is an error.
 *
 * The default list holds facts (nicknames, addresses, ports, fingerprints)
 * of the public Tor network's authorities as shipped by tor 0.4.9; it is
 * parsed with the same parser on first use, so it cannot drift from what a
 * user could write in torrc.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/dir_authority.h"
#include "lib/encoding/base16.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/relay_names.h"

#define MAX_WORDS 64
#define MAX_VALUE_LEN 1024

/* Parse a decimal port 1..65535 (no sign, no trailing garbage). */
static int
parse_port(const char *s, uint16_t *out)
{
  if (!*s || strlen(s) > 5)
    return -1;
  unsigned v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (unsigned)(*p - '0');
  }
  if (v < 1 || v > 65535)
    return -1;
  *out = (uint16_t)v;
  return 0;
}

/* Decode exactly 40 hex digits into 20 bytes. */
static int
parse_hex20(const char *s, size_t len, uint8_t out[20])
{
  if (len != 40)
    return -1;
  return base16_decode(out, 20, s, len) == 20 ? 0 : -1;
}

static int
fail(char **err, char *msg)
{
  if (err)
    *err = msg;
  else
    free(msg);
  return -1;
}

int
dir_authority_parse(dir_authority_t *out, const char *value, char **err)
{
  if (err)
    *err = NULL;
  memset(out, 0, sizeof(*out));
  out->weight = 1.0;
  out->dir_addr.family = AF_UNSPEC;
  out->ipv6_or_addr.family = AF_UNSPEC;
  if (!value)
    return fail(err, pc_strdup("DirAuthority: empty value"));
  if (strlen(value) > MAX_VALUE_LEN)
    return fail(err, pc_strdup("DirAuthority: value too long"));

  char *copy = pc_strdup(value);
  char *words[MAX_WORDS];
  int nw = 0;
  for (char *save = NULL, *w = strtok_r(copy, " \t\r\n", &save); w;
       w = strtok_r(NULL, " \t\r\n", &save)) {
    if (nw == MAX_WORDS) {
      free(copy);
      return fail(err, pc_strdup("DirAuthority: too many words"));
    }
    words[nw++] = w;
  }
  int i = 0;
  char *msg = NULL;
  if (nw == 0) {
    msg = pc_strdup("DirAuthority: empty value");
    goto bad;
  }
  if (pc_nickname_ok(words[0], strlen(words[0]))) {
    memcpy(out->nickname, words[0], strlen(words[0]) + 1);
    i++;
  }
  for (; i < nw && !isdigit((unsigned char)words[i][0]); i++) {
    const char *f = words[i];
    if (!strncmp(f, "orport=", 7)) {
      if (parse_port(f + 7, &out->or_port) < 0) {
        msg = pc_asprintf("DirAuthority: bad orport in '%s'", f);
        goto bad;
      }
    } else if (!strncmp(f, "v3ident=", 8)) {
      if (parse_hex20(f + 8, strlen(f + 8), out->v3ident) < 0) {
        msg = pc_asprintf("DirAuthority: v3ident must be 40 hex digits, "
                          "got '%s'", f + 8);
        goto bad;
      }
      out->has_v3ident = 1;
    } else if (!strcmp(f, "no-v2")) {
      out->no_v2 = 1;
    } else if (!strcmp(f, "bridge")) {
      out->is_bridge_auth = 1;
    } else if (!strncmp(f, "ipv6=", 5)) {
      pc_addr_t a;
      if (f[5] != '[' || pc_addr_parse(&a, f + 5) < 0 ||
          a.family != AF_INET6 || a.port == 0) {
        msg = pc_asprintf("DirAuthority: ipv6= needs [ADDRESS]:PORT, "
                          "got '%s'", f + 5);
        goto bad;
      }
      out->ipv6_or_addr = a;
      out->has_ipv6 = 1;
    } else if (!strncmp(f, "weight=", 7)) {
      char *end = NULL;
      errno = 0;
      double w = strtod(f + 7, &end);
      if (f[7] == '\0' || *end || errno || !(w >= 0.0) || w > 1e9) {
        msg = pc_asprintf("DirAuthority: bad weight in '%s'", f);
        goto bad;
      }
      out->weight = w;
    } else {
      log_warn("Unrecognized flag '%s' on DirAuthority line; ignoring it",
               f);
    }
  }
  if (i >= nw) {
    msg = pc_strdup("DirAuthority: missing IPV4:DIRPORT address");
    goto bad;
  }
  {
    pc_addr_t a;
    if (pc_addr_parse(&a, words[i]) < 0 || a.family != AF_INET) {
      msg = pc_asprintf("DirAuthority: '%s' is not an IPv4 address:port",
                        words[i]);
      goto bad;
    }
    if (a.port == 0) {
      msg = pc_asprintf("DirAuthority: missing DirPort in '%s'", words[i]);
      goto bad;
    }
    out->dir_addr = a;
  }
  i++;
  {
    char fp[MAX_VALUE_LEN + 1];
    size_t n = 0;
    for (; i < nw; i++) {
      size_t l = strlen(words[i]);
      if (n + l > 40) {
        msg = pc_strdup("DirAuthority: fingerprint longer than 40 hex "
                        "digits");
        goto bad;
      }
      memcpy(fp + n, words[i], l);
      n += l;
    }
    fp[n] = '\0';
    if (n == 0) {
      msg = pc_strdup("DirAuthority: missing fingerprint");
      goto bad;
    }
    if (parse_hex20(fp, n, out->rsa_id) < 0) {
      msg = pc_asprintf("DirAuthority: fingerprint must be 40 hex digits, "
                        "got '%s'", fp);
      goto bad;
    }
  }
  free(copy);
  return 0;
bad:
  free(copy);
  memset(out, 0, sizeof(*out));
  out->weight = 1.0;
  return fail(err, msg);
}

/* The public network's authorities, as tor 0.4.9 ships them. */
static const char *const default_lines[] = {
  "moria1 orport=9201 v3ident=F533C81CEF0BC0267857C99B2F471ADF249FA232 "
  "128.31.0.39:9231 1A25C6358DB91342AA51720A5038B72742732498",
  "tor26 orport=443 v3ident=2F3DF9CA0E5D36F2685A2DA67184EB8DCB8CBA8C "
  "ipv6=[2a02:16a8:662:2203::1]:443 217.196.147.77:80 "
  "FAA4 BCA4 A6AC 0FB4 CA2F 8AD5 A11D 9E12 2BA8 94F6",
  "dizum orport=443 v3ident=E8A9C45EDE6D711294FADF8E7951F4DE6CA56B58 "
  "45.66.35.11:80 7EA6 EAD6 FD83 083C 538F 4403 8BBF A077 587D D755",
  "Serge orport=9001 bridge 66.111.2.131:9030 "
  "BA44 A889 E64B 93FA A2B1 14E0 2C2A 279A 8555 C533",
  "gabelmoo orport=443 v3ident=ED03BB616EB2F60BEC80151114BB25CEF515B226 "
  "ipv6=[2001:638:a000:4140::ffff:189]:443 131.188.40.189:80 "
  "F204 4413 DAC2 E02E 3D6B CF47 35A1 9BCA 1DE9 7281",
  "dannenberg orport=443 v3ident=0232AF901C31A04EE9848595AF9BB7620D4C5B2E "
  "ipv6=[2001:678:558:1000::244]:443 193.23.244.244:80 "
  "7BE6 83E6 5D48 1413 21C5 ED92 F075 C553 64AC 7123",
  "maatuska orport=80 v3ident=49015F787433103580E3B66A1707A00E60F2D15B "
  "ipv6=[2001:67c:289c::9]:80 171.25.193.9:443 "
  "BD6A 8292 55CB 08E6 6FBE 7D37 4836 3586 E46B 3810",
  "longclaw orport=443 v3ident=23D15D965BC35114467363C165C4F724B64B4F66 "
  "199.58.81.140:80 74A9 1064 6BCE EFBC D2E8 74FC 1DC9 9743 0F96 8145",
  "bastet orport=443 v3ident=27102BC123E7AF1D4741AE047E160C91ADC76B21 "
  "ipv6=[2620:13:4000:6000::1000:118]:443 204.13.164.118:80 "
  "24E2 F139 121D 4394 C54B 5BCC 368B 3B41 1857 C413",
  "faravahar orport=443 v3ident=70849B868D606BAECFB6128C5E3D782029AA394F "
  "216.218.219.41:80 E3E4 2D35 F801 C9D5 AB23 584E 0025 D56F E2B3 3396",
};
#define N_DEFAULTS ((int)(sizeof(default_lines) / sizeof(default_lines[0])))

/* Filled once (a registry built on first use; the content is constant). */
static dir_authority_t default_auths[N_DEFAULTS];
static int n_default_auths = -1;

const dir_authority_t *
dir_authority_defaults(int *n)
{
  if (n_default_auths < 0) {
    int k = 0;
    for (int i = 0; i < N_DEFAULTS; i++) {
      char *err = NULL;
      if (dir_authority_parse(&default_auths[k], default_lines[i], &err) ==
          0) {
        k++;
      } else {
        log_warn("built-in authority %d does not parse: %s", i, err);
        free(err);
      }
    }
    n_default_auths = k;
  }
  *n = n_default_auths;
  return default_auths;
}
