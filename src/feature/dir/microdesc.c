/* SPDX-License-Identifier: BSD-3-Clause */
/* microdesc.c -- parse microdescriptors, alone or concatenated (see
 * microdesc.h).
 *
 * Design: microdesc_parse_many() runs the netdoc tokenizer only to find
 * boundaries, then hands each span to microdesc_parse(), which tokenizes
 * it again and hashes exactly that span: the digest is over the bytes as
 * received, so nothing is re-serialised. The TAP onion key is only
 * checked to be an RSA PUBLIC KEY object (pctor never uses TAP).
 * Family entries are normalised the way consensus method 29+ writes them
 * ("$HEX" upper case, nicknames lower case) so that family checks are
 * plain string comparisons.
 */
#include <stdlib.h>
#include <string.h>

#include "feature/dir/microdesc.h"
#include "feature/dir/netdoc.h"
#include "lib/crypt/digest.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/relay_names.h"

void
microdesc_free_(microdesc_t *md)
{
  if (!md)
    return;
  for (int i = 0; i < md->n_family; i++)
    free(md->family[i]);
  free(md->family);
  for (int i = 0; i < md->n_family_ids; i++)
    free(md->family_ids[i]);
  free(md->family_ids);
  policy_summary_free(md->policy);
  policy_summary_free(md->policy6);
  free(md->text);
  free(md);
}

static int
add_args_as_strings(const netdoc_item_t *it, char ***arr, int *n, int norm)
{
  size_t cur = 0;
  netdoc_arg_t a;
  while (netdoc_arg_iter(it, &cur, &a)) {
    if (*n >= MICRODESC_MAX_FAMILY)
      return -1;
    *arr = pc_realloc(*arr, (size_t)(*n + 1) * sizeof(**arr));
    (*arr)[(*n)++] = norm ? pc_family_normalise(a.s, a.len)
                          : pc_strndup(a.s, a.len);
  }
  return 0;
}

int
microdesc_parse(const char *s, size_t len, microdesc_t **out, char **err)
{
  *out = NULL;
  *err = NULL;
  if (len > MICRODESC_MAX_SIZE) {
    *err = pc_asprintf("microdescriptor: %zu bytes is too large", len);
    return -1;
  }
  microdesc_t *md = pc_zalloc(sizeof(*md));
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, s, len);
  int seen_ntor = 0, seen_family = 0, seen_fids = 0, seen_p = 0,
      seen_p6 = 0, seen_ided = 0, seen_idrsa = 0, n_items = 0;
  const char *pe = NULL;
  char *msg = NULL;
  int rv;
  while ((rv = netdoc_next(&r, &it)) == 1) {
    n_items++;
#define KW(x) netdoc_kw_is(&it, x)
#define BAD(m)                                                                \
  do {                                                                        \
    msg = pc_strdup("microdescriptor: " m);                                   \
    goto bad;                                                                 \
  } while (0)
    if (KW("onion-key")) {
      if (n_items != 1)
        BAD("onion-key is not the first item");
      if (!netdoc_obj_is(&it, "RSA PUBLIC KEY"))
        BAD("onion-key without an RSA PUBLIC KEY object");
      md->has_onion_key = 1;
    } else if (KW("ntor-onion-key")) {
      if (seen_ntor++)
        BAD("duplicate ntor-onion-key");
      if (it.argc < 1 ||
          netdoc_parse_b64_exact(it.argv[0].s, it.argv[0].len, md->ntor_key,
                                 32) < 0)
        BAD("malformed ntor-onion-key");
    } else if (KW("family")) {
      if (seen_family++)
        BAD("duplicate family");
      if (add_args_as_strings(&it, &md->family, &md->n_family, 1) < 0)
        BAD("family too large");
    } else if (KW("family-ids")) {
      if (seen_fids++)
        BAD("duplicate family-ids");
      if (add_args_as_strings(&it, &md->family_ids, &md->n_family_ids, 0) <
          0)
        BAD("family-ids too large");
    } else if (KW("p") || KW("p6")) {
      int six = KW("p6");
      if ((*(six ? &seen_p6 : &seen_p))++)
        BAD("duplicate p/p6");
      if (it.argc < 2)
        BAD("p/p6 needs 2 arguments");
      policy_summary_t *ps = policy_summary_parse(
        it.argv[0].s, it.argv[0].len, it.argv[1].s, it.argv[1].len, &pe);
      if (!ps) {
        msg = pc_asprintf("microdescriptor: bad %s line: %s",
                          six ? "p6" : "p", pe);
        goto bad;
      }
      if (six)
        md->policy6 = ps;
      else
        md->policy = ps;
    } else if (KW("id")) {
      if (it.argc < 2)
        BAD("id needs 2 arguments");
      if (netdoc_arg_is(&it, 0, "ed25519")) {
        if (seen_ided++)
          BAD("duplicate id ed25519");
        if (netdoc_parse_b64_exact(it.argv[1].s, it.argv[1].len,
                                   md->ed25519_id, 32) < 0)
          BAD("malformed id ed25519");
        md->has_ed25519_id = 1;
      } else if (netdoc_arg_is(&it, 0, "rsa1024")) {
        if (seen_idrsa++)
          BAD("duplicate id rsa1024");
        if (netdoc_parse_b64_exact(it.argv[1].s, it.argv[1].len,
                                   md->rsa_id_digest, 20) == 0)
          md->has_rsa_id_digest = 1;
      }
    } else if (KW("a")) {
      if (!md->has_ipv6 && it.argc >= 1 && it.argv[0].len < 64) {
        char buf[64];
        pc_addr_t a;
        netdoc_arg_copy(&it, 0, buf, sizeof(buf));
        if (buf[0] == '[' && pc_addr_parse(&a, buf) == 0 &&
            a.family == AF_INET6 && a.port) {
          md->ipv6_or = a;
          md->has_ipv6 = 1;
        }
      }
    }
#undef KW
#undef BAD
  }
  if (rv < 0) {
    msg = pc_asprintf("microdescriptor: %s", r.err);
    goto bad;
  }
  if (!seen_ntor) {
    msg = pc_strdup("microdescriptor: missing ntor-onion-key");
    goto bad;
  }
  md->text = pc_strndup(s, len);
  md->text_len = len;
  crypt_sha256(md->digest, s, len);
  *out = md;
  return 0;
