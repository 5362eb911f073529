/* SPDX-License-Identifier: BSD-3-Clause */
/* family_keys.c -- family keys, their files and certificates (see
 * family_keys.h for the formats).
 *
 * Design: the key directory is read once, when the options are applied
 * (start-up and reload), into a fixed array of at most FAMILY_KEYS_MAX
 * key pairs; the descriptor builder signs a fresh certificate from them
 * each time it builds, so a renewed signing key (whose expiry the
 * certificates follow) needs nothing here. Every file is checked when
 * loaded (size, header, a usable expanded key) and named in the error;
 * files that are not *.secret_family_key are ignored, and at most
 * FAMILY_DIR_MAX_ENTRIES directory entries are looked at, so a huge
 * directory cannot stall start-up.
 */
#include "feature/relay/family_keys.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/proto/torcert.h"
#include "lib/encoding/base64.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"

#define HDR_LEN 32
#define TAG_FAMILY_SECRET "== ed25519v1-secret: fmly-id =="
#define SECRET_FILE_LEN (HDR_LEN + ED25519_EXPANDED_LEN)
#define SUFFIX_SECRET ".secret_family_key"
#define SUFFIX_PUBLIC ".public_family_id"
#define FAMILY_DIR_MAX_ENTRIES 10000
#define FAMILY_IDS_MAX 32

int
family_id_is_valid(const char *s)
{
  if (!strcmp(s, "*"))
    return 1;
  if (strlen(s) != FAMILY_ID_LEN)
    return 0;
  uint8_t pub[33];
  return base64_decode(pub, sizeof(pub), s, FAMILY_ID_LEN) == 32;
}

void
family_id_format(char out[FAMILY_ID_LEN + 1], const uint8_t pub[32])
{
  base64_encode(out, FAMILY_ID_LEN + 1, pub, 32, BASE64_NOPAD);
}

static int
ends_with(const char *s, const char *suffix)
{
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !strcmp(s + a - b, suffix);
}

int
family_keys_generate(const char *name, char **out, char **err)
{
  *out = *err = NULL;
  if (!name || !*name) {
    *err = pc_strdup("--keygen-family needs a name");
    return -1;
  }
  char *sp = pc_asprintf("%s%s", name, SUFFIX_SECRET);
  char *pp = pc_asprintf("%s%s", name, SUFFIX_PUBLIC);
  int r = -1;
  if (fs_file_exists(sp)) {
    /* (tor's words) */
    *err = pc_asprintf("Family key file '%s' already exists. Refusing to "
                       "overwrite existing family key.", sp);
    goto done;
  }
  ed25519_keypair_t kp;
  ed25519_keypair_generate(&kp);
  uint8_t buf[SECRET_FILE_LEN];
  memset(buf, 0, HDR_LEN);
  memcpy(buf, TAG_FAMILY_SECRET, strlen(TAG_FAMILY_SECRET));
  char id[FAMILY_ID_LEN + 1], line[FAMILY_ID_LEN + 2];
  family_id_format(id, kp.pub);
  snprintf(line, sizeof(line), "%s\n", id);
  const char *failed = sp;
  int w = ed25519_keypair_get_expanded(&kp, buf + HDR_LEN) < 0
              ? -EINVAL
              : fs_write_file_atomic(sp, buf, sizeof(buf), 0600);
  pc_memwipe(buf, sizeof(buf));
  ed25519_keypair_wipe(&kp);
  if (w == 0) {
    failed = pp;
    w = fs_write_file_atomic(pp, line, strlen(line), 0600);
  }
  if (w < 0) {
    *err = pc_asprintf("Cannot write %s: %s", failed, strerror(-w));
    goto done;
  }
  *out = pc_asprintf("# Generated %s\nFamilyId %s\n", sp, id);
  r = 0;
 done:
  free(sp);
  free(pp);
  return r;
}

/* Read one key file into kp. 0, or -1 with *err. */
static int
read_key(const char *path, ed25519_keypair_t *kp, char **err)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  int r = fs_read_file(path, SECRET_FILE_LEN + 1, &buf, &len);
  if (r < 0) {
    *err = pc_asprintf("Cannot read the family key %s: %s", path,
                       r == -EFBIG ? "file too large" : strerror(-r));
    return -1;
  }
  uint8_t hdr[HDR_LEN];
  memset(hdr, 0, HDR_LEN);
  memcpy(hdr, TAG_FAMILY_SECRET, strlen(TAG_FAMILY_SECRET));
  const char *why = NULL;
  if (len != SECRET_FILE_LEN)
    why = "wrong size";
  else if (memcmp(buf, hdr, HDR_LEN) != 0)
    why = "wrong header";
  else if (ed25519_keypair_from_expanded(kp, buf + HDR_LEN) < 0)
    why = "not an ed25519 expanded secret key";
  pc_memwipe(buf, len);
  free(buf);
  if (why) {
    *err = pc_asprintf("The family key %s is corrupt or truncated (%s)",
                       path, why);
    return -1;
  }
  return 0;
}

/* Whether kp's key is already in out. */
static int
dup_key(const family_keys_t *out, const ed25519_keypair_t *kp)
{
  for (int i = 0; i < out->n; i++)
    if (!memcmp(out->kp[i].pub, kp->pub, 32))
      return 1;
  return 0;
}

