/* SPDX-License-Identifier: BSD-3-Clause */
/* options.c -- the option manager: the daemon's own option table, the
 * registration of the modules' tables, merging the defaults torrc, the
 * torrc and the command line, assignment and cross-option validation, and
 * --list-options / --dump-config (see options.h).
 *
 * Design:
 *  - Options are declared as typed rows (lib/conf/confdecl.h) in tables
 *    owned by the modules that use them (feature/conflux, ...), plus this
 *    file's table for the daemon-wide ones. A value is parsed once, by
 *    its type, when its line is assigned; modules read typed fields.
 *  - The modules are listed once, in modules[]; there is no cap on the
 *    number of options (what was set explicitly is a per-option byte).
 *  - Defaults are applied by parsing the row's default string with the
 *    same code as a torrc value, so a default can never be invalid
 *    without a unit test noticing.
 *  - Command-line lines are merged into the torrc's lines before anything
 *    is assigned (replace / "+" append / "/" clear, as tor does), then
 *    every line is assigned in order; the first error stops the parse and
 *    names the option and its line.
 *  - Only the tables know option names; the rest of pctor reads options_t
 *    and the modules' structs (options_module()).
 */
#include "app/config/options.h"
#include "app/config/tor_option_names.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "core/or/cpuworker.h"
#include "core/or/dos_options.h"
#include "feature/conflux/conflux_options.h"
#include "feature/dgram/dgram_options.h"
#include "feature/dircache/dirreq_stats.h"
#include "feature/control/control.h" /* ControlPort, MetricsPort */
#include "feature/control/control_auth.h"
#include "feature/control/metrics.h"
#include "feature/dir/dir_authority.h"
#include "feature/dir/path.h"
#include "feature/exit/policy.h"
#include "feature/client/guards.h"
#include "feature/hibernate/hibernate.h"
#include "feature/relay/family_keys.h"
#include "feature/relay/router_keys.h"
#include "feature/ipsec/broker.h"
#include "feature/ipsec/ipsec_options.h"
#include "feature/measureme/measureme_options.h"
#include "feature/relay/routerdesc.h"
#include "lib/conf/confval.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/net/sockstat.h"
#include "lib/sandbox/sandbox.h"
#include "lib/string/relay_names.h"


/* ---- value checks ---- */


char *
options_default_data_directory(int is_root, const char *home)
{
  if (is_root)
    return pc_strdup("/var/lib/pctor");
  if (!home || !*home) {
    struct passwd *pw = getpwuid(getuid());
    home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
  }
  if (!home)
    return NULL;
  return pc_asprintf("%s%s.pctor", home,
                     home[strlen(home) - 1] == '/' ? "" : "/");
}

static int
check_nickname(const char *v, char **err_out)
{
  size_t n = strlen(v);
  if (n < 1 || n > PC_NICKNAME_MAX_LEN) {
    *err_out = pc_asprintf("'%s' is not a valid nickname: it must have "
                           "1 to 19 characters", v);
    return -1;
  }
  if (!pc_nickname_ok(v, n)) {
    *err_out = pc_asprintf("'%s' is not a valid nickname: only ASCII "
                           "letters and digits are allowed", v);
    return -1;
  }
  return 0;
}

/* RelayTCPCongestionControl: a kernel algorithm name (TCP_CA_NAME_MAX is
 * 16 with the NUL). Whether this kernel has it is found out per socket. */
static int
check_tcp_cc(const char *v, char **err_out)
{
  size_t n = strlen(v);
  int ok = n >= 1 && n <= 15;
  for (size_t i = 0; ok && i < n; i++)
    ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') ||
         v[i] == '_' || v[i] == '-';
  if (!ok) {
    *err_out = pc_asprintf("'%s' is not a TCP congestion control name: 1 "
                           "to 15 of a-z, 0-9, '_' and '-' (e.g. cubic, "
                           "bbr)", v);
    return -1;
  }
  return 0;
}

/* An IP literal (bracketed IPv6 too) or a DNS name (RFC 1123 labels). */
static int
check_host(const char *v, pc_addr_t *ip_out, char **err_out)
{
  char *e = NULL;
  pc_addr_t a;
  memset(ip_out, 0, sizeof(*ip_out));
  ip_out->family = AF_UNSPEC;
  if (conf_parse_addrport(v, CONF_PORT_OPTIONAL, &a, &e) == 0) {
    if (a.port != 0) {
      *err_out = pc_asprintf("'%s': give the address without a port", v);
      return -1;
    }
    *ip_out = a;
    return 0;
  }
  free(e);
  size_t n = strlen(v), label = 0;
  int all_numeric = 1;
  if (n == 0 || n > 253)
    goto bad;
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (c == '.') {
      if (label == 0 || v[i - 1] == '-')
        goto bad;
      label = 0;
      continue;
    }
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alpha && !(c >= '0' && c <= '9') && c != '-')
      goto bad;
    if (c == '-' && label == 0)
      goto bad;
    if (alpha || c == '-')
      all_numeric = 0;
    if (++label > 63)
      goto bad;
  }
  if (label == 0 || v[n - 1] == '-' || all_numeric)
    goto bad;
  return 0;
bad:
  *err_out = pc_asprintf("'%s' is neither an IP address nor a host name",
                         v);
  return -1;
}

static int
check_user(const char *v, char **err_out)
{
  if (conf_has_control_chars(v) || !*v) {
    *err_out = pc_asprintf("'%s' is not a user name", v);
    return -1;
  }
  errno = 0;
  struct passwd *pw = getpwnam(v);
  if (!pw) {
    *err_out = pc_asprintf("there is no user named '%s'", v);
    return -1;
  }
  return 0;
}

/* MyFamily: entries separated by commas and/or white space, each
 * normalised; entries already in l are skipped. */
static int
family_assign(void *field, const char *value, void *arg,
              const conf_line_t *line, char **err_out)
{
  options_strlist_t *l = field;
  (void)arg;
  (void)line;
  const char *p = value;
  while (*p) {
    size_t n = strcspn(p, ", \t");
    if (n > 0) {
      char *tok = pc_strndup(p, n);
      char *norm = routerdesc_family_normalize(tok, err_out);
      free(tok);
      if (!norm)
        return -1;
      int dup = 0;
      for (int i = 0; i < l->n; i++)
        if (!strcasecmp(l->v[i], norm))
          dup = 1;
      if (!dup)
        conf_strlist_add(l, norm);
      free(norm);
    }
    p += n;
    p += strspn(p, ", \t");
  }
  return 0;
}

/* ExitPolicy: rules separated by commas, each "accept|reject PATTERN"
 * (spaces around the commas and between the words are tolerated). */
static int
policy_assign(void *field, const char *value, void *arg,
              const conf_line_t *line, char **err_out)
{
  options_strlist_t *l = field;
  (void)arg;
  (void)line;
  const char *p = value;
  int n_added = 0;
  while (*p) {
    p += strspn(p, " \t");
    size_t n = strcspn(p, ",");
    char *rule = pc_strndup(p, n);
    /* Trim, and make "accept   *:80" "accept *:80". */
    size_t len = strlen(rule);
    while (len > 0 && (rule[len - 1] == ' ' || rule[len - 1] == '\t'))
      rule[--len] = '\0';
    char *sp = strpbrk(rule, " \t");
    if (sp) {
      size_t gap = strspn(sp, " \t");
      *sp = ' ';
      memmove(sp + 1, sp + gap, strlen(sp + gap) + 1);
    }
    if (!*rule) {
      free(rule);
      *err_out = pc_strdup("empty exit policy rule");
      return -1;
    }
    const char *one[1] = {rule};
    char *perr = NULL;
    exit_policy_t *check = exit_policy_parse_plain(one, 1, &perr);
    if (!check) {
      free(rule);
      *err_out = perr ? perr : pc_strdup("bad exit policy rule");
      return -1;
    }
    exit_policy_free(check);
    conf_strlist_add(l, rule);
    free(rule);
    n_added++;
    p += n;
    if (*p == ',')
      p++;
  }
  if (!n_added) {
    *err_out = pc_strdup("no exit policy rule");
    return -1;
  }
  return 0;
}

/* ---- the daemon's own option types ---- */

/* Where the lines of ORPort (or DirPort) seen so far were set. */
typedef struct {
  const conf_line_t *listen[2]; /* IPv4, IPv6 */
  const conf_line_t *adv[2];
  const conf_line_t *zero;
} port_lines_t;

/* What assignment needs besides the value: the base of relative paths and
 * where options were set, for messages and the ORPort rules. */
typedef struct {
  conf_assign_ctx_t base;            /* first: lib/conf reads the cwd */
  const conf_line_t **where;         /* per option (global index) */
  port_lines_t orport, dirport;
  const conf_line_t *socks_zero; /* a "SocksPort 0" line */
} parse_ctx_t;


/* ORPort: "[ADDRESS:]PORT [FLAGS]" lines, or "0" alone. Per address
 * family at most one line that listens and one that is advertised (a line
 * without NoListen or NoAdvertise is both), so that the NoListen /
 * NoAdvertise pair of a relay behind port forwarding works as in tor. */
static const struct {
  const char *name;
  unsigned flag;
} orport_flags[] = {
  {"NoListen", OPTIONS_PORT_NO_LISTEN},
  {"NoAdvertise", OPTIONS_PORT_NO_ADVERTISE},
  {"IPv4Only", OPTIONS_PORT_IPV4_ONLY},
  {"IPv6Only", OPTIONS_PORT_IPV6_ONLY},
};

/* The entry of ports (family index fi) that has the role a flag in skip
 * names (OPTIONS_PORT_NO_LISTEN: listening, OPTIONS_PORT_NO_ADVERTISE:
 * advertised), or -1. */
static int
ports_find_role(const options_ports_t *ports, int fi, unsigned skip)
{
  for (int j = 0; j < ports->n; j++)
    if ((ports->addrs[j].family == AF_INET6) == fi &&
        !(ports->flags[j] & skip))
      return j;
  return -1;
}

/* Add a with flags to ports, taking its roles (listening, advertised) per
 * address family; seen says which line holds each role. The [::] half of
 * a bare ORPort (OPTIONS_PORT_IMPLICIT) gives way to a line that names an
 * IPv6 address of its own, before or after it (as tor drops its implicit
 * [::] listener then). Returns 0, or -1 with *err_out set. */
static int
ports_add(options_ports_t *ports, const char *name, port_lines_t *seen,
          const pc_addr_t *a, unsigned flags, const conf_line_t *line,
          char **err_out)
{
  static const unsigned roles[2] = {OPTIONS_PORT_NO_LISTEN,
                                    OPTIONS_PORT_NO_ADVERTISE};
  int fi = a->family == AF_INET6;
  const conf_line_t **held[2] = {&seen->listen[fi], &seen->adv[fi]};
  for (int k = 0; k < 2; k++) {
    if (flags & roles[k])
      continue;
    int j = ports_find_role(ports, fi, roles[k]);
    if (j < 0)
      continue;
    if (flags & OPTIONS_PORT_IMPLICIT) {
      flags |= roles[k]; /* an explicit IPv6 line has the role already */
      continue;
    }
    if (ports->flags[j] & OPTIONS_PORT_IMPLICIT) {
      ports->flags[j] |= roles[k];
      if ((ports->flags[j] & OPTIONS_PORT_NO_LISTEN) &&
          (ports->flags[j] & OPTIONS_PORT_NO_ADVERTISE)) {
        for (int m = j; m + 1 < ports->n; m++) {
          ports->addrs[m] = ports->addrs[m + 1];
          ports->flags[m] = ports->flags[m + 1];
        }
        ports->n--;
      }
      continue;
    }
    char *w = *held[k] ? conf_line_where(*held[k]) : pc_strdup("?");
    *err_out = pc_asprintf("there is already %s %s %s (on %s); at most "
                           "one per address family is allowed",
                           k == 0 ? "a listening" : "an advertised",
                           fi ? "IPv6" : "IPv4", name, w);
    free(w);
    return -1;
  }
  if ((flags & OPTIONS_PORT_NO_LISTEN) && (flags & OPTIONS_PORT_NO_ADVERTISE))
    return 0; /* an implicit [::] half with nothing left to do */
  if (ports->n == 4) { /* two roles per family: cannot happen */
    *err_out = pc_asprintf("too many %s lines", name);
    return -1;
  }
  for (int k = 0; k < 2; k++)
    if (!(flags & roles[k]))
      *held[k] = line;
  ports->addrs[ports->n] = *a;
  ports->flags[ports->n++] = flags;
  return 0;
}

/* One ORPort or DirPort line (name says which) into ports; seen holds
 * the lines of that option so far. PORT may be "auto" (tor's: the kernel
 * picks a free port when the listener opens; OPTIONS_PORT_AUTO, port 0
 * here). A PORT without an address is 0.0.0.0:PORT and, for the ORPort
 * (as tor 0.4.9), also [::]:PORT; IPv4Only/IPv6Only keep one of them. */
static int
ports_assign(options_ports_t *ports, const char *name, port_lines_t *seen,
             const char *value, const conf_line_t *line, char **err_out)
{
  if (!strcmp(value, "0") || seen->zero) {
    if (ports->n > 0 || seen->zero) {
      *err_out = pc_asprintf("'%s 0' (no %s) cannot be combined "
                             "with other %s lines", name, name, name);
      return -1;
    }
    seen->zero = line;
    return 0;
  }
  size_t alen = strcspn(value, " \t");
  char *addr = pc_strndup(value, alen);
  unsigned flags = 0;
  pc_addr_t a;
  int r = 0;
  if (!strcasecmp(addr, "auto")) {
    memset(&a, 0, sizeof(a));
    a.family = AF_UNSPEC;
    flags |= OPTIONS_PORT_AUTO;
  } else if (alen > 5 && !strcasecmp(addr + alen - 5, ":auto")) {
    strcpy(addr + alen - 5, ":1"); /* parse the address with a port */
    char *perr = NULL;
    r = conf_parse_addrport(addr, CONF_ADDR_OPTIONAL, &a, &perr);
    free(perr);
    a.port = 0;
    flags |= OPTIONS_PORT_AUTO;
    if (r < 0 || a.family == AF_UNSPEC) {
      *err_out = pc_asprintf("'%.*s': '%.*s' is not an IP address (write "
                             "ADDRESS:auto or [ADDRESS]:auto)", (int)alen,
                             value, (int)alen - 5, value);
      r = -1;
    }
  } else {
    r = conf_parse_addrport(addr, CONF_ADDR_OPTIONAL, &a, err_out);
  }
  free(addr);
  if (r < 0)
    return -1;
  const char *p = value + alen;
  while (*(p += strspn(p, " \t"))) {
    size_t n = strcspn(p, " \t");
    size_t i;
    for (i = 0; i < sizeof(orport_flags) / sizeof(orport_flags[0]); i++)
      if (strlen(orport_flags[i].name) == n &&
          !strncasecmp(orport_flags[i].name, p, n))
        break;
    if (i == sizeof(orport_flags) / sizeof(orport_flags[0])) {
      *err_out = pc_asprintf("'%.*s' is not a%s %s flag pctor supports "
                             "(NoListen, NoAdvertise, IPv4Only, IPv6Only)",
                             (int)n, p, name[0] == 'O' ? "n" : "", name);
      return -1;
    }
    flags |= orport_flags[i].flag;
    p += n;
  }
  if ((flags & OPTIONS_PORT_NO_LISTEN) && (flags & OPTIONS_PORT_NO_ADVERTISE)) {
    *err_out = pc_strdup("NoListen and NoAdvertise together leave nothing "
                         "to do");
    return -1;
  }
  if ((flags & OPTIONS_PORT_AUTO) && (flags & OPTIONS_PORT_NO_LISTEN)) {
    *err_out = pc_asprintf("'%s auto' with NoListen: a port that is not "
                           "bound cannot be picked; give a port number",
                           name);
    return -1;
  }
  if ((flags & OPTIONS_PORT_IPV4_ONLY) && (flags & OPTIONS_PORT_IPV6_ONLY)) {
    *err_out = pc_strdup("IPv4Only and IPv6Only cannot both be given");
    return -1;
  }
  int both = 0;
  if (a.family == AF_UNSPEC) { /* PORT alone */
    uint16_t port = a.port;
    flags |= OPTIONS_PORT_BARE;
    both = !(flags & (OPTIONS_PORT_IPV4_ONLY | OPTIONS_PORT_IPV6_ONLY)) &&
           name[0] == 'O'; /* tor's DirPort stays on IPv4 */
    pc_addr_parse_ip(&a, (flags & OPTIONS_PORT_IPV6_ONLY) ? "::" : "0.0.0.0",
                     port);
  }
  if ((a.family == AF_INET && (flags & OPTIONS_PORT_IPV6_ONLY)) ||
      (a.family == AF_INET6 && (flags & OPTIONS_PORT_IPV4_ONLY))) {
    *err_out = pc_strdup("the address is of the other family than the "
                         "flag asks for");
    return -1;
  }
  if (ports_add(ports, name, seen, &a, flags, line, err_out) < 0)
    return -1;
  if (both) {
    pc_addr_t a6;
    pc_addr_parse_ip(&a6, "::", a.port);
    return ports_add(ports, name, seen, &a6, flags | OPTIONS_PORT_IMPLICIT,
                     line, err_out);
  }
  return 0;
}

static int
orport_assign(void *field, const char *value, void *arg,
              const conf_line_t *line, char **err_out)
{
  parse_ctx_t *ctx = arg;
  if (!line || !ctx) { /* the default, "0" */
    memset(field, 0, sizeof(options_ports_t));
    return 0;
  }
  return ports_assign(field, "ORPort", &ctx->orport, value, line, err_out);
}

