/* SPDX-License-Identifier: BSD-3-Clause */
/* control_proto.c -- the control protocol's text syntax (control_proto.h).
 *
 * Commands are found by scanning a pulled-up prefix of the input of at most
 * max_len bytes, so a controller that sends a line without end (or a data
 * block without its "." line) costs at most max_len bytes before the
 * caller closes it. Nothing is removed from the input until a whole
 * command has arrived.
 */
#include "feature/control/control_proto.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/malloc/alloc.h"

void
control_cmd_clear(control_cmd_t *cmd)
{
  free(cmd->keyword);
  free(cmd->args);
  free(cmd->data);
  memset(cmd, 0, sizeof(*cmd));
}

/* Length of the line at p (of n bytes) without its LF/CRLF, and in
 * *next the offset after the LF; -1 when no LF is in the n bytes. */
static long
line_end(const char *p, size_t n, size_t *next)
{
  const char *nl = memchr(p, '\n', n);
  if (!nl)
    return -1;
  size_t len = (size_t)(nl - p);
  *next = len + 1;
  if (len > 0 && p[len - 1] == '\r')
    len--;
  return (long)len;
}

int
control_proto_take_cmd(buf_t *in, size_t max_len, control_cmd_t *cmd)
{
  memset(cmd, 0, sizeof(*cmd));
  size_t avail = buf_datalen(in);
  if (avail == 0)
    return CONTROL_TAKE_NEED_MORE;
  size_t scan = avail < max_len ? avail : max_len;
  const char *p = (const char *)buf_pullup(in, scan);
  size_t next = 0;
  long l0 = line_end(p, scan, &next);
  if (l0 < 0)
    return scan >= max_len ? CONTROL_TAKE_TOO_LONG : CONTROL_TAKE_NEED_MORE;
  const char *line = p;
  size_t len = (size_t)l0;
  int has_data = len > 0 && line[0] == '+';
  size_t total = next;
  char *data = NULL;
  if (has_data) {
    /* Find the "." line; collect the lines before it, unstuffed. */
    size_t cap = 0, dlen = 0;
    size_t off = next;
    for (;;) {
      size_t nx = 0;
      long dl = line_end(p + off, scan - off, &nx);
      if (dl < 0) {
        free(data);
        return scan >= max_len ? CONTROL_TAKE_TOO_LONG
                               : CONTROL_TAKE_NEED_MORE;
      }
      const char *d = p + off;
      off += nx;
      if (dl == 1 && d[0] == '.')
        break;
      if (dl > 0 && d[0] == '.') {
        d++;
        dl--;
      }
      if (dlen + (size_t)dl + 2 > cap) {
        cap = (dlen + (size_t)dl + 2) * 2;
        data = pc_realloc(data, cap);
      }
      memcpy(data + dlen, d, (size_t)dl);
      dlen += (size_t)dl;
      data[dlen++] = '\n';
      data[dlen] = '\0';
    }
    total = off;
    if (!data)
      data = pc_strdup("");
    line++;
    len--;
  }
  size_t kw = 0;
  while (kw < len && line[kw] != ' ' && line[kw] != '\t')
    kw++;
  cmd->keyword = pc_strndup(line, kw);
  for (char *c = cmd->keyword; *c; c++)
    *c = (char)toupper((unsigned char)*c);
  size_t a = kw;
  while (a < len && (line[a] == ' ' || line[a] == '\t'))
    a++;
  cmd->args = pc_strndup(line + a, len - a);
  cmd->data = data;
  cmd->has_data = has_data;
  buf_drain(in, total);
  return CONTROL_TAKE_OK;
}

char *
control_proto_unquote(const char *s, size_t *len_out, const char **end)
{
  if (*s != '"')
    return NULL;
  size_t cap = strlen(s) + 1, n = 0;
  char *out = pc_malloc(cap);
  const char *p = s + 1;
  for (;;) {
    char c = *p;
    if (c == '\0') {
      free(out);
      return NULL;
    }
    if (c == '"') {
      p++;
      break;
    }
    if (c != '\\') {
      out[n++] = c;
      p++;
      continue;
    }
    p++;
    c = *p;
    switch (c) {
    case 'n': out[n++] = '\n'; p++; break;
    case 'r': out[n++] = '\r'; p++; break;
    case 't': out[n++] = '\t'; p++; break;
    case '\\': case '"': case '\'': out[n++] = c; p++; break;
    default:
      if (c >= '0' && c <= '7') {
        int v = 0, k = 0;
        while (k < 3 && p[k] >= '0' && p[k] <= '7')
          v = v * 8 + (p[k++] - '0');
        if (v > 255) {
          free(out);
          return NULL;
        }
        out[n++] = (char)v;
        p += k;
      } else {
        free(out);
        return NULL;
      }
    }
  }
  out[n] = '\0';
  if (len_out)
    *len_out = n;
  if (end)
    *end = p;
  return out;
}