static int
load_keys(const char *dir, const char *const *ids, int n_ids,
          family_keys_t *out, int warn_unlisted, char **err)
{
  *err = NULL;
  memset(out, 0, sizeof(*out));
  if (n_ids <= 0)
    return 0;
  int all = 0;
  if (n_ids > FAMILY_IDS_MAX) {
    *err = pc_asprintf("More than %d FamilyId lines", FAMILY_IDS_MAX);
    return -1;
  }
  for (int i = 0; i < n_ids; i++) {
    if (!family_id_is_valid(ids[i])) {
      *err = pc_asprintf("FamilyId %s is not a family ID (43 base64 "
                         "characters, as --keygen-family prints) or *",
                         ids[i]);
      return -1;
    }
    all |= !strcmp(ids[i], "*");
  }
  DIR *d = opendir(dir);
  if (!d) {
    *err = pc_asprintf("Cannot read the family key directory %s: %s", dir,
                       strerror(errno));
    return -1;
  }
  int found[FAMILY_IDS_MAX] = {0}, seen = 0, r = -1;
  struct dirent *e;
  while ((e = readdir(d)) && seen++ < FAMILY_DIR_MAX_ENTRIES) {
    if (!ends_with(e->d_name, SUFFIX_SECRET))
      continue;
    char *path = fs_path_join(dir, e->d_name);
    ed25519_keypair_t kp;
    int k = read_key(path, &kp, err);
    free(path);
    if (k < 0)
      goto done;
    char id[FAMILY_ID_LEN + 1];
    family_id_format(id, kp.pub);
    int wanted = all;
    for (int i = 0; i < n_ids; i++)
      if (!strcmp(ids[i], id))
        wanted = found[i] = 1;
    if (wanted && dup_key(out, &kp))
      wanted = 0; /* the same key in two files */
    if (wanted && out->n == FAMILY_KEYS_MAX) {
      ed25519_keypair_wipe(&kp);
      *err = pc_asprintf("More than %d family keys in %s", FAMILY_KEYS_MAX,
                         dir);
      goto done;
    }
    if (warn_unlisted && !wanted && !all && !dup_key(out, &kp))
      /* (tor's words) */
      log_warn("Found secret family key in %s/%s with unexpected FamilyID "
               "%s", dir, e->d_name, id);
    if (wanted)
      out->kp[out->n++] = kp;
    else
      ed25519_keypair_wipe(&kp);
  }
  for (int i = 0; i < n_ids; i++) {
    if (strcmp(ids[i], "*") && !found[i]) {
      *err = pc_asprintf("FamilyId %s: no *" SUFFIX_SECRET " file in %s "
                         "holds that family's key; copy it there from the "
                         "relay where --keygen-family made it", ids[i], dir);
      goto done;
    }
  }
  if (warn_unlisted && out->n > 3)
    log_warn("%d family keys: the directory authorities may refuse a "
             "descriptor with more than three family-cert lines "
             "(proposal 321)", out->n);
  r = 0;
 done:
  closedir(d);
  if (r < 0)
    family_keys_clear(out);
  return r;
}

int
family_keys_load(const char *dir, const char *const *ids, int n_ids,
                 family_keys_t *out, char **err)
{
  return load_keys(dir, ids, n_ids, out, 1, err);
}

int
family_keys_check(const char *dir, const char *const *ids, int n_ids,
                  char **err)
{
  family_keys_t fk;
  int r = load_keys(dir, ids, n_ids, &fk, 0, err);
  family_keys_clear(&fk);
  return r;
}

uint8_t *
family_keys_make_cert(const ed25519_keypair_t *kp, const uint8_t id_pub[32],
                      time_t expires, size_t *len)
{
  torcert_t *c = torcert_create(kp, TORCERT_TYPE_FAMILY_V_IDENTITY,
                                TORCERT_KEY_ED25519, id_pub, expires, 1);
  if (!c)
    return NULL;
  uint8_t *b = pc_memdup(c->encoded, c->encoded_len);
  *len = c->encoded_len;
  torcert_free(c);
  return b;
}

int
family_keys_check_cert(const uint8_t *cert, size_t len,
                       const uint8_t id_pub[32], time_t now,
                       uint8_t family_pub[32], const char **why)
{
  torcert_t *c = NULL;
  int e = torcert_parse(cert, len, &c);
  if (e < 0) {
    *why = torcert_strerror(e);
    return -1;
  }
  int r = -1;
  if (c->cert_type != TORCERT_TYPE_FAMILY_V_IDENTITY)
    *why = "not a family certificate (type 12)";
  else if (c->key_type != TORCERT_KEY_ED25519 ||
           memcmp(c->certified_key, id_pub, 32) != 0)
    *why = "the family certificate certifies another identity";
  else if (!c->signing_key_included)
    *why = "the family certificate lacks its family key";
  else if ((e = torcert_checksig(c, NULL, now)) < 0)
    *why = torcert_strerror(e);
  else {
    if (family_pub)
      memcpy(family_pub, c->signing_key, 32);
    r = 0;
  }
  torcert_free(c);
  return r;
}

void
family_keys_clear(family_keys_t *k)
{
  for (int i = 0; i < FAMILY_KEYS_MAX; i++)
    ed25519_keypair_wipe(&k->kp[i]);
  k->n = 0;
}
