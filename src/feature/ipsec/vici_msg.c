/* SPDX-License-Identifier: BSD-3-Clause */
/* vici_msg.c -- VICI message elements, packets and segments (see
 * vici_msg.h for the wire format).
 *
 * Design:
 * - The builder appends straight into one growable array; each call first
 *   checks that the element is allowed where it is (list state, depth,
 *   lengths, total size) and on the first violation records a static error
 *   and ignores every later call, so an invalid message can never be sent.
 * - The parser runs twice over the input. The first pass (parse_scan) is
 *   the only one that looks at untrusted lengths: it checks every element
 *   against the bytes that remain, the nesting rules and the limits, and
 *   counts nodes and arena bytes. The second pass (parse_build) then walks
 *   input already known to be well-formed and fills exactly-sized arrays,
 *   so it needs no error paths and cannot overrun.
 * - Tree links are plain pointers into the node array (first child, last
 *   child for O(1) appends while building, next sibling).
 */
#include "feature/ipsec/vici_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes/bytes.h"
#include "lib/log/log.h"
#include "lib/malloc/alloc.h"
#include "lib/string/strbuf.h"

/* ---- builder ---- */

struct vici_builder_t {
  uint8_t *data;
  size_t len;
  size_t cap;
  int depth;
  int in_list;
  size_t n_elements;
  const char *err;
};

vici_builder_t *
vici_builder_new(void)
{
  vici_builder_t *b = pc_zalloc(sizeof(*b));
  b->cap = 256;
  b->data = pc_malloc(b->cap);
  return b;
}

void
vici_builder_free_(vici_builder_t *b)
{
  if (!b)
    return;
  /* Builders carry private keys (load-key): wipe them. */
  pc_memwipe(b->data, b->cap);
  free(b->data);
  free(b);
}

static void
builder_fail(vici_builder_t *b, const char *err)
{
  if (!b->err)
    b->err = err;
}

/* Reserve n more bytes; 0 on success, -1 (and the builder failed) when the
 * message would outgrow a segment. */
static int
builder_reserve(vici_builder_t *b, size_t n)
{
  if (b->err)
    return -1;
  if (n > VICI_SEGMENT_MAX || b->len + n > VICI_SEGMENT_MAX) {
    builder_fail(b, "message larger than a VICI segment");
    return -1;
  }
  if (++b->n_elements > VICI_ELEMENTS_MAX) {
    builder_fail(b, "too many elements in message");
    return -1;
  }
  if (b->len + n > b->cap) {
    size_t ncap = b->cap;
    while (ncap < b->len + n)
      ncap *= 2;
    uint8_t *nd = pc_malloc(ncap);
    memcpy(nd, b->data, b->len);
    pc_memwipe(b->data, b->cap);
    free(b->data);
    b->data = nd;
    b->cap = ncap;
  }
  return 0;
}

static int
name_ok(vici_builder_t *b, const char *name, size_t *nlen)
{
  if (b->err)
    return 0;
  if (!name) {
    builder_fail(b, "element name is NULL");
    return 0;
  }
  *nlen = strlen(name);
  if (*nlen > VICI_NAME_MAX) {
    builder_fail(b, "element name longer than 255 bytes");
    return 0;
  }
  return 1;
}

static void
put_name(vici_builder_t *b, uint8_t type, const char *name, size_t nlen)
{
  b->data[b->len++] = type;
  b->data[b->len++] = (uint8_t)nlen;
  memcpy(b->data + b->len, name, nlen);
  b->len += nlen;
}

static void
put_value(vici_builder_t *b, const void *value, size_t vlen)
{
  set_u16(b->data + b->len, (uint16_t)vlen);
  b->len += 2;
  if (vlen)
    memcpy(b->data + b->len, value, vlen);
  b->len += vlen;
}

void
vici_builder_begin_section(vici_builder_t *b, const char *name)
{
  size_t nlen;
  if (!name_ok(b, name, &nlen))
    return;
  if (b->in_list) {
    builder_fail(b, "section inside a list");
    return;
  }
  if (b->depth >= VICI_DEPTH_MAX) {
    builder_fail(b, "sections nested too deeply");
    return;
  }
  if (builder_reserve(b, 2 + nlen) < 0)
    return;
  put_name(b, VICI_SECTION_START, name, nlen);
  b->depth++;
}