static int
dirport_assign(void *field, const char *value, void *arg,
               const conf_line_t *line, char **err_out)
{
  parse_ctx_t *ctx = arg;
  if (!line || !ctx) { /* the default, "0" */
    memset(field, 0, sizeof(options_ports_t));
    return 0;
  }
  return ports_assign(field, "DirPort", &ctx->dirport, value, line,
                      err_out);
}

static void
orport_format(const void *field, conf_strlist_t *out)
{
  const options_ports_t *ports = field;
  char buf[PC_ADDR_STR_LEN + 64];
  for (int i = 0; i < ports->n; i++) {
    unsigned f = ports->flags[i];
    if (f & OPTIONS_PORT_IMPLICIT) /* shown by its IPv4 half */
      continue;
    if (f & OPTIONS_PORT_BARE) {
      if (f & OPTIONS_PORT_AUTO)
        snprintf(buf, sizeof(buf), "auto");
      else
        snprintf(buf, sizeof(buf), "%u", (unsigned)ports->addrs[i].port);
    } else {
      pc_addr_fmt(&ports->addrs[i], buf, PC_ADDR_STR_LEN, 1);
      char *colon = strrchr(buf, ':');
      if ((f & OPTIONS_PORT_AUTO) && colon)
        snprintf(colon + 1, sizeof(buf) - (size_t)(colon + 1 - buf), "auto");
    }
    for (size_t k = 0; k < sizeof(orport_flags) / sizeof(orport_flags[0]);
         k++)
      if (f & orport_flags[k].flag) {
        size_t n = strlen(buf);
        snprintf(buf + n, sizeof(buf) - n, " %s", orport_flags[k].name);
      }
    conf_strlist_add(out, buf);
  }
}

uint16_t
options_dirport_advertised(const options_ports_t *p)
{
  for (int i = 0; i < p->n; i++)
    if (p->addrs[i].family == AF_INET &&
        !(p->flags[i] & OPTIONS_PORT_NO_ADVERTISE))
      return p->addrs[i].port;
  return 0;
}

int
options_orports_advertised(const options_ports_t *p, pc_addr_t out[4])
{
  int n = 0;
  for (int i = 0; i < p->n; i++)
    if (!(p->flags[i] & OPTIONS_PORT_NO_ADVERTISE))
      out[n++] = p->addrs[i];
  return n;
}

/* SocksPort: "0" (off), or lines of [ADDRESS:]PORT|auto [FLAGS]
 * (feature/client/client_port.c reads them). */
static int
socks_assign(void *field, const char *value, void *arg,
             const conf_line_t *line, char **err_out)
{
  client_ports_t *ports = field;
  parse_ctx_t *ctx = arg;
  if (!line || !ctx) { /* the default, "0" */
    memset(ports, 0, sizeof(*ports));
    return 0;
  }
  client_port_t p;
  int r = client_port_parse(value, &p, err_out);
  if (r < 0)
    return -1;
  if ((r == 1 && ports->n > 0) || ctx->socks_zero) {
    *err_out = pc_strdup("'SocksPort 0' (no SocksPort) cannot be combined "
                         "with other SocksPort lines");
    return -1;
  }
  if (r == 1) {
    ctx->socks_zero = line;
    return 0;
  }
  if (ports->n >= CLIENT_MAX_SOCKS_PORTS) {
    *err_out = pc_asprintf("at most %d SocksPort lines are supported",
                           CLIENT_MAX_SOCKS_PORTS);
    return -1;
  }
  ports->port[ports->n++] = p;
  return 0;
}

static void
socks_format(const void *field, conf_strlist_t *out)
{
  const client_ports_t *ports = field;
  char buf[1024];
  if (ports->n == 0)
    conf_strlist_add(out, "0");
  for (int i = 0; i < ports->n; i++) {
    client_port_format(&ports->port[i], buf, sizeof(buf));
    conf_strlist_add(out, buf);
  }
}

static int
dirauth_check(const char *value, char **err_out)
{
  dir_authority_t da;
  return dir_authority_parse(&da, value, err_out);
}

/* FamilyId: a family ID as tor --keygen-family prints it, or "*". */
static int
family_id_check(const char *value, char **err_out)
{
  if (family_id_is_valid(value))
    return 0;
  *err_out = pc_asprintf("'%s' is not a family ID (43 base64 characters, "
                         "as --keygen-family prints it) or *", value);
  return -1;
}

/* Address: an IPv4 or IPv6 literal (brackets allowed) or a host name, one
 * line per family as tor 0.4.5+; how many lines and of which family is
 * validate()'s rule. */
static int
host_check(const char *value, char **err_out)
{
  pc_addr_t ip;
  return check_host(value, &ip, err_out);
}

/* OutboundBindAddress*: an IPv4 or IPv6 address without a port ("[::1]"
 * too, as tor). */
static int
parse_outbound(const char *value, pc_addr_t *out)
{
  return pc_addr_parse_ip_bracketed(out, value, 0);
}

static int
outbound_check(const char *value, char **err_out)
{
  pc_addr_t a;
  if (parse_outbound(value, &a) < 0) {
    *err_out = pc_asprintf("'%s' is not an IPv4 or IPv6 address (an "
                           "outbound bind address has no port and no "
                           "host name)", value);
    return -1;
  }
  return 0;
}

const char *
options_cache_directory(const options_t *o)
{
  return o->cache_directory ? o->cache_directory : o->data_directory;
}

char *
options_family_key_directory(const options_t *o)
{
  if (o->family_key_directory)
    return pc_strdup(o->family_key_directory);
  if (o->key_directory)
    return pc_strdup(o->key_directory);
  return pc_asprintf("%s/keys", o->data_directory ? o->data_directory : ".");
}

int
options_key_directory_group_readable(const options_t *o)
{
  if (o->key_directory_group_readable >= 0)
    return o->key_directory_group_readable;
  if (o->key_directory && o->data_directory &&
      !strcmp(o->key_directory, o->data_directory))
    return o->data_directory_group_readable;
  return 0;
}

int
options_cache_directory_group_readable(const options_t *o)
{
  if (o->cache_directory_group_readable >= 0)
    return o->cache_directory_group_readable;
  if (!o->cache_directory || !o->data_directory ||
      !strcmp(o->cache_directory, o->data_directory))
    return o->data_directory_group_readable;
  return 0;
}

int
options_outbound_addr(const options_t *o, int kind, int i, pc_addr_t *out)
{
  if (kind < 0 || kind >= 3 || i < 0 || i >= o->outbound_bind[kind].n)
    return -1;
  return parse_outbound(o->outbound_bind[kind].v[i], out);
}

/* EntryNodes and the like: a relay list that routerset_parse() takes. */
static int
routerset_check(const char *value, char **err_out)
{
  routerset_t *rs = NULL;
  char *perr = NULL;
  int r = routerset_parse(&rs, value, &perr);
  if (r < 0)
    *err_out = perr ? perr : pc_strdup("bad relay list");
  routerset_free(rs);
  return r < 0 ? -1 : 0;
}

/* Schedulers: names from KIST, KISTLite and Vanilla, in order; which one
 * is used is decided in validate() (KIST needs the kernel's help). */
static int
schedulers_check(const char *value, char **err_out)
{
  char *copy = pc_strdup(value);
  int n = 0, bad = 0;
  for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t;
       t = strtok_r(NULL, ", \t", &save), n++)
    if (strcasecmp(t, "KIST") && strcasecmp(t, "KISTLite") &&
        strcasecmp(t, "Vanilla"))
      bad = 1;
  free(copy);
  if (bad || !n) {
    *err_out = pc_strdup("must list KIST and/or KISTLite");
    return -1;
  }
  return 0;
}

/* ControlPort / ControlSocket / MetricsPort / MetricsPortPolicy /
 * HashedControlPassword / __OwningControllerProcess: checked by
 * feature/control's own parsers when read. */
static int
control_port_check(const char *value, char **err_out)
{
  control_listen_t cl;
  return control_parse_listen(value, 0, &cl, err_out);
}

static int
control_socket_check(const char *value, char **err_out)
{
  control_listen_t cl;
  return control_parse_listen(value, 1, &cl, err_out);
}

static int
metrics_port_check(const char *value, char **err_out)
{
  control_listen_t cl;
  return metrics_parse_port(value, &cl, err_out);
}

static int
hashed_password_check(const char *value, char **err_out)
{
  if (control_auth_hash_is_valid(value))
    return 0;
  *err_out = pc_strdup("must be a hash from 'tor --hash-password' (16: and "
                       "58 hex digits)");
  return -1;
}

static int
pid_check(const char *value, char **err_out)
{
  char *end = NULL;
  long pid = strtol(value, &end, 10);
  if (pid > 0 && !*end)
    return 0;
  *err_out = pc_strdup("must be a process ID");
  return -1;
}

/* clang-format off */
static const conf_custom_t control_port_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, control_port_check};
static const conf_custom_t control_socket_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, control_socket_check};
static const conf_custom_t metrics_port_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, metrics_port_check};
static const conf_custom_t metrics_policy_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, metrics_policy_check};
static const conf_custom_t hashed_password_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, hashed_password_check};
static const conf_custom_t pid_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, pid_check};
static const conf_custom_t tcp_cc_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, check_tcp_cc};
static const conf_custom_t nickname_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, check_nickname};
static const conf_custom_t host_type = {
  CONF_STORE_STRLIST, 0, 1, NULL, NULL, host_check};
static const conf_custom_t user_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, check_user};
static const conf_custom_t orport_type = {
  CONF_STORE_BLOB, sizeof(options_ports_t), 1, orport_assign, orport_format,
  NULL};
static const conf_custom_t dirport_type = {
  CONF_STORE_BLOB, sizeof(options_ports_t), 1, dirport_assign, orport_format,
  NULL};
static const conf_custom_t socks_type = {
  CONF_STORE_BLOB, sizeof(client_ports_t), 1, socks_assign, socks_format,
  NULL};
static const conf_custom_t log_type = {
  CONF_STORE_STRLIST, 0, 1, NULL, NULL, log_check_destination};
static const conf_custom_t dirauth_type = {
  CONF_STORE_STRLIST, 0, 1, NULL, NULL, dirauth_check};
static const conf_custom_t outbound_type = {
  CONF_STORE_STRLIST, 0, 1, NULL, NULL, outbound_check};
static const conf_custom_t family_type = {
  CONF_STORE_STRLIST, 0, 1, family_assign, NULL, NULL};
static const conf_custom_t family_id_type = {
  CONF_STORE_STRLIST, 0, 1, NULL, NULL, family_id_check};
static const conf_custom_t policy_type = {
  CONF_STORE_STRLIST, 0, 1, policy_assign, NULL, NULL};
static const conf_custom_t routerset_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, routerset_check};
static const conf_custom_t schedulers_type = {
  CONF_STORE_STRING, 0, 0, NULL, NULL, schedulers_check};

static const conf_enum_t publish_values[] = {
  {"0", 0}, {"1", 1}, {"v3", 1}, {NULL, 0},
};

static const conf_enum_t safe_logging_values[] = {
  {"0", 0}, {"1", 1}, {"relay", 2}, {NULL, 0},
};

/* clang-format on */

#define BW_SYNTAX "N bytes|KBytes|MBytes|GBytes|KBits|MBits|GBits"
#define OFF(field) offsetof(options_t, field)