char *
control_proto_quote(const char *s)
{
  size_t cap = strlen(s) * 4 + 3, n = 0;
  char *out = pc_malloc(cap);
  out[n++] = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': case '\\':
      out[n++] = '\\';
      out[n++] = (char)*p;
      break;
    case '\n': out[n++] = '\\'; out[n++] = 'n'; break;
    case '\r': out[n++] = '\\'; out[n++] = 'r'; break;
    case '\t': out[n++] = '\\'; out[n++] = 't'; break;
    default:
      if (*p < 0x20 || *p >= 0x7f) {
        snprintf(out + n, 5, "\\%03o", *p);
        n += 4;
      } else {
        out[n++] = (char)*p;
      }
    }
  }
  out[n++] = '"';
  out[n] = '\0';
  return out;
}

char *
control_proto_next_arg(const char **pp)
{
  const char *p = *pp;
  while (*p == ' ' || *p == '\t')
    p++;
  if (!*p) {
    *pp = p;
    return NULL;
  }
  const char *start = p;
  while (*p && *p != ' ' && *p != '\t') {
    if (*p == '"') {
      const char *end = NULL;
      char *tmp = control_proto_unquote(p, NULL, &end);
      if (!tmp) { /* unterminated: the rest is the argument */
        p += strlen(p);
        break;
      }
      free(tmp);
      p = end;
    } else {
      p++;
    }
  }
  *pp = p;
  return pc_strndup(start, (size_t)(p - start));
}

int
control_proto_kv(const char *arg, char **key, char **value)
{
  const char *eq = strchr(arg, '=');
  *value = NULL;
  if (!eq) {
    *key = pc_strdup(arg);
    return 0;
  }
  *key = pc_strndup(arg, (size_t)(eq - arg));
  if (eq[1] == '"') {
    const char *end = NULL;
    *value = control_proto_unquote(eq + 1, NULL, &end);
    if (!*value || *end) {
      free(*value);
      *value = NULL;
      PC_FREE(*key);
      return -1;
    }
  } else {
    *value = pc_strdup(eq + 1);
  }
  return 0;
}

void
control_proto_add_line(buf_t *out, int code, char sep, const char *text)
{
  char head[8];
  snprintf(head, sizeof(head), "%03d%c", code, sep);
  buf_add(out, head, 4);
  buf_add(out, text, strlen(text));
  buf_add(out, "\r\n", 2);
}

void
control_proto_add_data(buf_t *out, const char *data)
{
  const char *p = data;
  while (*p) {
    size_t n = strcspn(p, "\n");
    size_t len = n;
    if (len > 0 && p[len - 1] == '\r')
      len--;
    if (p[0] == '.')
      buf_add(out, ".", 1);
    buf_add(out, p, len);
    buf_add(out, "\r\n", 2);
    p += n;
    if (*p == '\n')
      p++;
  }
  buf_add(out, ".\r\n", 3);
}

int
control_proto_eq(const char *s, const char *k)
{
  for (; *s && *k; s++, k++)
    if (toupper((unsigned char)*s) != toupper((unsigned char)*k))
      return 0;
  return *s == '\0' && *k == '\0';
}

int
control_proto_parse_kvs(const char *args, control_kv_t **out, int *n,
                        char **err_out)
{
  const char *p = args;
  char *a;
  int cap = 0;
  *out = NULL;
  *n = 0;
  while ((a = control_proto_next_arg(&p))) {
    char *key = NULL, *value = NULL;
    int bad = control_proto_kv(a, &key, &value) < 0;
    if (bad || !*key) {
      *err_out = bad ? pc_asprintf("bad quoted value in %s", a)
                     : pc_asprintf("an argument without a key: %s", a);
      free(key);
      free(value);
      free(a);
      control_kvs_free(*out, *n);
      *out = NULL;
      *n = 0;
      return -1;
    }
    free(a);
    if (*n == cap) {
      cap = cap ? cap * 2 : 4;
      *out = pc_realloc(*out, (size_t)cap * sizeof(**out));
    }
    (*out)[*n].key = key;
    (*out)[*n].value = value;
    (*n)++;
  }
  return 0;
}

void
control_kvs_free(control_kv_t *kvs, int n)
{
  for (int i = 0; i < n; i++) {
    free(kvs[i].key);
    free(kvs[i].value);
  }
  free(kvs);
}

/* control-spec's stream reason names, indexed by RELAY_END reason. */
static const char *const stream_reason_names[] = {
    NULL,          "MISC",       "RESOLVEFAILED", "CONNECTREFUSED",
    "EXITPOLICY",  "DESTROY",    "DONE",          "TIMEOUT",
    "NOROUTE",     "HIBERNATING", "INTERNAL",     "RESOURCELIMIT",
    "CONNRESET",   "TORPROTOCOL", "NOTDIRECTORY"};

void
control_proto_stream_reason(char *out, size_t outlen, int reason,
                            int remote)
{
  char name[24];
  if (!outlen)
    return;
  out[0] = '\0';
  if (reason < 0)
    return;
  if (reason > 0 && (size_t)reason < sizeof(stream_reason_names) /
                                          sizeof(stream_reason_names[0]))
    snprintf(name, sizeof(name), "%s", stream_reason_names[reason]);
  else
    snprintf(name, sizeof(name), "UNKNOWN_%d", reason);
  if (remote)
    snprintf(out, outlen, " REASON=END REMOTE_REASON=%s", name);
  else
    snprintf(out, outlen, " REASON=%s", name);
}