void
vici_builder_end_section(vici_builder_t *b)
{
  if (b->err)
    return;
  if (b->in_list) {
    builder_fail(b, "section end inside a list");
    return;
  }
  if (b->depth == 0) {
    builder_fail(b, "section end without a section");
    return;
  }
  if (builder_reserve(b, 1) < 0)
    return;
  b->data[b->len++] = VICI_SECTION_END;
  b->depth--;
}

/* A value fits the encoding (16-bit length) and is there; else the
 * builder fails. */
static int
value_ok(vici_builder_t *b, const void *value, size_t len)
{
  if (len > VICI_VALUE_MAX) {
    builder_fail(b, "value longer than 65535 bytes");
    return 0;
  }
  if (!value && len) {
    builder_fail(b, "value is NULL");
    return 0;
  }
  return 1;
}

void
vici_builder_add(vici_builder_t *b, const char *key, const void *value,
                 size_t len)
{
  size_t nlen;
  if (!name_ok(b, key, &nlen))
    return;
  if (b->in_list) {
    builder_fail(b, "key/value inside a list");
    return;
  }
  if (!value_ok(b, value, len))
    return;
  if (builder_reserve(b, 2 + nlen + 2 + len) < 0)
    return;
  put_name(b, VICI_KEY_VALUE, key, nlen);
  put_value(b, value, len);
}

void
vici_builder_add_str(vici_builder_t *b, const char *key, const char *value)
{
  if (!value) {
    if (!b->err)
      builder_fail(b, "value is NULL");
    return;
  }
  vici_builder_add(b, key, value, strlen(value));
}

void
vici_builder_addf(vici_builder_t *b, const char *key, const char *fmt, ...)
{
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(tmp)) {
    if (!b->err)
      builder_fail(b, "formatted value too long");
    return;
  }
  vici_builder_add(b, key, tmp, (size_t)n);
}

void
vici_builder_begin_list(vici_builder_t *b, const char *name)
{
  size_t nlen;
  if (!name_ok(b, name, &nlen))
    return;
  if (b->in_list) {
    builder_fail(b, "list inside a list");
    return;
  }
  if (builder_reserve(b, 2 + nlen) < 0)
    return;
  put_name(b, VICI_LIST_START, name, nlen);
  b->in_list = 1;
}

void
vici_builder_add_item(vici_builder_t *b, const void *value, size_t len)
{
  if (b->err)
    return;
  if (!b->in_list) {
    builder_fail(b, "list item outside a list");
    return;
  }
  if (!value_ok(b, value, len))
    return;
  if (builder_reserve(b, 1 + 2 + len) < 0)
    return;
  b->data[b->len++] = VICI_LIST_ITEM;
  put_value(b, value, len);
}

void
vici_builder_add_item_str(vici_builder_t *b, const char *value)
{
  if (!value) {
    if (!b->err)
      builder_fail(b, "value is NULL");
    return;
  }
  vici_builder_add_item(b, value, strlen(value));
}

void
vici_builder_end_list(vici_builder_t *b)
{
  if (b->err)
    return;
  if (!b->in_list) {
    builder_fail(b, "list end without a list");
    return;
  }
  if (builder_reserve(b, 1) < 0)
    return;
  b->data[b->len++] = VICI_LIST_END;
  b->in_list = 0;
}

const uint8_t *
vici_builder_data(const vici_builder_t *b, size_t *len, const char **err)
{
  const char *e = b->err;
  if (!e && b->in_list)
    e = "list not closed";
  if (!e && b->depth)
    e = "section not closed";
  if (e) {
    if (err)
      *err = e;
    *len = 0;
    return NULL;
  }
  *len = b->len;
  return b->data;
}

/* ---- parser ---- */

struct vici_node_t {
  vici_node_type_t type;
  const char *name;
  const char *value;
  size_t value_len;
  vici_node_t *first;
  vici_node_t *last;
  vici_node_t *next;
  size_t count;
};

struct vici_msg_t {
  vici_node_t *nodes;
  size_t n_nodes;
  char *arena;
  size_t arena_len;
  size_t n_elements;
};

