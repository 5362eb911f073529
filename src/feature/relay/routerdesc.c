/* SPDX-License-Identifier: BSD-3-Clause */
/* routerdesc.c -- build, sign and check the relay's server descriptor
 * (routerdesc.h; dir-spec 2.1.1, cert-spec).
 *
 * Design:
 * - The document is built as text into a growing string (strbuf_t), item by
 *   item, in the order listed in routerdesc.h. Every piece of caller
 *   input that lands in the text (nickname, contact, family, policy) is
 *   validated first, so a newline or control character can never inject
 *   an item.
 * - Signatures are made over the text just built, exactly as dir-spec
 *   defines their scope: router-sig-ed25519 is the Ed25519 signature, by
 *   the medium-term signing key, of SHA-256("Tor router descriptor
 *   signature v1" | document up to and including the space after
 *   "router-sig-ed25519"); router-signature is the RSA identity key's
 *   PKCS#1 v1.5 signature (no DigestInfo) of the SHA-1 of the document up
 *   to and including "router-signature\n".
 * - The two crosscerts prove that we hold the onion keys' secrets:
 *   onion-key-crosscert is the TAP key's RSA signature of (SHA-1 of the
 *   identity key | Ed25519 identity), 52 bytes; ntor-onion-key-crosscert
 *   is a type-0A Ed25519 certificate of the Ed25519 identity, without
 *   extensions, signed by the Ed25519 key that lib/crypt/ed25519_ext
 *   derives from the ntor key, whose sign bit goes on the item line.
 * - Objects follow dir-spec 1.2: base64 wrapped at 64 columns. ED25519
 *   CERT objects and the single-line keys and signatures drop the '='
 *   padding (dir-spec says so for them); RSA keys, CROSSCERT and SIGNATURE
 *   keep it, as PEM does.
 * - routerdesc_check() is an independent reader: it splits the text with
 *   the shared tokenizer (feature/dir/netdoc.h; bounded by len, at most
 *   MAX_ITEMS items), enforces the multiplicity
 *   and position rules an authority enforces, and verifies everything
 *   from the document alone. Unit tests use it on what routerdesc_build()
 *   made and on tampered copies.
 * - Our address (routerdesc_config_address, routerdesc_pick_address)
 *   follows tor 0.4.5+'s Address rules, one address per family. Host
 *   names are resolved through one function pointer, getaddrinfo unless
 *   a unit test installs a fixed table (the only mutable global here), so
 *   that the per-family rules are tested without DNS.
 */
#include "feature/relay/routerdesc.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "core/proto/torcert.h"
#include "feature/dir/netdoc.h"
#include "feature/relay/family_keys.h"
#include "lib/bytes/bytes.h"
#include "lib/crypt/digest.h"
#include "lib/crypt/ed25519_ext.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/malloc/alloc.h"
#include "lib/string/relay_names.h"
#include "lib/string/strbuf.h"
#include "lib/time/timefmt.h"

#define ED_SIG_PREFIX "Tor router descriptor signature v1"
#define DAY 86400
#define MAX_ITEMS 256
#define MAX_POLICY_LINES 512
#define MAX_FAMILY 512

#ifdef __linux__
#define PLATFORM_OS "Linux"
#else
#define PLATFORM_OS "Unix"
#endif

const char *
routerdesc_platform(void)
{
  return "pctor " PACKAGE_VERSION " on " PLATFORM_OS;
}

static char *
errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
errf(const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return pc_strdup(buf);
}

static void
set_err(char **err, char *msg)
{
  if (err) {
    free(*err);
    *err = msg;
  } else {
    free(msg);
  }
}

/* ---------------------------------------------------------------- */
/* A growing string */

/* base64 of src; flags as base64_encode(). */
static void
sb_add_b64(strbuf_t *b, const uint8_t *src, size_t n, int flags)
{
  size_t enc = base64_encoded_len(n, flags);
  strbuf_reserve(b, enc);
  long w = base64_encode(b->s + b->len, enc + 1, src, n, flags);
  if (w != (long)enc)
    abort();
  b->len += enc;
}

/* An object: BEGIN line, 64-column base64, END line. */
static void
sb_add_object(strbuf_t *b, const char *type, const uint8_t *src, size_t n,
              int nopad)
{
  strbuf_addf(b, "-----BEGIN %s-----\n", type);
  sb_add_b64(b, src, n, BASE64_MULTILINE | (nopad ? BASE64_NOPAD : 0));
  strbuf_addf(b, "-----END %s-----\n", type);
}

/* ---------------------------------------------------------------- */
/* Input checks */

/* Printable ASCII and spaces only (a contact line, a policy line). */
static int
is_printable_line(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
      return 0;
  return 1;
}

char *
routerdesc_family_normalize(const char *entry, char **err)
{
  size_t n = strlen(entry);
  if (n > 0 && entry[0] == '$') {
    if (n < 41 || !pc_hex_ok(entry + 1, 40) ||
        (n > 41 && ((entry[41] != '~' && entry[41] != '=') ||
                    !pc_nickname_ok(entry + 42, n - 42)))) {
      set_err(err, errf("'%s' is not a relay fingerprint ($ and 40 hex "
                        "digits, optionally followed by ~NICKNAME)", entry));
      return NULL;
    }
    char *out = pc_strndup(entry, 41);
    pc_hex_upper(out + 1, 40);
    return out;
  }
  if (!pc_nickname_ok(entry, n)) {
    set_err(err, errf("'%s' is neither a relay fingerprint ($ and 40 hex "
                      "digits) nor a nickname", entry));
    return NULL;
  }
  return pc_strdup(entry);
}

