/* SPDX-License-Identifier: BSD-3-Clause */
/* conf.h -- lexing tor-style configuration: torrc text and command lines.
 *
 * This module knows the syntax of a torrc, not its options. It turns a file
 * (or a string, or argv) into an ordered list of (key, value, source, line)
 * records; src/app/config gives them meaning. Typed values ("2 hours",
 * "512 MB", "[::1]:9001") are parsed by lib/conf/confval.h.
 *
 * Syntax of a torrc, as tor reads it:
 *   - one "Keyword value" per line; the keyword ends at the first blank or
 *     '#'; blanks (space, tab) separate it from the value;
 *   - '#' starts a comment that runs to the end of the line, also after a
 *     value ("ORPort 9001  # the relay port"); blank lines are ignored;
 *   - trailing blanks (and a '\r' before the newline) are not part of the
 *     value; a keyword alone on its line has the empty value "";
 *   - a value that starts with '"' is a C-style quoted string: escapes
 *     \n \t \r \\ \" \' \xHH and \OOO (three octal digits); nothing but
 *     blanks and a comment may follow the closing quote; it may not contain
 *     a raw newline or decode to a NUL byte;
 *   - an unquoted value continues on the next line when its line ends with
 *     a backslash; the backslash and newline are removed, everything else
 *     is kept. While a value is being continued, lines whose first non-blank
 *     character is '#' are skipped (comment lines inside a value), and a
 *     '#' later on a line ends the value there, as usual;
 *   - a backslash anywhere else in an unquoted value is an ordinary
 *     character (so paths and regular expressions need no quoting).
 * Bounds: a file is at most CONF_MAX_FILE_SIZE bytes, a physical or
 * continued line at most CONF_MAX_LINE_LEN bytes, and NUL bytes are
 * rejected. Every error names the line ("line 7 of /etc/pctor/torrc: ...").
 *
 * "%include PATH" lines (conf_read_file()) are replaced by the lines of
 * PATH, as tor does: PATH may hold the wildcards * and ? (matches are
 * taken in lexical order; a leading dot must be matched explicitly); a
 * file is read where the %include line is; a directory contributes its
 * regular files in lexical (byte) order, skipping names that start with a
 * dot and subdirectories. Relative paths are taken relative to the
 * directory pctor was started in (as tor). Includes nest at most
 * CONF_MAX_INCLUDE_DEPTH deep and all the files together are bounded by
 * CONF_MAX_TOTAL_SIZE, so a file that includes itself is an error, not a
 * hang.
 *
 * Command lines follow tor: "--Key value" or "Key value" gives the line
 * (Key, value); "--+Key value" / "+Key value" appends to the file's lines
 * for Key instead of replacing them, "--/Key" / "/Key" clears them (no
 * value). Flags the program declares (such as "-f FILE" or
 * "--verify-config") are returned separately. Keys are compared
 * case-insensitively (conf_key_eq()).
 */
#ifndef PCTOR_LIB_CONF_CONF_H
#define PCTOR_LIB_CONF_CONF_H

#include <stddef.h>

#define CONF_MAX_FILE_SIZE (1024 * 1024)
#define CONF_MAX_LINE_LEN 32768
#define CONF_MAX_INCLUDE_DEPTH 16
#define CONF_MAX_TOTAL_SIZE (8 * 1024 * 1024)

/* conf_lex_file() returns this (and an error message) when the file does
 * not exist, so that a missing default torrc can be tolerated. */
#define CONF_ERR_NOENT (-2)

/* How a command-line line combines with the lines from the file. */
typedef enum {
  CONF_LINE_NORMAL = 0, /* "Key value": replaces the file's lines for Key */
  CONF_LINE_APPEND = 1, /* "+Key value": adds to them */
  CONF_LINE_CLEAR = 2,  /* "/Key": removes them (value is "") */
} conf_line_cmd_t;

typedef struct conf_line_t {
  struct conf_line_t *next;
  char *key;    /* as written, without "--", "+" or "/" */
  char *value;  /* never NULL; "" when the line had no value */
  char *source; /* the file name, or "the command line" */
  int lineno;   /* 1-based line in the file, or the argv index */
  int from_cmdline;
  conf_line_cmd_t cmd;
} conf_line_t;

/* A new line (strings are copied). Never returns NULL. */
conf_line_t *conf_line_new(const char *key, const char *value,
                           const char *source, int lineno);
/* Free a whole list. Accepts NULL. */
void conf_lines_free_(conf_line_t *lines);
#define conf_lines_free(l) do { conf_lines_free_(l); (l) = NULL; } while (0)
/* A deep copy of a list. */
conf_line_t *conf_lines_dup(const conf_line_t *lines);
/* Number of lines in a list. */
size_t conf_lines_count(const conf_line_t *lines);

/* Case-insensitive key comparison, as tor's; returns 1 if equal. */
int conf_key_eq(const char *a, const char *b);

/* Where a line came from, for messages: "line 12 of /etc/pctor/torrc",
 * "the command line (argument 3)", or the source alone for a line
 * numbered 0 ("the controller"). Newly allocated. */
char *conf_line_where(const conf_line_t *line);

/* Lex len bytes of torrc text. source names it in messages. On success
 * returns 0 and sets *lines_out (NULL if there were no lines); on failure
 * returns -1, sets *err_out to a newly allocated message naming the line,
 * and *lines_out to NULL. */
int conf_lex_text(const char *text, size_t len, const char *source,
                  conf_line_t **lines_out, char **err_out);

/* Read and lex a torrc file. Returns 0, -1, or CONF_ERR_NOENT if the file
 * does not exist (with *err_out set in both error cases). */
int conf_lex_file(const char *path, conf_line_t **lines_out,
                  char **err_out);

/* Read a torrc and expand its %include lines (see above). cwd is the base
 * of relative %include paths (NULL: the current directory). Returns 0,
 * -1, or CONF_ERR_NOENT when path itself does not exist (a missing
 * included file is -1); *err_out names the file and line. */
int conf_read_file(const char *path, const char *cwd,
                   conf_line_t **lines_out, char **err_out);

/* A program-defined command-line flag such as "-f" (takes_value 1) or
 * "--verify-config" (takes_value 0). Arrays end with a NULL name. */
typedef enum {
  CONF_FLAG_NO_VALUE = 0,
  CONF_FLAG_VALUE = 1,     /* the next argument is its value */
  CONF_FLAG_OPT_VALUE = 2, /* the next argument, unless there is none or
                            * it starts with '-' (tor's --dump-config) */
} conf_flag_arg_t;

typedef struct {
  const char *name;
  conf_flag_arg_t takes_value;
} conf_flag_t;

/* Split argv[1..argc-1] into declared flags (*flags_out, one line per flag
 * with the flag's name as key and its argument, or "", as value) and
 * option lines (*options_out, with cmd set from the +/ prefix). Flags are
 * matched exactly; every other argument starts an option. Returns 0, or -1
 * with *err_out set (a flag or option missing its value, an empty key). */
int conf_lex_cmdline(int argc, char *const *argv, const conf_flag_t *flags,
                     conf_line_t **flags_out, conf_line_t **options_out,
                     char **err_out);

#endif