/* clang-format off */
static const conf_var_t app_vars[] = {
  {"DataDirectory", CONF_TYPE_PATH, "PATH", NULL,
   "/var/lib/pctor when started as root, otherwise ~/.pctor",
   0, 0, 0, OFF(data_directory),
   "The directory where pctor keeps its state: its keys (in the keys "
   "subdirectory) and the files fingerprint and fingerprint-ed25519. "
   "pctor creates it (mode 0700) if it does not exist. With User, the "
   "directory and the files in it that pctor owns are handed to that "
   "user before pctor switches to it. A relative path or one starting "
   "with ~/ is made absolute when pctor starts.", NULL},
  {"ORPort", CONF_TYPE_CUSTOM, "[ADDRESS:]PORT|auto [FLAGS] | 0", "0",
   "0 (no ORPort)",
   0, 0, 0, OFF(or_ports),
   "Accept connections from Tor clients and relays on PORT. A port "
   "alone listens on every IPv4 and IPv6 address (0.0.0.0:PORT and "
   "[::]:PORT, as tor 0.4.9; IPv4 only on a host without IPv6); the "
   "IPv6 one is advertised when an interface has a public IPv6 address. "
   "ADDRESS is an IPv4 address (192.0.2.1:9001) or an IPv6 address in "
   "brackets ([2001:db8::1]:9001), which replaces the [::] half. auto "
   "lets the kernel pick the port; the bound one is advertised (GETINFO "
   "net/listeners/or). FLAGS are tor's NoListen (advertise, do not "
   "bind), NoAdvertise (bind, do not advertise), IPv6Only (a port alone "
   "is [::]:PORT only) and IPv4Only. Per address family at most one line "
   "listens and one is advertised; 0 (no ORPort) cannot be combined with "
   "another line. Ports are bound while pctor still runs as root, so "
   "ports below 1024 work with User.", &orport_type},
  {"DirPort", CONF_TYPE_CUSTOM, "[ADDRESS:]PORT|auto [FLAGS] | 0", "0",
   "0 (no DirPort)",
   0, 0, 0, OFF(dir_ports),
   "Answer HTTP/1.0 GET requests for directory documents on PORT, as "
   "tor's DirPort: the same documents, encodings and limits as "
   "directory requests over the ORPort (BEGIN_DIR): the consensus "
   "flavours, key certificates, microdescriptors and server "
   "descriptors this relay caches, and its own descriptor "
   "(/tor/server/authority). ADDRESS, auto and FLAGS (NoListen, "
   "NoAdvertise, IPv4Only, IPv6Only) are as for ORPort, but a port alone "
   "is IPv4 only (as tor); the first advertised IPv4 "
   "port (as bound, for auto) is published in the descriptor's router "
   "line. At most 256 "
   "connections at once and 16 from one address; a request must arrive "
   "whole within 10 seconds (else 408) and be at most 8192 bytes (else "
   "400); a client that reads nothing for 60 seconds is disconnected. "
   "Needs an ORPort and DirCache 1.", &dirport_type},
  {"DirPortFrontPage", CONF_TYPE_PATH, "FILE", NULL, "unset",
   0, 0, 0, OFF(dir_port_front_page),
   "Serve FILE (HTML, at most 1 MiB, read at start-up) at \"/\" on the "
   "DirPort, as tor does, so that people who wonder what this address "
   "is can read about it (tor's contrib/operator-tools/"
   "tor-exit-notice.html is an example). Without a DirPort it has no "
   "effect (a warning says so); a file that cannot be read is a warning "
   "too, and the DirPort then serves no front page.", NULL},
  {"Address", CONF_TYPE_CUSTOM, "ADDRESS | HOSTNAME", NULL,
   "unset (pctor guesses its address)",
   1, 0, 0, OFF(address),
   "The relay's public address, published in its descriptor (it does not "
   "change what the ORPort binds). As tor 0.4.5 and later, give it up to "
   "twice: an IPv4 address, an IPv6 address (2001:db8::1 or "
   "[2001:db8::1]), or a host name, which is resolved for each family "
   "(A for IPv4, AAAA for IPv6) when the descriptor is made. Two IPv4 or "
   "two IPv6 addresses are refused. The IPv4 address goes on the router "
   "line; if no Address gives one, pctor uses the ORPort's IPv4 address "
   "when it has one and otherwise guesses it from the local interfaces "
   "(a host name that has no IPv4 address is an error: the descriptor "
   "needs one). The IPv6 address, as in tor, takes precedence over the "
   "IPv6 ORPort's own address and is published as or-address with the "
   "port of the first advertised IPv6 ORPort (a bare ORPort's [::] half "
   "counts); without an IPv6 ORPort it is not published. If no Address "
   "gives an IPv6 address, the IPv6 ORPort's address is published, or "
   "for [::] a public IPv6 address of the local interfaces.",
   &host_type},
  {"AddressDisableIPv6", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(address_disable_ipv6),
   "If 1, as tor: publish no IPv6 ORPort in the descriptor (no or-address "
   "line, so no IPv6 reachability test) and do not look for an IPv6 "
   "address; an IPv6 Address and an IPv6 ORPort's own address are not "
   "published either. The IPv6 ORPort still listens.", NULL},
  {"Nickname", CONF_TYPE_CUSTOM, "NAME", "Unnamed", "Unnamed",
   1, 0, 0, OFF(nickname),
   "The relay's nickname, published in its descriptor: 1 to 19 ASCII "
   "letters and digits.", &nickname_type},
  {"ContactInfo", CONF_TYPE_STRING, "TEXT", NULL, "unset",
   1, 0, 0, OFF(contact_info),
   "How to reach the relay's operator, published in its descriptor "
   "(for example an e-mail address written so that harvesters do not "
   "recognise it). Printable text without control characters.", NULL},
  {"Log", CONF_TYPE_CUSTOM,
   "[DOMAIN,...]SEVERITY[-SEVERITY] ... stderr|stdout|syslog|file PATH",
   NULL, "notice stderr",
   1, 0, 0, OFF(logs),
   "Send messages with a severity from the first SEVERITY up to the "
   "second (err if omitted; severities are debug, info, notice, warn "
   "and err) to standard error, standard output, syslog (facility "
   "daemon) or the file PATH (appended to, created with mode 0640). "
   "Several ranges may be given, each limited to a set of tor's logging "
   "domains in brackets, as in tor: \"Log [handshake]debug [~net,~mm]info "
   "notice stderr\" sends debug messages of the handshake domain, info "
   "messages of all domains but net and mm, and notice and above of "
   "all. Domains are general, crypto, net, config, fs, protocol, mm, "
   "http, app, control, circ, rend, bug, dir, dirserv, or, edge, acct, "
   "hist, handshake, heartbeat, channel, sched, guard, consdiff, dos, "
   "process, pt, btrack and mesg (case-insensitive; * is all, ~ "
   "excludes, and a list of exclusions only means all but those). pctor "
   "puts a message in a domain by the module that logs it: crypto (lib/"
   "crypt, core/crypto), net (TLS, sockets, the event loop, IPsec, "
   "datagram links, BackTap), fs, config, mm (memory), handshake (link "
   "handshakes), channel (channels, PerCircuitTCP), sched (cell queues "
   "and the scheduler), circ (circuits, congestion control, conflux, "
   "circuit building), edge (streams, SENDMEs, exits), dos, or (other "
   "relay code), protocol (cell and document codecs), dir (directory "
   "client and descriptor publishing), http, dirserv (the directory "
   "cache), app (the SOCKS client), guard, control, hist (MeasureMe), "
   "heartbeat (the heartbeat lines) and general (the rest); pctor has no "
   "rend, bug, acct, consdiff, process, pt, btrack or mesg messages. "
   "Repeat the option for several destinations. Without any Log line, "
   "notice and above go to standard error, which RunAsDaemon sends to "
   "/dev/null. SIGHUP applies changed Log lines and reopens log files; "
   "with User, log files must be writable by that user to be reopened.", &log_type},
  {"LogMessageDomains", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(log_message_domains),
   "If 1, every log message carries its logging domain in braces after "
   "the severity (\"[notice] {DIR} ...\"), as in tor; see Log for the "
   "domains.", NULL},
  {"RunAsDaemon", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(run_as_daemon),
   "If 1, run in the background: pctor forks, starts a new session, "
   "changes its working directory to / and, once it has started, "
   "connects its standard input, output and error to /dev/null. The "
   "command that started pctor waits until then and exits with status "
   "0, or with status 1 if start-up failed.", NULL},
  {"PidFile", CONF_TYPE_PATH, "PATH", NULL, "unset",
   0, 0, 0, OFF(pid_file),
   "Write pctor's process ID to PATH once it has started (after going "
   "to the background with RunAsDaemon), and remove the file on a clean "
   "exit. The file is written before pctor switches to User; if that "
   "user may not remove it at exit, pctor empties it instead.", NULL},
  {"User", CONF_TYPE_CUSTOM, "NAME", NULL, "unset (keep the starting user)",
   0, 0, 0, OFF(user),
   "After binding its ports and reading its keys, switch to the user "
   "NAME, its primary group and its supplementary groups, and give up "
   "every capability. DataDirectory is handed to NAME first. Switching "
   "to another user requires starting pctor as root; naming the user "
   "pctor already runs as is allowed and changes nothing.", &user_type},
  {"TestingTorNetwork", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(testing_tor_network),
   "For private test networks only, with tor's meaning. If 1, "
   "DirAuthority lines are required (the public authorities are never "
   "used), the default of ExtendAllowPrivateAddresses becomes 1, a "
   "private address may be published in the descriptor, the descriptor "
   "is republished every 5 minutes instead of every 18 hours and failed "
   "uploads are retried after 1 second (doubling up to 30 seconds) "
   "instead of after 1 minute (up to an hour). Key lifetimes stay as on "
   "the public network.", NULL},
  {"TestingEnableConnBwEvent", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(testing_enable_conn_bw_event),
   "If 1, controllers may subscribe to CONN_BW events: every second, the "
   "bytes each OR connection read and wrote (TYPE=OR; pctor has no "
   "separate directory or exit connections to report). As in tor, only "
   "with TestingTorNetwork 1.", NULL},
  {"TestingEnableCellStatsEvent", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(testing_enable_cell_stats_event),
   "If 1, controllers may subscribe to CELL_STATS events: every second, "
   "for each circuit whose queues saw cells, the cells added to and "
   "removed from its queue towards each hop per cell command and the "
   "milliseconds they waited. As in tor, only with TestingTorNetwork 1.",
   NULL},
  {"__StateSaveInterval", CONF_TYPE_INTERVAL, "INTERVAL", "10 minutes",
   "10 minutes", 1, 1, 86400, OFF(state_save_interval),
   "For tests: how long after a change the state file is written while "
   "running (checked every minute, or this often if shorter).", NULL},
  {"ExtendAllowPrivateAddresses", CONF_TYPE_BOOL, "0|1", NULL,
   "0 (1 with TestingTorNetwork 1)",
   1, 0, 0, OFF(extend_allow_private_addresses),
   "If 1, extend circuits to relays at private addresses (RFC 1918 "
   "and other private IPv4 ranges, loopback, link-local, unique local "
   "IPv6). If 0, such extend requests are refused.", NULL},
  {"OnionKeyRotationDays", CONF_TYPE_INT, "N", "28", "28",
   1, 1, 90, OFF(onion_key_rotation_days),
   "Rotate the relay's onion (ntor) key every N days, 1 to 90.", NULL},
  {"OnionKeyGracePeriodDays", CONF_TYPE_INT, "N", "7", "7",
   1, 1, 90, OFF(onion_key_grace_period_days),
   "After a rotation, keep accepting the previous onion key for N "
   "days, 1 to OnionKeyRotationDays.", NULL},
  {"GeoIPFile", CONF_TYPE_PATH, "PATH", NULL, "unset",
   1, 0, 0, OFF(geoip_file),
   "A file of IPv4 address ranges and their countries in tor's format "
   "(Debian's tor-geoipdb package installs /usr/share/tor/geoip). pctor "
   "uses it to answer the controller's GETINFO ip-to-country/ (nyx shows "
   "relays' countries with it). Unlike tor, pctor loads no file unless "
   "told to (the two files cost about 13 MB of memory). A file that "
   "cannot be read or parsed is refused at start-up, and on SIGHUP the "
   "previous data is kept, with the reason and the line.", NULL},
  {"GeoIPv6File", CONF_TYPE_PATH, "PATH", NULL, "unset",
   1, 0, 0, OFF(geoip_v6_file),
   "As GeoIPFile, for IPv6 ranges (/usr/share/tor/geoip6).", NULL},
  {"DataDirectoryGroupReadable", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(data_directory_group_readable),
   "If 1, DataDirectory gets mode 0750 instead of 0700, so that members "
   "of its group can read it (as tor). The keys directory stays private "
   "unless it is DataDirectory itself.", NULL},
  {"CacheDirectory", CONF_TYPE_PATH, "PATH", NULL, "DataDirectory",
   0, 0, 0, OFF(cache_directory),
   "Where the cached directory documents go (cached-consensus, "
   "cached-microdesc-consensus, cached-microdescs, cached-descriptors, "
   "cached-certs), as tor's CacheDirectory. Created (mode 0700, or 0750 "
   "with CacheDirectoryGroupReadable) if missing, and handed to User "
   "like DataDirectory.", NULL},
  {"CacheDirectoryGroupReadable", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto",
   "auto", 0, 0, 0, OFF(cache_directory_group_readable),
   "If 1, CacheDirectory gets mode 0750 (group readable). auto (as tor): "
   "DataDirectoryGroupReadable's value when CacheDirectory is "
   "DataDirectory, else 0.", NULL},
  {"KeyDirectory", CONF_TYPE_PATH, "PATH", NULL, "DataDirectory/keys",
   0, 0, 0, OFF(key_directory),
   "Where the relay's keys are, in tor's files and formats (as tor's "
   "KeyDirectory): a tor relay's keys directory can be used as it is, and "
   "tor can use one pctor wrote. Created (mode 0700) if missing.", NULL},
  {"KeyDirectoryGroupReadable", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto",
   "auto", 0, 0, 0, OFF(key_directory_group_readable),
   "If 1, the key directory gets mode 0750 (its group may read the "
   "keys) instead of 0700. auto (as tor): DataDirectoryGroupReadable's "
   "value when KeyDirectory is DataDirectory itself, else 0.", NULL},
  {"OfflineMasterKey", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(offline_master_key),
   "If 1, as tor: never create or use the master identity secret key; run "
   "on the signing key and certificate in the key directory (made "
   "elsewhere with pctor --keygen or tor --keygen and copied here), and "
   "refuse to start when they are missing or expired. Without this "
   "option pctor also runs that way when the key directory holds the "
   "master public key but not its secret key.", NULL},
  {"SigningKeyLifetime", CONF_TYPE_INTERVAL, "N days|weeks|months",
   "30 days", "30 days", 0, 86400, 3650LL * 86400, OFF(signing_key_lifetime),
   "How long a new Ed25519 signing key certificate is valid (tor's "
   "SigningKeyLifetime), for the ones pctor makes itself and for "
   "--keygen.", NULL},
  {"DirAuthority", CONF_TYPE_CUSTOM,
   "[NICKNAME] [FLAGS] ADDRESS:DIRPORT FINGERPRINT", NULL,
   "unset (the public Tor network's authorities)",
   1, 0, 0, OFF(dir_authorities),
   "A directory authority to publish the relay's descriptor to, in "
   "tor's syntax: FLAGS are orport=PORT, v3ident=HEX, no-v2, "
   "ipv6=[ADDRESS]:PORT, bridge and weight=N; FINGERPRINT is the "
   "authority's RSA identity (40 hex digits, spaces allowed). Repeat the "
   "option for each authority. Without any DirAuthority line pctor uses "
   "the public Tor network's authorities; with TestingTorNetwork 1 at "
   "least one line is required.", &dirauth_type},
  {"MyFamily", CONF_TYPE_CUSTOM, "RELAY[,RELAY...]", NULL, "unset",
   1, 0, 0, OFF(my_family),
   "Other relays run by the same operator, published in the family line "
   "of the descriptor so that clients never use two of them in one "
   "circuit. A RELAY is $ and its 40-digit RSA fingerprint (a ~NICKNAME "
   "after it is accepted and dropped) or a nickname; list them separated "
   "by commas or spaces, on one line or several. Each of those relays "
   "should list this one too.", &family_type},
  {"FamilyId", CONF_TYPE_CUSTOM, "ID|*", NULL, "unset",
   1, 0, 0, OFF(family_ids),
   "Make this relay a member of the family whose key has this ID (tor "
   "0.4.9's family keys): the key, a file whose name ends in "
   ".secret_family_key, must be in FamilyKeyDirectory, and the relay "
   "then publishes a family-cert for it in its descriptor. ID is what "
   "pctor --keygen-family (or tor's) printed; * takes every such file in "
   "the directory. Repeat the option for several families. A FamilyId "
   "whose key is missing stops start-up; on SIGHUP the keys are read "
   "again (a failure keeps the previous ones). Until clients use family "
   "keys, also list the family with MyFamily.", &family_id_type},
  {"FamilyKeyDirectory", CONF_TYPE_PATH, "PATH", NULL, "KeyDirectory",
   1, 0, 0, OFF(family_key_directory),
   "Where FamilyId looks for *.secret_family_key files (as tor).", NULL},
  {"PublishServerDescriptor", CONF_TYPE_ENUM, "0|1|v3", "1", "1",
   1, 0, 0, OFF(publish_server_descriptor),
   "If 1 (or v3, tor's name for the same), upload the relay's server "
   "descriptor to the directory authorities after start-up, whenever it "
   "changes, and every 18 hours, so that clients can find the relay. If "
   "0, never upload it. tor's bridge value is refused (pctor cannot run "
   "as a bridge).", publish_values},
  {"DirCache", CONF_TYPE_BOOL, "0|1", "1", "1", 0, 0, 0, OFF(dir_cache),
   "If 1 (as tor), a relay caches the directory (both consensus flavors "
   "and the descriptors) and serves it to clients over BEGIN_DIR, and "
   "says so in its descriptor (tunnelled-dir-server). If 0, it fetches "
   "only what it needs itself and serves nothing.", NULL},
  {"MaxAdvertisedBandwidth", CONF_TYPE_BANDWIDTH, BW_SYNTAX, "1 GByte",
   "1 GByte", 1, 0, INT32_MAX, OFF(max_advertised_bandwidth),
   "The most bandwidth the descriptor advertises, as tor: the "
   "descriptor's average bandwidth is the smallest of BandwidthRate, "
   "RelayBandwidthRate (when set) and MaxAdvertisedBandwidth; its burst "
   "the smaller of BandwidthBurst and RelayBandwidthBurst (when set).",
   NULL},
  {"AssumeReachable", CONF_TYPE_BOOL, "0|1", NULL,
   "0 (1 with TestingTorNetwork 1)",
   1, 0, 0, OFF(assume_reachable),
   "If 0, as in tor, a relay first tests that its advertised IPv4 "
   "ORPort is reachable from outside -- a circuit through a relay of "
   "the consensus back to itself at that address and port -- and "
   "uploads its descriptor only once that worked (\"Self-testing "
   "indicates your ORPort ... is reachable from the outside. "
   "Excellent.\"); attempts are made every minute (5 seconds with "
   "TestingTorNetwork) and a warning is logged after 20 minutes "
   "(30 seconds with TestingTorNetwork) without success, and as often "
   "again while it lasts. If 1, the descriptor is uploaded at once. "
   "Unlike tor 0.4.4 and later, TestingTorNetwork 1 makes 1 the "
   "default, so private test networks publish at once; set "
   "AssumeReachable 0 explicitly to test there. An advertised IPv6 "
   "ORPort is tested the same way (see AssumeReachableIPv6); the "
   "DirPort is not (tor 0.4.9 does not test a DirPort either).",
   NULL},
  {"AssumeReachableIPv6", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(assume_reachable_ipv6),
   "As tor: if 1, the advertised IPv6 ORPort is not tested and the "
   "descriptor is uploaded once the IPv4 ORPort is found reachable. If 0 "
   "or auto (which follows AssumeReachable), a relay that tests its IPv4 "
   "ORPort also tests its IPv6 ORPort -- a circuit back to itself at that "
   "IPv6 address and port whose last extension comes from a relay of the "
   "consensus with an IPv6 ORPort and the Relay=3 protocol -- and "
   "uploads only when both were reached, unless the consensus parameter "
   "assume-reachable-ipv6 (or assume-reachable) is 1. AssumeReachable 1 "
   "(also the default with TestingTorNetwork 1) with AssumeReachableIPv6 "
   "0 is refused, as in tor.", NULL},
  {"IPv6Exit", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(ipv6_exit),
   "As tor: if 1, an exit also connects to IPv6 destinations: names are "
   "resolved to IPv6 (AAAA) as well as IPv4 addresses, the address a "
   "stream gets follows the client's BEGIN flags (IPv6 acceptable, IPv6 "
   "preferred, IPv4 not acceptable) and the exit policy, and the "
   "descriptor carries the \"ipv6-policy\" summary of the IPv6 rules. "
   "If 0 (the default), the exit policy starts with \"reject *6:*\", "
   "names resolve to IPv4 only, and a BEGIN that does not accept IPv4 is "
   "refused (END reason EXITPOLICY). As in tor, IPv6Exit 1 with ExitRelay "
   "auto makes the relay an exit.", NULL},
  {"ExitRelay", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(exit_relay),
   "auto (tor's default) is 1 when there is an ExitPolicy line and 0 "
   "otherwise, with a notice. If 1, the relay is an exit: it opens TCP connections to the "
   "destinations clients ask for (RELAY_BEGIN), resolves names for them "
   "(RELAY_RESOLVE) through the resolver in ServerDNSResolvConfFile, and "
   "publishes its exit policy. If 0, every stream request is refused and "
   "the published policy is \"reject *:*\". As in tor, streams are "
   "refused on a client's first hop (a previous hop that did not "
   "authenticate as a relay, or CREATE_FAST); see also "
   "RefuseUnknownExits.", NULL},
  {"RefuseUnknownExits", CONF_TYPE_AUTOBOOL, "0|1|auto", "auto", "auto",
   1, 0, 0, OFF(refuse_unknown_exits),
   "Exit: with 1, once the relay has a consensus, streams (RELAY_BEGIN) "
   "are refused with END reason MISC on circuits whose previous hop is a "
   "relay the consensus does not list (by identity), as tor does. auto "
   "(as tor) follows the consensus parameter refuseunknownexits, which "
   "defaults to 1. 0 never refuses for this reason. Without a consensus "
   "nothing is refused for this reason.", NULL},
  {"ExitPolicy", CONF_TYPE_CUSTOM, "accept|reject ADDRESS:PORTS[,...]",
   NULL, "unset (tor's default exit policy when ExitRelay is 1)",
   1, 0, 0, OFF(exit_policy),
   "Exit policy rules in tor's syntax, in order, the first match "
   "deciding: accept, reject, accept6 or reject6, then *, *4, *6, "
   "private, or an address with an optional /BITS or /MASK, a colon and "
   "*, a port or a range PORT-PORT. Several rules go on one line "
   "separated by commas, or on several lines. With ExitRelay 1, tor's "
   "default exit policy (rejecting ports 25, 119, 135-139, 445, 563, "
   "1214, 4661-4666, 6346-6429, 6699 and 6881-6999, accepting the rest) "
   "follows the configured rules; end them with \"reject *:*\" to avoid "
   "that. Only used with ExitRelay 1.", &policy_type},
  {"ReducedExitPolicy", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(reduced_exit_policy),
   "If 1, tor's reduced exit policy follows the configured ExitPolicy "
   "rules instead of the default one: it accepts only the ports tor "
   "0.4.9 lists for it (20-23, 43, 53, 79-81, 88, 110, 143, 194, 220, "
   "389, 443, 464, 465, 531, 543-544, 554, 563, 587, 636, 706, 749, 873, "
   "902-904, 981, 989-995, 1194, 1220, 1293, 1500, 1533, 1677, 1723, 1755, "
   "1863, 2082-2083, 2086-2087, 2095-2096, 2102-2104, 3128, 3389, 3690, "
   "4321, 4643, 5050, 5190, 5222-5223, 5228, 5900, 6660-6669, 6679, 6697, "
   "8000, 8008, 8074, 8080, 8082, 8087-8088, 8232-8233, 8332-8333, 8443, "
   "8888, 9418, 9999, 10000, 11371, 18080-18081, 18089, 19294, 19638, "
   "50002 and 64738) and rejects the rest. As in tor, with ExitRelay auto "
   "it makes the relay an exit.", NULL},
  {"OutboundBindAddress", CONF_TYPE_CUSTOM, "IP", NULL, "unset",
   1, 0, 0, OFF(outbound_bind[0]),
   "Outgoing connections (to relays, to exit destinations, to directory "
   "servers) originate from this local address. Give it once for IPv4 "
   "and once for IPv6. As in tor, connections to loopback addresses are "
   "never bound, and DNS queries are not either. A connection that "
   "cannot bind (the address is not on this host) fails, with a "
   "warning.", &outbound_type},
  {"OutboundBindAddressOR", CONF_TYPE_CUSTOM, "IP", NULL, "unset",
   1, 0, 0, OFF(outbound_bind[1]),
   "As OutboundBindAddress, for connections to other relays only; it "
   "takes precedence over OutboundBindAddress for them.", &outbound_type},
  {"OutboundBindAddressExit", CONF_TYPE_CUSTOM, "IP", NULL, "unset",
   1, 0, 0, OFF(outbound_bind[2]),
   "As OutboundBindAddress, for an exit's connections to destinations "
   "only; it takes precedence over OutboundBindAddress for them.",
   &outbound_type},
  {"ExitPolicyRejectPrivate", CONF_TYPE_BOOL, "0|1", "1", "1",
   1, 0, 0, OFF(exit_policy_reject_private),
   "If 1, the exit policy starts with rules rejecting private and local "
   "networks and the relay's own addresses. Private test networks on "
   "127.0.0.1 set it to 0.", NULL},
  {"ExitPolicyRejectLocalInterfaces", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(exit_policy_reject_local_interfaces),
   "If 1, the exit policy also rejects the public addresses of the "
   "relay's ORPorts and Address.", NULL},
  {"ServerDNSResolvConfFile", CONF_TYPE_PATH, "PATH", NULL,
   "unset (/etc/resolv.conf)",
   0, 0, 0, OFF(server_dns_resolv_conf_file),
   "The resolv.conf file whose nameservers an exit uses to resolve the "
   "names clients ask for. Only its nameserver lines are used; nothing "
   "else (no hosts file, no search domains). Tests point it at a "
   "resolver on 127.0.0.1.", NULL},
  {"SocksPort", CONF_TYPE_CUSTOM, "[ADDRESS:]PORT|auto [FLAGS] | 0", "0",
   "0 (no client)",
   0, 0, 0, OFF(socks_ports),
   "Accept SOCKS4a and SOCKS5 connections from applications on PORT (on "
   "127.0.0.1 unless ADDRESS is given; auto: a port the kernel picks, "
   "logged and given by GETINFO net/listeners/socks) and carry them over "
   "three-hop circuits chosen from the consensus. May be given several "
   "times (at most 16). FLAGS as tor's: the isolation flags "
   "IsolateClientAddr and IsolateSOCKSAuth (both on by default), "
   "IsolateClientProtocol, IsolateDestPort, IsolateDestAddr (each off "
   "with No in front) and SessionGroup=N: streams that differ in a field "
   "one of them isolates on never share a circuit, and streams of "
   "different SocksPort lines never do unless the lines have the same "
   "SessionGroup; and KeepAliveIsolateSOCKSAuth, PreferSOCKSNoAuth, "
   "NoIPv4Traffic, NoIPv6Traffic, NoPreferIPv6 (told to the exit in the "
   "BEGIN cell's flags; by default, as tor, IPv6 is allowed and "
   "preferred), "
   "NoDNSRequest (no host names or lookups) and NoOnionTraffic. "
   "OnionTrafficOnly, the DNS cache flags (CacheDNS, UseDNSCache, ...), "
   "PreferIPv6Automap, ExtendedErrors and unix: sockets are refused as "
   "not supported yet. 0 disables the client.", &socks_type},
  {"EntryNodes", CONF_TYPE_CUSTOM, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(entry_nodes),
   "Client circuits start at one of these relays (fingerprints with or "
   "without $, or nicknames).", &routerset_type},
  {"MiddleNodes", CONF_TYPE_CUSTOM, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(middle_nodes),
   "The middle hop of client circuits is one of these relays.", &routerset_type},
  {"ExitNodes", CONF_TYPE_CUSTOM, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(exit_nodes),
   "Client circuits end at one of these relays. When none of them accepts "
   "a port by its published policy summary (private networks whose exits "
   "only accept 127.0.0.0/8 summarise to \"reject all\"), they are used "
   "anyway and the exit decides.", &routerset_type},
  {"ExcludeNodes", CONF_TYPE_CUSTOM, "RELAY,RELAY,...", NULL, "unset",
   1, 0, 0, OFF(exclude_nodes),
   "Client circuits never use these relays.", &routerset_type},
  {"PathsNeededToBuildCircuits", CONF_TYPE_DOUBLE, "NUM", "-1",
   "-1 (the consensus parameter min_paths_for_circs_pct, else 0.6)",
   1, -2147483, 2147483, OFF(paths_needed_to_build_circuits),
   "A client builds no circuit for streams until it holds the descriptors "
   "of enough relays to build this fraction of the paths it could choose "
   "(the fraction of guard, middle and exit bandwidth it has descriptors "
   "for, multiplied), as tor. Between 0.25 and 0.95 (other values are "
   "raised or lowered to these, with a warning); negative: the "
   "directory authorities' choice. Until then SOCKS requests wait (up "
   "to SocksTimeout) and a notice gives the fractions.", NULL},
  {"SocksTimeout", CONF_TYPE_INTERVAL, "INTERVAL", "2 minutes",
   "2 minutes", 1, 1, 24 * 3600, OFF(socks_timeout),
   "How long a SOCKS request waits for a circuit it can use (no path "
   "yet, not enough directory information yet) or, with "
   "__LeaveStreamsUnattached, for its controller, before it fails (1 "
   "second to 1 day), as in tor.", NULL},
  {"CircuitStreamTimeout", CONF_TYPE_INTERVAL, "INTERVAL", "0", "0",
   1, 0, 24 * 3600, OFF(circuit_stream_timeout),
   "How long a stream waits for the exit's answer to its BEGIN (or "
   "RESOLVE) before the client ends it there and tries it on another "
   "circuit, which then takes no new streams; the stream fails once it "
   "has waited SocksTimeout in all. 0: tor's schedule, 10 seconds for a "
   "stream's first two tries and 15 after.", NULL},
  {"MaxCircuitDirtiness", CONF_TYPE_INTERVAL, "INTERVAL", "10 minutes",
   "10 minutes",
   1, 10, 30 * 24 * 3600, OFF(max_circuit_dirtiness),
   "A client circuit takes new streams for at most this long after its "
   "first stream (10 seconds to 30 days); idle old circuits are then "
   "closed.", NULL},
  {"BandwidthRate", CONF_TYPE_BANDWIDTH, BW_SYNTAX, "1 GByte",
   "1 GByte", 1, 0, INT32_MAX, OFF(bandwidth_rate),
   "Average bandwidth per second this relay may use for reading, and "
   "separately for writing, on all its connections: link connections, "
   "exit connections, SocksPort connections and directory connections "
   "(token buckets, as tor). Connections to private addresses are not "
   "counted unless TestingTorNetwork is 1. At least 75 KBytes.", NULL},
  {"BandwidthBurst", CONF_TYPE_BANDWIDTH, BW_SYNTAX, "1 GByte",
   "1 GByte", 1, 0, INT32_MAX, OFF(bandwidth_burst),
   "The size of the BandwidthRate buckets: the most that may be used in a "
   "burst. Must not be smaller than BandwidthRate.", NULL},
  {"RelayBandwidthRate", CONF_TYPE_BANDWIDTH, BW_SYNTAX,
   "0", "0 (no separate limit)", 1, 0, INT32_MAX, OFF(relay_bandwidth_rate),
   "Like BandwidthRate, for connections to and from other relays only, in "
   "addition to BandwidthRate. 0: no separate limit.", NULL},
  {"RelayBandwidthBurst", CONF_TYPE_BANDWIDTH, BW_SYNTAX,
   NULL, "RelayBandwidthRate", 1, 0, INT32_MAX, OFF(relay_bandwidth_burst),
   "The size of the RelayBandwidthRate buckets.", NULL},
  {"TokenBucketRefillInterval", CONF_TYPE_MSEC_INTERVAL, "MILLISECONDS",
   "100 msec", "100 msec",
   0, 1, 1000, OFF(token_bucket_refill_interval),
   "How often the bandwidth buckets are refilled, in milliseconds (1 to "
   "1000).", NULL},
  {"MaxMemInQueues", CONF_TYPE_MEMUNIT, "N bytes|KBytes|MBytes|GBytes",
   NULL,
   "unset (tor's rule: 3/4 of RAM, 2/5 with 8 GB or more, between 256 MB "
   "and 8 GB)",
   1, 64 * 1024 * 1024, 0, OFF(max_mem_in_queues),
   "When the cells queued on all circuits take more memory than this, "
   "close circuits, the one whose oldest queued cell has waited longest "
   "first, until they take at most 90% of it; each such event is logged. "
   "At least 64 MB.", NULL},
  {"CircuitPriorityHalflife", CONF_TYPE_DOUBLE, "SECONDS", NULL,
   "unset (the consensus parameter CircuitPriorityHalflifeMsec, else 30)",
   1, -2147483, 2147483, OFF(circuit_priority_halflife),
   "Half-life, in seconds (fractions allowed), of the moving average of "
   "cells each circuit has sent recently. Whenever there is room to "
   "write, the circuit with the lowest average goes first, across all "
   "connections, so quiet interactive circuits overtake bulk ones (EWMA "
   "scheduling). 0 or a negative value turns this off: circuits are then "
   "served round robin. Changes take effect on SIGHUP without dropping "
   "circuits.", NULL},
  {"CircuitPriorityReads", CONF_TYPE_BOOL, "0|1", "1", "1", 1, 0, 0,
   OFF(circuit_priority_reads),
   "Under a bandwidth limit (BandwidthRate, RelayBandwidthRate), let the "
   "connections whose circuits have the lowest moving averages (see "
   "CircuitPriorityHalflife) read first, each taking what it has before "
   "the louder ones share the rest. With PerCircuitTCP, where every "
   "circuit reads from its own connection, this keeps bulk circuits from "
   "taking the read budget of quiet ones. 0: connections blocked on the "
   "limit read in turn, in equal shares.", NULL},
  {"Schedulers", CONF_TYPE_CUSTOM, "KIST|KISTLite[,...]", "KIST,KISTLite",
   "KIST,KISTLite", 1, 0, 0, OFF(schedulers),
   "How much the scheduler writes to a connection: KIST asks the kernel "
   "(TCP_INFO) how much the socket can send soon and writes no more, so "
   "that cells stay where they can still be reordered; KISTLite only "
   "bounds pctor's own output buffer. The first one that works on this "
   "system is used. tor's Vanilla scheduler is not supported.", &schedulers_type},
  {"KISTSchedRunInterval", CONF_TYPE_MSEC_INTERVAL, "MILLISECONDS", "2 msec",
   "2 msec",
   1, 1, 100, OFF(kist_sched_run_interval),
   "How often connections that the kernel held back are offered cells "
   "again, in milliseconds (1 to 100).", NULL},
  {"KISTSockBufSizeFactor", CONF_TYPE_DOUBLE, "NUM", "1.0", "1.0",
   1, 0, 100, OFF(kist_sock_buf_size_factor),
   "KIST writes to a socket the free part of its congestion window plus "
   "this many congestion windows, minus what is still unsent in the "
   "kernel (0 to 100).", NULL},
  {"PerCircuitTCP", CONF_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(per_circuit_tcp),
   "If 1, every circuit this relay extends to another relay gets a TCP "
   "connection (with TLS and a full link handshake) of its own, closed "
   "when the circuit ends (PCTCP), so that one circuit's losses and "
   "congestion do not stall the others. Connections from clients stay "
   "shared. The next relay needs no change.", NULL},
  {"PerCircuitTCPMaxConnections", CONF_TYPE_INT, "NUM", "0",
   "0 (half the file-descriptor limit)", 1, 0, 10000000,
   OFF(per_circuit_tcp_max_connections),
   "With PerCircuitTCP, at most this many per-circuit connections (and "
   "never more than half the file-descriptor limit); beyond it, new "
   "circuits share the existing connection to their next relay whose "
   "circuits have sent least recently.", NULL},
  {"PerCircuitTCPSpares", CONF_TYPE_INT, "NUM", "1", "1", 1, 0, 16,
   OFF(per_circuit_tcp_spares),
   "With PerCircuitTCP, keep this many connections to each relay that "
   "circuits were recently extended to open ahead of need, so that the "
   "next extension does not wait for TCP, TLS and the link handshake. "
   "Unused spares close after a minute. 0 to 16.", NULL},
  {"PerCircuitTCPRequireIPsec", CONF_TYPE_BOOL, "0|1", "0", "0", 1, 0, 0,
   OFF(per_circuit_tcp_require_ipsec),
   "Use per-circuit connections only to relays with an installed IPsec "
   "SA (so that an observer cannot count circuits); circuits to other "
   "relays share a connection. Needs IPsec auto or 1 (with IPsec 1 it "
   "is implied).", NULL},
  {"RelayTCPCongestionControl", CONF_TYPE_CUSTOM, "NAME", NULL,
   "unset (the host's default)", 1, 0, 0, OFF(relay_tcp_congestion_control),
   "TCP congestion control (Linux TCP_CONGESTION, e.g. bbr or cubic) of "
   "this relay's connections with other relays, shared or per circuit, "
   "instead of the host's net.ipv4.tcp_congestion_control. The algorithm "
   "must be available and, as pctor runs unprivileged, listed in "
   "net.ipv4.tcp_allowed_congestion_control; otherwise a warning says so "
   "and the connections keep the default.", &tcp_cc_type},
  {"ConnLimit", CONF_TYPE_INT, "NUM", "1000", "1000", 0, 1, INT32_MAX,
   OFF(conn_limit),
   "As tor: the fewest file descriptors pctor must be able to have (its "
   "hard limit, ulimit -H -n, to which it raises its soft limit at "
   "start-up); with fewer it refuses to start.", NULL},
  {"HeartbeatPeriod", CONF_TYPE_INTERVAL, "INTERVAL", "6 hours", "6 hours",
   1, 0, 365 * 86400, OFF(heartbeat_period),
   "Log a heartbeat line at notice level this often: uptime, open "
   "circuits and connections, and the traffic so far. 0 disables it. As "
   "in tor, a period below 30 minutes is raised to 30 minutes unless "
   "TestingTorNetwork is 1.", NULL},
  {"ShutdownWaitLength", CONF_TYPE_INTERVAL, "INTERVAL", "30 seconds",
   "30 seconds", 1, 0, 86400, OFF(shutdown_wait_length),
   "On SIGINT, a relay (with an ORPort) stops accepting connections and "
   "exits this long afterwards, so that circuits can finish; a second "
   "SIGINT exits at once, as in tor. Without an ORPort, or with 0, "
   "SIGINT exits at once. SIGTERM always exits at once.", NULL},
  {"SafeLogging", CONF_TYPE_ENUM, "0|1|relay", "0", "0 (tor's is 1)",
   1, 0, 0, OFF(safe_logging),
   "If 1 or relay, IP addresses in log messages at info level and above "
   "are replaced by [scrubbed]; debug messages are left alone. pctor does "
   "not tell client addresses from relay addresses, so relay scrubs as "
   "much as 1. pctor's default is 0, unlike tor's (1), because its own "
   "tests read addresses from its logs.", safe_logging_values},
  {"SyslogIdentityTag", CONF_TYPE_STRING, "TAG", NULL, "unset",
   0, 0, 0, OFF(syslog_identity_tag),
   "With a Log line to syslog, log as pctor-TAG instead of pctor (tor "
   "uses Tor-TAG).", NULL},
  {"DisableDebuggerAttachment", CONF_TYPE_BOOL, "0|1", "1", "1",
   0, 0, 0, OFF(disable_debugger_attachment),
   "If 1 (as tor), pctor makes itself non-dumpable at start-up "
   "(prctl PR_SET_DUMPABLE 0): other processes of the same user cannot "
   "attach a debugger to it or read its memory, and it leaves no core "
   "dump.", NULL},
  {"Sandbox", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(sandbox),
   "If 1 (tor's option), once pctor has started (keys read, ports "
   "bound, User switched) it installs a seccomp-bpf filter that allows "
   "only the system calls it makes while running: any other (execve, "
   "ptrace, fork, mount, setuid, ...) stops pctor with a log line naming "
   "it; sockets are limited to unix, IPv4, IPv6 and netlink, and memory "
   "is never writable and executable at once. Where the kernel has "
   "Landlock, files can then be written only beneath DataDirectory, "
   "KeyDirectory, the torrc's directory (SAVECONF) and the directories "
   "of the log files and PidFile, and read only beneath those, the "
   "defaults torrc's directory, /etc, /usr, /lib and /dev/urandom. So, "
   "while it runs, Log lines naming files in other directories are "
   "refused on SIGHUP and %include files elsewhere cannot be read "
   "again. Needs a build with libseccomp "
   "(otherwise pctor refuses to start: not supported in this build); "
   "Linux only.", NULL},
  {"AvoidDiskWrites", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(avoid_disk_writes),
   "If 1, write to disk less often, as tor does: the state file (bandwidth "
   "history, accounting) is written six times less often after a change "
   "(an hour after it instead of 10 minutes, see __StateSaveInterval). "
   "Changes that must not be lost (sampled guards, learned circuit build "
   "times, keys) are still written at once.", NULL},
  /* ---- ControlPort and MetricsPort (feature/control) ---- */
  {"ControlPort", CONF_TYPE_CUSTOM,
   "[ADDRESS:]PORT | auto | unix:PATH [FLAGS] | 0", "0", "0 (none)",
   0, 0, 0, OFF(control_port),
   "Accept controllers (stem, nyx) speaking tor's control protocol. A "
   "port alone listens on 127.0.0.1; auto picks a free port (see GETINFO "
   "net/listeners/control); unix:PATH a unix socket, as ControlSocket. "
   "One ControlPort line is supported.", &control_port_type},
  {"ControlSocket", CONF_TYPE_CUSTOM, "PATH [FLAGS] | 0", NULL, "unset",
   0, 0, 0, OFF(control_socket),
   "Accept controllers on the unix socket PATH. FLAGS: GroupWritable, "
   "WorldWritable, RelaxDirModeCheck, as in tor.", &control_socket_type},
  {"CookieAuthentication", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(cookie_authentication),
   "Controllers may authenticate with the cookie pctor writes at start "
   "(COOKIE and SAFECOOKIE).", NULL},
  {"CookieAuthFile", CONF_TYPE_PATH, "PATH", NULL,
   "DataDirectory/control_auth_cookie",
   0, 0, 0, OFF(cookie_auth_file),
   "Where to write the authentication cookie.", NULL},
  {"CookieAuthFileGroupReadable", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(cookie_auth_file_group_readable),
   "Make the cookie file readable by the group (mode 0640).", NULL},
  {"ControlPortWriteToFile", CONF_TYPE_PATH, "PATH", NULL, "unset",
   0, 0, 0, OFF(control_port_write_to_file),
   "As tor: once the control listeners are open, write PATH with a line "
   "PORT=ADDRESS:PORT for the ControlPort (the bound port, for auto) and "
   "UNIX_PORT=PATH for a control socket; removed when pctor exits.", NULL},
  {"ControlPortFileGroupReadable", CONF_TYPE_BOOL, "0|1", "0", "0",
   0, 0, 0, OFF(control_port_file_group_readable),
   "Make the ControlPortWriteToFile file readable by the group (mode "
   "0640).", NULL},
  {"HashedControlPassword", CONF_TYPE_CUSTOM, "16:HEX", NULL, "unset",
   1, 0, 0, OFF(hashed_control_password),
   "Controllers may authenticate with the password whose hash this is "
   "(tor's format, from tor --hash-password or pctor --hash-password).",
   &hashed_password_type},
  {"__OwningControllerProcess", CONF_TYPE_CUSTOM, "PID", NULL, "unset",
   1, 0, 0, OFF(owning_controller_process),
   "Exit when the process PID ends (set by controllers that start pctor).",
   &pid_type},
  {"__LeaveStreamsUnattached", CONF_TYPE_BOOL, "0|1", "0", "0",
   1, 0, 0, OFF(leave_streams_unattached),
   "SOCKS streams wait for a controller's ATTACHSTREAM instead of taking "
   "a circuit.", NULL},
  {"MetricsPort", CONF_TYPE_CUSTOM,
   "[ADDRESS:]PORT|auto [prometheus] | 0", "0",
   "0 (none)", 0, 0, 0, OFF(metrics_port),
   "Serve Prometheus metrics over HTTP at /metrics. A port alone listens "
   "on 127.0.0.1; auto picks a free port (see GETINFO "
   "net/listeners/metrics).", &metrics_port_type},
  {"MetricsPortPolicy", CONF_TYPE_CUSTOM, "accept|reject ADDR[/MASK][,...]",
   NULL, "unset (reject everyone)", 1, 0, 0, OFF(metrics_port_policy),
   "Who may read the MetricsPort; the first matching rule decides, no "
   "match rejects.", &metrics_policy_type},
  /* ---- end of ControlPort and MetricsPort ---- */
  {"UseMicrodescriptors", CONF_TYPE_BOOL, "0|1", "1", "1",
   0, 0, 0, OFF(use_microdescriptors),
   "If 1 the client and the relay's directory cache fetch the "
   "microdescriptor consensus and microdescriptors; if 0, the ns "
   "consensus and full server descriptors.", NULL},
};
/* clang-format on */

