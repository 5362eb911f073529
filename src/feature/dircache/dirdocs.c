/* SPDX-License-Identifier: BSD-3-Clause */
/* dirdocs.c -- providers for the documents a relay caches (dirdocs.h).
 *
 * The consensus and the key certificates are served from the files the
 * directory client keeps in DataDirectory (it writes them only after
 * verifying them), so what we serve is exactly what we checked. A request
 * for "/tor/status-vote/current/consensus-microdesc/F1+F2..." names
 * authorities that must have signed; we serve our consensus whatever the
 * list says, as it is signed by a majority of the configured authorities.
 * Microdescriptors are looked up by their SHA-256 digests (base64, joined
 * with '-') in the current node list; unknown digests are skipped, and a
 * request with none known gets 404. Server descriptors (dir-spec 4.2:
 * /tor/server/d/D1+D2... by the SHA-1 digest the ns consensus lists,
 * /tor/server/fp/F1+F2... by identity, hex) come the same way from the
 * ns-flavor client's node list, which a relay keeps beside its own
 * flavor for this purpose.
 */
#include "feature/dircache/dirdocs.h"
#include "feature/dircache/dircache.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"

#include <stdlib.h>
#include <string.h>

#define DIRDOCS_FILE_MAX (64 * 1024 * 1024)
#define DIRDOCS_MAX_DIGESTS 512

static struct {
  const dir_client_t *dc;     /* microdesc flavor */
  const dir_client_t *ns;     /* ns flavor, or NULL */
  char *datadir;
} D;

static uint8_t *
read_cache_file(const char *name, size_t *len)
{
  char *path = fs_path_join(D.datadir, name);
  uint8_t *data = NULL;
  size_t n = 0;
  int r = fs_read_file(path, DIRDOCS_FILE_MAX, &data, &n);
  free(path);
  if (r < 0)
    return NULL;
  *len = n;
  return data;
}

static uint8_t *
serve_consensus_md(const char *path, size_t *len, void *arg)
{
  (void)path;
  (void)arg;
  return read_cache_file("cached-microdesc-consensus", len);
}

static uint8_t *
serve_consensus_ns(const char *path, size_t *len, void *arg)
{
  (void)arg;
  /* Only the ns flavor itself, or with an authority list after '/'. */
  const char *rest = path + strlen("/tor/status-vote/current/consensus");
  if (*rest && *rest != '/')
    return NULL;
  return read_cache_file("cached-consensus", len);
}

static uint8_t *
serve_keys(const char *path, size_t *len, void *arg)
{
  (void)path;
  (void)arg;
  return read_cache_file("cached-certs", len);
}

/* How a request names descriptors: separator, encoding and what a name
 * is matched against. */
typedef enum {
  BY_MD_DIGEST,   /* base64 SHA-256 joined with '-' (microdescriptors) */
  BY_SD_DIGEST,   /* hex SHA-1 joined with '+' (server descriptors) */
  BY_FINGERPRINT, /* hex identity joined with '+' */
} desc_key_t;

/* Concatenate the descriptors of nl named in list (at most
 * DIRDOCS_MAX_DIGESTS names; unknown and malformed names are skipped), or
 * NULL if none is known. */
static uint8_t *
serve_descs(const dir_nodelist_t *nl, const char *list, desc_key_t key,
            size_t *len)
{
  if (!nl)
    return NULL;
  size_t cap = 4096, used = 0;
  uint8_t *out = pc_malloc(cap);
  int n_found = 0;
  const char *p = list;
  const char *sep = key == BY_MD_DIGEST ? "-" : "+";
  size_t want_len = key == BY_MD_DIGEST ? 32 : 20;
  for (int n_names = 0; *p && n_names < DIRDOCS_MAX_DIGESTS; n_names++) {
    size_t tok = strcspn(p, sep);
    uint8_t want[48];
    long got = key == BY_MD_DIGEST
                   ? base64_decode(want, sizeof(want), p, tok)
                   : (tok == 40 ? base16_decode(want, 20, p, 40) : -1);
    p += tok;
    if (*p == *sep)
      p++;
    if (got != (long)want_len)
      continue;
    for (int i = 0; i < nl->n_nodes; i++) {
      const microdesc_t *d = nl->nodes[i].desc;
      if (!d || memcmp(key == BY_FINGERPRINT ? nl->nodes[i].rsa_id
                                             : d->digest,
                       want, want_len))
        continue;
      while (used + d->text_len > cap) {
        cap *= 2;
        out = pc_realloc(out, cap);
      }
      memcpy(out + used, d->text, d->text_len);
      used += d->text_len;
      n_found++;
      break;
    }
  }
  if (!n_found) {
    free(out);
    return NULL;
  }
  *len = used;
  return out;
}

static uint8_t *
serve_microdescs(const char *path, size_t *len, void *arg)
{
  (void)arg;
  return serve_descs(D.dc ? dir_client_nodelist(D.dc) : NULL,
                     path + strlen("/tor/micro/d/"), BY_MD_DIGEST, len);
}

static uint8_t *
serve_server_by_digest(const char *path, size_t *len, void *arg)
{
  (void)arg;
  return serve_descs(D.ns ? dir_client_nodelist(D.ns) : NULL,
                     path + strlen("/tor/server/d/"), BY_SD_DIGEST, len);
}

static uint8_t *
serve_server_by_fp(const char *path, size_t *len, void *arg)
{
  (void)arg;
  return serve_descs(D.ns ? dir_client_nodelist(D.ns) : NULL,
                     path + strlen("/tor/server/fp/"), BY_FINGERPRINT, len);
}

void
dirdocs_register(const dir_client_t *md, const dir_client_t *ns,
                 const char *datadir)
{
  D.dc = md;
  D.ns = ns;
  free(D.datadir);
  D.datadir = pc_strdup(datadir);
  dircache_register_prefix("/tor/status-vote/current/consensus-microdesc",
                           serve_consensus_md, NULL);
  dircache_register_prefix("/tor/status-vote/current/consensus",
                           serve_consensus_ns, NULL);
  dircache_register_prefix("/tor/keys/", serve_keys, NULL);
  dircache_register_prefix("/tor/micro/d/", serve_microdescs, NULL);
  if (ns) {
    dircache_register_prefix("/tor/server/d/", serve_server_by_digest, NULL);
    dircache_register_prefix("/tor/server/fp/", serve_server_by_fp, NULL);
  }
}

void
dirdocs_unregister(void)
{
  D.dc = NULL;
  PC_FREE(D.datadir);
}