typedef struct scan_result_t {
  size_t n_nodes;    /* including the root */
  size_t arena;      /* bytes for names and values, each + NUL */
  size_t n_elements;
} scan_result_t;

/* Read a u8-length name at p[*off]; checks bounds and NUL bytes. */
static int
scan_name(const uint8_t *p, size_t len, size_t *off, size_t *nlen,
          const char **err)
{
  if (*off >= len) {
    *err = "truncated element name length";
    return -1;
  }
  size_t n = p[(*off)++];
  if (n > len - *off) {
    *err = "element name runs past the end of the message";
    return -1;
  }
  if (memchr(p + *off, 0, n)) {
    *err = "element name contains a NUL byte";
    return -1;
  }
  *off += n;
  *nlen = n;
  return 0;
}

static int
scan_value(const uint8_t *p, size_t len, size_t *off, size_t *vlen,
           const char **err)
{
  if (len - *off < 2) {
    *err = "truncated value length";
    return -1;
  }
  size_t n = get_u16(p + *off);
  *off += 2;
  if (n > len - *off) {
    *err = "value runs past the end of the message";
    return -1;
  }
  *off += n;
  *vlen = n;
  return 0;
}

static int
parse_scan(const uint8_t *p, size_t len, scan_result_t *r, const char **err)
{
  size_t off = 0, nlen, vlen;
  int depth = 0, in_list = 0;
  memset(r, 0, sizeof(*r));
  r->n_nodes = 1;
  while (off < len) {
    size_t at = off;
    uint8_t t = p[off++];
    if (++r->n_elements > VICI_ELEMENTS_MAX) {
      *err = "too many elements in message";
      return -1;
    }
    if (in_list && t != VICI_LIST_ITEM && t != VICI_LIST_END) {
      if (t >= VICI_SECTION_START && t <= VICI_LIST_START) {
        *err = "element other than a list item inside a list";
        return -1;
      }
    }
    switch (t) {
    case VICI_SECTION_START:
      if (depth >= VICI_DEPTH_MAX) {
        *err = "sections nested too deeply";
        return -1;
      }
      if (scan_name(p, len, &off, &nlen, err) < 0)
        return -1;
      depth++;
      r->n_nodes++;
      r->arena += nlen + 1;
      break;
    case VICI_SECTION_END:
      if (depth == 0) {
        *err = "section end without a section";
        return -1;
      }
      depth--;
      break;
    case VICI_KEY_VALUE:
      if (scan_name(p, len, &off, &nlen, err) < 0 ||
          scan_value(p, len, &off, &vlen, err) < 0)
        return -1;
      r->n_nodes++;
      r->arena += nlen + 1 + vlen + 1;
      break;
    case VICI_LIST_START:
      if (scan_name(p, len, &off, &nlen, err) < 0)
        return -1;
      in_list = 1;
      r->n_nodes++;
      r->arena += nlen + 1;
      break;
    case VICI_LIST_ITEM:
      if (!in_list) {
        *err = "list item outside a list";
        return -1;
      }
      if (scan_value(p, len, &off, &vlen, err) < 0)
        return -1;
      r->n_nodes++;
      r->arena += vlen + 1;
      break;
    case VICI_LIST_END:
      if (!in_list) {
        *err = "list end without a list";
        return -1;
      }
      in_list = 0;
      break;
    default:
      *err = "unknown message element type";
      log_debug("VICI element type %u at offset %zu", t, at);
      return -1;
    }
  }
  if (in_list) {
    *err = "list not closed at end of message";
    return -1;
  }
  if (depth) {
    *err = "section not closed at end of message";
    return -1;
  }
  return 0;
}

static const char *
arena_put(vici_msg_t *m, size_t *used, const uint8_t *s, size_t n)
{
  char *d = m->arena + *used;
  if (n)
    memcpy(d, s, n);
  d[n] = '\0';
  *used += n + 1;
  return d;
}

static void
node_append(vici_node_t *parent, vici_node_t *child)
{
  if (parent->last)
    parent->last->next = child;
  else
    parent->first = child;
  parent->last = child;
  parent->count++;
}