static int
line_error(char **err_out, const option_def_t *def, const conf_line_t *l,
           const char *msg)
{
  char *w = conf_line_where(l);
  *err_out = pc_asprintf("Option '%s' on %s: %s. Failing.", def->name, w,
                         msg);
  free(w);
  return -1;
}

/* ---- the registered modules ---- */

static const conf_module_t app_module = {
  "relay", app_vars, sizeof(app_vars) / sizeof(app_vars[0]),
  sizeof(options_t), NULL,
};

/* Every module with options, the daemon's own table first. A module adds
 * its options by declaring a conf_module_t and being listed here. */
static const conf_module_t *const modules[] = {
  &app_module,
  &conflux_conf_module,
  &dgram_conf_module,
  &cpuworker_conf_module,
  &dos_conf_module,
  &dirreq_conf_module,
  &hibernate_conf_module,
  &ipsec_conf_module,
  &measureme_conf_module,
  &guards_conf_module,
};
#define N_MODULES (sizeof(modules) / sizeof(modules[0]))

/* An option: its module, its row, and its index among all options. */
typedef struct {
  size_t mi;
  const conf_var_t *var;
  size_t gi;
} var_ref_t;

static size_t
gi_base(size_t mi)
{
  size_t b = 0;
  for (size_t i = 0; i < mi; i++)
    b += modules[i]->n_vars;
  return b;
}