/* A decimal integer in [lo, hi] spanning exactly s[0..n). */
static int
parse_uint(const char *s, size_t n, unsigned long lo, unsigned long hi,
           unsigned long *out)
{
  unsigned long v = 0;
  if (n == 0 || n > 10)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned long)(s[i] - '0');
  }
  if (n > 1 && s[0] == '0')
    return -1;
  if (v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

static int
parse_ipv4(const char *s, size_t n, uint8_t out[4])
{
  char buf[16];
  struct in_addr in;
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.'))
      return -1;
  if (inet_pton(AF_INET, buf, &in) != 1)
    return -1;
  memcpy(out, &in, 4);
  return 0;
}

/* portspec ::= "*" | port | port "-" port */
static int
check_portspec(const char *s, size_t n)
{
  unsigned long a, b;
  if (n == 1 && s[0] == '*')
    return 0;
  const char *dash = memchr(s, '-', n);
  if (!dash)
    return parse_uint(s, n, 1, 65535, &a);
  if (parse_uint(s, (size_t)(dash - s), 1, 65535, &a) < 0 ||
      parse_uint(dash + 1, n - (size_t)(dash - s) - 1, 1, 65535, &b) < 0 ||
      a > b)
    return -1;
  return 0;
}

/* An ipv6-policy summary (dir-spec 2.1.1, 3.8.2): "accept" or "reject",
 * one space, then PORT or PORT-PORT items separated by commas, at most
 * 1000 characters in all (as the summaries authorities keep). */
static int
ipv6_policy_check(const char *s)
{
  size_t n = strlen(s);
  if (n < 8 || n > 1000 ||
      (strncmp(s, "accept ", 7) && strncmp(s, "reject ", 7)))
    return -1;
  const char *p = s + 7;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (!len || (len == 1 && *p == '*') || check_portspec(p, len) < 0)
      return -1;
    p += len;
    if (*p == ',' && !*++p)
      return -1;
  }
  return 0;
}

int
routerdesc_policy_line_check(const char *line, char **err)
{
  const char *what = NULL;
  const char *sp = strchr(line, ' ');
  if (!is_printable_line(line)) {
    what = "control characters";
    goto bad;
  }
  if (!sp || !((sp - line == 6 && !strncmp(line, "accept", 6)) ||
               (sp - line == 6 && !strncmp(line, "reject", 6)))) {
    what = "it must start with \"accept \" or \"reject \"";
    goto bad;
  }
  const char *pat = sp + 1;
  size_t n = strlen(pat);
  if (strchr(pat, ' ')) {
    what = "one ADDRESS:PORTS pattern per line";
    goto bad;
  }
  const char *colon = strrchr(pat, ':');
  if (!colon) {
    what = "the pattern must be ADDRESS:PORTS";
    goto bad;
  }
  size_t alen = (size_t)(colon - pat);
  if (check_portspec(colon + 1, n - alen - 1) < 0) {
    what = "PORTS must be *, a port or a range PORT-PORT (1-65535)";
    goto bad;
  }
  if (alen == 1 && pat[0] == '*')
    return 0;
  uint8_t ip[4];
  const char *slash = memchr(pat, '/', alen);
  size_t iplen = slash ? (size_t)(slash - pat) : alen;
  if (parse_ipv4(pat, iplen, ip) < 0) {
    what = "ADDRESS must be * or an IPv4 address with an optional /BITS "
           "or /MASK (IPv6 exit policies come with exit support)";
    goto bad;
  }
  if (slash) {
    unsigned long bits;
    uint8_t mask[4];
    size_t mlen = alen - iplen - 1;
    if (parse_uint(slash + 1, mlen, 0, 32, &bits) < 0 &&
        parse_ipv4(slash + 1, mlen, mask) < 0) {
      what = "the mask must be /0 to /32 or a dotted-quad mask";
      goto bad;
    }
  }
  return 0;
bad:
  set_err(err, errf("'%s' is not a valid exit policy line: %s", line, what));
  return -1;
}

