/* SPDX-License-Identifier: BSD-3-Clause */
/* vici_msg.h -- strongSwan VICI wire format: messages, packets, segments.
 *
 * VICI (the "Versatile IKE Control Interface" of strongSwan's charon) is a
 * stream protocol in three layers, all implemented here without libvici:
 *
 *   segment  u32 big-endian length (not counting itself, 1..512 KiB) + data
 *   packet   u8 type; named types then u8 name length + name; then message
 *   message  a flat sequence of typed elements describing a tree:
 *              1 SECTION_START u8 len + name     2 SECTION_END
 *              3 KEY_VALUE     u8 len + name, u16 BE len + value
 *              4 LIST_START    u8 len + name     5 LIST_ITEM u16 len + value
 *              6 LIST_END
 *
 * Writing: a vici_builder_t appends elements to one growable byte array
 * and checks as it goes (name <= 255 bytes, value <= 65535 bytes, items
 * only inside a list, no list inside a list, sections balanced, total size
 * within a segment). Errors are sticky: the first misuse is remembered and
 * vici_builder_data() then fails with its description, so callers can
 * build a whole message and check once.
 *
 * Reading: vici_msg_parse() validates the whole message first (element
 * types, lengths against the remaining input, nesting, balance, limits
 * below) and only then builds an immutable tree in two allocations (the
 * nodes, and one arena holding every name and value NUL-terminated), so
 * readers get C strings without per-element allocation and a malformed
 * message never leaves a half-built tree. Names with a NUL byte are
 * rejected (they could not be looked up); values are blobs and may hold
 * NULs (use vici_node_value() for the length). Keys are not required to be
 * unique: lookups return the first match.
 *
 * Nothing here does I/O or logging of peer data beyond debug lines; the
 * client (vici_client.h) uses these functions on its socket buffers.
 */
#ifndef PCTOR_FEATURE_IPSEC_VICI_MSG_H
#define PCTOR_FEATURE_IPSEC_VICI_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf/buf.h"

/* Largest segment payload charon accepts or sends (its
 * VICI_MESSAGE_SIZE_MAX): 512 KiB. */
#define VICI_SEGMENT_MAX (512u * 1024u)
/* Deepest section nesting we accept (charon's list-sas needs 4). */
#define VICI_DEPTH_MAX 32
/* Most elements in one message we accept (a full list-sa event for one IKE
 * SA has a few hundred; get-conns lists one item per connection). */
#define VICI_ELEMENTS_MAX 65536
#define VICI_NAME_MAX 255
#define VICI_VALUE_MAX 65535

/* Packet types (the first byte of a segment). */
typedef enum {
  VICI_CMD_REQUEST = 0,    /* named, message: client command */
  VICI_CMD_RESPONSE = 1,   /* message: reply to the active command */
  VICI_CMD_UNKNOWN = 2,    /* (empty) the command is not known */
  VICI_EVENT_REGISTER = 3, /* named: subscribe */
  VICI_EVENT_UNREGISTER = 4, /* named: unsubscribe */
  VICI_EVENT_CONFIRM = 5,  /* (empty) (un)registration done */
  VICI_EVENT_UNKNOWN = 6,  /* (empty) no such event */
  VICI_EVENT = 7,          /* named, message: an event */
} vici_packet_type_t;
#define VICI_PACKET_TYPE_MAX 7

/* Message element types. */
typedef enum {
  VICI_SECTION_START = 1,
  VICI_SECTION_END = 2,
  VICI_KEY_VALUE = 3,
  VICI_LIST_START = 4,
  VICI_LIST_ITEM = 5,
  VICI_LIST_END = 6,
} vici_element_type_t;

/* ---- building messages ---- */

typedef struct vici_builder_t vici_builder_t;

/* A new, empty message (the implicit root section). Never NULL. */
vici_builder_t *vici_builder_new(void);
void vici_builder_free_(vici_builder_t *b);
#define vici_builder_free(b) do { vici_builder_free_(b); (b) = NULL; } while (0)
void vici_builder_begin_section(vici_builder_t *b, const char *name);
void vici_builder_end_section(vici_builder_t *b);
/* key = value (len bytes, any content). */
void vici_builder_add(vici_builder_t *b, const char *key, const void *value,
                      size_t len);
void vici_builder_add_str(vici_builder_t *b, const char *key,
                          const char *value);
/* key = printf-formatted value (at most 511 bytes, else an error). */
void vici_builder_addf(vici_builder_t *b, const char *key, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));
void vici_builder_begin_list(vici_builder_t *b, const char *name);
void vici_builder_add_item(vici_builder_t *b, const void *value, size_t len);
void vici_builder_add_item_str(vici_builder_t *b, const char *value);
void vici_builder_end_list(vici_builder_t *b);
/* The encoded message, valid until the next change to b; NULL (and *err
 * set to a static description) if any call so far was invalid or a
 * section or list is still open. */
const uint8_t *vici_builder_data(const vici_builder_t *b, size_t *len,
                                 const char **err);

