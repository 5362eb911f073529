/* SPDX-License-Identifier: BSD-3-Clause */
/* hopspec.c -- parsing the tools' relay names (see hopspec.h). */
#include "tools/common/hopspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "feature/relay/router_keys.h"
#include "lib/encoding/base16.h"
#include "lib/encoding/base64.h"
#include "lib/malloc/alloc.h"

static int
decode_key32(uint8_t out[32], const char *b64)
{
  uint8_t buf[48];
  long n = base64_decode(buf, sizeof(buf), b64, strlen(b64));
  if (n != 32)
    return -1;
  memcpy(out, buf, 32);
  return 0;
}

/* "ADDR:PORT,RSAFP,ED,NTOR". */
static int
parse_explicit(extend_target_t *t, const char *spec)
{
  char *s = pc_strdup(spec);
  char *fields[4] = {0};
  int n = 0;
  char *save = NULL;
  for (char *p = strtok_r(s, ",", &save); p && n < 4;
       p = strtok_r(NULL, ",", &save))
    fields[n++] = p;
  int r = -1;
  memset(t, 0, sizeof(*t));
  if (n < 2 || pc_addr_parse(&t->addr, fields[0]) < 0 || !t->addr.port)
    goto out;
  if (base16_decode(t->rsa_id, 20, fields[1], strlen(fields[1])) != 20)
    goto out;
  if (n >= 3 && strcmp(fields[2], "-")) {
    if (decode_key32(t->ed_id, fields[2]) < 0)
      goto out;
    t->has_ed_id = 1;
  }
  if (n >= 4 && decode_key32(t->ntor_key, fields[3]) < 0)
    goto out;
  r = 0;
out:
  free(s);
  return r;
}

/* "pctor:DATADIR@ADDR:PORT": identities and ntor key from a pctor relay's
 * key directory (loaded, never created: the directory must exist). */
static int
parse_pctor(extend_target_t *t, const char *spec)
{
  const char *at = strrchr(spec, '@');
  if (!at)
    return -1;
  char *dir = pc_strndup(spec + 6, (size_t)(at - spec - 6));
  char *keyfile = pc_asprintf("%s/keys/secret_id_key", dir);
  FILE *f = fopen(keyfile, "r");
  free(keyfile);
  if (!f) {
    free(dir);
    return -1;
  }
  fclose(f);
  char *err = NULL;
  router_keys_config_t cfg;
  router_keys_config_init(&cfg);
  cfg.read_only = 1; /* the relay owns its files */
  relay_keys_t *k = router_keys_load_or_create(dir, &cfg, time(NULL), &err);
  free(dir);
  if (!k) {
    fprintf(stderr, "%s\n", err ? err : "cannot load keys");
    free(err);
    return -1;
  }
  memset(t, 0, sizeof(*t));
  int r = pc_addr_parse(&t->addr, at + 1);
  memcpy(t->rsa_id, k->rsa_id_digest, 20);
  memcpy(t->ed_id, k->ed_identity.pub, 32);
  t->has_ed_id = 1;
  memcpy(t->ntor_key, k->ntor_current.pub, 32);
  router_keys_free(k);
  return r < 0 || !t->addr.port ? -1 : 0;
}

static int
parse_nickname(extend_target_t *t, const char *nodes, const char *nick)
{
  FILE *f = fopen(nodes, "r");
  if (!f)
    return -1;
  char line[512];
  int r = -1;
  while (fgets(line, sizeof(line), f)) {
    char name[64], fp[64], ed[64], ntor[64], role[32];
    unsigned orport, dirport;
    if (sscanf(line, "%63s %u %u %63s %63s %63s %31s", name, &orport,
               &dirport, fp, ed, ntor, role) < 6)
      continue;
    if (strcmp(name, nick))
      continue;
    char spec[300];
    snprintf(spec, sizeof(spec), "127.0.0.1:%u,%s,%s,%s", orport, fp, ed,
             ntor);
    r = parse_explicit(t, spec);
    break;
  }
  fclose(f);
  return r;
}

int
hopspec_parse(extend_target_t *t, const char *spec, const char *nodes_file)
{
  if (!strncmp(spec, "pctor:", 6))
    return parse_pctor(t, spec);
  if (strchr(spec, ','))
    return parse_explicit(t, spec);
  return nodes_file ? parse_nickname(t, nodes_file, spec) : -1;
}