size_t
options_count(void)
{
  return gi_base(N_MODULES);
}

static int
ref_at(size_t gi, var_ref_t *r)
{
  for (size_t mi = 0; mi < N_MODULES; mi++) {
    if (gi < modules[mi]->n_vars) {
      r->mi = mi;
      r->var = &modules[mi]->vars[gi];
      r->gi = gi_base(mi) + gi;
      return 0;
    }
    gi -= modules[mi]->n_vars;
  }
  return -1;
}

const option_def_t *
options_var(size_t i)
{
  var_ref_t r;
  return ref_at(i, &r) == 0 ? r.var : NULL;
}

static int
find_ref(const char *name, var_ref_t *r)
{
  for (size_t gi = 0; ref_at(gi, r) == 0; gi++)
    if (conf_key_eq(r->var->name, name))
      return 0;
  return -1;
}

static void
ref_of_var(const conf_var_t *var, var_ref_t *r)
{
  for (size_t mi = 0; mi < N_MODULES; mi++) {
    const conf_module_t *m = modules[mi];
    if (var >= m->vars && var < m->vars + m->n_vars) {
      r->mi = mi;
      r->var = var;
      r->gi = gi_base(mi) + (size_t)(var - m->vars);
      return;
    }
  }
  abort();
}

const option_def_t *
options_find(const char *name)
{
  var_ref_t r;
  return find_ref(name, &r) == 0 ? r.var : NULL;
}

static void *
obj_of(const options_t *o, size_t mi)
{
  return mi == 0 ? (void *)o : o->mod_objs_[mi];
}

const void *
options_module(const options_t *o, const conf_module_t *mod)
{
  for (size_t mi = 1; mi < N_MODULES; mi++)
    if (modules[mi] == mod)
      return o->mod_objs_[mi];
  abort();
}

int
options_module_check_all(char **err_out)
{
  for (size_t mi = 0; mi < N_MODULES; mi++)
    if (conf_module_check(modules[mi], err_out) < 0)
      return -1;
  /* Names are unique across modules too. */
  var_ref_t a, b;
  for (size_t i = 0; ref_at(i, &a) == 0; i++)
    for (size_t j = 0; j < i && ref_at(j, &b) == 0; j++)
      if (conf_key_eq(a.var->name, b.var->name)) {
        *err_out = pc_asprintf("option %s is declared twice", a.var->name);
        return -1;
      }
  return 0;
}

static options_t *
options_new(void)
{
  options_t *o = pc_zalloc(sizeof(*o));
  o->mod_objs_ = pc_calloc(N_MODULES, sizeof(void *));
  for (size_t mi = 1; mi < N_MODULES; mi++)
    o->mod_objs_[mi] = pc_zalloc(modules[mi]->obj_size);
  o->set_ = pc_zalloc(options_count());
  return o;
}

int
options_equal(const options_t *a, const options_t *b,
              const option_def_t *def)
{
  var_ref_t r;
  ref_of_var(def, &r);
  return conf_var_equal(obj_of(a, r.mi), obj_of(b, r.mi), def);
}

int
options_is_set(const options_t *o, const char *name)
{
  var_ref_t r;
  return find_ref(name, &r) == 0 && o->set_[r.gi];
}

/* ---- assignment ---- */

static int
assign_default(options_t *o, const var_ref_t *r, parse_ctx_t *ctx)
{
  void *obj = obj_of(o, r->mi);
  conf_var_clear(obj, r->var);
  o->set_[r->gi] = 0;
  if (!r->var->default_str)
    return 0;
  char *err = NULL;
  if (conf_var_assign(obj, r->var, r->var->default_str, ctx, NULL,
                      &err) < 0) {
    /* A bad default is a programming error; the unit tests catch it. */
    log_err("Bad default for %s: %s", r->var->name, err);
    free(err);
    return -1;
  }
  return 0;
}

/* An error in the value of an option, found after parsing: names the line
 * that set it when there is one (a file or the command line), else the
 * option alone. Returns -1. */
static int
option_error(char **err_out, const option_def_t *def, const parse_ctx_t *ctx,
             const char *msg)
{
  var_ref_t r;
  ref_of_var(def, &r);
  const conf_line_t *l = ctx->where[r.gi];
  if (l)
    return line_error(err_out, def, l, msg);
  *err_out = pc_asprintf("Option '%s': %s. Failing.", def->name, msg);
  return -1;
}

/* What to do instead of a tor option pctor does not implement, by name
 * or by name prefix (a trailing '*'). */
static const struct {
  const char *name;
  const char *advice;
} tor_advice[] = {
  {"Control*", "pctor's control port is set up with ControlPort, "
   "ControlSocket (and its flags), CookieAuthentication, CookieAuthFile "
   "and HashedControlPassword only"},
  {"HiddenService*", "pctor has no onion services"},
  {"HSLayer*", "pctor has no onion services"},
  {"BridgeRelay", "pctor cannot run as a bridge"},
  {"ServerTransport*", "pctor has no pluggable transports"},
  {"ClientTransportPlugin", "pctor has no pluggable transports"},
  {"UseBridges", "pctor's client cannot use bridges"},
  {"Bridge", "pctor's client cannot use bridges"},
  {"OutboundBindAddressPT", "pctor has no pluggable transports"},
  {"GeoIPExcludeUnknown", "pctor has no country-based node selection"},
  {"Accel*", "OpenSSL 3 uses the CPU's crypto instructions without an "
   "engine; remove the line"},
  {"ServerDNSAllowBrokenConfig", "pctor's exit stops at start-up when it "
   "cannot use its resolv.conf (as ServerDNSAllowBrokenConfig 0); fix the "
   "file or remove the line"},
  {"ExitPortStatistics", "of tor's statistics pctor keeps only "
   "DirReqStatistics"},
  {"*Statistics", "of tor's statistics pctor keeps only DirReqStatistics"},
  {"SocksPolicy", "bind SocksPort to a local address instead"},
  {"ClientOnly", "pctor is a client when it has no ORPort"},
  {"AuthDir*", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"V3Auth*", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"AuthoritativeDirectory", "pctor cannot be a directory authority; run "
   "the authorities with tor"},
  {"VersioningAuthoritativeDirectory", "pctor cannot be a directory "
   "authority; run the authorities with tor"},
  {"Recommended*", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"ConsensusParams", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"MinimalAcceptedServerVersion", "pctor cannot be a directory "
   "authority; run the authorities with tor"},
  {"V3BandwidthsFile", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"GuardfractionFile", "pctor cannot be a directory authority; run the "
   "authorities with tor"},
  {"AlternateDirAuthority", "give the authorities with DirAuthority lines"},
  {"MinMeasuredBWsForAuthToIgnoreAdvertised", "pctor cannot be a "
   "directory authority; run the authorities with tor"},
  {"Bridge*", "pctor has no bridge support"},
  {"AlternateBridgeAuthority", "pctor has no bridge support"},
  {"UpdateBridgesFromAuthority", "pctor has no bridge support"},
  {"ReconfigDropsBridgeDescs", "pctor has no bridge support"},
  {"PathBias*", "pctor's client does no path-bias accounting"},
  {"Testing*", "of tor's testing options pctor has TestingTorNetwork, "
   "TestingEnableConnBwEvent and TestingEnableCellStatsEvent"},
  {"PublishHidServDescriptors", "pctor has no onion services"},
  {"FetchHidServDescriptors", "pctor has no onion services"},
  {"MaxHSDirCacheBytes", "pctor has no onion services and is no HSDir"},
  {"MinUptimeHidServDirectoryV2", "pctor has no onion services and is no "
   "HSDir"},
  {"CompiledProofOfWorkHash", "pctor has no onion services"},
  {"HTTPProxy*", "pctor connects to relays directly and cannot use a "
   "proxy"},
  {"HTTPSProxy*", "pctor connects to relays directly and cannot use a "
   "proxy"},
  {"Socks4Proxy", "pctor connects to relays directly and cannot use a "
   "proxy"},
  {"Socks5Proxy*", "pctor connects to relays directly and cannot use a "
   "proxy"},
  {"TCPProxy", "pctor connects to relays directly and cannot use a proxy"},
  {"DNSPort", "pctor's client listens only on SocksPort"},
  {"TransPort", "pctor's client listens only on SocksPort"},
  {"TransProxyType", "pctor's client listens only on SocksPort"},
  {"NATDPort", "pctor's client listens only on SocksPort"},
  {"HTTPTunnelPort", "pctor's client listens only on SocksPort"},
  {"ExtORPort*", "pctor has no pluggable transports"},
  {"TruncateLogFile", "pctor always appends to its log files; rotate them "
   "(logrotate) and send SIGHUP to reopen them"},
  {"LogTimeGranularity", "pctor's log lines carry milliseconds; remove "
   "the line"},
  {"DisableAllSwap", "keep pctor out of swap from outside (for example "
   "systemd's MemorySwapMax=0)"},
  {"DirPolicy", "pctor's DirPort answers every address; restrict it with "
   "a firewall"},
  /* tor's hidden (unsaved, controller-set) variants of its options. */
  {"__SocksPort", "use SocksPort"},
  {"__ORPort", "use ORPort"},
  {"__DirPort", "use DirPort"},
  {"__ControlPort", "use ControlPort"},
  {"__MetricsPort", "use MetricsPort"},
  {"__DNSPort", "pctor's client listens only on SocksPort"},
  {"__TransPort", "pctor's client listens only on SocksPort"},
  {"__NATDPort", "pctor's client listens only on SocksPort"},
  {"__HTTPTunnelPort", "pctor's client listens only on SocksPort"},
  {"__ExtORPort", "pctor has no pluggable transports"},
  {"__HashedControlSessionPassword", "use HashedControlPassword or "
   "CookieAuthentication"},
  {"__OwningControllerFD", "use __OwningControllerProcess (pctor exits "
   "when that process does)"},
  {"__ReloadTorrcOnSIGHUP", "pctor always rereads its torrc on SIGHUP; "
   "remove the line"},
  {"__DisableSignalHandlers", "pctor always handles tor's signals; "
   "remove the line"},
  {"__AllDirActionsPrivate", "not supported yet: a pctor relay uploads "
   "its descriptor to the authorities' DirPorts; remove the line"},
  {"__DisablePredictedCircuits", "not supported yet: pctor's client "
   "always keeps preemptive circuits for the ports it saw"},
  {"__AlwaysCongestionControl", "not supported yet: pctor negotiates "
   "congestion control as the consensus says; remove the line"},
  {"__SbwsExit", "pctor is not a bandwidth-scanner exit; remove the line"},
  /* Circuit building and timeouts of the client. */
  {"CircuitBuildTimeout", "pctor's client always learns its build "
   "timeout from its circuits (path-spec; kept in the state file)"},
  {"LearnCircuitBuildTimeout", "pctor's client always learns its build "
   "timeout (path-spec); remove the line"},
  {"CircuitsAvailableTimeout", "not supported yet: pctor keeps "
   "preemptive circuits while it has streams"},
  {"NewCircuitPeriod", "use MaxCircuitDirtiness, which bounds how long "
   "a circuit takes new streams"},
  {"MaxClientCircuitsPending", "not supported yet; remove the line"},
  {"LongLivedPorts", "not supported yet: pctor's client does not pick "
   "Stable relays for particular ports"},
  {"TrackHostExits", "not supported yet: pctor's client does not pin "
   "hosts to exits"},
  {"TrackHostExitsExpire", "not supported yet: pctor's client does not "
   "pin hosts to exits"},
  {"ExtendByEd25519ID", "not supported yet; remove the line"},
  {"ReevaluateExitPolicy", "not supported yet: open streams keep their "
   "exit after a reload"},
  /* Node selection. */
  {"ExcludeExitNodes", "use ExcludeNodes (every hop) or ExitNodes"},
  {"StrictNodes", "not supported yet: see EntryNodes, MiddleNodes, "
   "ExitNodes and ExcludeNodes in pctor(1) for what pctor's client does "
   "with them"},
  {"NodeFamily", "not supported yet: pctor's client avoids the families "
   "relays declare (MyFamily, FamilyId) only"},
  {"EnforceDistinctSubnets", "pctor's client always keeps one relay per "
   "/16 (IPv4) or /32 (IPv6) in a circuit (tor's default 1); remove the "
   "line"},
  {"UseGuardFraction", "not supported yet: pctor ignores the consensus's "
   "guard fractions"},
  {"VanguardsLiteEnabled", "pctor has no onion services, which is what "
   "vanguards protect; remove the line"},
  {"ClientOnionAuthDir", "pctor has no onion services"},
  /* Addresses and reachability of the client. */
  {"ClientUseIPv4", "pctor's client connects to relays over IPv4 only"},
  {"ClientUseIPv6", "pctor's client connects to relays over IPv4 only"},
  {"ClientPreferIPv6ORPort", "pctor's client connects to relays over "
   "IPv4 only"},
  {"ClientPreferIPv6DirPort", "pctor's client connects to relays over "
   "IPv4 only"},
  {"ClientRejectInternalAddresses", "not supported yet; remove the line"},
  {"ClientDNSRejectInternalAddresses", "not supported yet; remove the "
   "line"},
  {"FascistFirewall", "not supported yet: pctor's client cannot limit "
   "the ports it connects to"},
  {"FirewallPorts", "not supported yet: pctor's client cannot limit the "
   "ports it connects to"},
  {"ReachableAddresses", "not supported yet: pctor's client cannot limit "
   "the addresses it connects to"},
  {"ReachableDirAddresses", "not supported yet: pctor's client cannot "
   "limit the addresses it connects to"},
  {"ReachableORAddresses", "not supported yet: pctor's client cannot "
   "limit the addresses it connects to"},
  /* SOCKS and name mapping. */
  {"MapAddress", "use a controller's MAPADDRESS command"},
  {"AutomapHostsOnResolve", "not supported yet: pctor gives virtual "
   "addresses only to a controller's MAPADDRESS"},
  {"AutomapHostsSuffixes", "not supported yet: pctor gives virtual "
   "addresses only to a controller's MAPADDRESS"},
  {"VirtualAddrNetworkIPv4", "not supported yet: MAPADDRESS's virtual "
   "addresses come from 127.192.0.0/10, tor's default"},
  {"VirtualAddrNetworkIPv6", "not supported yet: MAPADDRESS's virtual "
   "addresses come from [FE80::]/10, tor's default"},
  {"AllowNonRFC953Hostnames", "pctor's SocksPort refuses host names that "
   "are not valid DNS names; remove the line"},
  {"SafeSocks", "not supported yet: pctor's SocksPort accepts SOCKS4 "
   "and SOCKS5 with addresses; use host names to keep DNS off the host"},
  {"TestSocks", "not supported yet; pctor logs SOCKS requests at info "
   "level"},
  {"WarnPlaintextPorts", "not supported yet; remove the line"},
  {"RejectPlaintextPorts", "not supported yet: use an ExitNodes/"
   "ExcludeNodes choice or a local firewall"},
  {"UnixSocksGroupWritable", "pctor's SocksPort listens on TCP only"},
  /* The client's directory fetching. */
  {"FallbackDir", "pctor bootstraps from the DirAuthority lines only"},
  {"UseDefaultFallbackDirs", "pctor bootstraps from the DirAuthority "
   "lines only; remove the line"},
  {"DirAuthorityFallbackRate", "pctor bootstraps from the DirAuthority "
   "lines only; remove the line"},
  {"ClientBootstrap*", "pctor's client retries its bootstrap fetches "
   "on its own schedule; remove the line"},
  {"FetchDirInfoEarly", "a pctor relay fetches the consensus as a cache "
   "does (DirCache 1); remove the line"},
  {"FetchDirInfoExtraEarly", "a pctor relay fetches the consensus as a "
   "cache does (DirCache 1); remove the line"},
  {"FetchServerDescriptors", "pctor always fetches the descriptors it "
   "needs; remove the line"},
  {"FetchUselessDescriptors", "a pctor relay with DirCache 1 caches "
   "every descriptor already; remove the line"},
  {"DownloadExtraInfo", "pctor never downloads extra-info documents; "
   "remove the line"},
  {"DirAllowPrivateAddresses", "with TestingTorNetwork 1 pctor accepts "
   "relays at private addresses; otherwise remove the line"},
  {"MaxConsensusAgeForDiffs", "pctor's directory cache serves whole "
   "consensuses, not diffs; remove the line"},
  /* Padding and connections. */
  {"ConnectionPadding", "not supported yet: pctor sends no connection "
   "padding (and ignores PADDING_NEGOTIATE)"},
  {"ReducedConnectionPadding", "not supported yet: pctor sends no "
   "connection padding"},
  {"CircuitPadding", "not supported yet: pctor has no circuit padding "
   "machines"},
  {"ReducedCircuitPadding", "not supported yet: pctor has no circuit "
   "padding machines"},
  {"KeepalivePeriod", "not supported yet: pctor closes idle connections "
   "on its own timeouts; remove the line"},
  {"ConstrainedSockets", "not supported yet: pctor's KIST scheduler "
   "sizes what it writes by the kernel's buffers (KISTSockBufSizeFactor)"},
  {"ConstrainedSockSize", "not supported yet: use KISTSockBufSizeFactor"},
  {"PerConnBWRate", "use BandwidthRate/RelayBandwidthRate, which limit "
   "the relay as a whole"},
  {"PerConnBWBurst", "use BandwidthBurst/RelayBandwidthBurst, which "
   "limit the relay as a whole"},
  {"CountPrivateBandwidth", "pctor counts every connection in its "
   "bandwidth limits; remove the line"},
  {"SSLKeyLifetime", "pctor chooses its TLS certificates' lifetime "
   "itself; remove the line"},
  {"DisableOOSCheck", "pctor never closes connections to make room for "
   "new ones (no out-of-sockets handler); remove the line"},
  /* The exit's resolver. */
  {"ServerDNSDetectHijacking", "not supported yet: pctor's exit uses its "
   "resolver's answers as they are (choose a resolver that does not "
   "rewrite them)"},
  {"ServerDNSTestAddresses", "not supported yet: pctor's exit does not "
   "test its resolver for hijacking"},
  {"ServerDNSRandomizeCase", "not supported yet: pctor's exit sends names "
   "as the client gave them"},
  {"ServerDNSSearchDomains", "pctor's exit never appends search domains "
   "(as tor's default 0); remove the line"},
  {"ServerDNSAllowNonRFC953Hostnames", "not supported yet; remove the "
   "line"},
  /* Running the process. */
  {"DisableNetwork", "not supported yet: start pctor when it may use the "
   "network, or set PublishServerDescriptor 0"},
  {"Dormant*", "pctor has no dormant mode; remove the line"},
  {"KeepBindCapabilities", "pctor opens its ports before it drops "
   "privileges (User) and keeps no capabilities after; remove the line"},
  {"NoExec", "pctor never runs other programs (and Sandbox 1 forbids "
   "execve); remove the line"},
  {"HardwareAccel", "OpenSSL 3 uses the CPU's crypto instructions by "
   "itself; remove the line"},
  {"MainloopStats", "SIGUSR1 logs pctor's statistics, and the "
   "MetricsPort serves them"},
  {"ProtocolWarnings", "pctor logs peers' protocol errors at info "
   "level; raise the log level to see them"},
  {"MaxUnparseableDescSizeToLog", "pctor never writes unparseable "
   "descriptors to disk; remove the line"},
  {"RephistTrackTime", "pctor keeps tor's bandwidth history in the state "
   "file; remove the line"},
};