/* Second pass over input parse_scan() accepted. */
static void
parse_build(vici_msg_t *m, const uint8_t *p, size_t len)
{
  vici_node_t *stack[VICI_DEPTH_MAX + 2];
  int sp = 0;
  size_t off = 0, used = 0, next = 1;
  vici_node_t *list = NULL;
  m->nodes[0].type = VICI_NODE_SECTION;
  m->nodes[0].name = "";
  stack[0] = &m->nodes[0];
  while (off < len) {
    uint8_t t = p[off++];
    vici_node_t *n;
    size_t nl, vl;
    switch (t) {
    case VICI_SECTION_START:
    case VICI_LIST_START:
    case VICI_KEY_VALUE:
      n = &m->nodes[next++];
      nl = p[off++];
      n->name = arena_put(m, &used, p + off, nl);
      off += nl;
      if (t == VICI_KEY_VALUE) {
        n->type = VICI_NODE_VALUE;
        vl = get_u16(p + off);
        off += 2;
        n->value = arena_put(m, &used, p + off, vl);
        n->value_len = vl;
        off += vl;
      } else {
        n->type = t == VICI_LIST_START ? VICI_NODE_LIST : VICI_NODE_SECTION;
      }
      node_append(stack[sp], n);
      if (t == VICI_SECTION_START)
        stack[++sp] = n;
      else if (t == VICI_LIST_START)
        list = n;
      break;
    case VICI_SECTION_END:
      sp--;
      break;
    case VICI_LIST_ITEM:
      n = &m->nodes[next++];
      n->type = VICI_NODE_ITEM;
      n->name = "";
      vl = get_u16(p + off);
      off += 2;
      n->value = arena_put(m, &used, p + off, vl);
      n->value_len = vl;
      off += vl;
      node_append(list, n);
      break;
    case VICI_LIST_END:
      list = NULL;
      break;
    default:
      break; /* unreachable: rejected by parse_scan */
    }
  }
}

int
vici_msg_parse(const uint8_t *data, size_t len, vici_msg_t **out,
               const char **err)
{
  scan_result_t r;
  const char *e = NULL;
  *out = NULL;
  if (len > VICI_SEGMENT_MAX) {
    *err = "message larger than a VICI segment";
    return -1;
  }
  if (parse_scan(data, len, &r, &e) < 0) {
    *err = e;
    return -1;
  }
  vici_msg_t *m = pc_zalloc(sizeof(*m));
  m->nodes = pc_calloc(r.n_nodes, sizeof(vici_node_t));
  m->n_nodes = r.n_nodes;
  m->arena = pc_malloc(r.arena ? r.arena : 1);
  m->arena_len = r.arena;
  m->n_elements = r.n_elements;
  parse_build(m, data, len);
  *out = m;
  return 0;
}

void
vici_msg_free_(vici_msg_t *m)
{
  if (!m)
    return;
  pc_memwipe(m->arena, m->arena_len);
  free(m->arena);
  free(m->nodes);
  free(m);
}

const vici_node_t *
vici_msg_root(const vici_msg_t *m)
{
  return &m->nodes[0];
}

size_t
vici_msg_n_elements(const vici_msg_t *m)
{
  return m->n_elements;
}

const char *
vici_msg_get_str(const vici_msg_t *m, const char *key)
{
  return vici_node_get_str(vici_msg_root(m), key);
}

int
vici_msg_check_success(const vici_msg_t *m, const char **errmsg)
{
  const char *s = m ? vici_msg_get_str(m, "success") : NULL;
  if (s && !strcmp(s, "yes"))
    return 0;
  if (errmsg) {
    const char *e = m ? vici_msg_get_str(m, "errmsg") : NULL;
    *errmsg = e ? e : (s ? "command failed (no errmsg)"
                         : "reply has no success key");
  }
  return -1;
}

vici_node_type_t
vici_node_type(const vici_node_t *n)
{
  return n->type;
}

const char *
vici_node_name(const vici_node_t *n)
{
  return n->name;
}

const char *
vici_node_value(const vici_node_t *n, size_t *len)
{
  if (n->type != VICI_NODE_VALUE && n->type != VICI_NODE_ITEM) {
    if (len)
      *len = 0;
    return NULL;
  }
  if (len)
    *len = n->value_len;
  return n->value;
}

