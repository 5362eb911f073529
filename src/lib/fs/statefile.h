/* SPDX-License-Identifier: BSD-3-Clause */
/* statefile.h -- a persistent key-value file in tor's "state" format.
 *
 * The file is text: comment lines start with '#', blank lines are
 * ignored, and every other line is "Key Value" (the key a run of letters,
 * digits and '_', then spaces, then the value up to the end of the line,
 * trailing blanks removed). A key may appear several times (tor writes one
 * "Guard" line per sampled guard); the order of lines is kept.
 *
 * Design: the store is an ordered array of (key, value) pairs loaded
 * whole at start. Modules replace the lines of the keys they own
 * (statefile_set / statefile_set_all) and leave every other line exactly
 * as read, so the lines of a tor state file that pctor does not use
 * survive pctor's rewrites and the file can go back to tor. A save
 * rewrites the whole file atomically (lib/fs/files.h: temporary file,
 * fsync, rename), with a "LastWritten" line and tor's comment header.
 *
 * Bad content (a NUL byte, a line without a proper key, an overlong line
 * or file) is not fatal: statefile_load() says what was wrong, moves the
 * file aside to "PATH.bad" (so it can be looked at) and returns an empty
 * store, as tor does with an unparseable state file. No Tor knowledge
 * lives here: the modules that own keys parse their values.
 */
#ifndef PCTOR_LIB_FS_STATEFILE_H
#define PCTOR_LIB_FS_STATEFILE_H
#include <stddef.h>
#include <time.h>

/* Bounds: the whole file, one line, number of lines. */
#define STATEFILE_MAX_SIZE (4 * 1024 * 1024)
#define STATEFILE_MAX_LINE 8192
#define STATEFILE_MAX_LINES 65536

typedef struct statefile_t statefile_t;

/* An empty store that saves to path (nothing is read). */
statefile_t *statefile_new(const char *path);

/* Read path. A missing file gives an empty store and no warning; a file
 * that cannot be read or has bad content gives an empty store and *warn
 * (allocated; free it) saying why and where the old file went. Never
 * returns NULL. */
statefile_t *statefile_load(const char *path, char **warn);

/* Parse text (len bytes) into st, replacing its contents. Returns 0, or
 * -1 with *err (allocated) naming the line that is wrong; st is then
 * left empty. */
int statefile_parse(statefile_t *st, const char *text, size_t len,
                    char **err);

/* The value of the first line with key, or NULL. */
const char *statefile_get(const statefile_t *st, const char *key);
/* Iterate over the lines with key: start with *pos = 0; returns the next
 * value or NULL at the end. */
const char *statefile_next(const statefile_t *st, const char *key,
                           size_t *pos);
/* Number of lines with key. */
size_t statefile_count(const statefile_t *st, const char *key);

/* Replace every line with key by one line with value (NULL: remove them
 * all). The new line takes the place of the first old one, or goes at the
 * end. Values must not contain a newline (-1 otherwise, nothing changed).
 * Returns 0. */
int statefile_set(statefile_t *st, const char *key, const char *value);
/* Same with n values (n == 0 removes the key). */
int statefile_set_all(statefile_t *st, const char *key,
                      const char *const *values, size_t n);

/* 1 if something changed since the last load or save. */
int statefile_is_dirty(const statefile_t *st);

/* The file's text as statefile_save() writes it: the header comment
 * (generated at now), then the lines in order (allocated). */
char *statefile_format(statefile_t *st, time_t now);

/* Set "LastWritten" to now and write the file atomically with mode 0600.
 * Returns 0, or a negative errno with *err (allocated). */
int statefile_save(statefile_t *st, time_t now, char **err);

/* Periodic saving (as tor's state file: written some time after it
 * changed, not only at exit, so a crash loses little). A caller checks
 * often (every minute, say) with statefile_save_if_due(): it saves when
 * the store is dirty and either statefile_want_save_now() was called
 * since the last save, or interval seconds have passed since the first
 * check that found it dirty. Returns 1 if saved, 0 if nothing was due,
 * or a negative errno with *err (allocated); a failed save stays dirty
 * and due, so the next check tries again. now is the caller's clock. */
void statefile_want_save_now(statefile_t *st);
int statefile_save_if_due(statefile_t *st, time_t now, time_t interval,
                          char **err);

/* The path it saves to. */
const char *statefile_path(const statefile_t *st);

void statefile_free_(statefile_t *st);
#define statefile_free(s)                                                     \
  do {                                                                        \
    statefile_free_(s);                                                       \
    (s) = NULL;                                                               \
  } while (0)
#endif