/* tor options pctor does not implement but whose value says what pctor
 * does anyway ("DirPort 0": no DirPort). Such a line is accepted (with an
 * info line); any other value is refused. */
static const struct {
  const char *name, *value;
} tor_same_behaviour[] = {
  {"BridgeRelay", "0"},
  {"ClientOnly", "0"},
  {"HiddenServiceStatistics", "0"}, {"EntryStatistics", "0"},
  {"ExitPortStatistics", "0"},      {"ConnDirectionStatistics", "0"},
  {"CellStatistics", "0"},    {"HardwareAccel", "0"},
  /* OpenSSL 3 uses the CPU's AES and SHA instructions by itself, with or
   * without tor's engine option. */
  {"HardwareAccel", "1"},
  /* A resolv.conf pctor cannot use stops an exit at start-up. */
  {"ServerDNSAllowBrokenConfig", "0"},
  {"UseBridges", "0"},
};

/* Whether line l sets a tor option to the behaviour pctor has anyway. */
static int
tor_option_same_behaviour(const conf_line_t *l)
{
  for (size_t i = 0; i < sizeof(tor_same_behaviour) /
                             sizeof(tor_same_behaviour[0]); i++)
    if (conf_key_eq(tor_same_behaviour[i].name, l->key) &&
        !strcasecmp(tor_same_behaviour[i].value, l->value)) {
      char *w = conf_line_where(l);
      log_info("Option '%s %s' on %s: pctor behaves that way already.",
               l->key, l->value, w);
      free(w);
      return 1;
    }
  return 0;
}

/* The refusal of a tor option pctor does not implement, or NULL if name
 * is not one of tor's options. */
static char *
tor_option_refusal(const char *name, const conf_line_t *l)
{
  const char *tor_name = NULL;
  for (size_t i = 0; i < n_tor_option_names && !tor_name; i++)
    if (conf_key_eq(tor_option_names[i], name))
      tor_name = tor_option_names[i];
  if (!tor_name)
    return NULL;
  const char *advice = NULL;
  for (size_t i = 0; i < sizeof(tor_advice) / sizeof(tor_advice[0]) &&
                     !advice; i++) {
    const char *a = tor_advice[i].name;
    size_t n = strlen(a);
    if (a[n - 1] == '*' && !strncasecmp(a, tor_name, n - 1))
      advice = tor_advice[i].advice;
    else if (a[0] == '*' && strlen(tor_name) >= n - 1 &&
             !strcasecmp(a + 1, tor_name + strlen(tor_name) - (n - 1)))
      advice = tor_advice[i].advice;
    else if (!strcasecmp(a, tor_name))
      advice = tor_advice[i].advice;
  }
  char *w = conf_line_where(l);
  char *msg = pc_asprintf("Option '%s' on %s: pctor does not support "
                          "tor's option %s%s%s. Failing.", name, w,
                          tor_name, advice ? "; " : "",
                          advice ? advice : "");
  free(w);
  return msg;
}

char *
options_tor_refusal(const char *name)
{
  conf_line_t *l = conf_line_new(name, "", "the test", 1);
  char *msg = tor_option_refusal(name, l);
  conf_lines_free(l);
  return msg;
}

static int
assign_line(options_t *o, const conf_line_t *l, parse_ctx_t *ctx,
            char **err_out)
{
  var_ref_t r;
  if (find_ref(l->key, &r) < 0) {
    if (tor_option_same_behaviour(l))
      return 0;
    *err_out = tor_option_refusal(l->key, l);
    if (*err_out)
      return -1;
    char *w = conf_line_where(l);
    *err_out = pc_asprintf("Unknown option '%s' on %s. Failing.", l->key, w);
    free(w);
    return -1;
  }
  const option_def_t *def = r.var;
  int multi = conf_var_is_multi(def);
  if (!*l->value) {
    if (def->type == CONF_TYPE_CUSTOM && def->type_arg == &log_type) {
      char *w = conf_line_where(l);
      log_warn("Option '%s' on %s has no value; ignoring it.", def->name,
               w);
      free(w);
      return 0;
    }
    /* As in tor: an empty value resets the option to its default. */
    if (def->type_arg == &orport_type)
      memset(&ctx->orport, 0, sizeof(ctx->orport));
    if (def->type_arg == &dirport_type)
      memset(&ctx->dirport, 0, sizeof(ctx->dirport));
    if (def->type_arg == &socks_type)
      ctx->socks_zero = NULL;
    ctx->where[r.gi] = NULL;
    return assign_default(o, &r, ctx);
  }
  if (!multi && ctx->where[r.gi]) {
    char *w1 = conf_line_where(ctx->where[r.gi]);
    char *w2 = conf_line_where(l);
    log_warn("Option '%s' is set on %s and again on %s; using the last "
             "value.", def->name, w1, w2);
    free(w1);
    free(w2);
  }
  void *obj = obj_of(o, r.mi);
  if (multi && !o->set_[r.gi])
    conf_var_clear(obj, def); /* the first line replaces the default */
  char *msg = NULL;
  if (conf_var_assign(obj, def, l->value, ctx, l, &msg) < 0) {
    line_error(err_out, def, l, msg);
    free(msg);
    return -1;
  }
  o->set_[r.gi] = 1;
  ctx->where[r.gi] = l;
  return 0;
}

/* Remove from *list every line whose key is key. */
static void
remove_key(conf_line_t **list, const char *key)
{
  while (*list) {
    conf_line_t *l = *list;
    if (conf_key_eq(l->key, key)) {
      *list = l->next;
      l->next = NULL;
      conf_lines_free(l);
    } else {
      list = &l->next;
    }
  }
}

/* The torrc's lines with the command line applied (see options.h). */
static conf_line_t *
merge_lines(const conf_line_t *file, const conf_line_t *cmdline)
{
  conf_line_t *merged = conf_lines_dup(file);
  for (const conf_line_t *c = cmdline; c; c = c->next) {
    if (c->cmd == CONF_LINE_CLEAR) {
      remove_key(&merged, c->key);
      continue;
    }
    if (c->cmd == CONF_LINE_NORMAL) {
      /* The first plain command-line line for a key replaces the torrc's
       * lines; later ones for the same key add to it. */
      int first = 1;
      for (const conf_line_t *p = cmdline; p != c; p = p->next)
        if (p->cmd == CONF_LINE_NORMAL && conf_key_eq(p->key, c->key))
          first = 0;
      if (first)
        remove_key(&merged, c->key);
    }
    conf_line_t **tail = &merged;
    while (*tail)
      tail = &(*tail)->next;
    *tail = conf_line_new(c->key, c->value, c->source, c->lineno);
    (*tail)->from_cmdline = c->from_cmdline;
  }
  return merged;
}

/* Rules between the daemon's options, and derived values. Values were
 * parsed by type when assigned; only rules that involve several options
 * (or the system) are here. */
