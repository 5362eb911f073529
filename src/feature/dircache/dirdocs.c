/* SPDX-License-Identifier: BSD-3-Clause */
/* dirdocs.c -- providers for the documents a relay caches (dirdocs.h).
 *
 * The consensus and the key certificates are served from the files the
 * directory client keeps in DataDirectory (it writes them only after
 * verifying them), so what we serve is exactly what we checked. Each file
 * is read once into a shared document (dircache.h) that every request
 * gets a reference to; at most once a second a request looks at the
 * file's identity (device, inode, size, modification time) and, when the
 * client has written a new one, reads it into a new document and retires
 * the old one, which the streams still sending it keep until they finish.
 * So a request costs no disk read and no copy. A request
 * for "/tor/status-vote/current/consensus-microdesc/F1+F2..." names
 * authorities that must have signed; we serve our consensus whatever the
 * list says, as it is signed by a majority of the configured authorities.
 * Microdescriptors are looked up by their SHA-256 digests (base64, joined
 * with '-') in the current node list; unknown digests are skipped, and a
 * request with none known gets 404. Server descriptors (dir-spec 4.2:
 * /tor/server/d/D1+D2... by the SHA-1 digest the ns consensus lists,
 * /tor/server/fp/F1+F2... by identity, hex) come the same way from the
 * ns-flavor client's node list, which a relay keeps beside its own
 * flavor for this purpose. Descriptor lists differ per request, so they
 * are built per request (at most DIRDOCS_MAX_DIGESTS descriptors, each
 * found through an index of the node list) into a document of their own,
 * charged in full to the stream holding it.
 */
#include "feature/dircache/dirdocs.h"
#include "feature/dircache/dircache.h"
#include "lib/encoding/base16.h"
#include "lib/container/hmap.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/malloc/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DIRDOCS_FILE_MAX (64 * 1024 * 1024)
#define DIRDOCS_MAX_DIGESTS 512

/* One cache file served as a shared document. */
typedef struct filedoc_t {
  const char *name;
  dircache_doc_t *doc;       /* the provider's reference, or NULL */
  struct stat st;            /* identity of the file doc was read from */
  time_t checked;
} filedoc_t;

static struct {
  const dir_client_t *dc;     /* microdesc flavor */
  const dir_client_t *ns;     /* ns flavor, or NULL */
  char *datadir;
  filedoc_t md, ns_cons, certs;
} D = {.md = {.name = "cached-microdesc-consensus"},
       .ns_cons = {.name = "cached-consensus"},
       .certs = {.name = "cached-certs"}};

