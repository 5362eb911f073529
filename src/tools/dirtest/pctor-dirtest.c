/* SPDX-License-Identifier: BSD-3-Clause */
/* pctor-dirtest.c -- exercise pctor's directory client from the command
 * line: fetch and verify the consensus, certificates and descriptors into
 * a DataDirectory, show what the cache holds, and choose paths from it.
 *
 *   pctor-dirtest --datadir D [--DirAuthority LINE]... [options] COMMAND
 *   COMMAND: fetch   load the cache, fetch what is missing or stale,
 *                    verify, store; exit 0 when a verified live consensus
 *                    and all its descriptors are present
 *            show    offline: load the cache, print the consensus summary
 *                    and one line per relay
 *            path    offline: load the cache and print --count paths
 *
 * Design: a thin driver over feature/dir (dir_client, nodelist, path);
 * all checks happen there, so what this tool accepts is what a pctor
 * relay or client accepts. Messages go to stderr through lib/log;
 * results to stdout in a line format meant for scripts.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature/dir/consensus.h"
#include "feature/dir/dir_authority.h"
#include "feature/dir/dir_client.h"
#include "feature/dir/nodelist.h"
#include "feature/dir/path.h"
#include "lib/crypt/crypt_init.h"
#include "lib/encoding/base64.h"
#include "lib/evloop/evloop.h"
#include "lib/fs/files.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/time/clock.h"
#include "lib/time/timefmt.h"

#define MAX_AUTHS 32

static void
usage(void)
{
  fprintf(stderr,
          "Usage: pctor-dirtest --datadir DIR [--DirAuthority LINE]... "
          "[options] fetch|show|path\n"
          "Options:\n"
          "  --UseMicrodescriptors 0|1     (default 1)\n"
          "  --EnforceDistinctSubnets 0|1  (default 1)\n"
          "  --EntryNodes L --MiddleNodes L --ExitNodes L --ExcludeNodes L\n"
          "  --port N      exit port for path (default 0: internal circuit)\n"
          "  --hops N      path length (default 3)\n"
          "  --count N     number of paths to print (default 1)\n"
          "  --no-fast     do not require the Fast flag\n"
          "  --timeout S   give up fetching after S seconds (default 60)\n"
          "  --verbose     info-level logging\n");
}

typedef struct {
  evloop_t *loop;
  int done, ok;
} run_t;

static void
fetch_done(dir_client_t *dc, int ok, void *arg)
{
  run_t *r = arg;
  (void)dc;
  r->done = 1;
  r->ok = ok;
  evloop_exit(r->loop);
}

static void
timeout_cb(void *arg)
{
  run_t *r = arg;
  log_warn("pctor-dirtest: timed out");
  evloop_exit(r->loop);
}

static void
print_consensus(const consensus_t *c)
{
  char va[TIME_ISO_LEN + 1], fu[TIME_ISO_LEN + 1], vu[TIME_ISO_LEN + 1];
  time_format_iso(va, c->valid_after);
  time_format_iso(fu, c->fresh_until);
  time_format_iso(vu, c->valid_until);
  printf("consensus flavor=%s method=%d valid-after=\"%s\" "
         "fresh-until=\"%s\" valid-until=\"%s\" relays=%d signatures=%d\n",
         c->flavor == CONSENSUS_FLAVOR_MICRODESC ? "microdesc" : "ns",
         c->consensus_method, va, fu, vu, c->n_rs, c->n_sigs);
}

static void
print_node(const dir_node_t *n)
{
  char addr[PC_ADDR_STR_LEN], flags[256], ntor[64] = "-", ed[64] = "-";
  char pol[256];
  pc_addr_fmt(&n->or_addr, addr, sizeof(addr), 1);
  dir_node_flags_str(n, flags, sizeof(flags));
  if (n->has_ntor)
    base64_encode(ntor, sizeof(ntor), n->ntor_key, 32, BASE64_NOPAD);
  if (n->has_ed25519)
    base64_encode(ed, sizeof(ed), n->ed25519_id, 32, BASE64_NOPAD);
  policy_summary_format(n->policy, pol, sizeof(pol));
  printf("node %s %s %s dirport=%u flags=%s bw=%u ntor=%s ed25519=%s "
         "policy=\"%s\" family=",
         n->nickname, n->hex_id, addr, n->dir_port, flags[0] ? flags : "-",
         n->bandwidth, ntor, ed, pol);
  if (n->desc && n->desc->n_family) {
    for (int i = 0; i < n->desc->n_family; i++)
      printf("%s%s", i ? "," : "", n->desc->family[i]);
  } else {
    printf("-");
  }
  printf(" usable=%d\n", dir_node_is_usable(n));
}

int
main(int argc, char **argv)
{
  const char *datadir = NULL, *cmd = NULL;
  dir_authority_t auths[MAX_AUTHS];
  int n_auths = 0, use_md = 1, port = 0, hops = 3, count = 1;
  double timeout = 60;
  path_config_t pcfg;
  path_config_init(&pcfg);
  char *err = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (!strcmp(a, name) && v && ++i)
    if (OPT("--datadir")) {
      datadir = v;
    } else if (OPT("--DirAuthority")) {
      if (n_auths == MAX_AUTHS) {
        fprintf(stderr, "pctor-dirtest: too many --DirAuthority\n");
        return 2;
      }
      if (dir_authority_parse(&auths[n_auths], v, &err) < 0) {
        fprintf(stderr, "pctor-dirtest: %s\n", err);
        free(err);
        return 2;
      }
      n_auths++;
    } else if (OPT("--UseMicrodescriptors")) {
      use_md = atoi(v) != 0;
    } else if (OPT("--EnforceDistinctSubnets")) {
      pcfg.enforce_distinct_subnets = atoi(v) != 0;
    } else if (OPT("--EntryNodes") || OPT("--MiddleNodes") ||
               OPT("--ExitNodes") || OPT("--ExcludeNodes")) {
      routerset_t **set = !strcmp(a, "--EntryNodes")    ? &pcfg.entry_nodes
                          : !strcmp(a, "--MiddleNodes") ? &pcfg.middle_nodes
                          : !strcmp(a, "--ExitNodes")   ? &pcfg.exit_nodes
                                                        : &pcfg.exclude_nodes;
      if (routerset_parse(set, v, &err) < 0) {
        fprintf(stderr, "pctor-dirtest: %s: %s\n", a + 2, err);
        free(err);
        path_config_clear(&pcfg);
        return 2;
      }
    } else if (OPT("--port")) {
      port = atoi(v);
    } else if (OPT("--hops")) {
      hops = atoi(v);
    } else if (OPT("--count")) {
      count = atoi(v);
    } else if (OPT("--timeout")) {
      timeout = atof(v);
    } else if (!strcmp(a, "--no-fast")) {
      pcfg.need_fast = 0;
    } else if (!strcmp(a, "--verbose")) {
      log_parse_destination("info stderr", &err);
      free(err);
      err = NULL;
    } else if (!strcmp(a, "fetch") || !strcmp(a, "show") ||
               !strcmp(a, "path")) {
      cmd = a;
    } else {
      usage();
      return 2;
    }
#undef OPT
  }
  if (!datadir || !cmd) {
    usage();
    return 2;
  }
  if (port < 0 || port > 65535 || count < 1 || hops < 2 || hops > 8) {
    usage();
    return 2;
  }
  const dir_authority_t *use_auths = auths;
  if (n_auths == 0) {
    use_auths = dir_authority_defaults(&n_auths);
    if (n_auths == 0) {
      fprintf(stderr, "pctor-dirtest: no DirAuthority given and no default "
                      "authorities compiled in\n");
      return 2;
    }
  }
  if (fs_check_private_dir(datadir, &err) < 0) {
    fprintf(stderr, "pctor-dirtest: %s\n", err);
    free(err);
    path_config_clear(&pcfg);
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  if (crypt_global_init() < 0)
    return 1;

  run_t run = {0};
  int is_fetch = !strcmp(cmd, "fetch");
  if (is_fetch)
    run.loop = evloop_new();
  dir_client_config_t cfg = {
    .data_dir = datadir,
    .auths = use_auths,
    .n_auths = n_auths,
    .use_microdescriptors = use_md,
    .request_timeout_ms = 20000,
    .eager_refresh = 1,
  };
  dir_client_t *dc = dir_client_new(run.loop, &cfg);
  time_t now = time_wall_now();
  int have = dir_client_load_cache(dc, now);
  int rc = 0;
  if (is_fetch) {
    if (have && !dir_client_consensus_wanted(dc, now) &&
        dir_client_n_missing_descs(dc) == 0)
      log_notice("The cached directory information is fresh; checking for "
                 "missing descriptors only.");
    evloop_timer_t *to = evloop_timer_new(run.loop, timeout_cb, &run);
    evloop_timer_schedule(to, (uint64_t)(timeout * 1e6));
    dir_client_fetch(dc, fetch_done, &run);
    evloop_run(run.loop);
    evloop_timer_free(to);
    dir_client_stats_t st;
    dir_client_get_stats(dc, &st);
    const dir_nodelist_t *nl = dir_client_nodelist(dc);
    printf("fetch ok=%d requests=%d failed=%d consensus_accepted=%d "
           "consensus_rejected=%d certs_added=%d descs_added=%d "
           "cache_consensus_rejected=%d relays=%d with_desc=%d\n",
           run.ok, st.n_requests, st.n_failed_requests,
           st.n_consensus_accepted, st.n_consensus_rejected, st.n_certs_added,
           st.n_descs_added, st.cache_consensus_rejected,
           nl ? nl->n_nodes : 0, nl ? nl->n_with_desc : 0);
    if (!run.ok) {
      fprintf(stderr, "pctor-dirtest: fetch failed: %s\n",
              run.done ? dir_client_last_error(dc) : "timed out");
      rc = 1;
    }
  } else {
    const consensus_t *c = dir_client_consensus(dc);
    const dir_nodelist_t *nl = dir_client_nodelist(dc);
    if (!c || !nl) {
      fprintf(stderr, "pctor-dirtest: no usable consensus in %s%s%s\n",
              datadir, dir_client_last_error(dc)[0] ? ": " : "",
              dir_client_last_error(dc));
      rc = 1;
    } else if (!strcmp(cmd, "show")) {
      print_consensus(c);
      for (int i = 0; i < nl->n_nodes; i++)
        print_node(&nl->nodes[i]);
    } else {
      path_rng_t rng = path_rng_crypto();
      for (int k = 0; k < count && rc == 0; k++) {
        const dir_node_t *p[8];
        if (path_choose(nl, &pcfg, hops, port, NULL, &rng, p, &err) < 0) {
          fprintf(stderr, "pctor-dirtest: no path: %s\n", err);
          free(err);
          rc = 1;
          break;
        }
        printf("path");
        for (int h = 0; h < hops; h++)
          printf(" %s~%s", p[h]->hex_id, p[h]->nickname);
        printf("\n");
      }
    }
  }
  dir_client_free(dc);
  if (run.loop)
    evloop_free(run.loop);
  path_config_clear(&pcfg);
  return rc;
}