static int
validate(options_t *o, parse_ctx_t *ctx, char **err_out)
{
  if (!o->data_directory) {
    o->data_directory = options_default_data_directory(geteuid() == 0,
                                                       getenv("HOME"));
    if (!o->data_directory) {
      *err_out = pc_strdup("There is no home directory for the default "
                           "DataDirectory; set DataDirectory. Failing.");
      return -1;
    }
  }

  if (!options_is_set(o, "ExtendAllowPrivateAddresses"))
    o->extend_allow_private_addresses = o->testing_tor_network;
  if (!options_is_set(o, "AssumeReachable"))
    o->assume_reachable = o->testing_tor_network;
  if (o->assume_reachable && o->assume_reachable_ipv6 == 0) {
    *err_out = pc_strdup(
        options_is_set(o, "AssumeReachable")
            ? "Cannot set AssumeReachable 1 and AssumeReachableIPv6 0. "
              "Failing."
            : "Cannot set AssumeReachableIPv6 0 while AssumeReachable is 1 "
              "(the default with TestingTorNetwork 1); set AssumeReachable "
              "0 too. Failing.");
    return -1;
  }

  /* OutboundBindAddress*: one address per family each, as tor. */
  static const char *const outbound_names[3] = {
      "OutboundBindAddress", "OutboundBindAddressOR",
      "OutboundBindAddressExit"};
  for (int k = 0; k < 3; k++) {
    int seen[2] = {0, 0};
    for (int i = 0; i < o->outbound_bind[k].n; i++) {
      pc_addr_t a;
      if (options_outbound_addr(o, k, i, &a) < 0)
        continue; /* checked when assigned */
      int f = a.family == AF_INET6;
      if (seen[f]++) {
        *err_out = pc_asprintf("%s: more than one %s address; give at most "
                               "one IPv4 and one IPv6 address. Failing.",
                               outbound_names[k], f ? "IPv6" : "IPv4");
        return -1;
      }
    }
  }

  /* ExitRelay auto (tor): an exit exactly when ExitPolicy or
   * ReducedExitPolicy is set. */
  o->is_exit = exit_policy_want_exit(
      o->exit_relay, o->exit_policy.n + (o->reduced_exit_policy != 0),
      o->ipv6_exit);
  if (o->exit_relay < 0) {
    if (o->is_exit && o->or_ports.n > 0)
      log_notice("ExitRelay is auto and an ExitPolicy (or "
                 "ReducedExitPolicy, or IPv6Exit 1) is set, so this "
                 "relay is an exit (as in tor). Set ExitRelay 0 if you did "
                 "not want that.");
  }

  /* tor raises a short HeartbeatPeriod outside test networks. */
  if (o->heartbeat_period && o->heartbeat_period < 1800 &&
      !o->testing_tor_network) {
    log_warn("HeartbeatPeriod is shorter than 30 minutes; using 30 "
             "minutes.");
    o->heartbeat_period = 1800;
  }

  if (o->onion_key_grace_period_days > o->onion_key_rotation_days) {
    /* Blame the grace period if it was set, else the rotation. */
    const option_def_t *def = options_find("OnionKeyGracePeriodDays");
    if (!options_is_set(o, def->name))
      def = options_find("OnionKeyRotationDays");
    char *msg = pc_asprintf("OnionKeyGracePeriodDays (%d) must not be "
                            "larger than OnionKeyRotationDays (%d)",
                            o->onion_key_grace_period_days,
                            o->onion_key_rotation_days);
    option_error(err_out, def, ctx, msg);
    free(msg);
    return -1;
  }

  /* Bandwidth buckets (tor's defaults: 1 GByte rate and burst). */
  if (!options_is_set(o, "RelayBandwidthBurst"))
    o->relay_bandwidth_burst = o->relay_bandwidth_rate;
  if (o->bandwidth_rate < 75 * 1024)
    return option_error(err_out, options_find("BandwidthRate"), ctx,
                        "must be at least 75 KBytes");
  if (o->bandwidth_burst < o->bandwidth_rate)
    return option_error(err_out, options_find("BandwidthBurst"), ctx,
                        "must be at least BandwidthRate");
  if (o->relay_bandwidth_rate &&
      o->relay_bandwidth_burst < o->relay_bandwidth_rate)
    return option_error(err_out, options_find("RelayBandwidthBurst"), ctx,
                        "must be at least RelayBandwidthRate");

  if (o->dir_ports.n > 0 && o->or_ports.n == 0)
    return option_error(err_out, options_find("DirPort"), ctx,
                        "needs an ORPort: only a relay serves the directory");
  if (o->dir_ports.n > 0 && !o->dir_cache)
    return option_error(err_out, options_find("DirPort"), ctx,
                        "needs DirCache 1: without the cache there is "
                        "nothing to serve");

  const ipsec_options_t *io = options_module(o, &ipsec_conf_module);
  if (io->mode != IPSEC_MODE_OFF && o->or_ports.n == 0)
    return option_error(err_out, options_find("IPsec"), ctx,
                        "needs an ORPort");
  if (o->per_circuit_tcp_require_ipsec && io->mode == IPSEC_MODE_OFF)
    return option_error(err_out, options_find("PerCircuitTCPRequireIPsec"),
                        ctx, "needs IPsec auto or 1");

  /* tor clamps PathsNeededToBuildCircuits to 0.25..0.95 with a warning. */
  if (o->paths_needed_to_build_circuits >= 0 &&
      (o->paths_needed_to_build_circuits < 0.25 ||
       o->paths_needed_to_build_circuits > 0.95)) {
    double v = o->paths_needed_to_build_circuits < 0.25 ? 0.25 : 0.95;
    log_warn("PathsNeededToBuildCircuits %g is out of range; using %.2f",
             o->paths_needed_to_build_circuits, v);
    o->paths_needed_to_build_circuits = v;
  }

  /* The circuit scheduler: unset half-life follows the consensus (-1). */
  if (!options_is_set(o, "CircuitPriorityHalflife"))
    o->circuit_priority_halflife = -1;
  else if (o->circuit_priority_halflife < 0)
    o->circuit_priority_halflife = 0;
  {
    char *copy = pc_strdup(o->schedulers ? o->schedulers : "KIST,KISTLite");
    int chosen = -1;
    for (char *save = NULL, *t = strtok_r(copy, ", \t", &save); t;
         t = strtok_r(NULL, ", \t", &save)) {
      int kind = !strcasecmp(t, "KIST") ? 1 : !strcasecmp(t, "KISTLite")
                                                   ? 0 : -2;
      if (kind == 1 && !sockstat_tcp_available())
        continue;
      if (kind >= 0 && chosen < 0)
        chosen = kind;
    }
    free(copy);
    if (chosen < 0)
      return option_error(err_out, options_find("Schedulers"), ctx,
                          "names no usable scheduler (Vanilla is not "
                          "supported yet; use KISTLite)");
    o->scheduler_socket_aware = chosen;
  }

  if (o->testing_enable_conn_bw_event && !o->testing_tor_network) {
    *err_out = pc_strdup("TestingEnableConnBwEvent may only be changed in "
                         "testing Tor networks!");
    return -1;
  }
  if (o->testing_enable_cell_stats_event && !o->testing_tor_network) {
    *err_out = pc_strdup("TestingEnableCellStatsEvent may only be changed "
                         "in testing Tor networks!");
    return -1;
  }
  if (((const measureme_options_t *)options_module(
           o, &measureme_conf_module))->garbage_answers &&
      !o->testing_tor_network) {
    *err_out = pc_strdup("__MeasureMeGarbageAnswers may only be set in "
                         "testing Tor networks");
    return -1;
  }
  if (o->testing_tor_network && o->dir_authorities.n == 0) {
    *err_out = pc_strdup("TestingTorNetwork requires DirAuthority lines "
                         "naming the test network's authorities (pctor "
                         "never publishes to the public Tor network's "
                         "authorities in a test). Failing.");
    return -1;
  }

  /* Address: as tor 0.4.5+, up to two lines, one per family; a host
   * name is resolved per family when the descriptor is made. tor finds
   * two addresses of one family only when it looks its address up (and
   * then publishes none); pctor refuses the literals here. */
  memset(&o->address_ip, 0, sizeof(o->address_ip));
  memset(&o->address_ip6, 0, sizeof(o->address_ip6));
  o->address_ip.family = o->address_ip6.family = AF_UNSPEC;
  if (o->address.n > 2)
    return option_error(err_out, options_find("Address"), ctx,
                        "more than two Address lines; give at most one "
                        "IPv4 and one IPv6 address (or host name)");
  for (int i = 0; i < o->address.n; i++) {
    char *e = NULL;
    pc_addr_t ip;
    if (check_host(o->address.v[i], &ip, &e) < 0) {
      log_bug("Address refused after it was checked: %s", e);
      free(e);
      continue;
    }
    pc_addr_t *slot = ip.family == AF_INET    ? &o->address_ip
                      : ip.family == AF_INET6 ? &o->address_ip6
                                              : NULL;
    if (!slot)
      continue; /* a host name */
    if (slot->family != AF_UNSPEC) {
      char *m = pc_asprintf("two %s Address lines ('%s' and '%s'); only "
                            "one per address family is allowed",
                            ip.family == AF_INET ? "IPv4" : "IPv6",
                            o->address.v[0], o->address.v[i]);
      option_error(err_out, options_find("Address"), ctx, m);
      free(m);
      return -1;
    }
    *slot = ip;
  }

  /* The modules' own rules. */
  for (size_t mi = 1; mi < N_MODULES; mi++) {
    const conf_module_t *m = modules[mi];
    const conf_var_t *bad = NULL;
    char *msg = NULL;
    if (m->validate &&
        m->validate(o->mod_objs_[mi], o->set_ + gi_base(mi), &msg,
                    &bad) < 0) {
      if (bad)
        option_error(err_out, bad, ctx, msg);
      else
        *err_out = pc_asprintf("%s. Failing.", msg);
      free(msg);
      return -1;
    }
  }
  return 0;
}

int
options_from_lines(const conf_line_t *file_lines,
                   const conf_line_t *cmdline_lines, const char *cwd,
                   options_t **out, char **err_out)
{
  *out = NULL;
  *err_out = NULL;
  options_t *o = options_new();
  size_t n = options_count();
  parse_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.base.cwd = cwd;
  ctx.where = pc_calloc(n ? n : 1, sizeof(*ctx.where));
  conf_line_t *lines = NULL;
  var_ref_t r;
  for (size_t i = 0; ref_at(i, &r) == 0; i++)
    if (assign_default(o, &r, &ctx) < 0) {
      *err_out = pc_asprintf("Internal error: bad default for %s",
                             r.var->name);
      goto err;
    }
  lines = merge_lines(file_lines, cmdline_lines);
  for (const conf_line_t *l = lines; l; l = l->next)
    if (assign_line(o, l, &ctx, err_out) < 0)
      goto err;
  if (validate(o, &ctx, err_out) < 0)
    goto err;
  conf_lines_free(lines);
  free(ctx.where);
  *out = o;
  return 0;
err:
  conf_lines_free(lines);
  free(ctx.where);
  options_free(o);
  return -1;
}

/* The defaults file's lines without those for keys the torrc sets, then
 * the torrc's lines (tor: the torrc overrides its defaults file). */
static conf_line_t *
merge_defaults(const conf_line_t *defaults, const conf_line_t *file)
{
  conf_line_t *merged = conf_lines_dup(defaults);
  for (const conf_line_t *f = file; f; f = f->next)
    remove_key(&merged, f->key);
  conf_line_t **tail = &merged;
  while (*tail)
    tail = &(*tail)->next;
  *tail = conf_lines_dup(file);
  return merged;
}

int
options_from_sources(const conf_line_t *defaults_lines,
                     const conf_line_t *file_lines,
                     const conf_line_t *cmdline_lines, const char *cwd,
                     options_t **out, char **err_out)
{
  conf_line_t *merged = merge_defaults(defaults_lines, file_lines);
  int r = options_from_lines(merged, cmdline_lines, cwd, out, err_out);
  conf_lines_free(merged);
  return r;
}

int
options_read_files(const options_cmdline_t *cl, conf_line_t **defaults_out,
                   conf_line_t **file_out, char **err_out)
{
  conf_line_t *file_lines = NULL, *defaults_lines = NULL;
  char *err = NULL;
  int have_defaults = 0;
  *defaults_out = *file_out = NULL;
  *err_out = NULL;
  if (cl->defaults_torrc) {
    int r = conf_read_file(cl->defaults_torrc, cl->cwd, &defaults_lines,
                           &err);
    if (r == CONF_ERR_NOENT) {
      free(err); /* as tor: a missing defaults torrc is no error */
    } else if (r < 0) {
      *err_out = pc_asprintf("%s. Failing.", err);
      free(err);
      return -1;
    } else {
      have_defaults = 1;
    }
  }
  int r = conf_read_file(cl->torrc, cl->cwd, &file_lines, &err);
  if (r == CONF_ERR_NOENT &&
      (cl->torrc_is_default || cl->ignore_missing_torrc ||
       (cl->allow_missing_torrc && have_defaults))) {
    log_notice("Configuration file \"%s\" not present, using reasonable "
               "defaults.", cl->torrc);
    free(err);
  } else if (r < 0) {
    *err_out = pc_asprintf("%s. Failing.", err);
    free(err);
    conf_lines_free(defaults_lines);
    return -1;
  }
  *defaults_out = defaults_lines;
  *file_out = file_lines;
  return 0;
}

int
options_load(const options_cmdline_t *cl, options_t **out, char **err_out)
{
  conf_line_t *file_lines = NULL, *defaults_lines = NULL;
  *out = NULL;
  if (options_read_files(cl, &defaults_lines, &file_lines, err_out) < 0)
    return -1;
  int r = options_from_sources(defaults_lines, file_lines, cl->options,
                               cl->cwd, out, err_out);
  conf_lines_free(file_lines);
  conf_lines_free(defaults_lines);
  return r;
}

/* ---- the controller's changes (SETCONF, RESETCONF) ---- */

void
options_overlay_update(conf_line_t **overlay, const conf_line_t *changes)
{
  for (const conf_line_t *c = changes; c; c = c->next)
    remove_key(overlay, c->key);
  conf_line_t **tail = overlay;
  while (*tail)
    tail = &(*tail)->next;
  for (const conf_line_t *c = changes; c; c = c->next) {
    /* A key's CLEAR line goes before its values, and only once. */
    int seen = 0;
    for (const conf_line_t *p = changes; p != c; p = p->next)
      if (conf_key_eq(p->key, c->key))
        seen = 1;
    if (!seen) {
      *tail = conf_line_new(c->key, "", "the controller's SETCONF", 0);
      (*tail)->cmd = CONF_LINE_CLEAR;
      (*tail)->from_cmdline = 1;
      tail = &(*tail)->next;
    }
    if (c->cmd == CONF_LINE_CLEAR || !*c->value)
      continue;
    *tail = conf_line_new(c->key, c->value, "the controller's SETCONF", 0);
    (*tail)->cmd = CONF_LINE_APPEND;
    (*tail)->from_cmdline = 1;
    tail = &(*tail)->next;
  }
}

conf_line_t *
options_overlay_cmdline(const conf_line_t *cmdline, const conf_line_t *overlay)
{
  /* The controller's keys replace what the command line said for them, as
   * a torrc's keys replace its defaults file's. */
  return merge_defaults(cmdline, overlay);
}

/* access() as pctor will open the file: with the effective and
 * file-system ids (which User may have changed, see privdrop.h), not the
 * real ones. */
