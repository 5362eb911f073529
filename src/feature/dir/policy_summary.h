/* SPDX-License-Identifier: BSD-3-Clause */
/* policy_summary.h -- exit-policy summaries as consensuses ("p" lines of
 * the ns flavor) and microdescriptors ("p" and "p6" lines) carry them
 * (dir-spec 3.4.1, 3.8.2):
 *
 *   ("accept" / "reject") SP PortOrRange ("," PortOrRange)*
 *   PortOrRange = INT "-" INT / INT          (1..65535, ascending)
 *
 * "accept 80,443" means: exits to most addresses on ports 80 and 443;
 * "reject 1-65535" (or no line at all) means: not an exit.
 *
 * This is pctor's one implementation of summaries as port sets: the
 * consensus and microdescriptor parsers read "p"/"p6" lines with it,
 * path selection and the client ask it about ports, and the summaries
 * feature/exit writes (exit_policy_summarize) are read back with it. Two
 * parsing modes share one parser:
 *   strict  (policy_summary_parse): the grammar above -- ascending,
 *           non-overlapping, nothing else; for the documents we verify;
 *   lenient (policy_summary_parse_line): what tor accepts -- entries that
 *           do not start with a digit are skipped, at most
 *           POLICY_SUMMARY_MAX_ENTRIES entries, in any order; the set is
 *           sorted and merged (overlapping and adjacent ranges joined).
 */
#ifndef PCTOR_FEATURE_DIR_POLICY_SUMMARY_H
#define PCTOR_FEATURE_DIR_POLICY_SUMMARY_H
#include <stddef.h>
#include <stdint.h>

typedef struct policy_range_t {
  uint16_t lo, hi;
} policy_range_t;

typedef struct policy_summary_t {
  int accept; /* 1: the ranges are accepted, 0: rejected */
  int n_ranges;
  policy_range_t *ranges; /* sorted, non-overlapping */
} policy_summary_t;

#define POLICY_SUMMARY_MAX_RANGES 4096
/* Lenient mode: at most this many entries (tor's limit, dir-spec 3.8.2
 * caps a summary at 1000 bytes anyway). */
#define POLICY_SUMMARY_MAX_ENTRIES 1000

/* Parse the two arguments ("accept", "80,443") of a p/p6 line. Returns a
 * new summary, or NULL with *err (static string) on malformed input. */
policy_summary_t *policy_summary_parse(const char *verb, size_t verb_len,
                                       const char *list, size_t list_len,
                                       const char **err);
/* Parse a whole summary, "accept 80,443" (a p line's arguments, or
 * exit_policy_summarize() output), leniently as tor does. Returns a new
 * summary, or NULL with *err (allocated, quoting the input; err may be
 * NULL) saying what is wrong. */
policy_summary_t *policy_summary_parse_line(const char *s, char **err);
/* A summary that rejects everything ("reject 1-65535"). */
policy_summary_t *policy_summary_new_reject_all(void);
void policy_summary_free_(policy_summary_t *p);
#define policy_summary_free(p)                                                \
  do {                                                                        \
    policy_summary_free_(p);                                                  \
    (p) = NULL;                                                               \
  } while (0)
/* 1 if the summary says the relay exits to port (most addresses).
 * A NULL summary rejects everything. */
int policy_summary_allows_port(const policy_summary_t *p, uint16_t port);
/* 1 if it allows at least one port. */
int policy_summary_allows_any(const policy_summary_t *p);
/* 1 if it allows no port (NULL: 1). */
int policy_summary_is_reject_star(const policy_summary_t *p);
/* Write "accept 80,443" into buf; returns buf. */
char *policy_summary_format(const policy_summary_t *p, char *buf,
                            size_t buflen);
/* The same, newly allocated, never truncated. */
char *policy_summary_format_new(const policy_summary_t *p);
#endif