const vici_node_t *
vici_node_first(const vici_node_t *n)
{
  return n->first;
}

const vici_node_t *
vici_node_next(const vici_node_t *n)
{
  return n->next;
}

size_t
vici_node_count(const vici_node_t *n)
{
  return n->count;
}

const vici_node_t *
vici_node_get(const vici_node_t *n, const char *name)
{
  if (!n || n->type != VICI_NODE_SECTION)
    return NULL;
  for (const vici_node_t *c = n->first; c; c = c->next)
    if (!strcmp(c->name, name))
      return c;
  return NULL;
}

const char *
vici_node_get_str(const vici_node_t *n, const char *key)
{
  const vici_node_t *c = vici_node_get(n, key);
  return c && c->type == VICI_NODE_VALUE ? c->value : NULL;
}

const vici_node_t *
vici_node_find(const vici_node_t *n, ...)
{
  va_list ap;
  const char *name;
  va_start(ap, n);
  while (n && (name = va_arg(ap, const char *)) != NULL)
    n = vici_node_get(n, name);
  va_end(ap);
  return n;
}

/* ---- text rendering ---- */

static void
sb_indent(strbuf_t *sb, int depth)
{
  for (int i = 0; i < depth; i++)
    strbuf_addn(sb, "  ", 2);
}

static void
sb_value(strbuf_t *sb, const char *v, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)v[i];
    char tmp[8];
    if (ch == '\n') {
      strbuf_addn(sb, "\\n", 2);
    } else if (ch == '\\') {
      strbuf_addn(sb, "\\\\", 2);
    } else if (ch >= 0x20 && ch < 0x7f) {
      strbuf_addn(sb, (const char *)&v[i], 1);
    } else {
      snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
      strbuf_addn(sb, tmp, 4);
    }
  }
}

static void
format_node(strbuf_t *sb, const vici_node_t *n, int depth)
{
  switch (n->type) {
  case VICI_NODE_SECTION:
    for (const vici_node_t *c = n->first; c; c = c->next) {
      if (c->type == VICI_NODE_SECTION) {
        sb_indent(sb, depth);
        strbuf_addn(sb, c->name, strlen(c->name));
        strbuf_addn(sb, " {\n", 3);
        format_node(sb, c, depth + 1);
        sb_indent(sb, depth);
        strbuf_addn(sb, "}\n", 2);
      } else {
        format_node(sb, c, depth);
      }
    }
    break;
  case VICI_NODE_VALUE:
    sb_indent(sb, depth);
    strbuf_addn(sb, n->name, strlen(n->name));
    strbuf_addn(sb, " = ", 3);
    sb_value(sb, n->value, n->value_len);
    strbuf_addn(sb, "\n", 1);
    break;
  case VICI_NODE_LIST:
    sb_indent(sb, depth);
    strbuf_addn(sb, n->name, strlen(n->name));
    strbuf_addn(sb, " [\n", 3);
    for (const vici_node_t *c = n->first; c; c = c->next) {
      sb_indent(sb, depth + 1);
      sb_value(sb, c->value, c->value_len);
      strbuf_addn(sb, "\n", 1);
    }
    sb_indent(sb, depth);
    strbuf_addn(sb, "]\n", 2);
    break;
  case VICI_NODE_ITEM:
    sb_indent(sb, depth);
    sb_value(sb, n->value, n->value_len);
    strbuf_addn(sb, "\n", 1);
    break;
  }
}

char *
vici_node_format(const vici_node_t *n)
{
  strbuf_t sb = {0};
  strbuf_addn(&sb, "", 0);
  format_node(&sb, n, 0);
  return sb.s;
}

char *
vici_msg_format(const vici_msg_t *m)
{
  return vici_node_format(vici_msg_root(m));
}

/* ---- packets and segments ---- */

int
vici_packet_type_is_named(vici_packet_type_t type)
{
  return type == VICI_CMD_REQUEST || type == VICI_EVENT_REGISTER ||
         type == VICI_EVENT_UNREGISTER || type == VICI_EVENT;
}

int
vici_packet_type_has_message(vici_packet_type_t type)
{
  return type == VICI_CMD_REQUEST || type == VICI_CMD_RESPONSE ||
         type == VICI_EVENT;
}