static int
can_access(const char *path, int mode)
{
  return faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

/* Whether path can be written by us: the file itself if it exists, else
 * its directory (which must exist). Returns 0 or -1 with *why. */
static int
check_writable_file(const char *path, char **why)
{
  if (can_access(path, F_OK) == 0) {
    if (can_access(path, W_OK) < 0) {
      *why = pc_asprintf("\"%s\" is not writable: %s", path,
                         strerror(errno));
      return -1;
    }
    return 0;
  }
  char *dir = pc_strdup(path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  else {
    free(dir);
    dir = pc_strdup(".");
  }
  int r = 0;
  if (can_access(dir, W_OK | X_OK) < 0) {
    *why = pc_asprintf("cannot create \"%s\": directory \"%s\": %s", path,
                       dir, strerror(errno));
    r = -1;
  }
  free(dir);
  return r;
}

int
options_check_startable(const options_t *opts, char **err_out)
{
  char *why = NULL;
  /* Log lines "SEV file PATH". */
  for (int i = 0; i < opts->logs.n; i++) {
    const char *f = strstr(opts->logs.v[i], " file ");
    if (!f)
      continue;
    f += 6;
    while (*f == ' ' || *f == '\t')
      f++;
    if (check_writable_file(f, &why) < 0) {
      *err_out = pc_asprintf("Log \"%s\": %s", opts->logs.v[i], why);
      free(why);
      return -1;
    }
  }
  if (opts->sandbox && !sandbox_is_supported()) {
    *err_out = pc_strdup("Sandbox 1 is not supported in this build (pctor "
                         "was built without libseccomp; on Debian: "
                         "apt-get install libseccomp-dev, then configure "
                         "and build again)");
    return -1;
  }
  /* FamilyId: every family's key must be there (read now, dropped). */
  if (opts->family_ids.n > 0) {
    char *dir = options_family_key_directory(opts);
    int r = family_keys_check(dir, (const char *const *)opts->family_ids.v,
                              opts->family_ids.n, err_out);
    free(dir);
    if (r < 0)
      return -1;
  }
  /* OfflineMasterKey: the relay runs on a signing key and certificate
   * copied into the key directory; without them it refuses to start, and
   * so it does when the certificate is not the master identity's, is for
   * another key, or has expired: checked here as at start. */
  if (opts->offline_master_key) {
    static const char *const signing[] = {"ed25519_signing_secret_key",
                                          "ed25519_signing_cert"};
    for (size_t i = 0; i < 2; i++) {
      char *f = opts->key_directory
                    ? pc_asprintf("%s/%s", opts->key_directory, signing[i])
                    : pc_asprintf("%s/keys/%s", opts->data_directory,
                                  signing[i]);
      int r = can_access(f, R_OK);
      if (r < 0)
        *err_out = pc_asprintf("OfflineMasterKey is set but %s cannot be "
                               "read (%s): make a signing key with --keygen "
                               "where the master key is and copy "
                               "ed25519_signing_secret_key and "
                               "ed25519_signing_cert here", f,
                               strerror(errno));
      free(f);
      if (r < 0)
        return -1;
    }
    router_keys_config_t kc;
    router_keys_config_init(&kc);
    kc.key_directory = opts->key_directory;
    kc.offline_master_key = 1;
    if (router_keys_check_offline(opts->data_directory, &kc, time(NULL),
                                  err_out) < 0)
      return -1;
  }
  /* ConnLimit, as tor: the hard descriptor limit must allow it. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
      rl.rlim_max < (rlim_t)opts->conn_limit) {
    *err_out = pc_asprintf("ConnLimit is %d, but at most %llu file "
                           "descriptors are available (ulimit -H -n)",
                           opts->conn_limit,
                           (unsigned long long)rl.rlim_max);
    return -1;
  }
  /* An exit reads its resolver's nameservers at start-up. */
  if (opts->is_exit) {
    const char *rc = opts->server_dns_resolv_conf_file
                         ? opts->server_dns_resolv_conf_file
                         : "/etc/resolv.conf";
    if (can_access(rc, R_OK) < 0) {
      *err_out = pc_asprintf("ServerDNSResolvConfFile \"%s\" cannot be "
                             "read: %s", rc, strerror(errno));
      return -1;
    }
  }
  if (opts->pid_file && check_writable_file(opts->pid_file, &why) < 0) {
    *err_out = pc_asprintf("PidFile: %s", why);
    free(why);
    return -1;
  }
  /* DataDirectory: usable if it exists, else creatable. */
  const char *dd = opts->data_directory;
  struct stat st;
  if (stat(dd, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      *err_out = pc_asprintf("DataDirectory \"%s\" is not a directory",
                             dd);
      return -1;
    }
    if (can_access(dd, R_OK | W_OK | X_OK) < 0) {
      *err_out = pc_asprintf("DataDirectory \"%s\" is not accessible: %s",
                             dd, strerror(errno));
      return -1;
    }
    if (st.st_uid != geteuid() && geteuid() != 0) {
      *err_out = pc_asprintf("DataDirectory \"%s\" is owned by another "
                             "user (uid %u)", dd, (unsigned)st.st_uid);
      return -1;
    }
  } else if (check_writable_file(dd, &why) < 0) {
    *err_out = pc_asprintf("DataDirectory: %s", why);
    free(why);
    return -1;
  }
  return 0;
}

int
options_state_save_interval(const options_t *o)
{
  return o->state_save_interval * (o->avoid_disk_writes ? 6 : 1);
}

int
options_warn_no_contact_info(const options_t *o)
{
  return o->or_ports.n > 0 && !o->contact_info &&
         o->publish_server_descriptor && !o->testing_tor_network;
}

void
options_advertised_bandwidth(const options_t *o, uint64_t *rate,
                             uint64_t *burst)
{
  uint64_t r = o->bandwidth_rate, b = o->bandwidth_burst;
  if (r > o->max_advertised_bandwidth)
    r = o->max_advertised_bandwidth;
  if (o->relay_bandwidth_rate && r > o->relay_bandwidth_rate)
    r = o->relay_bandwidth_rate;
  if (o->relay_bandwidth_burst && b > o->relay_bandwidth_burst)
    b = o->relay_bandwidth_burst;
  *rate = r;
  *burst = b;
}

int
options_dump_config(FILE *out, const struct options_cmdline_t *cl,
                     const options_t *o, char **err_out)
{
  const char *how = cl->command_arg && *cl->command_arg ? cl->command_arg
                                                        : "short";
  options_t *base = NULL;
  *err_out = NULL;
  if (!strcmp(how, "full")) {
    options_dump(out, o, NULL);
    return 0;
  }
  if (strcmp(how, "short") && strcmp(how, "non-builtin")) {
    *err_out = pc_asprintf("--dump-config: '%s' is not short, full or "
                           "non-builtin", how);
    return -1;
  }
  char *err = NULL;
  if (!strcmp(how, "short") && cl->defaults_torrc) {
    /* Short: what differs from the defaults torrc and built-in defaults. */
    conf_line_t *d = NULL;
    if (conf_read_file(cl->defaults_torrc, cl->cwd, &d, &err) == 0 &&
        options_from_lines(d, NULL, cl->cwd, &base, &err) == 0) {
      conf_lines_free(d);
    } else {
      conf_lines_free(d);
      PC_FREE(err);
    }
  }
  if (!base && options_from_lines(NULL, NULL, cl->cwd, &base, &err) < 0) {
    *err_out = err;
    return -1;
  }
  options_dump(out, o, base);
  options_free(base);
  return 0;
}

void
options_free_(options_t *o)
{
  if (!o)
    return;
  var_ref_t r;
  for (size_t i = 0; ref_at(i, &r) == 0; i++)
    conf_var_clear(obj_of(o, r.mi), r.var);
  for (size_t mi = 1; mi < N_MODULES; mi++)
    free(o->mod_objs_[mi]);
  free(o->mod_objs_);
  free(o->set_);
  free(o);
}

static void
copy_option(options_t *dst, const options_t *src, const var_ref_t *r)
{
  conf_var_copy(obj_of(dst, r->mi), obj_of(src, r->mi), r->var);
  dst->set_[r->gi] = src->set_[r->gi];
}

int
options_keep_non_reloadable(const options_t *old, options_t *new_opts)
{
  int kept = 0;
  var_ref_t r;
  for (size_t i = 0; ref_at(i, &r) == 0; i++) {
    if (r.var->reloadable || options_equal(old, new_opts, r.var))
      continue;
    log_warn("Option '%s' cannot be changed while pctor is running; "
             "keeping the old value until pctor is restarted.",
             r.var->name);
    copy_option(new_opts, old, &r);
    kept++;
  }
  /* A kept TestingTorNetwork 1 keeps its own authorities: a test network
   * must never fall back to the public ones. */
  if (new_opts->testing_tor_network && new_opts->dir_authorities.n == 0) {
    log_warn("TestingTorNetwork is still 1, so the DirAuthority lines are "
             "kept until pctor is restarted.");
    find_ref("DirAuthority", &r);
    copy_option(new_opts, old, &r);
  }
  /* A default that depends on a kept option follows the kept value. */
  if (!options_is_set(new_opts, "ExtendAllowPrivateAddresses"))
    new_opts->extend_allow_private_addresses = new_opts->testing_tor_network;
  if (!options_is_set(new_opts, "AssumeReachable"))
    new_opts->assume_reachable = new_opts->testing_tor_network;
  return kept;
}

char *
options_non_reloadable_changes(const options_t *old, const options_t *new_opts)
{
  char *names = NULL;
  var_ref_t r;
  for (size_t i = 0; ref_at(i, &r) == 0; i++) {
    if (r.var->reloadable || options_equal(old, new_opts, r.var))
      continue;
    char *t = pc_asprintf("%s%s%s", names ? names : "", names ? ", " : "",
                          r.var->name);
    free(names);
    names = t;
  }
  return names;
}

/* ---- --dump-config ---- */

static int
cmp_refs(const void *a, const void *b)
{
  const var_ref_t *ra = a, *rb = b;
  return strcasecmp(ra->var->name, rb->var->name);
}

void
options_dump(FILE *out, const options_t *o, const options_t *base)
{
  size_t n = options_count();
  var_ref_t *refs = pc_calloc(n ? n : 1, sizeof(*refs));
  for (size_t i = 0; i < n; i++)
    ref_at(i, &refs[i]);
  qsort(refs, n, sizeof(*refs), cmp_refs);
  for (size_t i = 0; i < n; i++) {
    if (base && options_equal(o, base, refs[i].var))
      continue;
    /* Unset options without a default mean "automatic": nothing to say
     * (their zero or -1 is no torrc value). */
    if (!o->set_[refs[i].gi] && !refs[i].var->default_str)
      continue;
    conf_strlist_t vals = {0, NULL};
    conf_var_format(obj_of(o, refs[i].mi), refs[i].var, &vals);
    for (int k = 0; k < vals.n; k++)
      fprintf(out, "%s %s\n", refs[i].var->name, vals.v[k]);
    conf_strlist_clear(&vals);
  }
  free(refs);
}

/* ---- the command line ---- */

/* Every flag tor 0.4.9 takes on its command line. A flag that pctor does
 * not implement has a message saying so, so that it is refused clearly
 * instead of being read as an option that lacks its value. */
typedef struct {
  conf_flag_t flag;
  options_command_t command; /* OPTIONS_CMD_RUN: not an action */
  const char *unsupported;   /* non-NULL: refused with this reason */
} cmdline_flag_t;

static const cmdline_flag_t cmdline_table[] = {
  {{"-f", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--torrc-file", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--defaults-torrc", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--ignore-missing-torrc", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--allow-missing-torrc", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--quiet", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--hush", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--verify-config", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_VERIFY_CONFIG, NULL},
  {{"--version", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_VERSION, NULL},
  {{"--help", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_HELP, NULL},
  {{"-h", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_HELP, NULL},
  {{"--list-options", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIST_OPTIONS, NULL},
  {{"--list-torrc-options", CONF_FLAG_NO_VALUE},
   OPTIONS_CMD_LIST_TORRC_OPTIONS, NULL},
  {{"--list-fingerprint", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_LIST_FINGERPRINT,
   NULL},
  {{"--dump-config", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_DUMP_CONFIG, NULL},
  {{"--list-modules", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIST_MODULES, NULL},
  {{"--library-versions", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_LIBRARY_VERSIONS,
   NULL},
  {{"--hash-password", CONF_FLAG_VALUE}, OPTIONS_CMD_HASH_PASSWORD, NULL},
  {{"--list-deprecated-options", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "pctor has no deprecated options"},
  {{"--keygen", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_KEYGEN, NULL},
  {{"--newpass", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--no-passphrase", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--passphrase-fd", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--key-expiration", CONF_FLAG_OPT_VALUE}, OPTIONS_CMD_KEY_EXPIRATION,
   NULL},
  {{"--format", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN, NULL},
  {{"--keygen-family", CONF_FLAG_VALUE}, OPTIONS_CMD_KEYGEN_FAMILY, NULL},
  {{"--nt-service", CONF_FLAG_NO_VALUE}, OPTIONS_CMD_RUN,
   "Windows services are not supported"},
  {{"--service", CONF_FLAG_VALUE}, OPTIONS_CMD_RUN,
   "Windows services are not supported"},
  {{NULL, 0}, OPTIONS_CMD_RUN, NULL},
};

#define N_CMDLINE_FLAGS (sizeof(cmdline_table) / sizeof(cmdline_table[0]))

static const cmdline_flag_t *
cmdline_flag_find(const char *name)
{
  for (size_t i = 0; cmdline_table[i].flag.name; i++)
    if (!strcmp(cmdline_table[i].flag.name, name))
      return &cmdline_table[i];
  return NULL;
}

int
options_cmdline_parse(int argc, char *const *argv, const char *default_torrc,
                      options_cmdline_t **out, char **err_out)
{
  conf_line_t *flags = NULL, *opts = NULL;
  conf_flag_t lex_flags[N_CMDLINE_FLAGS];
  for (size_t i = 0; i < N_CMDLINE_FLAGS; i++)
    lex_flags[i] = cmdline_table[i].flag;
  *out = NULL;
  if (conf_lex_cmdline(argc, argv, lex_flags, &flags, &opts, err_out) < 0)
    return -1;
  options_cmdline_t *cl = pc_zalloc(sizeof(*cl));
  cl->options = opts;
  cl->cwd = getcwd(NULL, 0);
  cl->command_arg = pc_strdup("");
  cl->passphrase_fd = -1;
  const char *torrc = NULL, *defaults = NULL;
  for (const conf_line_t *f = flags; f; f = f->next) {
    const cmdline_flag_t *cf = cmdline_flag_find(f->key);
    if (cf->unsupported) {
      *err_out = pc_asprintf("%s: %s", f->key, cf->unsupported);
      goto err;
    }
    if (cf->command != OPTIONS_CMD_RUN) {
      cl->command = cf->command;
      cl->verify_config |= cf->command == OPTIONS_CMD_VERIFY_CONFIG;
      cl->show_version |= cf->command == OPTIONS_CMD_VERSION;
      cl->show_help |= cf->command == OPTIONS_CMD_HELP;
      cl->list_options |= cf->command == OPTIONS_CMD_LIST_OPTIONS;
      free(cl->command_arg);
      cl->command_arg = pc_strdup(f->value);
      continue;
    }
    if (!strcmp(f->key, "-f") || !strcmp(f->key, "--torrc-file")) {
      if (torrc) {
        *err_out = pc_strdup("-f may be given only once");
        goto err;
      }
      if (!*f->value) {
        *err_out = pc_strdup("-f needs a file name");
        goto err;
      }
      torrc = f->value;
    } else if (!strcmp(f->key, "--defaults-torrc")) {
      if (defaults) {
        *err_out = pc_strdup("--defaults-torrc may be given only once");
        goto err;
      }
      if (!*f->value) {
        *err_out = pc_strdup("--defaults-torrc needs a file name");
        goto err;
      }
      defaults = f->value;
    } else if (!strcmp(f->key, "--ignore-missing-torrc")) {
      cl->ignore_missing_torrc = 1;
    } else if (!strcmp(f->key, "--allow-missing-torrc")) {
      cl->allow_missing_torrc = 1;
    } else if (!strcmp(f->key, "--hush")) {
      cl->quiet = cl->quiet > 1 ? cl->quiet : 1;
    } else if (!strcmp(f->key, "--quiet")) {
      cl->quiet = 2;
    } else if (!strcmp(f->key, "--newpass")) {
      cl->newpass = 1;
    } else if (!strcmp(f->key, "--no-passphrase")) {
      cl->no_passphrase = 1;
    } else if (!strcmp(f->key, "--passphrase-fd")) {
      char *end = NULL;
      long fd = strtol(f->value, &end, 10);
      if (!*f->value || *end || fd < 0 || fd > 65535) {
        *err_out = pc_asprintf("--passphrase-fd: '%s' is not a file "
                               "descriptor number", f->value);
        goto err;
      }
      cl->passphrase_fd = (int)fd;
    } else if (!strcmp(f->key, "--format")) {
      if (strcmp(f->value, "iso8601") && strcmp(f->value, "timestamp")) {
        *err_out = pc_asprintf("--format: '%s' is not iso8601 or timestamp",
                               f->value);
        goto err;
      }
      free(cl->key_format);
      cl->key_format = pc_strdup(f->value);
    }
  }
  if (cl->no_passphrase && cl->passphrase_fd >= 0) {
    /* (tor's words) */
    *err_out = pc_strdup("--no-passphrase specified with --passphrase-fd!");
    goto err;
  }
  /* As before actions were one field: help, then version win. */
  if (cl->show_help)
    cl->command = OPTIONS_CMD_HELP;
  else if (cl->show_version)
    cl->command = OPTIONS_CMD_VERSION;
  if (!torrc) {
    torrc = default_torrc;
    cl->torrc_is_default = 1;
  }
  if (torrc[0] == '/' || !cl->cwd)
    cl->torrc = pc_strdup(torrc);
  else
    cl->torrc = pc_asprintf("%s/%s", cl->cwd, torrc);
  if (!defaults)
    cl->defaults_torrc = pc_asprintf("%s-defaults", default_torrc);
  else if (defaults[0] == '/' || !cl->cwd)
    cl->defaults_torrc = pc_strdup(defaults);
  else
    cl->defaults_torrc = pc_asprintf("%s/%s", cl->cwd, defaults);
  conf_lines_free(flags);
  *out = cl;
  return 0;
err:
  conf_lines_free(flags);
  options_cmdline_free(cl);
  return -1;
}

void
options_cmdline_free_(options_cmdline_t *cl)
{
  if (!cl)
    return;
  free(cl->torrc);
  free(cl->defaults_torrc);
  free(cl->command_arg);
  free(cl->key_format);
  free(cl->cwd);
  conf_lines_free(cl->options);
  free(cl);
}

/* ---- --list-options and --help ---- */

/* Print text wrapped at width columns, each line indented by indent. */
static void
print_wrapped(FILE *out, const char *text, int indent, int width)
{
  const char *p = text;
  while (*p) {
    while (*p == ' ')
      p++;
    int col = indent;
    const char *line = p, *brk = NULL;
    while (*p && (col < width || !brk)) {
      if (*p == ' ')
        brk = p;
      p++;
      col++;
    }
    if (!*p)
      brk = p;
    fprintf(out, "%*s%.*s\n", indent, "", (int)(brk - line), line);
    p = brk;
  }
}

void
options_list_names(FILE *out)
{
  for (size_t i = 0; i < options_count(); i++)
    fprintf(out, "%s\n", options_var(i)->name);
}

void
options_list(FILE *out)
{
  for (size_t i = 0; i < options_count(); i++) {
    const option_def_t *d = options_var(i);
    fprintf(out, "%s %s\n", d->name, d->syntax);
    char *meta = pc_asprintf("Default: %s. Changes on SIGHUP: %s.",
                             d->default_doc,
                             d->reloadable ? "yes" : "no (restart pctor)");
    print_wrapped(out, meta, 4, 76);
    free(meta);
    print_wrapped(out, d->help, 4, 76);
  }
}

void
options_usage(FILE *out, const char *progname, const char *torrc)
{
  fprintf(out,
          "Usage: %s [-f FILE] [--defaults-torrc FILE] [--verify-config] "
          "[--OPTION VALUE]...\n"
          "A Tor relay.\n\n"
          "  -f, --torrc-file FILE  read the configuration from FILE\n"
          "                     (default: %s)\n"
          "  --defaults-torrc FILE  read default option values from FILE\n"
          "                     (default: %s-defaults; may be missing)\n"
          "  --ignore-missing-torrc  read a missing torrc as empty\n"
          "  --allow-missing-torrc  the same, if the defaults torrc "
          "exists\n"
          "  --verify-config    check the configuration, print "
          "\"Configuration was valid\"\n"
          "                     and exit (status 1 if it is not valid)\n"
          "  --list-options     list every torrc option with its syntax "
          "and default\n"
          "  --list-torrc-options  list the names of the torrc options\n"
          "  --dump-config [short|full|non-builtin]  print the "
          "configuration:\n"
          "                     what differs from the defaults, or all\n"
          "  --list-modules     list the optional parts and whether they "
          "are built in\n"
          "  --library-versions  print the versions of the libraries\n"
          "  --list-fingerprint [rsa|ed25519]  print the nickname and "
          "fingerprint\n"
          "                     (the keys are made if they do not exist)\n"
          "  --hash-password PASSWORD  print PASSWORD hashed for "
          "HashedControlPassword\n"
          "  --keygen [--newpass] [--no-passphrase | --passphrase-fd N]\n"
          "                     make a new signing key and certificate "
          "from the master\n"
          "                     identity key (for OfflineMasterKey)\n"
          "  --key-expiration sign [--format iso8601|timestamp]\n"
          "                     print when the signing certificate "
          "expires\n"
          "  --keygen-family NAME  make a family key NAME.secret_family_key "
          "and\n"
          "                     print its FamilyId line\n"
          "  --hush             log only warnings and errors to the "
          "console\n"
          "  --quiet            log nothing to the console\n"
          "  --version          print the version and exit\n"
          "  -h, --help         print this help and exit\n"
          "  --OPTION VALUE     set a torrc option, replacing the file's "
          "lines for it\n"
          "                     (for example --ORPort 9001)\n"
          "  --+OPTION VALUE    add a line to a repeatable option such as "
          "Log\n"
          "  --/OPTION          remove the file's lines for OPTION\n\n"
          "See pctor(1) for the options and signals.\n",
          progname, torrc, torrc);
}

/* ---- GETCONF and GETINFO config/names (feature/control) ---- */

int
options_get_values(const options_t *o, const char *name, char **canonical,
                   char ***values, int *n)
{
  var_ref_t r;
  *values = NULL;
  *n = 0;
  if (find_ref(name, &r) < 0)
    return -1;
  *canonical = pc_strdup(r.var->name);
  conf_strlist_t l = {0, NULL};
  conf_var_format(obj_of(o, r.mi), r.var, &l);
  /* An option without a value shows its default, as "ORPort 0". */
  if (l.n == 0 && r.var->default_str)
    conf_strlist_add(&l, r.var->default_str);
  *values = l.v;
  *n = l.n;
  return 0;
}

const char *
options_type_name(const option_def_t *def)
{
  switch (def->type) {
  case CONF_TYPE_BOOL: return "Boolean";
  case CONF_TYPE_AUTOBOOL: return "Autobool";
  case CONF_TYPE_INT: return "Integer";
  case CONF_TYPE_INTERVAL: return "Interval";
  case CONF_TYPE_MSEC_INTERVAL: return "TimeMsecInterval";
  case CONF_TYPE_MEMUNIT:
  case CONF_TYPE_BANDWIDTH: return "DataSize";
  case CONF_TYPE_DOUBLE: return "Float";
  case CONF_TYPE_PATH: return "Filename";
  case CONF_TYPE_LINELIST: return "LineList";
  case CONF_TYPE_STRING:
  case CONF_TYPE_ENUM:
  case CONF_TYPE_CUSTOM:
    break;
  }
  return conf_var_is_multi(def) ? "LineList" : "String";
}
