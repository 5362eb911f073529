/* SPDX-License-Identifier: BSD-3-Clause */
/* control_proto.h -- the control protocol's text syntax (control-spec
 * sections 2.1-2.5): splitting controller input into commands, the
 * arguments of a command, quoted strings, and the replies pctor writes.
 *
 * Design: nothing here knows sockets or pctor's state; every function
 * works on strings and buf_t, so the unit tests can feed it any bytes.
 *   - Input lines end in CRLF (a bare LF is accepted, as tor does). A line
 *     longer than the caller's limit is an error: the caller closes the
 *     connection instead of buffering without bound.
 *   - A command whose keyword starts with '+' carries a data block: the
 *     lines after it up to a line holding only ".", with a leading "." of
 *     a line removed (dot-stuffing). It is bounded by the same limit.
 *   - Arguments are separated by spaces; a value may be a quoted string
 *     with C escapes (\\ \" \n \r \t and octal), which
 *     control_proto_unquote() decodes and control_proto_quote() produces.
 *   - Replies: "CODE OK" for a single line, "CODE-" for every line but the
 *     last of a multi-line reply, "CODE+" before a data block, which
 *     control_proto_add_data() dot-stuffs and ends with ".".
 */
#ifndef PCTOR_FEATURE_CONTROL_CONTROL_PROTO_H
#define PCTOR_FEATURE_CONTROL_CONTROL_PROTO_H
#include <stddef.h>

#include "lib/buf/buf.h"

/* One command taken from the input. */
typedef struct control_cmd_t {
  char *keyword; /* upper-cased, without the '+' of a data command */
  char *args;    /* the rest of the first line (leading spaces removed) */
  char *data;    /* a data command's block ("line\n" each), else NULL */
  int has_data;
} control_cmd_t;

#define CONTROL_TAKE_NEED_MORE 0
#define CONTROL_TAKE_OK 1
#define CONTROL_TAKE_TOO_LONG (-1)

/* Take one whole command from in (removing its bytes) into *cmd when it
 * has fully arrived. max_len bounds one command's bytes, data included.
 * Returns CONTROL_TAKE_OK, CONTROL_TAKE_NEED_MORE (nothing removed), or
 * CONTROL_TAKE_TOO_LONG when the command would exceed max_len. */
int control_proto_take_cmd(buf_t *in, size_t max_len, control_cmd_t *cmd);
void control_cmd_clear(control_cmd_t *cmd);

/* The next space-separated argument of *p (a quoted string counts as one
 * and keeps its quotes), advancing *p past it. NULL when none is left.
 * Newly allocated. */
char *control_proto_next_arg(const char **p);

/* Decode a quoted string: s starts with '"'. Returns the decoded bytes
 * (NUL-terminated; *len_out gets the length, which may include NULs from
 * octal escapes) and sets *end to the character after the closing quote;
 * NULL when the string is not terminated or an escape is bad. */
char *control_proto_unquote(const char *s, size_t *len_out,
                            const char **end);
/* s as a quoted string with escapes. Newly allocated. */
char *control_proto_quote(const char *s);

/* Split "KEY=VALUE" (VALUE possibly quoted) in arg. Sets *key (newly
 * allocated) and *value (decoded, newly allocated; NULL without '=').
 * Returns 0, or -1 for a bad quoted value. */
int control_proto_kv(const char *arg, char **key, char **value);

/* One KEY[=VALUE] argument, the value decoded (NULL without '='). */
typedef struct control_kv_t {
  char *key;
  char *value;
} control_kv_t;

/* Split args into KEY[=VALUE] arguments (SETCONF, RESETCONF, the
 * KEY=VALUE tail of other commands). Returns 0 with *out (newly
 * allocated, *n entries; free with control_kvs_free), or -1 with *err_out
 * for a bad quoted value or an empty key. */
int control_proto_parse_kvs(const char *args, control_kv_t **out, int *n,
                            char **err_out);
void control_kvs_free(control_kv_t *kvs, int n);

/* Append "CODE<sep>text\r\n" (sep is ' ', '-' or '+'). */
void control_proto_add_line(buf_t *out, int code, char sep,
                            const char *text);
/* Append data (lines separated by "\n" or "\r\n") as a data block: each
 * line ends in CRLF, a line starting with '.' gets another '.', and the
 * block ends with ".\r\n". */
void control_proto_add_data(buf_t *out, const char *data);

/* Case-insensitive: is s the ASCII keyword k? */
/* A stream's REASON (and REMOTE_REASON) fields for a STREAM event
 * (control-spec 4.1.2), with their leading space, from a RELAY_END reason
 * (-1: none, ""); remote: the far side's END cell said it, which tor
 * reports as "REASON=END REMOTE_REASON=<name>". Unknown codes are
 * "UNKNOWN_<n>", as tor writes them. */
void control_proto_stream_reason(char *out, size_t outlen, int reason,
                                 int remote);
int control_proto_eq(const char *s, const char *k);
#endif
