/* SPDX-License-Identifier: BSD-3-Clause */
/* confdecl.c -- generic operations on typed option values (confdecl.h).
 *
 * Every operation switches on the storage a type implies (int, uint64_t,
 * double, char *, conf_strlist_t, or a custom blob), so that clearing,
 * comparing, copying and formatting are written once for all options;
 * only parsing knows the type itself. Values are parsed with
 * lib/conf/confval.h and range-checked here.
 */
#include "lib/conf/confdecl.h"
#include "lib/conf/confval.h"
#include "lib/malloc/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FIELD(o, var, T) ((T *)(void *)((char *)(o) + (var)->offset))
#define CFIELD(o, var, T) \
  ((const T *)(const void *)((const char *)(o) + (var)->offset))

void
conf_strlist_add(conf_strlist_t *l, const char *s)
{
  l->v = pc_realloc(l->v, sizeof(char *) * (size_t)(l->n + 1));
  l->v[l->n++] = pc_strdup(s);
}

void
conf_strlist_clear(conf_strlist_t *l)
{
  for (int i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

typedef enum { ST_INT, ST_U64, ST_DOUBLE, ST_STRING, ST_LIST, ST_BLOB } st_t;

static st_t
storage(const conf_var_t *var)
{
  switch (var->type) {
  case CONF_TYPE_BOOL:
  case CONF_TYPE_AUTOBOOL:
  case CONF_TYPE_INT:
  case CONF_TYPE_INTERVAL:
  case CONF_TYPE_MSEC_INTERVAL:
  case CONF_TYPE_ENUM:
    return ST_INT;
  case CONF_TYPE_MEMUNIT:
  case CONF_TYPE_BANDWIDTH:
    return ST_U64;
  case CONF_TYPE_DOUBLE:
    return ST_DOUBLE;
  case CONF_TYPE_STRING:
    return ST_STRING;
  case CONF_TYPE_LINELIST:
    return ST_LIST;
  case CONF_TYPE_CUSTOM: {
    const conf_custom_t *c = var->type_arg;
    switch (c->store) {
    case CONF_STORE_STRING: return ST_STRING;
    case CONF_STORE_STRLIST: return ST_LIST;
    case CONF_STORE_INT: return ST_INT;
    case CONF_STORE_BLOB: return ST_BLOB;
    }
  }
  }
  abort();
}

int
conf_var_is_multi(const conf_var_t *var)
{
  if (var->type == CONF_TYPE_LINELIST)
    return 1;
  if (var->type == CONF_TYPE_CUSTOM)
    return ((const conf_custom_t *)var->type_arg)->multi;
  return 0;
}

int
conf_has_control_chars(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return 1;
  return 0;
}

static int
out_of_range(const char *value, const char *unit, int64_t min, int64_t max,
             char **err_out)
{
  if (max > 0)
    *err_out = pc_asprintf("'%s' is out of range (%lld to %lld%s)", value,
                           (long long)min, (long long)max, unit);
  else
    *err_out = pc_asprintf("'%s' is less than the minimum (%lld%s)", value,
                           (long long)min, unit);
  return -1;
}

/* A decimal number with optional sign and fraction, nothing else. */
static int
parse_double(const char *s, double *out)
{
  const char *p = s;
  if (*p == '-' || *p == '+')
    p++;
  if (!(*p >= '0' && *p <= '9'))
    return -1;
  while (*p >= '0' && *p <= '9')
    p++;
  if (*p == '.') {
    p++;
    if (!(*p >= '0' && *p <= '9'))
      return -1;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  if (*p)
    return -1;
  char *end = NULL;
  double v = strtod(s, &end);
  if (!isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int
all_digits(const char *s)
{
  if (!*s)
    return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

int
conf_var_assign(void *obj, const conf_var_t *var, const char *value,
                void *arg, const conf_line_t *line, char **err_out)
{
  switch (var->type) {
  case CONF_TYPE_BOOL:
    return conf_parse_bool(value, FIELD(obj, var, int), err_out);
  case CONF_TYPE_AUTOBOOL:
    if (!strcasecmp(value, "auto")) {
      *FIELD(obj, var, int) = -1;
      return 0;
    }
    if (conf_parse_bool(value, FIELD(obj, var, int), err_out) == 0)
      return 0;
    free(*err_out);
    *err_out = pc_asprintf("'%s' must be 0, 1 or auto", value);
    return -1;
  case CONF_TYPE_INT: {
    int64_t v;
    if (conf_parse_int(value, var->min, var->max, &v, err_out) < 0)
      return -1;
    *FIELD(obj, var, int) = (int)v;
    return 0;
  }
  case CONF_TYPE_INTERVAL:
  case CONF_TYPE_MSEC_INTERVAL: {
    int ms = var->type == CONF_TYPE_MSEC_INTERVAL;
    uint64_t msec;
    if (ms && all_digits(value)) {
      int64_t v;
      if (conf_parse_int(value, 0, INT64_MAX, &v, err_out) < 0)
        return -1;
      msec = (uint64_t)v;
    } else if (conf_parse_interval(value, CONF_ALLOW_FRACTION, &msec,
                                   err_out) < 0) {
      return -1;
    }
    uint64_t v = ms ? msec : msec / 1000;
    if (v < (uint64_t)var->min || v > (uint64_t)var->max)
      return out_of_range(value, ms ? " milliseconds" : " seconds",
                          var->min, var->max, err_out);
    *FIELD(obj, var, int) = (int)v;
    return 0;
  }
  case CONF_TYPE_MEMUNIT:
  case CONF_TYPE_BANDWIDTH: {
    uint64_t v;
    if (conf_parse_memunit(value, CONF_ALLOW_FRACTION, &v, err_out) < 0)
      return -1;
    if (v < (uint64_t)var->min || (var->max > 0 && v > (uint64_t)var->max))
      return out_of_range(value, " bytes", var->min, var->max, err_out);
    *FIELD(obj, var, uint64_t) = v;
    return 0;
  }
  case CONF_TYPE_DOUBLE: {
    double v;
    if (parse_double(value, &v) < 0) {
      *err_out = pc_asprintf("'%s' is not a number", value);
      return -1;
    }
    if (v < (double)var->min || v > (double)var->max)
      return out_of_range(value, "", var->min, var->max, err_out);
    *FIELD(obj, var, double) = v;
    return 0;
  }
  case CONF_TYPE_STRING:
    if (conf_has_control_chars(value)) {
      *err_out = pc_strdup("control characters are not allowed");
      return -1;
    }
    free(*FIELD(obj, var, char *));
    *FIELD(obj, var, char *) = pc_strdup(value);
    return 0;
  case CONF_TYPE_ENUM: {
    const conf_enum_t *e = var->type_arg;
    for (const conf_enum_t *p = e; p->name; p++)
      if (!strcasecmp(p->name, value)) {
        *FIELD(obj, var, int) = p->value;
        return 0;
      }
    char *names = pc_strdup("");
    for (const conf_enum_t *p = e; p->name; p++) {
      char *n = pc_asprintf("%s%s%s", names, p == e ? "" : (p[1].name ?
                            ", " : " or "), p->name);
      free(names);
      names = n;
    }
    *err_out = pc_asprintf("'%s' must be %s", value, names);
    free(names);
    return -1;
  }
  case CONF_TYPE_LINELIST:
    if (conf_has_control_chars(value)) {
      *err_out = pc_strdup("control characters are not allowed");
      return -1;
    }
    conf_strlist_add(FIELD(obj, var, conf_strlist_t), value);
    return 0;
  case CONF_TYPE_CUSTOM: {
    const conf_custom_t *c = var->type_arg;
    if (c->assign)
      return c->assign((char *)obj + var->offset, value, arg, line,
                       err_out);
    if (c->check(value, err_out) < 0)
      return -1;
    if (c->store == CONF_STORE_STRLIST) {
      conf_strlist_add(FIELD(obj, var, conf_strlist_t), value);
    } else {
      free(*FIELD(obj, var, char *));
      *FIELD(obj, var, char *) = pc_strdup(value);
    }
    return 0;
  }
  }
  abort();
}

void
conf_var_clear(void *obj, const conf_var_t *var)
{
  switch (storage(var)) {
  case ST_INT: *FIELD(obj, var, int) = 0; break;
  case ST_U64: *FIELD(obj, var, uint64_t) = 0; break;
  case ST_DOUBLE: *FIELD(obj, var, double) = 0; break;
  case ST_STRING: PC_FREE(*FIELD(obj, var, char *)); break;
  case ST_LIST: conf_strlist_clear(FIELD(obj, var, conf_strlist_t)); break;
  case ST_BLOB:
    memset((char *)obj + var->offset, 0,
           ((const conf_custom_t *)var->type_arg)->blob_size);
    break;
  }
}

int
conf_var_equal(const void *a, const void *b, const conf_var_t *var)
{
  switch (storage(var)) {
  case ST_INT: return *CFIELD(a, var, int) == *CFIELD(b, var, int);
  case ST_U64: return *CFIELD(a, var, uint64_t) == *CFIELD(b, var, uint64_t);
  case ST_DOUBLE: return *CFIELD(a, var, double) == *CFIELD(b, var, double);
  case ST_STRING: {
    const char *sa = *CFIELD(a, var, char *), *sb = *CFIELD(b, var, char *);
    return (!sa || !sb) ? sa == sb : !strcmp(sa, sb);
  }
  case ST_LIST: {
    const conf_strlist_t *la = CFIELD(a, var, conf_strlist_t);
    const conf_strlist_t *lb = CFIELD(b, var, conf_strlist_t);
    if (la->n != lb->n)
      return 0;
    for (int i = 0; i < la->n; i++)
      if (strcmp(la->v[i], lb->v[i]))
        return 0;
    return 1;
  }
  case ST_BLOB:
    return !memcmp((const char *)a + var->offset,
                   (const char *)b + var->offset,
                   ((const conf_custom_t *)var->type_arg)->blob_size);
  }
  abort();
}

void
conf_var_copy(void *dst, const void *src, const conf_var_t *var)
{
  conf_var_clear(dst, var);
  switch (storage(var)) {
  case ST_INT: *FIELD(dst, var, int) = *CFIELD(src, var, int); break;
  case ST_U64: *FIELD(dst, var, uint64_t) = *CFIELD(src, var, uint64_t);
    break;
  case ST_DOUBLE: *FIELD(dst, var, double) = *CFIELD(src, var, double);
    break;
  case ST_STRING: {
    const char *s = *CFIELD(src, var, char *);
    *FIELD(dst, var, char *) = s ? pc_strdup(s) : NULL;
    break;
  }
  case ST_LIST: {
    const conf_strlist_t *l = CFIELD(src, var, conf_strlist_t);
    for (int i = 0; i < l->n; i++)
      conf_strlist_add(FIELD(dst, var, conf_strlist_t), l->v[i]);
    break;
  }
  case ST_BLOB:
    memcpy((char *)dst + var->offset, (const char *)src + var->offset,
           ((const conf_custom_t *)var->type_arg)->blob_size);
    break;
  }
}

const char *
conf_enum_name(const conf_enum_t *e, int value)
{
  for (; e && e->name; e++)
    if (e->value == value)
      return e->name;
  return NULL;
}

void
conf_var_format(const void *obj, const conf_var_t *var, conf_strlist_t *out)
{
  char buf[64];
  const conf_custom_t *c =
      var->type == CONF_TYPE_CUSTOM ? var->type_arg : NULL;
  if (c && c->format) {
    c->format((const char *)obj + var->offset, out);
    return;
  }
  switch (var->type) {
  case CONF_TYPE_AUTOBOOL: {
    int v = *CFIELD(obj, var, int);
    conf_strlist_add(out, v < 0 ? "auto" : v ? "1" : "0");
    return;
  }
  case CONF_TYPE_ENUM: {
    const char *n = conf_enum_name(var->type_arg, *CFIELD(obj, var, int));
    if (n)
      conf_strlist_add(out, n);
    return;
  }
  default:
    break;
  }
  switch (storage(var)) {
  case ST_INT:
    snprintf(buf, sizeof(buf), "%d", *CFIELD(obj, var, int));
    conf_strlist_add(out, buf);
    return;
  case ST_U64:
    snprintf(buf, sizeof(buf), "%llu",
             (unsigned long long)*CFIELD(obj, var, uint64_t));
    conf_strlist_add(out, buf);
    return;
  case ST_DOUBLE:
    snprintf(buf, sizeof(buf), "%f", *CFIELD(obj, var, double));
    conf_strlist_add(out, buf);
    return;
  case ST_STRING: {
    const char *s = *CFIELD(obj, var, char *);
    if (s)
      conf_strlist_add(out, s);
    return;
  }
  case ST_LIST: {
    const conf_strlist_t *l = CFIELD(obj, var, conf_strlist_t);
    for (int i = 0; i < l->n; i++)
      conf_strlist_add(out, l->v[i]);
    return;
  }
  case ST_BLOB:
    return; /* a blob without a format callback is not shown */
  }
}

int
conf_module_check(const conf_module_t *mod, char **err_out)
{
  void *obj = pc_zalloc(mod->obj_size);
  int r = 0;
  for (size_t i = 0; i < mod->n_vars && r == 0; i++) {
    const conf_var_t *v = &mod->vars[i];
    for (size_t j = 0; j < i; j++)
      if (!strcasecmp(mod->vars[j].name, v->name)) {
        *err_out = pc_asprintf("%s: option %s declared twice", mod->name,
                               v->name);
        r = -1;
      }
    if (r == 0 && (!v->syntax || !v->default_doc || !v->help ||
                   v->offset >= mod->obj_size)) {
      *err_out = pc_asprintf("%s: option %s lacks its syntax, default "
                             "documentation or help, or lies outside the "
                             "struct", mod->name, v->name);
      r = -1;
    }
    if (r == 0 && v->default_str) {
      char *e = NULL;
      if (conf_var_assign(obj, v, v->default_str, NULL, NULL, &e) < 0) {
        *err_out = pc_asprintf("%s: bad default for %s: %s", mod->name,
                               v->name, e);
        free(e);
        r = -1;
      }
    }
  }
  for (size_t i = 0; i < mod->n_vars; i++)
    conf_var_clear(obj, &mod->vars[i]);
  free(obj);
  return r;
}
