/* SPDX-License-Identifier: BSD-3-Clause */
/* confdecl.h -- typed option declarations: what an option is (its name,
 * type, default, documentation) and the generic operations on its value.
 *
 * A module that has options declares them in a table of conf_var_t next
 * to its own options struct, and wraps both in a conf_module_t; the
 * daemon's option manager (src/app/config) registers the modules' tables
 * and does the merging of files and command line, error messages and
 * reloads. Adding an option is adding one row (and its field, and its
 * man-page entry, which tests/check-manpage.sh enforces): the value is
 * parsed once, by its type, when the line is read, so nothing downstream
 * re-parses strings.
 *
 * Types and their storage (the field at `offset` in the module's struct):
 *   BOOL          int       0|1
 *   AUTOBOOL      int       0|1|auto, auto stored as -1
 *   INT           int       decimal in [min, max]
 *   INTERVAL      int       seconds: "30 seconds", "2 hours", plain = s
 *   MSEC_INTERVAL int       milliseconds: "10 msec", plain = ms
 *   MEMUNIT       uint64_t  bytes: "512 MBytes", "1 GB"
 *   BANDWIDTH     uint64_t  bytes per second: "1 MBytes", "8 Mbits"
 *   DOUBLE        double    decimal (fraction, sign) in [min, max]
 *   STRING        char *    printable text
 *   ENUM          int       one of the names in type_arg (conf_enum_t[])
 *   LINELIST      conf_strlist_t  every line's value, in order
 *   CUSTOM        per type_arg (conf_custom_t): a module-specific check
 * Units are tor's words (lib/conf/confval.h). Ranges apply to values
 * given in a torrc; a default that is unset (default_str NULL) leaves the
 * field zero (NULL, empty) and may mean "automatic".
 */
#ifndef PCTOR_LIB_CONF_CONFDECL_H
#define PCTOR_LIB_CONF_CONFDECL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/conf/conf.h"

/* The values of a repeatable option, in order. */
typedef struct {
  int n;
  char **v;
} conf_strlist_t;

void conf_strlist_add(conf_strlist_t *l, const char *s);
void conf_strlist_clear(conf_strlist_t *l);

typedef enum {
  CONF_TYPE_BOOL,
  CONF_TYPE_AUTOBOOL,
  CONF_TYPE_INT,
  CONF_TYPE_INTERVAL,
  CONF_TYPE_MSEC_INTERVAL,
  CONF_TYPE_MEMUNIT,
  CONF_TYPE_BANDWIDTH,
  CONF_TYPE_DOUBLE,
  CONF_TYPE_STRING,
  CONF_TYPE_ENUM,
  CONF_TYPE_LINELIST,
  CONF_TYPE_CUSTOM,
} conf_type_t;

/* ENUM names (case-insensitive), ending with a NULL name. */
typedef struct {
  const char *name;
  int value;
} conf_enum_t;

/* How a CUSTOM option's value is stored. */
typedef enum {
  CONF_STORE_STRING,  /* char * */
  CONF_STORE_STRLIST, /* conf_strlist_t */
  CONF_STORE_INT,     /* int */
  CONF_STORE_BLOB,    /* blob_size bytes, compared and copied as bytes */
} conf_store_t;

typedef struct {
  conf_store_t store;
  size_t blob_size;
  int multi; /* repeatable: each line adds to the value */
  /* Check value and store it into field (replacing for single-valued
   * options, adding for multi). arg is the manager's context; line is
   * NULL when the default is applied. Returns 0, or -1 with *err_out. */
  int (*assign)(void *field, const char *value, void *arg,
                const conf_line_t *line, char **err_out);
  /* BLOB and INT: append the value as torrc values (for --dump-config). */
  void (*format)(const void *field, conf_strlist_t *out);
  /* Instead of assign, for STRING and STRLIST storage: check the value
   * (0, or -1 with *err_out); it is then stored as written (a STRING
   * replaced, a STRLIST appended to). */
  int (*check)(const char *value, char **err_out);
} conf_custom_t;

/* Whether s holds a control character (below 0x20, or 0x7f). */
int conf_has_control_chars(const char *s);

typedef struct conf_var_t {
  const char *name;
  conf_type_t type;
  const char *syntax;      /* for --list-options and the man page */
  const char *default_str; /* applied as if from a torrc; NULL: unset */
  const char *default_doc; /* the default as documented */
  int reloadable;          /* may change on SIGHUP */
  int64_t min, max;        /* INT, INTERVAL (s), MSEC_INTERVAL (ms),
                            * MEMUNIT/BANDWIDTH (bytes; max 0: none),
                            * DOUBLE (whole numbers) */
  size_t offset;           /* into the module's options struct */
  const char *help;        /* one paragraph, as in the man page */
  const void *type_arg;    /* ENUM: conf_enum_t[]; CUSTOM: conf_custom_t */
} conf_var_t;

/* A module's options: its table and the struct the values live in. */
typedef struct conf_module_t {
  const char *name;        /* the module, for messages and --dump-config */
  const conf_var_t *vars;
  size_t n_vars;
  size_t obj_size;         /* sizeof the module's options struct */
  /* Rules between the module's options and derived values, after every
   * line was assigned. set[i] says whether vars[i] was set explicitly.
   * Returns 0, or -1 with *err_out (a message without "Failing."), and
   * *bad_var the option to blame (or NULL). May be NULL. */
  int (*validate)(void *obj, const unsigned char *set, char **err_out,
                  const conf_var_t **bad_var);
} conf_module_t;

/* Whether lines of this option accumulate. */
int conf_var_is_multi(const conf_var_t *var);
/* Parse value (non-empty) and store it in obj's field. Returns 0 or -1
 * with *err_out (the problem, without the option's name). */
int conf_var_assign(void *obj, const conf_var_t *var, const char *value,
                    void *arg, const conf_line_t *line, char **err_out);
/* Reset the field to zero / NULL / empty, freeing what it holds. */
void conf_var_clear(void *obj, const conf_var_t *var);
int conf_var_equal(const void *a, const void *b, const conf_var_t *var);
/* Replace dst's value with a copy of src's. */
void conf_var_copy(void *dst, const void *src, const conf_var_t *var);
/* Append the value as torrc values (none if unset) to out, in base units
 * ("7200" for 2 hours, "1048576" for 8 Mbits), as tor's --dump-config. */
void conf_var_format(const void *obj, const conf_var_t *var,
                     conf_strlist_t *out);
/* The table's default check: every default parses, names are unique in
 * the table. Returns 0 or -1 with *err_out. For unit tests. */
int conf_module_check(const conf_module_t *mod, char **err_out);

/* An ENUM's name for value, or NULL. */
const char *conf_enum_name(const conf_enum_t *e, int value);

#endif