/* ---- reading messages ---- */

typedef enum {
  VICI_NODE_SECTION = 1, /* named children (the root is an unnamed one) */
  VICI_NODE_VALUE = 2,   /* key = value */
  VICI_NODE_LIST = 3,    /* named list of items */
  VICI_NODE_ITEM = 4,    /* one unnamed list item */
} vici_node_type_t;

typedef struct vici_msg_t vici_msg_t;
typedef struct vici_node_t vici_node_t;

/* Parse len bytes as a message. Returns 0 and a new tree in *out, or -1
 * with *err set to a static description (and *out NULL). An empty input
 * is a valid empty message. */
int vici_msg_parse(const uint8_t *data, size_t len, vici_msg_t **out,
                   const char **err);
void vici_msg_free_(vici_msg_t *m);
#define vici_msg_free(m) do { vici_msg_free_(m); (m) = NULL; } while (0)
/* The root section. */
const vici_node_t *vici_msg_root(const vici_msg_t *m);
/* Number of elements the message had on the wire. */
size_t vici_msg_n_elements(const vici_msg_t *m);
/* Shortcut: the value of key in the root section as a string, or NULL. */
const char *vici_msg_get_str(const vici_msg_t *m, const char *key);
/* 0 when the root has success = "yes"; otherwise -1 with *errmsg set to
 * the reply's errmsg value (or a fixed text when it has none). */
int vici_msg_check_success(const vici_msg_t *m, const char **errmsg);
/* A readable multi-line rendering (swanctl-like, two-space indents; a
 * value that is not printable ASCII is shown as hex). Caller frees. */
char *vici_msg_format(const vici_msg_t *m);
char *vici_node_format(const vici_node_t *n);

vici_node_type_t vici_node_type(const vici_node_t *n);
/* Name of a section, value or list ("" for the root and list items). */
const char *vici_node_name(const vici_node_t *n);
/* Value of a VALUE or ITEM node (NUL-terminated; *len without the NUL),
 * NULL for sections and lists. len may be NULL. */
const char *vici_node_value(const vici_node_t *n, size_t *len);
/* First child of a section / first item of a list, NULL if none. */
const vici_node_t *vici_node_first(const vici_node_t *n);
const vici_node_t *vici_node_next(const vici_node_t *n);
size_t vici_node_count(const vici_node_t *n);
/* The first child of section n named name, or NULL. */
const vici_node_t *vici_node_get(const vici_node_t *n, const char *name);
/* The value of key in section n, or NULL if absent or not a value. */
const char *vici_node_get_str(const vici_node_t *n, const char *key);
/* Follow a NULL-terminated path of names from n:
 * vici_node_find(root, "relay-r4", "child-sas", NULL). */
const vici_node_t *vici_node_find(const vici_node_t *n, ...)
  __attribute__((sentinel));

/* ---- packets and segments ---- */

typedef struct vici_packet_t {
  vici_packet_type_t type;
  char name[VICI_NAME_MAX + 1]; /* "" for unnamed types */
  const uint8_t *body;          /* the message; points into the input */
  size_t body_len;
} vici_packet_t;

/* 1 if packets of this type carry a name / a message. */
int vici_packet_type_is_named(vici_packet_type_t type);
int vici_packet_type_has_message(vici_packet_type_t type);
const char *vici_packet_type_name(int type);

/* Append one whole segment (length header, type, name, message) to out.
 * name must be non-NULL and non-empty exactly for named types; msg may be
 * non-empty only for types with a message. Returns 0, or -1 (nothing
 * appended, *err set) on misuse or when the segment would exceed
 * VICI_SEGMENT_MAX. */
int vici_packet_encode(buf_t *out, vici_packet_type_t type, const char *name,
                       const uint8_t *msg, size_t msg_len, const char **err);
/* The bytes of a segment before its message (length header, type, name):
 * at most VICI_HEADER_MAX. Writes them to hdr and returns their number, or
 * returns 0 with *err set on the misuses vici_packet_encode() refuses. For
 * writers that keep the message out of a buf_t (whose released chunks are
 * not wiped): vici_client.c, whose load-key messages hold private keys. */
#define VICI_HEADER_MAX (4 + 1 + 1 + VICI_NAME_MAX)
size_t vici_packet_header(uint8_t hdr[VICI_HEADER_MAX],
                          vici_packet_type_t type, const char *name,
                          size_t msg_len, const char **err);
/* Parse the payload of one segment (without its 4-byte header). The body
 * is not parsed as a message here. Returns 0 or -1 with *err set: empty
 * segment, unknown type, truncated or NUL-containing name, or bytes after
 * a packet that has no message. */
int vici_packet_parse(const uint8_t *seg, size_t len, vici_packet_t *out,
                      const char **err);
/* Check a segment header: 0 and *len set when 1 <= length <=
 * VICI_SEGMENT_MAX, else -1 with *err set. */
int vici_segment_length(const uint8_t hdr[4], size_t *len, const char **err);

#endif