const char *
vici_packet_type_name(int type)
{
  static const char *const names[] = {
    "CMD_REQUEST", "CMD_RESPONSE", "CMD_UNKNOWN", "EVENT_REGISTER",
    "EVENT_UNREGISTER", "EVENT_CONFIRM", "EVENT_UNKNOWN", "EVENT",
  };
  if (type < 0 || type > VICI_PACKET_TYPE_MAX)
    return "unknown";
  return names[type];
}

size_t
vici_packet_header(uint8_t hdr[VICI_HEADER_MAX], vici_packet_type_t type,
                   const char *name, size_t msg_len, const char **err)
{
  size_t nlen = 0;
  if ((int)type < 0 || type > VICI_PACKET_TYPE_MAX) {
    *err = "unknown packet type";
    return 0;
  }
  if (vici_packet_type_is_named(type)) {
    if (!name || !*name) {
      *err = "packet type needs a name";
      return 0;
    }
    nlen = strlen(name);
    if (nlen > VICI_NAME_MAX) {
      *err = "packet name longer than 255 bytes";
      return 0;
    }
  } else if (name && *name) {
    *err = "packet type has no name";
    return 0;
  }
  if (msg_len && !vici_packet_type_has_message(type)) {
    *err = "packet type has no message";
    return 0;
  }
  size_t total = 1 + (vici_packet_type_is_named(type) ? 1 + nlen : 0) +
                 msg_len;
  if (msg_len > VICI_SEGMENT_MAX || total > VICI_SEGMENT_MAX) {
    *err = "packet larger than a VICI segment";
    return 0;
  }
  size_t h = 0;
  set_u32(hdr, (uint32_t)total);
  h = 4;
  hdr[h++] = (uint8_t)type;
  if (vici_packet_type_is_named(type)) {
    hdr[h++] = (uint8_t)nlen;
    memcpy(hdr + h, name, nlen);
    h += nlen;
  }
  return h;
}

int
vici_packet_encode(buf_t *out, vici_packet_type_t type, const char *name,
                   const uint8_t *msg, size_t msg_len, const char **err)
{
  uint8_t hdr[VICI_HEADER_MAX];
  size_t h = vici_packet_header(hdr, type, name, msg_len, err);
  if (!h)
    return -1;
  buf_add(out, hdr, h);
  if (msg_len)
    buf_add(out, msg, msg_len);
  return 0;
}

int
vici_packet_parse(const uint8_t *seg, size_t len, vici_packet_t *out,
                  const char **err)
{
  size_t off = 0;
  memset(out, 0, sizeof(*out));
  if (len == 0) {
    *err = "empty segment";
    return -1;
  }
  if (len > VICI_SEGMENT_MAX) {
    *err = "segment larger than 512 KiB";
    return -1;
  }
  uint8_t t = seg[off++];
  if (t > VICI_PACKET_TYPE_MAX) {
    *err = "unknown packet type";
    return -1;
  }
  out->type = (vici_packet_type_t)t;
  if (vici_packet_type_is_named(out->type)) {
    if (off >= len) {
      *err = "truncated packet name length";
      return -1;
    }
    size_t nlen = seg[off++];
    if (nlen > len - off) {
      *err = "packet name runs past the end of the segment";
      return -1;
    }
    if (nlen == 0) {
      *err = "empty packet name";
      return -1;
    }
    if (memchr(seg + off, 0, nlen)) {
      *err = "packet name contains a NUL byte";
      return -1;
    }
    memcpy(out->name, seg + off, nlen);
    out->name[nlen] = '\0';
    off += nlen;
  }
  if (!vici_packet_type_has_message(out->type) && off != len) {
    *err = "bytes after a packet that has no message";
    return -1;
  }
  out->body = seg + off;
  out->body_len = len - off;
  return 0;
}

int
vici_segment_length(const uint8_t hdr[4], size_t *len, const char **err)
{
  uint32_t l = get_u32(hdr);
  if (l == 0) {
    *err = "empty segment";
    return -1;
  }
  if (l > VICI_SEGMENT_MAX) {
    *err = "segment length above 512 KiB";
    return -1;
  }
  *len = l;
  return 0;
}