bad:
  microdesc_free(md);
  *err = msg;
  return -1;
}

int
microdesc_parse_many(const char *s, size_t len, microdesc_t ***mds, int *n,
                     char **err)
{
  *err = NULL;
  netdoc_reader_t r;
  netdoc_item_t it;
  netdoc_reader_init(&r, s, len);
  size_t cur_start = 0;
  int cur_open = 0, cur_has_ntor = 0;
  int n_good = 0, n_bad = 0;
  int rv;
  for (;;) {
    rv = netdoc_next(&r, &it);
    int boundary = 0;
    if (rv == 1) {
      int is_tap = netdoc_kw_is(&it, "onion-key");
      int is_ntor = netdoc_kw_is(&it, "ntor-onion-key");
      if (!cur_open) {
        if (!is_tap && !is_ntor) {
          if (n_good + n_bad == 0) {
            *err = pc_strdup("microdescriptors: document does not start "
                             "with onion-key or ntor-onion-key");
            return -1;
          }
          continue;
        }
      } else if (is_tap || (is_ntor && cur_has_ntor)) {
        boundary = 1;
      }
    }
    if (cur_open && (boundary || rv == 0)) {
      size_t end = rv == 1 ? it.start : len;
      microdesc_t *md = NULL;
      char *e = NULL;
      if (microdesc_parse(s + cur_start, end - cur_start, &md, &e) == 0) {
        *mds = pc_realloc(*mds, (size_t)(*n + 1) * sizeof(**mds));
        (*mds)[(*n)++] = md;
        n_good++;
      } else {
        log_info("skipping a microdescriptor: %s", e);
        n_bad++;
        free(e);
      }
      cur_open = 0;
    }
    if (rv < 0) {
      if (n_good == 0) {
        *err = pc_asprintf("microdescriptors: %s", r.err);
        return -1;
      }
      log_info("microdescriptors: stopped at %s", r.err);
      return n_bad + 1;
    }
    if (rv == 0)
      break;
    if (!cur_open) {
      cur_open = 1;
      cur_start = it.start;
      cur_has_ntor = netdoc_kw_is(&it, "ntor-onion-key");
    } else if (netdoc_kw_is(&it, "ntor-onion-key")) {
      cur_has_ntor = 1;
    }
  }
  if (n_good == 0 && n_bad > 0) {
    *err = pc_strdup("microdescriptors: none of them is well formed");
    return -1;
  }
  return n_bad;
}
