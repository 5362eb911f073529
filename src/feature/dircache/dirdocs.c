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

static uint8_t *
serve_microdescs(const char *path, size_t *len, void *arg)
{
  (void)arg;
  const dir_nodelist_t *nl = D.dc ? dir_client_nodelist(D.dc) : NULL;
  if (!nl)
    return NULL;
  const char *p = path + strlen("/tor/micro/d/");
  size_t cap = 4096, used = 0;
  uint8_t *out = pc_malloc(cap);
  int n_found = 0;
  for (int n_digests = 0; *p && n_digests < DIRDOCS_MAX_DIGESTS;
       n_digests++) {
    size_t tok = strcspn(p, "-");
    uint8_t digest[48];
    long dl = base64_decode(digest, sizeof(digest), p, tok);
    p += tok;
    if (*p == '-')
      p++;
    if (dl != 32)
      continue;
    for (int i = 0; i < nl->n_nodes; i++) {
      const microdesc_t *md = nl->nodes[i].desc;
      if (!md || memcmp(md->digest, digest, 32))
        continue;
      while (used + md->text_len > cap) {
        cap *= 2;
        out = pc_realloc(out, cap);
      }
      memcpy(out + used, md->text, md->text_len);
      used += md->text_len;
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

/* Append the text of every descriptor named in list (hex digests or
 * fingerprints joined with '+'); by_fp: match identities, else the
 * descriptors' SHA-1 digests. */
static uint8_t *
serve_server_descs(const char *list, int by_fp, size_t *len)
{
  const dir_nodelist_t *nl = D.ns ? dir_client_nodelist(D.ns) : NULL;
  if (!nl)
    return NULL;
  size_t cap = 4096, used = 0;
  uint8_t *out = pc_malloc(cap);
  int n_found = 0;
  const char *p = list;
  for (int n_digests = 0; *p && n_digests < DIRDOCS_MAX_DIGESTS;
       n_digests++) {
    size_t tok = strcspn(p, "+");
    uint8_t want[20];
    int ok = tok == 40 && base16_decode(want, 20, p, 40) == 20;
    p += tok;
    if (*p == '+')
      p++;
    if (!ok)
      continue;
    for (int i = 0; i < nl->n_nodes; i++) {
      const microdesc_t *d = nl->nodes[i].desc;
      if (!d || memcmp(by_fp ? nl->nodes[i].rsa_id : d->digest, want, 20))
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
serve_server_by_digest(const char *path, size_t *len, void *arg)
{
  (void)arg;
  return serve_server_descs(path + strlen("/tor/server/d/"), 0, len);
}

static uint8_t *
serve_server_by_fp(const char *path, size_t *len, void *arg)
{
  (void)arg;
  return serve_server_descs(path + strlen("/tor/server/fp/"), 1, len);
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