static int
same_file(const struct stat *a, const struct stat *b)
{
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
         a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void
filedoc_drop(filedoc_t *f)
{
  dircache_doc_retire(f->doc);
  f->doc = NULL;
  f->checked = 0;
}

/* A new reference to the current copy of f, or NULL (no file). */
static dircache_doc_t *
filedoc_get(filedoc_t *f)
{
  time_t now = time(NULL);
  if (f->doc && f->checked == now)
    return dircache_doc_ref(f->doc);
  f->checked = now;
  char *path = fs_path_join(D.datadir, f->name);
  struct stat st;
  if (stat(path, &st) < 0) {
    free(path);
    filedoc_drop(f);
    return NULL;
  }
  if (!f->doc || !same_file(&st, &f->st)) {
    uint8_t *data = NULL;
    size_t n = 0;
    if (fs_read_file(path, DIRDOCS_FILE_MAX, &data, &n) < 0) {
      free(path);
      filedoc_drop(f);
      return NULL;
    }
    dircache_doc_retire(f->doc);
    f->doc = dircache_doc_new(data, n, 1);
    f->st = st;
    f->checked = now;
  }
  free(path);
  return dircache_doc_ref(f->doc);
}

static dircache_doc_t *
serve_consensus_md(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  return filedoc_get(&D.md);
}

static dircache_doc_t *
serve_consensus_ns(const char *path, void *arg)
{
  (void)arg;
  /* Only the ns flavor itself, or with an authority list after '/'. */
  const char *rest = path + strlen("/tor/status-vote/current/consensus");
  if (*rest && *rest != '/')
    return NULL;
  return filedoc_get(&D.ns_cons);
}

static dircache_doc_t *
serve_keys(const char *path, void *arg)
{
  (void)path;
  (void)arg;
  return filedoc_get(&D.certs);
}

/* How a request names descriptors: separator, encoding and what a name
 * is matched against. */
typedef enum {
  BY_MD_DIGEST,   /* base64 SHA-256 joined with '-' (microdescriptors) */
  BY_SD_DIGEST,   /* hex SHA-1 joined with '+' (server descriptors) */
  BY_FINGERPRINT, /* hex identity joined with '+' */
} desc_key_t;

/* An index of a client's node list by one kind of name: name -> node
 * index + 1. Rebuilt when the list changes (another list, or the client
 * accepted a consensus or added descriptors since); every hit is checked
 * against the node it names, so a stale index can only miss. Without it
 * a request naming DIRDOCS_MAX_DIGESTS descriptors would cost that many
 * scans of the whole list. */
typedef struct desc_index_t {
  const dir_nodelist_t *nl;   /* compared only, never dereferenced */
  int gen_consensus, gen_descs;
  hmap_t *map;
} desc_index_t;
static desc_index_t indexes[3]; /* by desc_key_t */

static const uint8_t *
node_name(const dir_node_t *n, desc_key_t key)
{
  if (key == BY_FINGERPRINT)
    return n->rsa_id;
  return n->desc ? n->desc->digest : NULL;
}

static desc_index_t *
get_index(const dir_client_t *dc, const dir_nodelist_t *nl, desc_key_t key,
          size_t want_len)
{
  desc_index_t *ix = &indexes[key];
  dir_client_stats_t st;
  dir_client_get_stats(dc, &st);
  if (ix->map && ix->nl == nl && ix->gen_consensus == st.n_consensus_accepted &&
      ix->gen_descs == st.n_descs_added)
    return ix;
  hmap_free(ix->map, NULL);
  ix->map = hmap_new(want_len);
  ix->nl = nl;
  ix->gen_consensus = st.n_consensus_accepted;
  ix->gen_descs = st.n_descs_added;
  for (int i = 0; i < nl->n_nodes; i++) {
    const uint8_t *name = node_name(&nl->nodes[i], key);
    if (name && !hmap_get(ix->map, name))
      hmap_set(ix->map, name, (void *)(uintptr_t)(i + 1));
  }
  return ix;
}

static void
indexes_clear(void)
{
  for (int k = 0; k < 3; k++) {
    hmap_free(indexes[k].map, NULL);
    memset(&indexes[k], 0, sizeof(indexes[k]));
  }
}

/* Concatenate the descriptors of dc's node list named in list (at most
 * DIRDOCS_MAX_DIGESTS names; unknown and malformed names are skipped), or
 * NULL if none is known. */
static dircache_doc_t *
serve_descs(const dir_client_t *dc, const char *list, desc_key_t key)
{
  const dir_nodelist_t *nl = dc ? dir_client_nodelist(dc) : NULL;
  if (!nl)
    return NULL;
  const char *sep = key == BY_MD_DIGEST ? "-" : "+";
  size_t want_len = key == BY_MD_DIGEST ? 32 : 20;
  desc_index_t *ix = get_index(dc, nl, key, want_len);
  size_t cap = 4096, used = 0;
  uint8_t *out = pc_malloc(cap);
  int n_found = 0;
  const char *p = list;
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
    uintptr_t v = (uintptr_t)hmap_get(ix->map, want);
    if (!v || v > (uintptr_t)nl->n_nodes)
      continue;
    const dir_node_t *n = &nl->nodes[v - 1];
    const microdesc_t *d = n->desc;
    const uint8_t *name = node_name(n, key);
    if (!d || !name || memcmp(name, want, want_len))
      continue;
    while (used + d->text_len > cap) {
      cap *= 2;
      out = pc_realloc(out, cap);
    }
    memcpy(out + used, d->text, d->text_len);
    used += d->text_len;
    n_found++;
  }
  if (!n_found) {
    free(out);
    return NULL;
  }
  return dircache_doc_new(out, used, 0);
}

static dircache_doc_t *
serve_microdescs(const char *path, void *arg)
{
  (void)arg;
  return serve_descs(D.dc, path + strlen("/tor/micro/d/"), BY_MD_DIGEST);
}

static dircache_doc_t *
serve_server_by_digest(const char *path, void *arg)
{
  (void)arg;
  return serve_descs(D.ns, path + strlen("/tor/server/d/"), BY_SD_DIGEST);
}

static dircache_doc_t *
serve_server_by_fp(const char *path, void *arg)
{
  (void)arg;
  return serve_descs(D.ns, path + strlen("/tor/server/fp/"), BY_FINGERPRINT);
}

void
dirdocs_register(const dir_client_t *md, const dir_client_t *ns,
                 const char *datadir)
{
  D.dc = md;
  D.ns = ns;
  free(D.datadir);
  D.datadir = pc_strdup(datadir);
  filedoc_drop(&D.md);
  filedoc_drop(&D.ns_cons);
  filedoc_drop(&D.certs);
  indexes_clear();
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
  D.ns = NULL;
  filedoc_drop(&D.md);
  filedoc_drop(&D.ns_cons);
  filedoc_drop(&D.certs);
  indexes_clear();
  PC_FREE(D.datadir);
}