static int
check_config(const relay_keys_t *k, const routerdesc_config_t *cfg,
             char **err)
{
  if (!cfg->nickname ||
      !pc_nickname_ok(cfg->nickname, strlen(cfg->nickname))) {
    set_err(err, errf("invalid nickname"));
    return -1;
  }
  if (cfg->address.family != AF_INET) {
    set_err(err, errf("the descriptor needs an IPv4 address"));
    return -1;
  }
  if (cfg->or_port == 0) {
    set_err(err, errf("the descriptor needs an ORPort"));
    return -1;
  }
  if (cfg->ipv6_or.family != AF_UNSPEC &&
      (cfg->ipv6_or.family != AF_INET6 || cfg->ipv6_or.port == 0)) {
    set_err(err, errf("bad IPv6 ORPort address"));
    return -1;
  }
  if (cfg->contact && !is_printable_line(cfg->contact)) {
    set_err(err, errf("the contact information has control characters"));
    return -1;
  }
  if (cfg->platform && !is_printable_line(cfg->platform)) {
    set_err(err, errf("the platform string has control characters"));
    return -1;
  }
  if (cfg->n_family_keys < 0 || cfg->n_family_keys > FAMILY_KEYS_MAX) {
    set_err(err, errf("too many family keys"));
    return -1;
  }
  if (cfg->n_family < 0 || cfg->n_family > MAX_FAMILY ||
      cfg->n_exit_policy < 0 || cfg->n_exit_policy > MAX_POLICY_LINES) {
    set_err(err, errf("too many family members or exit policy lines"));
    return -1;
  }
  for (int i = 0; i < cfg->n_family; i++) {
    char *e = NULL;
    char *norm = routerdesc_family_normalize(cfg->family[i], &e);
    int same = norm && !strcmp(norm, cfg->family[i]);
    free(norm);
    if (!same) {
      set_err(err, e ? e : errf("family entry '%s' is not normalised",
                                cfg->family[i]));
      return -1;
    }
  }
  for (int i = 0; i < cfg->n_exit_policy; i++)
    if (routerdesc_policy_line_check(cfg->exit_policy[i], err) < 0)
      return -1;
  if (cfg->ipv6_policy && ipv6_policy_check(cfg->ipv6_policy) < 0) {
    set_err(err, errf("bad ipv6-policy summary '%s': it must be \"accept\" "
                      "or \"reject\" and a list of ports and ranges",
                      cfg->ipv6_policy));
    return -1;
  }
  if (!k->rsa_identity || !k->tap_onion_key || !k->ed_signing_cert ||
      !k->ed_signing_cert_len) {
    set_err(err, errf("the relay keys are incomplete"));
    return -1;
  }
  if (crypt_rsa_bits(k->rsa_identity) != RSA1024_BITS ||
      crypt_rsa_bits(k->tap_onion_key) != RSA1024_BITS) {
    set_err(err, errf("the RSA keys must have 1024 bits"));
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- */
/* Building */

/* The type-0A crosscert of our ed25519 identity by the ntor key. */
static int
make_ntor_crosscert(const relay_keys_t *k, time_t expires,
                    uint8_t out[TORCERT_MIN_LEN], int *signbit)
{
  uint8_t expanded[ED25519_EXPANDED_LEN];
  uint8_t edpub[ED25519_PUBKEY_LEN];
  int r = -1;
  if (ed25519_keypair_from_curve25519(expanded, edpub, signbit,
                                      &k->ntor_current) < 0)
    goto done;
  uint64_t hours = ((uint64_t)expires + 3599) / 3600;
  if (hours > UINT32_MAX)
    hours = UINT32_MAX;
  out[0] = TORCERT_VERSION;
  out[1] = TORCERT_TYPE_NTOR_CROSSCERT;
  set_u32(out + 2, (uint32_t)hours);
  out[6] = TORCERT_KEY_ED25519;
  memcpy(out + 7, k->ed_identity.pub, TORCERT_KEY_LEN);
  out[39] = 0; /* no extensions */
  if (ed25519_sign_expanded(out + TORCERT_HEADER_LEN, out,
                            TORCERT_HEADER_LEN, expanded, edpub) < 0)
    goto done;
  r = 0;
done:
  pc_memwipe(expanded, sizeof(expanded));
  return r;
}

static void
add_fingerprint_hex(strbuf_t *b, const uint8_t digest[20], int spaced)
{
  char hex[41];
  base16_encode(hex, sizeof(hex), digest, 20, BASE16_UPPER);
  for (int i = 0; i < 40; i += 4)
    strbuf_addf(b, "%s%.4s", (spaced && i) ? " " : "", hex + i);
}

/* Append router-sig-ed25519 and router-signature, the two signatures that
 * end both the server descriptor and the extra-info document (dir-spec
 * 2.1.1, 2.1.2): the ed25519 one over everything before its value, the
 * RSA one over everything through "router-signature\n". */
static int
sign_tail(strbuf_t *b, const relay_keys_t *k)
{
  uint8_t d[DIGEST_SHA256_LEN], sig[ED25519_SIG_LEN];
  uint8_t d1[DIGEST_SHA1_LEN], rsig[RSA1024_SIG_LEN];
  size_t siglen = sizeof(rsig);
  strbuf_add(b, "router-sig-ed25519 ");
  crypt_digest_t *dg = crypt_digest_new(DIGEST_ALG_SHA256);
  crypt_digest_add(dg, ED_SIG_PREFIX, strlen(ED_SIG_PREFIX));
  crypt_digest_add(dg, b->s, b->len);
  crypt_digest_peek(dg, d, sizeof(d));
  crypt_digest_free(dg);
  if (ed25519_sign(sig, d, sizeof(d), &k->ed_signing) < 0)
    return -1;
  sb_add_b64(b, sig, sizeof(sig), BASE64_NOPAD);
  strbuf_add(b, "\nrouter-signature\n");
  crypt_sha1(d1, b->s, b->len);
  if (crypt_rsa_sign_raw(k->rsa_identity, d1, sizeof(d1), rsig, &siglen) < 0)
    return -1;
  sb_add_object(b, "SIGNATURE", rsig, siglen, 0);
  return 0;
}

char *
routerdesc_build(const relay_keys_t *k, const routerdesc_config_t *cfg,
                 char **err)
{
  strbuf_t b = { NULL, 0, 0 };
  char a[PC_ADDR_STR_LEN];
  char when[TIME_ISO_LEN + 1];
  char *pem = NULL;

  if (err)
    *err = NULL;
  if (check_config(k, cfg, err) < 0)
    return NULL;

  pc_addr_fmt(&cfg->address, a, sizeof(a), 0);
  strbuf_addf(&b, "router %s %s %u 0 %u\n", cfg->nickname, a,
          (unsigned)cfg->or_port, (unsigned)cfg->dir_port);
  strbuf_add(&b, "identity-ed25519\n");
  sb_add_object(&b, "ED25519 CERT", k->ed_signing_cert,
                k->ed_signing_cert_len, 1);
  strbuf_add(&b, "master-key-ed25519 ");
  sb_add_b64(&b, k->ed_identity.pub, ED25519_PUBKEY_LEN, BASE64_NOPAD);
  strbuf_add(&b, "\n");
  if (cfg->ipv6_or.family == AF_INET6) {
    pc_addr_fmt(&cfg->ipv6_or, a, sizeof(a), 1);
    strbuf_addf(&b, "or-address %s\n", a);
  }
  strbuf_addf(&b, "platform %s\n",
          cfg->platform ? cfg->platform : routerdesc_platform());
  strbuf_add(&b, cfg->tunnelled_dir_server
                     ? "proto " ROUTERDESC_PROTO_DIRCACHE "\n"
                     : "proto " ROUTERDESC_PROTO "\n");
  time_format_iso(when, cfg->published);
  strbuf_addf(&b, "published %s\n", when);
  strbuf_add(&b, "fingerprint ");
  add_fingerprint_hex(&b, k->rsa_id_digest, 1);
  strbuf_add(&b, "\n");
  strbuf_addf(&b, "uptime %llu\n", (unsigned long long)cfg->uptime);
  strbuf_addf(&b, "bandwidth %llu %llu %llu\n",
          (unsigned long long)cfg->bw_rate, (unsigned long long)cfg->bw_burst,
          (unsigned long long)cfg->bw_observed);
  if (cfg->has_extra_info) {
    char hex[41];
    base16_encode(hex, sizeof(hex), cfg->extra_info_sha1, 20, BASE16_UPPER);
    strbuf_addf(&b, "extra-info-digest %s ", hex);
    sb_add_b64(&b, cfg->extra_info_sha256, 32, BASE64_NOPAD);
    strbuf_add(&b, "\n");
  }

  strbuf_add(&b, "onion-key\n");
  if (!(pem = crypt_rsa_public_pem(k->tap_onion_key)))
    goto fail_sign;
  strbuf_add(&b, pem);
  PC_FREE(pem);
  strbuf_add(&b, "signing-key\n");
  if (!(pem = crypt_rsa_public_pem(k->rsa_identity)))
    goto fail_sign;
  strbuf_add(&b, pem);
  PC_FREE(pem);

  {
    uint8_t data[20 + ED25519_PUBKEY_LEN], sig[RSA1024_SIG_LEN];
    size_t siglen = sizeof(sig);
    memcpy(data, k->rsa_id_digest, 20);
    memcpy(data + 20, k->ed_identity.pub, ED25519_PUBKEY_LEN);
    if (crypt_rsa_sign_raw(k->tap_onion_key, data, sizeof(data), sig,
                           &siglen) < 0)
      goto fail_sign;
    strbuf_add(&b, "onion-key-crosscert\n");
    sb_add_object(&b, "CROSSCERT", sig, siglen, 0);
  }
  {
    uint8_t cc[TORCERT_MIN_LEN];
    int signbit = 0;
    int days = cfg->crosscert_lifetime_days > 0
                   ? cfg->crosscert_lifetime_days
                   : ROUTERDESC_DEFAULT_CROSSCERT_DAYS;
    if (make_ntor_crosscert(k, cfg->published + (time_t)days * DAY, cc,
                            &signbit) < 0)
      goto fail_sign;
    strbuf_addf(&b, "ntor-onion-key-crosscert %d\n", signbit);
    sb_add_object(&b, "ED25519 CERT", cc, sizeof(cc), 1);
  }

  if (cfg->n_family > 0) {
    strbuf_add(&b, "family");
    for (int i = 0; i < cfg->n_family; i++)
      strbuf_addf(&b, " %s", cfg->family[i]);
    strbuf_add(&b, "\n");
  }
  for (int i = 0; i < cfg->n_family_keys; i++) {
    size_t fl = 0;
    uint8_t *fc = family_keys_make_cert(&cfg->family_keys[i],
                                        k->ed_identity.pub,
                                        k->ed_signing_expires, &fl);
    if (!fc)
      goto fail_sign;
    strbuf_add(&b, "family-cert\n");
    sb_add_object(&b, "FAMILY CERT", fc, fl, 0);
    free(fc);
  }
  if (cfg->contact)
    strbuf_addf(&b, "contact %s\n", cfg->contact);
  strbuf_add(&b, "ntor-onion-key ");
  sb_add_b64(&b, k->ntor_current.pub, CURVE25519_KEY_LEN, BASE64_NOPAD);
  strbuf_add(&b, "\n");
  if (cfg->n_exit_policy == 0) {
    strbuf_add(&b, "reject *:*\n");
  } else {
    for (int i = 0; i < cfg->n_exit_policy; i++)
      strbuf_addf(&b, "%s\n", cfg->exit_policy[i]);
    /* What no line matches is accepted (dir-spec 2.1.1): close the
     * policy unless its last line already covers everything. */
    const char *last = cfg->exit_policy[cfg->n_exit_policy - 1];
    if (strcmp(last + 7, "*:*"))
      strbuf_add(&b, "reject *:*\n");
  }
  if (cfg->ipv6_policy)
    strbuf_addf(&b, "ipv6-policy %s\n", cfg->ipv6_policy);
  if (cfg->tunnelled_dir_server)
    strbuf_add(&b, "tunnelled-dir-server\n");
  if (cfg->hibernating)
    strbuf_add(&b, "hibernating 1\n");
  if (cfg->overload_general > 0) {
    time_format_iso(when, cfg->overload_general);
    strbuf_addf(&b, "overload-general 1 %s\n", when);
  }

  if (sign_tail(&b, k) < 0)
    goto fail_sign;
  if (b.len > ROUTERDESC_MAX_LEN) {
    set_err(err, errf("the descriptor has %zu bytes; authorities accept at "
                      "most %d", b.len, ROUTERDESC_MAX_LEN));
    free(b.s);
    return NULL;
  }
  return b.s;

fail_sign:
  set_err(err, errf("could not sign the descriptor"));
  free(pem);
  free(b.s);
  return NULL;
}

/* ---------------------------------------------------------------- */
/* Extra-info (dir-spec 2.1.2) */

static void
add_history(strbuf_t *b, const char *kw, const routerdesc_extrainfo_t *e,
            const uint64_t *v)
{
  char when[TIME_ISO_LEN + 1];
  time_format_iso(when, e->hist_end);
  strbuf_addf(b, "%s %s (%d s) ", kw, when, e->hist_interval);
  for (int i = 0; i < e->n_hist; i++)
    strbuf_addf(b, "%s%llu", i ? "," : "", (unsigned long long)v[i]);
  strbuf_add(b, "\n");
}

/* Whether text is lines that cannot change the document's structure:
 * printable ASCII, each line a keyword and ending in a newline, no
 * object or signature line. */
static int
stats_lines_ok(const char *text)
{
  size_t n = strlen(text);
  if (n == 0 || text[n - 1] != '\n')
    return 0;
  for (const char *p = text; *p; p++) {
    if (*p != '\n' && (*p < 0x20 || *p > 0x7e))
      return 0;
    if (p == text || p[-1] == '\n') {
      if (*p < 'a' || *p > 'z' || !strncmp(p, "router-sig", 10))
        return 0;
    }
  }
  return 1;
}

char *
routerdesc_build_extrainfo(const relay_keys_t *k,
                           const routerdesc_extrainfo_t *e,
                           uint8_t sha1_out[20], uint8_t sha256_out[32],
                           char **err)
{
  strbuf_t b = { NULL, 0, 0 };
  char when[TIME_ISO_LEN + 1];
  if (err)
    *err = NULL;
  if (!e->nickname || !pc_nickname_ok(e->nickname, strlen(e->nickname)) ||
      e->n_hist < 0 || e->n_hist > ROUTERDESC_MAX_HIST ||
      (e->n_hist > 0 && e->hist_interval <= 0)) {
    set_err(err, errf("bad extra-info configuration"));
    return NULL;
  }
  if (e->stats_lines && !stats_lines_ok(e->stats_lines)) {
    set_err(err, errf("bad statistics lines for the extra-info document"));
    return NULL;
  }
  strbuf_addf(&b, "extra-info %s ", e->nickname);
  add_fingerprint_hex(&b, k->rsa_id_digest, 0);
  strbuf_add(&b, "\nidentity-ed25519\n");
  sb_add_object(&b, "ED25519 CERT", k->ed_signing_cert,
                k->ed_signing_cert_len, 1);
  time_format_iso(when, e->published);
  strbuf_addf(&b, "published %s\n", when);
  if (e->hist_interval > 0) {
    /* As tor, the lines are there (possibly with no values) from the
     * start. */
    add_history(&b, "write-history", e, e->write_hist);
    add_history(&b, "read-history", e, e->read_hist);
  }
  if (e->stats_lines)
    strbuf_add(&b, e->stats_lines);
  if (e->overload_ratelimits > 0) {
    time_format_iso(when, e->overload_ratelimits);
    strbuf_addf(&b, "overload-ratelimits 1 %s %llu %llu %llu %llu\n", when,
            (unsigned long long)e->rate, (unsigned long long)e->burst,
            (unsigned long long)e->n_read_limited,
            (unsigned long long)e->n_write_limited);
  }
  if (e->overload_fd_exhausted > 0) {
    time_format_iso(when, e->overload_fd_exhausted);
    strbuf_addf(&b, "overload-fd-exhausted 1 %s\n", when);
  }
  if (sign_tail(&b, k) < 0) {
    set_err(err, errf("could not sign the extra-info document"));
    free(b.s);
    return NULL;
  }
  /* dir-spec 2.1.1 extra-info-digest: SHA-1 over the signed part (through
   * "router-signature\n"), SHA-256 over the whole document. */
  const char *end = strstr(b.s, "\nrouter-signature\n");
  crypt_sha1(sha1_out, b.s, (size_t)(end - b.s) + strlen("\nrouter-signature\n"));
  crypt_sha256(sha256_out, b.s, b.len);
  return b.s;
}

/* ---------------------------------------------------------------- */
/* Checking */

/* The items of a descriptor, as feature/dir's netdoc tokenizer (the one
 * reader of the directory meta-format) splits them. */
typedef netdoc_item_t item_t;

typedef struct doc_t {
  item_t items[MAX_ITEMS];
  int n;
} doc_t;

/* Split desc into items with netdoc. Returns 0, or -1 with *msg. The
 * authority's rules are stricter than the meta-format's: a descriptor is
 * printable ASCII, without tabs. */
static int
tokenize(const char *s, size_t len, doc_t *d, char **msg)
{
  for (size_t i = 0; i < len; i++)
    if (s[i] == '\t' || (unsigned char)s[i] >= 0x7f) {
      *msg = errf("control character or non-ASCII byte 0x%02x",
                  (unsigned char)s[i]);
      return -1;
    }
  netdoc_reader_t r;
  netdoc_reader_init(&r, s, len);
  d->n = 0;
  int rv;
  while (d->n < MAX_ITEMS && (rv = netdoc_next(&r, &d->items[d->n])) == 1)
    d->n++;
  if (d->n == MAX_ITEMS && netdoc_next(&r, &d->items[0]) != 0) {
    *msg = errf("too many items");
    return -1;
  }
  if (r.err[0]) {
    *msg = errf("%s", r.err);
    return -1;
  }
  return 0;
}

/* The only item with keyword kw; NULL if none. *dup set if several. */
static const item_t *
find1(const doc_t *d, const char *kw, int *dup)
{
  const item_t *found = NULL;
  for (int i = 0; i < d->n; i++)
    if (netdoc_kw_is(&d->items[i], kw)) {
      if (found)
        *dup = 1;
      found = &d->items[i];
    }
  return found;
}

/* Decode an item's object into a new buffer. */
static uint8_t *
obj_decode(const item_t *it, size_t *outlen)
{
  size_t max = base64_decoded_len_max(it->obj_data_len);
  uint8_t *out = pc_malloc(max + 1);
  long n = netdoc_obj_decode(it, out, max + 1);
  if (n < 0) {
    free(out);
    return NULL;
  }
  *outlen = (size_t)n;
  return out;
}

/* Decode a single-argument base64 value of exactly want bytes. */
static int
arg_b64(const item_t *it, uint8_t *out, size_t want)
{
  if (it->argc != 1)
    return -1;
  return netdoc_parse_b64_exact(it->argv[0].s, it->argv[0].len, out, want);
}

static crypt_rsa_t *
obj_rsa_key(const item_t *it)
{
  if (!netdoc_obj_is(it, "RSA PUBLIC KEY") || it->argc)
    return NULL;
  size_t n = 0;
  uint8_t *der = obj_decode(it, &n);
  if (!der)
    return NULL;
  crypt_rsa_t *k = crypt_rsa_from_public_der(der, n);
  free(der);
  if (k && crypt_rsa_bits(k) != RSA1024_BITS)
    crypt_rsa_free(k);
  return k;
}

int
routerdesc_check(const char *desc, size_t len, time_t now,
                 routerdesc_info_t *info, char **err)
{
  static const char *const exactly_once[] = {
    "router", "identity-ed25519", "master-key-ed25519", "bandwidth",
    "published", "onion-key", "signing-key", "onion-key-crosscert",
    "ntor-onion-key", "ntor-onion-key-crosscert", "proto",
    "router-sig-ed25519", "router-signature",
  };
  static const char *const at_most_once[] = {
    "platform", "fingerprint", "uptime", "contact", "family",
    "tunnelled-dir-server", "hibernating", "ipv6-policy",
    "extra-info-digest", "hidden-service-dir", "caches-extra-info",
    "overload-general",
  };
  doc_t *d = pc_zalloc(sizeof(*d));
  routerdesc_info_t inf;
  const char *why = NULL;
  char *msg = NULL;
  crypt_rsa_t *id = NULL, *tap = NULL;
  torcert_t *cert4 = NULL, *ntorcc = NULL;
  uint8_t *buf = NULL;
  size_t n = 0;
  int dup = 0;

  memset(&inf, 0, sizeof(inf));
  if (len > ROUTERDESC_MAX_LEN) {
    why = "longer than 20000 bytes";
    goto bad;
  }
  if (memchr(desc, '\0', len)) {
    why = "NUL byte";
    goto bad;
  }
  if (tokenize(desc, len, d, &msg) < 0)
    goto bad;
  for (size_t i = 0; i < sizeof(exactly_once) / sizeof(*exactly_once); i++) {
    dup = 0;
    if (!find1(d, exactly_once[i], &dup) || dup) {
      msg = errf("'%s' must appear exactly once", exactly_once[i]);
      goto bad;
    }
  }
  for (size_t i = 0; i < sizeof(at_most_once) / sizeof(*at_most_once); i++) {
    dup = 0;
    find1(d, at_most_once[i], &dup);
    if (dup) {
      msg = errf("'%s' appears more than once", at_most_once[i]);
      goto bad;
    }
  }
  if (d->n < 4 || !netdoc_kw_is(&d->items[0], "router") ||
      !netdoc_kw_is(&d->items[1], "identity-ed25519") ||
      !netdoc_kw_is(&d->items[d->n - 2], "router-sig-ed25519") ||
      !netdoc_kw_is(&d->items[d->n - 1], "router-signature")) {
    why = "router, identity-ed25519 must come first and router-sig-ed25519, "
          "router-signature last";
    goto bad;
  }

  /* router NICK ADDR ORPORT SOCKSPORT DIRPORT */
  {
    const item_t *r = &d->items[0];
    const netdoc_arg_t *f = r->argv;
    unsigned long port, x;
    uint8_t ip[4];
    if (r->argc < 5 || !pc_nickname_ok(f[0].s, f[0].len) ||
        parse_ipv4(f[1].s, f[1].len, ip) ||
        parse_uint(f[2].s, f[2].len, 1, 65535, &port) ||
        parse_uint(f[3].s, f[3].len, 0, 65535, &x) ||
        parse_uint(f[4].s, f[4].len, 0, 65535, &x)) {
      why = "bad router line";
      goto bad;
    }
    memcpy(inf.nickname, f[0].s, f[0].len);
    inf.nickname[f[0].len] = '\0';
  }

  /* Keys. */
  const item_t *it = find1(d, "signing-key", &dup);
  if (!(id = obj_rsa_key(it))) {
    why = "signing-key is not an RSA-1024 public key";
    goto bad;
  }
  if (crypt_rsa_fingerprint(id, inf.rsa_id_digest) < 0) {
    why = "cannot digest signing-key";
    goto bad;
  }
  it = find1(d, "onion-key", &dup);
  if (!(tap = obj_rsa_key(it))) {
    why = "onion-key is not an RSA-1024 public key";
    goto bad;
  }
  it = find1(d, "fingerprint", &dup);
  if (it) {
    char want[50];
    strbuf_t fb = {NULL, 0, 0};
    add_fingerprint_hex(&fb, inf.rsa_id_digest, 1);
    snprintf(want, sizeof(want), "%s", fb.s);
    free(fb.s);
    if (it->args_len != strlen(want) || memcmp(it->args, want, it->args_len)) {
      why = "fingerprint does not match signing-key";
      goto bad;
    }
  }
  it = find1(d, "ntor-onion-key", &dup);
  if (arg_b64(it, inf.ntor_onion_key, CURVE25519_KEY_LEN) < 0) {
    why = "bad ntor-onion-key";
    goto bad;
  }
  it = find1(d, "published", &dup);
  if (time_parse_iso(it->args, it->args_len, &inf.published) < 0) {
    why = "bad published time";
    goto bad;
  }
  it = find1(d, "bandwidth", &dup);
  {
    unsigned long long v[3];
    char tmp[80];
    if (it->args_len >= sizeof(tmp)) {
      why = "bad bandwidth line";
      goto bad;
    }
    memcpy(tmp, it->args, it->args_len);
    tmp[it->args_len] = '\0';
    char extra;
    if (sscanf(tmp, "%llu %llu %llu%c", &v[0], &v[1], &v[2], &extra) != 3 ||
        v[0] == 0 || v[0] > 0x7fffffff || v[1] > 0x7fffffff ||
        v[2] > 0x7fffffff || tmp[0] < '0' || tmp[0] > '9') {
      why = "bad bandwidth line";
      goto bad;
    }
  }
  {
    int have_policy = 0;
    for (int i = 0; i < d->n; i++) {
      const item_t *p = &d->items[i];
      if (netdoc_kw_is(p, "accept") || netdoc_kw_is(p, "reject")) {
        char line[300];
        if ((size_t)snprintf(line, sizeof(line), "%.*s %.*s", (int)p->kw_len,
                             p->kw, (int)p->args_len,
                             p->args) >= sizeof(line)) {
          why = "bad exit policy line";
          goto bad;
        }
        char *e = NULL;
        if (routerdesc_policy_line_check(line, &e) < 0) {
          msg = e;
          goto bad;
        }
        have_policy = 1;
      } else if (netdoc_kw_is(p, "accept6") || netdoc_kw_is(p, "reject6")) {
        why = "accept6/reject6 lines are refused by authorities";
        goto bad;
      }
    }
    if (!have_policy) {
      why = "no exit policy";
      goto bad;
    }
  }

  /* identity-ed25519: the type-4 certificate, signed by the identity it
   * carries in its extension. */
  it = &d->items[1];
  if (!netdoc_obj_is(it, "ED25519 CERT") || it->argc ||
      !(buf = obj_decode(it, &n)) || torcert_parse(buf, n, &cert4) < 0) {
    why = "identity-ed25519 is not an Ed25519 certificate";
    goto bad;
  }
  PC_FREE(buf);
  if (cert4->cert_type != TORCERT_TYPE_ID_SIGNING ||
      !cert4->signing_key_included) {
    why = "identity-ed25519 is not a type-4 certificate with its signing key";
    goto bad;
  }
  int r = torcert_checksig(cert4, NULL, now);
  if (r < 0) {
    msg = errf("identity-ed25519: %s", torcert_strerror(r));
    goto bad;
  }
  memcpy(inf.ed_identity, cert4->signing_key, 32);
  memcpy(inf.ed_signing, cert4->certified_key, 32);
  it = find1(d, "master-key-ed25519", &dup);
  {
    uint8_t mk[32];
    if (arg_b64(it, mk, 32) < 0 || memcmp(mk, inf.ed_identity, 32)) {
      why = "master-key-ed25519 does not match identity-ed25519";
      goto bad;
    }
  }

  /* family-cert: type-12 certificates of our identity by family keys */
  for (int i = 0; i < d->n; i++) {
    it = &d->items[i];
    if (!netdoc_kw_is(it, "family-cert"))
      continue;
    uint8_t fk[32];
    if (inf.n_family_certs == 8) {
      why = "more than 8 family-cert lines";
      goto bad;
    }
    if (!netdoc_obj_is(it, "FAMILY CERT") || it->argc ||
        !(buf = obj_decode(it, &n))) {
      why = "bad family-cert object";
      goto bad;
    }
    if (family_keys_check_cert(buf, n, inf.ed_identity, now, fk, &why) < 0) {
      msg = errf("family-cert: %s", why);
      goto bad;
    }
    PC_FREE(buf);
    memcpy(inf.family_keys[inf.n_family_certs++], fk, 32);
  }

  /* onion-key-crosscert */
  it = find1(d, "onion-key-crosscert", &dup);
  if (!netdoc_obj_is(it, "CROSSCERT") || it->argc ||
      !(buf = obj_decode(it, &n))) {
    why = "bad onion-key-crosscert object";
    goto bad;
  }
  {
    uint8_t data[52];
    memcpy(data, inf.rsa_id_digest, 20);
    memcpy(data + 20, inf.ed_identity, 32);
    if (crypt_rsa_verify_raw(tap, data, sizeof(data), buf, n) < 0) {
      why = "onion-key-crosscert does not verify";
      goto bad;
    }
  }
  PC_FREE(buf);

  /* ntor-onion-key-crosscert SIGNBIT */
  it = find1(d, "ntor-onion-key-crosscert", &dup);
  if (!netdoc_obj_is(it, "ED25519 CERT") || it->args_len != 1 ||
      (it->args[0] != '0' && it->args[0] != '1') ||
      !(buf = obj_decode(it, &n)) || torcert_parse(buf, n, &ntorcc) < 0) {
    why = "bad ntor-onion-key-crosscert";
    goto bad;
  }
  PC_FREE(buf);
  {
    uint8_t edk[32];
    if (ntorcc->cert_type != TORCERT_TYPE_NTOR_CROSSCERT ||
        memcmp(ntorcc->certified_key, inf.ed_identity, 32)) {
      why = "ntor-onion-key-crosscert does not certify the ed25519 identity";
      goto bad;
    }
    if (ed25519_public_from_curve25519_public(edk, inf.ntor_onion_key,
                                              it->args[0] - '0') < 0) {
      why = "ntor-onion-key cannot be converted to ed25519";
      goto bad;
    }
    r = torcert_checksig(ntorcc, edk, now);
    if (r < 0) {
      msg = errf("ntor-onion-key-crosscert: %s", torcert_strerror(r));
      goto bad;
    }
  }

  /* router-sig-ed25519 */
  {
    const item_t *s = &d->items[d->n - 2];
    uint8_t sig[ED25519_SIG_LEN], dg[DIGEST_SHA256_LEN];
    if (arg_b64(s, sig, sizeof(sig)) < 0) {
      why = "bad router-sig-ed25519";
      goto bad;
    }
    /* Signed: through the space after the keyword. */
    size_t signed_len = s->start + s->kw_len + 1;
    crypt_digest_t *h = crypt_digest_new(DIGEST_ALG_SHA256);
    crypt_digest_add(h, ED_SIG_PREFIX, strlen(ED_SIG_PREFIX));
    crypt_digest_add(h, desc, signed_len);
    crypt_digest_peek(h, dg, sizeof(dg));
    crypt_digest_free(h);
    if (ed25519_verify(sig, dg, sizeof(dg), inf.ed_signing) < 0) {
      why = "router-sig-ed25519 does not verify";
      goto bad;
    }
  }
  /* router-signature */
  {
    const item_t *s = &d->items[d->n - 1];
    uint8_t dg[DIGEST_SHA1_LEN];
    if (!netdoc_obj_is(s, "SIGNATURE") || s->argc ||
        !(buf = obj_decode(s, &n))) {
      why = "bad router-signature";
      goto bad;
    }
    /* Signed: through the newline after the keyword. */
    crypt_sha1(dg, desc, s->line_end);
    if (crypt_rsa_verify_raw(id, dg, sizeof(dg), buf, n) < 0) {
      why = "router-signature does not verify";
      goto bad;
    }
    PC_FREE(buf);
  }

  if (info)
    *info = inf;
  crypt_rsa_free(id);
  crypt_rsa_free(tap);
  torcert_free(cert4);
  torcert_free(ntorcc);
  free(d);
  return 0;

bad:
  if (!msg)
    msg = errf("%s", why ? why : "malformed");
  set_err(err, msg);
  free(buf);
  crypt_rsa_free(id);
  crypt_rsa_free(tap);
  torcert_free(cert4);
  torcert_free(ntorcc);
  free(d);
  return -1;
}

/* ---------------------------------------------------------------- */
/* Our address */

/* Rank of a candidate interface address: public first, loopback last. */
static int
addr_rank(const pc_addr_t *a)
{
  if (pc_addr_is_loopback(a))
    return 0;
  if (pc_addr_is_private(a))
    return 1;
  return 2;
}

/* An IP literal of an Address line ("192.0.2.1", "2001:db8::1",
 * "[2001:db8::1]"): 0, or -1 when it is a host name. */
static int
address_literal(const char *v, pc_addr_t *out)
{
  return pc_addr_parse_ip_bracketed(out, v, 0);
}

/* The resolver for Address host names: the first address of the family
 * (blocking getaddrinfo; /etc/hosts first, as the system says). */
static int
resolve_system(const char *name, int family, pc_addr_t *out, char **err)
{
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  int r = getaddrinfo(name, NULL, &hints, &res);
  if (r != 0 || !res) {
    *err = pc_strdup(r ? gai_strerror(r) : "no address");
    if (res)
      freeaddrinfo(res);
    return -1;
  }
  int ok = pc_addr_from_sockaddr(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (ok < 0 || out->family != family) {
    *err = pc_strdup("not an address of the family asked for");
    return -1;
  }
  out->port = 0;
  return 0;
}

static routerdesc_resolve_fn resolve_fn = resolve_system;

void
routerdesc_set_resolver_for_testing(routerdesc_resolve_fn fn)
{
  resolve_fn = fn ? fn : resolve_system;
}

int
routerdesc_config_address(const char *const *address, int n_address,
                          int family, pc_addr_t *out, char **err)
{
  const char *fam = family == AF_INET ? "IPv4" : "IPv6";
  const char *from = NULL, *failed = NULL;
  char *why = NULL;
  int found = 0;
  memset(out, 0, sizeof(*out));
  out->family = AF_UNSPEC;
  for (int i = 0; i < n_address; i++) {
    pc_addr_t a;
    char *e = NULL;
    if (address_literal(address[i], &a) == 0) {
      if (a.family != family)
        continue;
    } else if (resolve_fn(address[i], family, &a, &e) < 0) {
      if (!failed) {
        failed = address[i];
        why = e;
      } else {
        free(e);
      }
      continue;
    }
    if (found++) {
      set_err(err, errf("Address %s and Address %s both give an %s "
                        "address; only one per address family is allowed",
                        from, address[i], fam));
      free(why);
      return -1;
    }
    from = address[i];
    *out = a;
    out->port = 0;
  }
  if (found) {
    free(why);
    return 1;
  }
  if (failed && family == AF_INET) {
    set_err(err, errf("Cannot resolve Address %s to an IPv4 address (%s); "
                      "a relay descriptor needs one: give the IPv4 "
                      "address in an Address line of its own",
                      failed, why));
    free(why);
    return -1;
  }
  free(why);
  return 0;
}

int
routerdesc_pick_address(const char *const *address, int n_address,
                        const pc_addr_t *or_ports, int n_or_ports,
                        pc_addr_t *out, char **err)
{
  int r = routerdesc_config_address(address, n_address, AF_INET, out, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  for (int i = 0; i < n_or_ports; i++) {
    const pc_addr_t *a = &or_ports[i];
    if (a->family == AF_INET && !pc_is_zero(a->addr, 4)) {
      *out = *a;
      out->port = 0;
      return 0;
    }
  }
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) < 0) {
    set_err(err, errf("Address is not set, the ORPort listens on every "
                      "address, and the local interfaces cannot be "
                      "listed; set Address"));
    return -1;
  }
  int best = -1;
  for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
    pc_addr_t a;
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
        !(i->ifa_flags & IFF_UP))
      continue;
    if (pc_addr_from_sockaddr(&a, i->ifa_addr, sizeof(struct sockaddr_in)) <
        0)
      continue;
    int rank = addr_rank(&a);
    if (rank > best) {
      best = rank;
      *out = a;
      out->port = 0;
    }
  }
  freeifaddrs(ifs);
  if (best < 0) {
    set_err(err, errf("Address is not set and no local interface has an "
                      "IPv4 address; set Address"));
    return -1;
  }
  return 0;
}

int
routerdesc_find_public_ipv6(pc_addr_t *out)
{
  struct ifaddrs *ifs = NULL;
  int r = -1;
  if (getifaddrs(&ifs) < 0)
    return -1;
  for (struct ifaddrs *i = ifs; i && r < 0; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET6 ||
        !(i->ifa_flags & IFF_UP))
      continue;
    if (pc_addr_from_sockaddr(out, i->ifa_addr,
                              sizeof(struct sockaddr_in6)) == 0 &&
        !pc_addr_is_private(out)) {
      out->port = 0;
      r = 0;
    }
  }
  freeifaddrs(ifs);
  return r;
}
