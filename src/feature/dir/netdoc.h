/* SPDX-License-Identifier: BSD-3-Clause */
/* netdoc.h -- a bounded tokenizer for Tor's directory document
 * meta-format (dir-spec 1.2): keyword lines with arguments, each
 * optionally followed by one PEM-style object
 * ("-----BEGIN TYPE-----" NL base64 lines "-----END TYPE-----" NL).
 *
 * The reader walks a document (pointer + length, need not be
 * NUL-terminated) one item at a time; items point into the document and
 * carry byte offsets, so a caller can hash exactly the signed portion
 * ("from the start of the initial item through the space/newline after
 * the signature keyword"). Nothing is allocated.
 *
 * Strictness: every line must end with LF (a document that ends without
 * one is truncated); NUL, CR and other control characters except TAB are
 * refused; keywords are [A-Za-z0-9-] not starting with '-'; blank lines
 * are skipped; lines and objects are bounded (NETDOC_MAX_LINE,
 * NETDOC_MAX_OBJECT); the BEGIN and END types must match. Arguments are
 * separated by spaces or tabs; bytes >= 0x80 are allowed in arguments
 * (contact lines carry UTF-8).
 */
#ifndef PCTOR_FEATURE_DIR_NETDOC_H
#define PCTOR_FEATURE_DIR_NETDOC_H
#include <stddef.h>
#include <stdint.h>

#define NETDOC_MAX_LINE (128 * 1024)
#define NETDOC_MAX_OBJECT (128 * 1024)
#define NETDOC_MAX_ARGV 32 /* split arguments kept in argv[] */
#define NETDOC_MAX_KEYWORD 64

typedef struct netdoc_arg_t {
  const char *s;
  size_t len;
} netdoc_arg_t;

typedef struct netdoc_item_t {
  const char *kw;  /* keyword (not NUL-terminated) */
  size_t kw_len;
  const char *args; /* raw arguments: after the keyword's separating
                     * whitespace, up to (not including) the LF */
  size_t args_len;
  int argc;         /* number of arguments (may exceed NETDOC_MAX_ARGV) */
  netdoc_arg_t argv[NETDOC_MAX_ARGV]; /* the first min(argc, MAX) */
  /* Object, when has_object. */
  int has_object;
  const char *obj_type; /* "RSA PUBLIC KEY", "SIGNATURE", ... */
  size_t obj_type_len;
  const char *obj_data; /* base64 lines between BEGIN and END */
  size_t obj_data_len;
  /* Offsets in the document. */
  size_t start;    /* first byte of the keyword */
  size_t line_end; /* just past the keyword line's LF */
  size_t end;      /* just past the item (after the object's END line) */
} netdoc_item_t;

typedef struct netdoc_reader_t {
  const char *doc;
  size_t len;
  size_t pos;
  int line_no; /* 1-based line of the next item, for messages */
  char err[160];
} netdoc_reader_t;

void netdoc_reader_init(netdoc_reader_t *r, const char *doc, size_t len);
/* Read the next item. Returns 1 with *it filled, 0 at the end of the
 * document, or -1 on malformed input (r->err says what and where; the
 * reader then stays failed). */
int netdoc_next(netdoc_reader_t *r, netdoc_item_t *it);
/* Look at the next item without consuming it (same returns). */
int netdoc_peek(netdoc_reader_t *r, netdoc_item_t *it);

/* 1 if the item's keyword is exactly kw. */
int netdoc_kw_is(const netdoc_item_t *it, const char *kw);
/* 1 if argument i (< argc and < NETDOC_MAX_ARGV) equals s. */
int netdoc_arg_is(const netdoc_item_t *it, int i, const char *s);
/* Copy argument i into buf as a NUL-terminated string; returns 0, or -1
 * if absent or longer than bufsize - 1. */
int netdoc_arg_copy(const netdoc_item_t *it, int i, char *buf,
                    size_t bufsize);
/* Iterate over all arguments of an item (for lines with more than
 * NETDOC_MAX_ARGV): start with *cursor = 0; returns 1 with *arg set, or 0
 * when no argument is left. */
int netdoc_arg_iter(const netdoc_item_t *it, size_t *cursor,
                    netdoc_arg_t *arg);
/* 1 if the object type is exactly type. */
int netdoc_obj_is(const netdoc_item_t *it, const char *type);
/* Decode the object's base64 into buf (at most cap bytes). Returns the
 * length, or -1 if there is no object, it is not base64 or too big. */
long netdoc_obj_decode(const netdoc_item_t *it, uint8_t *buf, size_t cap);

/* Helpers for argument values. */
/* Decimal integer in [min, max]; returns 0 or -1. */
int netdoc_parse_int(const char *s, size_t len, long long min, long long max,
                     long long *out);
/* Unpadded or padded base64 of exactly outlen bytes; 0 or -1. */
int netdoc_parse_b64_exact(const char *s, size_t len, uint8_t *out,
                           size_t outlen);
/* 2 * outlen hex digits; 0 or -1. */
int netdoc_parse_hex_exact(const char *s, size_t len, uint8_t *out,
                           size_t outlen);
#endif
